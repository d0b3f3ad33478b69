"""A per-controller asyncio work queue: deduplicated keys, per-key backoff, bounded workers.

Controllers never act on events directly; they add the key of the object that changed and a
worker reconciles that key from the caches. This keeps the number of reconciles independent of
the number of events and guarantees that one key is never reconciled twice at the same time.

Semantics (the ones client-go users expect):

- A key waits in the queue at most once, however often it is added.
- A key added while it is being processed is processed once more afterwards, never concurrently.
- A failed reconcile (the handler raises) is retried after an exponential backoff per key, up to
  a cap, or after the server's Retry-After if the error carries a longer one (`retry_after`);
  a successful one resets that key's backoff.
- `shutdown()` stops taking work and waits for in-flight reconciles to finish.
- A worker lets the event loop run other tasks after every reconcile, even one that never waited.

What it deliberately does not do: decide what a key means, log, or keep metrics itself; it calls
the `on_done` and `on_depth` hooks and leaves both to the observability layer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Hashable, Iterable
from typing import Generic, TypeVar

from attrs import frozen

K = TypeVar("K", bound=Hashable)

_log = logging.getLogger(__name__)


@frozen
class Backoff:
    """Exponential retry delays: `base`, 2*`base`, 4*`base`, ... never more than `cap` seconds."""

    base: float = 0.5
    cap: float = 300.0

    def delay(self, failures: int) -> float:
        """The delay before retry number `failures` (1 for the first failure)."""
        if failures < 1:
            return 0.0
        # Bound the exponent so a key failing for days does not overflow a float.
        return float(min(self.cap, self.base * 2 ** min(failures - 1, 62)))


Handler = Callable[[K], Awaitable[None]]
DoneHook = Callable[[K, "BaseException | None", float], None]
DepthHook = Callable[[int], None]


class WorkQueue(Generic[K]):
    """Runs `handler(key)` for queued keys on at most `workers` concurrent tasks.

    `on_done(key, error, seconds)` is called after every reconcile (error is None on success);
    `on_depth(n)` whenever the number of keys waiting to be processed changes. With
    `resync_every` and `resync_keys`, every key `resync_keys()` returns is added periodically, so
    drift that no event announced is corrected. With `accept`, a key it refuses is not queued, and
    one queued before it was refused is dropped instead of handled (a replica's share of keys).
    """

    def __init__(
        self,
        *,
        name: str,
        handler: Handler[K],
        workers: int = 1,
        backoff: Backoff = Backoff(),
        resync_every: float | None = None,
        resync_keys: Callable[[], Iterable[K]] | None = None,
        on_done: DoneHook[K] | None = None,
        on_depth: DepthHook | None = None,
        accept: Callable[[K], bool] | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"a work queue needs at least one worker, got {workers}")
        if (resync_every is None) != (resync_keys is None):
            raise ValueError("resync_every and resync_keys go together")
        self.name = name
        self._handler = handler
        self._workers = workers
        self._backoff = backoff
        self._resync_every = resync_every
        self._resync_keys = resync_keys
        self._on_done = on_done
        self._on_depth = on_depth
        self._accept = accept

        self._ready: asyncio.Queue[K] = asyncio.Queue()
        # Keys waiting to be processed: in `_ready`, or re-added while being processed.
        self._dirty: set[K] = set()
        self._processing: set[K] = set()
        self._failures: dict[K, int] = {}
        self._timers: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._busy: set[asyncio.Task[None]] = set()
        self._resync_task: asyncio.Task[None] | None = None
        self._shutting_down = False
        self._last_depth = -1

    # -- adding work ---------------------------------------------------------------------------

    def add(self, key: K) -> None:
        """Queue `key` unless it is already waiting; ignored once shutdown has begun."""
        if self._shutting_down or key in self._dirty:
            return
        if not self._accepts(key):  # another replica's key: its retries and backoff are not ours
            self._failures.pop(key, None)
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._ready.put_nowait(key)
        self._report_depth()

    def add_after(self, key: K, delay: float) -> None:
        """Queue `key` in `delay` seconds; of several pending delays for one key the earliest wins."""
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        pending = self._timers.get(key)
        if pending is not None:
            if pending[0] <= due:
                return
            pending[1].cancel()
        self._timers[key] = (due, loop.call_at(due, self._fire, key))

    def resync(self) -> None:
        """Queue every key the resync hook knows about (no-op without one)."""
        if self._resync_keys is None:
            return
        for key in self._resync_keys():
            self.add(key)

    def forget(self, key: K) -> None:
        """Reset the backoff of `key` (e.g. the object it names is gone for good)."""
        self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        """How many times in a row the reconcile of `key` has failed."""
        return self._failures.get(key, 0)

    @property
    def depth(self) -> int:
        """Keys waiting to be processed (not counting delayed ones)."""
        return len(self._dirty)

    @property
    def in_flight(self) -> int:
        return len(self._processing)

    # -- running -------------------------------------------------------------------------------

    def start(self) -> None:
        """Start the workers (and the resync timer) on the running event loop."""
        if self._tasks:
            raise RuntimeError(f"work queue {self.name} is already started")
        self._tasks = [asyncio.create_task(self._work(), name=f"{self.name}-worker-{i}") for i in range(self._workers)]
        if self._resync_every is not None:
            self._resync_task = asyncio.create_task(self._resync_loop(), name=f"{self.name}-resync")
        self._report_depth()

    async def shutdown(self, *, timeout: float | None = None) -> None:
        """Stop taking work, wait for in-flight reconciles (cancel them after `timeout` seconds)."""
        self._shutting_down = True
        for _, timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        if self._resync_task is not None:
            self._resync_task.cancel()
        for task in self._tasks:
            if task not in self._busy:
                task.cancel()
        tasks = [*self._tasks, *([self._resync_task] if self._resync_task else [])]
        if not tasks:
            return
        _, still_running = await asyncio.wait(tasks, timeout=timeout)
        for task in still_running:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    # -- internals -----------------------------------------------------------------------------

    def _accepts(self, key: K) -> bool:
        return self._accept is None or self._accept(key)

    def _fire(self, key: K) -> None:
        self._timers.pop(key, None)
        self.add(key)

    async def _resync_loop(self) -> None:
        assert self._resync_every is not None
        while True:
            await asyncio.sleep(self._resync_every)
            self.resync()

    async def _work(self) -> None:
        task = asyncio.current_task()
        assert task is not None
        loop = asyncio.get_running_loop()
        while not self._shutting_down:
            key = await self._ready.get()
            if self._shutting_down:
                return
            self._dirty.discard(key)
            if not self._accepts(key):  # refused since it was queued: dropped, not handled
                self._failures.pop(key, None)
                self._report_depth()
                continue
            self._busy.add(task)
            self._processing.add(key)
            self._report_depth()
            started = loop.time()
            error: BaseException | None = None
            try:
                await self._handler(key)
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a failed reconcile is retried, never fatal to the worker
                error = exc
            finally:
                self._processing.discard(key)
                self._busy.discard(task)
            self._finish(key, error, loop.time() - started)
            # A reconcile that finds nothing to do never suspends, nor does `get()` on a queue
            # with keys in it: without this, 100,000 converged keys would hold the event loop
            # for seconds, and the Lease renewals and probes on it would miss their deadlines.
            await asyncio.sleep(0)

    def _finish(self, key: K, error: BaseException | None, seconds: float) -> None:
        if error is None:
            self._failures.pop(key, None)
        else:
            failures = self._failures.get(key, 0) + 1
            self._failures[key] = failures
            self.add_after(key, max(self._backoff.delay(failures), _retry_after(error)))
        if key in self._dirty and not self._shutting_down:
            self._ready.put_nowait(key)
        if self._on_done is not None:
            self._on_done(key, error, seconds)
        elif error is not None:
            _log.warning(
                "reconcile failed, will retry",
                extra={"queue": self.name, "key": str(key), "error": repr(error)},
            )
        self._report_depth()

    def _report_depth(self) -> None:
        depth = len(self._dirty)
        if self._on_depth is not None and depth != self._last_depth:
            self._last_depth = depth
            self._on_depth(depth)


def _retry_after(error: BaseException) -> float:
    """The server's Retry-After carried by a failure (`Transient.retry_after`), else 0."""
    value = getattr(error, "retry_after", None)
    return float(value) if isinstance(value, (int, float)) and value > 0 else 0.0
