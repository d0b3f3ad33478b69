"""The Event recorder: Kubernetes Events written in the background, deduplicated and rate-limited.

Controllers call `record()`, which never waits and never fails: an Event is news for people, not
part of a sync. Like client-go's recorder:

- an Event with the same object, type, reason and message as one written within `window`
  seconds raises that Event's `count` and `lastTimestamp` instead of creating another;
- each object has a token bucket (`burst` Events, one more every `refill` seconds), so an object
  that fails in a loop does not flood its namespace; Events over the limit are dropped;
- the queue holds `capacity` Events; when it is full, new ones are dropped, and so are those
  still queued when this replica stopped leading (`can_write`), as every other write is; with
  `--buckets`, an Event about a workspace's object asks `can_write_to(workspace)` instead.

Every outcome is counted in `servlet_events_total{result}`. A write that fails is logged at
debug level and dropped. A workspace that has not accepted the export's `events` claim answers
403; its Events are then dropped without asking for `REFUSED_SECONDS`, so a tenant who declined
the claim costs one request a minute, not one per Event.

Deliberately not here: which Events to record (`core.events`) and the HTTP calls (the adapter).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict
from collections.abc import Callable

from attrs import define, frozen

from servlet.app.observability.logs import FieldLogger
from servlet.app.observability.metrics import EventResult, Metrics
from servlet.core.errors import Forbidden, NotFound
from servlet.core.events import EventSpec
from servlet.core.ports import EventRecord, EventWriter, InvolvedObject

# client-go's defaults: 25 Events per object at once, then one every five minutes.
BURST = 25
REFILL_SECONDS = 300.0
# client-go's aggregation window: a repeat after ten minutes starts a new Event.
WINDOW_SECONDS = 600.0
CAPACITY = 1000
# Written Events (and objects' buckets) remembered for deduplication; the oldest are forgotten.
REMEMBERED = 4096
# How long a workspace that refused an Event (403: the events claim not accepted) is not asked again.
REFUSED_SECONDS = 60.0


@frozen
class _Written:
    name: str
    count: int
    at: float  # monotonic


@define
class _Bucket:
    tokens: float
    at: float


class EventRecorder:
    """Records Events without ever making the caller wait (see the module's docstring)."""

    def __init__(
        self,
        *,
        writer: EventWriter,
        monotonic: Callable[[], float],
        now: Callable[[], str],
        metrics: Metrics,
        log: FieldLogger,
        can_write: Callable[[], bool] = lambda: True,
        can_write_to: Callable[[str], bool] | None = None,
        capacity: int = CAPACITY,
        burst: int = BURST,
        refill: float = REFILL_SECONDS,
        window: float = WINDOW_SECONDS,
    ) -> None:
        self._writer = writer
        self._can_write = can_write
        self._can_write_to = can_write_to
        self._monotonic = monotonic
        self._now = now
        self._metrics = metrics
        self._log = log
        self._burst = burst
        self._refill = refill
        self._window = window
        self._queue: asyncio.Queue[EventRecord] = asyncio.Queue(maxsize=capacity)
        self._written: OrderedDict[EventRecord, _Written] = OrderedDict()
        self._buckets: OrderedDict[InvolvedObject, _Bucket] = OrderedDict()
        self._refused_until: dict[str, float] = {}  # workspace -> monotonic time
        self._task: asyncio.Task[None] | None = None

    def record(self, regarding: InvolvedObject, spec: EventSpec) -> None:
        """Queue an Event about `regarding`; returns at once (dropped when over the limits)."""
        event = EventRecord(regarding=regarding, type=spec.type, reason=spec.reason, message=spec.message)
        if not self._take_token(regarding):
            self._metrics.count_event(result=EventResult.RATE_LIMITED)
            return
        try:
            self._queue.put_nowait(event)
        except asyncio.QueueFull:
            self._metrics.count_event(result=EventResult.DROPPED)

    def _take_token(self, regarding: InvolvedObject) -> bool:
        now = self._monotonic()
        bucket = self._buckets.pop(regarding, None) or _Bucket(tokens=float(self._burst), at=now)
        bucket.tokens = min(float(self._burst), bucket.tokens + (now - bucket.at) / self._refill)
        bucket.at = now
        self._buckets[regarding] = bucket
        if len(self._buckets) > REMEMBERED:
            self._buckets.popitem(last=False)
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    # -- writing -------------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="event recorder")

    async def stop(self) -> None:
        """Stop writing; Events still queued are dropped (they are not worth delaying a shutdown)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def flush(self) -> None:
        """Wait until every Event queued so far is written or given up (once `start` was called)."""
        await self._queue.join()

    async def _run(self) -> None:
        while True:
            event = await self._queue.get()
            try:
                await self._deliver(event)
            finally:
                self._queue.task_done()

    async def _deliver(self, event: EventRecord) -> None:
        cluster = event.regarding.cluster
        if not (self._can_write_to(cluster) if cluster and self._can_write_to else self._can_write()):
            self._metrics.count_event(result=EventResult.DROPPED)
            return
        if cluster and self._refused_until.get(cluster, 0.0) > self._monotonic():
            self._metrics.count_event(result=EventResult.FAILED)
            return
        try:
            await self.write(event)
        except asyncio.CancelledError:
            raise
        except Forbidden as error:
            self._metrics.count_event(result=EventResult.FAILED)
            if cluster:
                self._refused_until[cluster] = self._monotonic() + REFUSED_SECONDS
            self._log.debug("events refused; not asking again for a while", workspace=cluster or None, error=str(error))
        except Exception as error:
            self._metrics.count_event(result=EventResult.FAILED)
            self._log.debug(
                "event not recorded",
                reason=event.reason,
                object=event.regarding.name,
                workspace=event.regarding.cluster or None,
                error=str(error),
            )

    async def write(self, event: EventRecord) -> None:
        """Write one Event now: a repeat within the window counts up the Event written before."""
        now = self._monotonic()
        seen = self._written.pop(event, None)
        if seen is not None and now - seen.at <= self._window:
            try:
                await self._writer.update_event(event, name=seen.name, count=seen.count + 1, last=self._now())
            except NotFound:
                pass  # deleted meanwhile (Events expire): create a new one below
            else:
                self._remember(event, _Written(name=seen.name, count=seen.count + 1, at=now))
                self._metrics.count_event(result=EventResult.COUNTED)
                return
        stamp = self._now()
        name = await self._writer.create_event(event, count=1, first=stamp, last=stamp)
        self._remember(event, _Written(name=name, count=1, at=now))
        self._metrics.count_event(result=EventResult.CREATED)

    def _remember(self, event: EventRecord, written: _Written) -> None:
        self._written[event] = written
        if len(self._written) > REMEMBERED:
            self._written.popitem(last=False)
