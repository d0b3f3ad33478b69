"""An informer-style cache of one resource at one base URL, kept current by list + watch.

The base URL is a plain cluster, one workspace (`.../clusters/<lc>`) or the VW wildcard
(`.../clusters/*`); objects are keyed by (logical cluster from `kcp.io/cluster` or "",
namespace, name), because in a wildcard view names repeat across workspaces.

It lists and watches through the `Collection` port (`adapters/watch.py` over HTTP, or the
in-memory fake), and:

- a list (following `continue`) fills the store; the watch starts from the list's
  resourceVersion with `allowWatchBookmarks=true` and a server-side `timeoutSeconds`;
- a watch the server ends cleanly resumes from the last resourceVersion seen (event or bookmark);
- a 410 (response or ERROR event) or a broken stream leads to a relist, and the relist is
  compared with the store so every difference is emitted: ADDED, MODIFIED, and DELETED for
  objects that vanished meanwhile.

With `keep` (`Keep`, by key or by content), the informer holds only a replica's share of the
workspaces: others are neither stored nor told. `refilter` drops what is no longer kept, silently
(another replica holds it now), and when more may be kept ends the watch for a relist that finds
it (`catching_up` until then). An object whose content moves it out of the share reads as
DELETED. `pin` holds one object of another share, in the way of a write, until it is deleted.

A metadata-only informer (a source with `metadata_only=True`) asks for `PartialObjectMetadata`
and keeps of each object only what identifies it and its version, and the names of its first few
owners (`identity_of`): a tenant's labels and annotations cost it nothing either. It serves kinds
whose content matters for a few objects only (related Secrets), which the caller fetches one by one.

Handlers are plain callables run on the event loop; they should only enqueue work. Objects read
from the informer are shared, not copied: treat them as read-only. A compact informer
(`compact=True`) keeps each object as its JSON and decodes it on every read (`stores.py`).

Deliberately not here: any decision about the objects, the requests themselves (the port's), and
metrics objects (the counters `restarts` and `relists`, with optional `on_restart`/`on_relist`
callbacks, and `last_alive` / `is_alive()` are what the observability layer reads).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from servlet.app.runtime.informer_events import (
    Event,
    EventType,
    Handler,
    Holding,
    Keep,
    Object,
    ObjectKey,
    version_reached,
)
from servlet.app.runtime.stopping import unless_set
from servlet.app.runtime.stores import CompactStore, ObjectStore, PlainStore, identity_of, without_managed_fields
from servlet.app.runtime.workqueue import Backoff
from servlet.core.errors import ApiFailure, Gone, NotFound
from servlet.core.ports import Collection, WatchEvent, WatchSource

# How much longer than the server-side watch timeout we wait for an event before calling the
# connection dead.
_READ_MARGIN = 30.0
# How many of a relist's events are delivered before other tasks get a turn (a few milliseconds).
_EVENTS_PER_TURN = 200

_log = logging.getLogger(__name__)


class Informer:
    """List + watch of the source's collection, keeping every object it holds."""

    def __init__(
        self,
        source: WatchSource[Collection],
        *,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        page_size: int = 500,
        backoff: Backoff = Backoff(base=0.5, cap=30.0),
        clock: Callable[[], float] = time.monotonic,
        on_restart: Callable[[], None] | None = None,
        on_relist: Callable[[], None] | None = None,
        compact: bool = False,
        keep: Keep | None = None,
    ) -> None:
        self._collection = source.collection
        self._holding = Holding(keep)
        self._refilters = 0
        self._relist_wanted = asyncio.Event()
        self._relists_asked = 0
        self._on_restart = on_restart
        self._on_relist = on_relist
        self.name = source.name
        self._label_selector = label_selector
        self.metadata_only = source.metadata_only
        self._ingest: Callable[[Any], Any] = identity_of if source.metadata_only else without_managed_fields
        self._timeout_seconds = timeout_seconds
        self._page_size = page_size
        self._backoff = backoff
        self._clock = clock
        self._handlers: list[Handler] = []
        # Compact: objects kept as their JSON, decoded on each read (`stores.py`).
        self._new_store: Callable[[], ObjectStore[ObjectKey]] = CompactStore if compact else PlainStore
        self._store: ObjectStore[ObjectKey] = self._new_store()
        self._synced = asyncio.Event()
        self._retry_now = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.resource_version = ""
        #: Watches that ended and were re-opened (server-side timeout, cut, 410, error).
        self.restarts = 0
        #: Successful lists after the first one (after a 410, a broken stream or an error).
        self.relists = 0
        #: `clock()` when the loop last made progress or tried to; /healthz compares it to now.
        self.last_alive = clock()
        #: A running loop updates `last_alive` at least this often (seconds): the longest a
        #: quiet watch may wait for its server-side timeout, or the longest retry pause.
        self.max_quiet_seconds = timeout_seconds + _READ_MARGIN + backoff.cap
        #: The last error that interrupted the loop, for diagnostics (None once healthy again).
        self.last_error: BaseException | None = None

    # -- reading the cache -------------------------------------------------------------------

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    @property
    def has_synced(self) -> bool:
        """True once the first list has been stored and its ADDED events delivered."""
        return self._synced.is_set()

    async def wait_synced(self) -> None:
        await self._synced.wait()

    @property
    def catching_up(self) -> bool:
        """True from a `refilter` that may keep more until the relist that finds it has finished."""
        return self._relist_wanted.is_set()

    def refilter(self, *, more: bool) -> None:
        """The kept keys changed (see the module's docstring); `more`: some may be kept now that
        were not, so the informer lists again."""
        if self._holding.keep is None:
            return
        self._refilters += 1
        for key in self._holding.not_held(self._store):
            self._store.pop(key)
        if more:
            self._relists_asked += 1
            self._relist_wanted.set()

    def pin(self, key: ObjectKey, obj: Object) -> None:
        """Hold `key` from `obj` (read directly) on, kept or not, until it is deleted (ADDED if new)."""
        self._holding.pinned.add(key)
        if key not in self._store:
            obj = self._ingest(obj)
            self._store.put(key, obj)
            self._emit(Event(EventType.ADDED, key, obj))

    def reflects(self, version: str) -> bool:
        """Whether the store includes every change up to resourceVersion `version` (once listed)."""
        return self.has_synced and version_reached(self.resource_version, version)

    def is_alive(self) -> bool:
        """Whether the loop has shown signs of life recently enough (for /healthz)."""
        return self._clock() - self.last_alive <= self.max_quiet_seconds

    def get(self, key: ObjectKey) -> Object | None:
        return self._store.get(key)

    def objects(self) -> list[Object]:
        return [obj for _, obj in self._store.items()]

    def keys(self) -> list[ObjectKey]:
        return list(self._store.keys())

    def __len__(self) -> int:
        return len(self._store)

    # -- running -----------------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"informer {self.name}")
        return self._task

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def run(self) -> None:
        """List, then watch, forever (until cancelled), relisting whenever events may be lost."""
        failures = 0
        listed_once = False
        must_list = True
        while True:
            self._alive()
            watching = False
            try:
                if must_list:
                    await self._relist()
                    if listed_once:
                        self._count_relist()
                    listed_once = True
                    must_list = False
                    failures = 0
                    self.last_error = None
                watching = True
                # With `keep`, a refilter that may keep more ends the watch for a relist.
                events = await (
                    self._watch() if self._holding.keep is None else unless_set(self._relist_wanted, self._watch())
                )
                if events is None:
                    must_list = True
                    continue
                self._count_restart()  # the server ended the watch cleanly: resume from the last version
                if events == 0:
                    # A server (or proxy) that ends every watch at once must not cause a hot loop.
                    await asyncio.sleep(self._backoff.base)
            except ApiFailure as exc:
                must_list = True
                if watching:
                    self._count_restart()
                    if isinstance(exc, Gone):
                        # Routine: the version we watched from was compacted. Relist right away.
                        _log.info("watch expired, relisting", extra={"informer": self.name, "error": str(exc)})
                        continue
                failures += 1
                # Kept for diagnostics without its traceback, which holds this frame and so `self`:
                # a cycle only the cyclic collector (run rarely by the daemon) would free.
                self.last_error = exc.with_traceback(None)
                delay = self._backoff.delay(failures)
                if isinstance(exc, NotFound) and not listed_once:
                    # Not served yet: usually its CRD is not installed. `retry_now()` cuts the pause
                    # short the moment that CRD appears.
                    _log.warning(
                        "waiting for the resource to be served (is its CRD installed?)",
                        extra={"informer": self.name, "error": str(exc), "retry_in": delay},
                    )
                else:
                    _log.warning(
                        "list/watch failed, relisting after a pause",
                        extra={"informer": self.name, "error": str(exc), "retry_in": delay},
                    )
                self._alive()
                await self._pause(delay)

    def retry_now(self) -> None:
        """End a pause after a failure at once (e.g. the CRD of a resource that was not served appeared)."""
        self._retry_now.set()

    async def _pause(self, delay: float) -> None:
        self._retry_now.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._retry_now.wait(), timeout=delay)

    # -- list --------------------------------------------------------------------------------

    async def _relist(self) -> None:
        asked, refilters = self._relists_asked, self._refilters
        fresh, version = await self._list_all()
        if self._refilters != refilters:  # given up while the list ran
            for key in self._holding.not_held(fresh):
                fresh.pop(key)
        old = self._store
        changes: list[tuple[EventType, ObjectKey]] = []
        for key in fresh.keys():
            before = old.version(key)
            if before is None:
                changes.append((EventType.ADDED, key))
            elif before != fresh.version(key):
                changes.append((EventType.MODIFIED, key))
        # Silent for objects given up by key (another replica holds them); moved out by content: DELETED.
        changes.extend(
            (EventType.DELETED, key) for key in old.keys() if key not in fresh and self._holding.holds(key, None)
        )
        self._store = fresh
        self._holding.pinned = {key for key in self._holding.pinned if key in fresh}
        self.resource_version = version
        # Objects are read for their event only: a compact store never holds the whole list decoded.
        for position, (kind, key) in enumerate(changes):
            if position and position % _EVENTS_PER_TURN == 0:
                await asyncio.sleep(0)  # a list of 100,000 objects must not hold the loop for seconds
            if kind is EventType.DELETED:
                gone = old.get(key)
                if gone is not None:
                    self._emit(Event(kind, key, gone))
                continue
            obj = fresh.get(key)
            if obj is not None:
                self._emit(Event(kind, key, obj, old.get(key) if kind is EventType.MODIFIED else None))
        if self._relists_asked == asked:  # else a refilter during the list wants another
            self._relist_wanted.clear()
        self._synced.set()

    async def _list_all(self) -> tuple[ObjectStore[ObjectKey], str]:
        """Every page of the list, stored as it arrives (decoded, one page at a time)."""
        fresh = self._new_store()
        version = ""
        token = ""
        while True:
            page = await self._collection.list_page(
                limit=self._page_size,
                continue_token=token,
                label_selector=self._label_selector,
                metadata_only=self.metadata_only,
            )
            # Every page of one paginated list carries the same snapshot version; keep the first.
            version = version or page.resource_version
            for item in page.items:
                obj = self._ingest(item)
                key = ObjectKey.of(obj)
                if self._holding.holds(key, obj):
                    fresh.put(key, obj)
            token = page.continue_token
            self._alive()
            if not token:
                return fresh, version

    # -- watch -------------------------------------------------------------------------------

    async def _watch(self) -> int:
        """Follow one watch request to its end; returns how many events it carried."""
        stream = self._collection.watch(
            resource_version=self.resource_version,
            timeout_seconds=self._timeout_seconds,
            # The server closes the stream after timeoutSeconds; a read that waits much longer
            # means the connection died silently.
            read_timeout=self._timeout_seconds + _READ_MARGIN,
            label_selector=self._label_selector,
            metadata_only=self.metadata_only,
        )
        count = 0
        async with contextlib.aclosing(stream) as events:
            async for event in events:
                count += 1
                self._handle(event)
        return count

    def _handle(self, event: WatchEvent) -> None:
        self._alive()
        kind = event.type
        if kind == "BOOKMARK":
            self.resource_version = _version(event.object) or self.resource_version
            return
        obj = self._ingest(event.object)
        version = _version(obj)
        key = ObjectKey.of(obj)
        if not self._holding.holds(key, obj):
            before = self._store.pop(key)  # given up before a refilter came round to it, or moved out
            self.resource_version = version or self.resource_version
            if before is not None and self._holding.holds(key, None):
                self._emit(Event(EventType.DELETED, key, obj, before))
            return
        if kind == "DELETED":
            before = self._store.pop(key)
            self._holding.pinned.discard(key)
            self.resource_version = version or self.resource_version
            self._emit(Event(EventType.DELETED, key, obj, before))
            return
        before = self._store.get(key)
        self._store.put(key, obj)
        self.resource_version = version or self.resource_version
        # The store decides ADDED vs MODIFIED, so a replayed ADDED never looks like a new object.
        self._emit(Event(EventType.ADDED if before is None else EventType.MODIFIED, key, obj, before))

    # -- helpers -----------------------------------------------------------------------------

    def _emit(self, event: Event) -> None:
        for handler in self._handlers:
            try:
                handler(event)
            except Exception:  # a faulty handler must not stop the cache from following changes
                _log.exception("informer event handler failed", extra={"informer": self.name})

    def _alive(self) -> None:
        self.last_alive = self._clock()

    def _count_restart(self) -> None:
        self.restarts += 1
        if self._on_restart is not None:
            self._on_restart()

    def _count_relist(self) -> None:
        self.relists += 1
        if self._on_relist is not None:
            self._on_relist()


def _version(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")
