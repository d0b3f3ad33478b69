"""Informer caches as the controllers read them: shared, indexed, and aware of the servlet's own writes.

Reconciles read only from caches (no GETs in the steady state). Two things make that exact:

- **Own writes.** An informer learns about a write a moment after the server answered it. A
  reconcile of the same object in that moment would plan from the stale copy: add the finalizer
  again (a 409), create the local object again (an AlreadyExists). So `Cache.wrote()` keeps the
  object the server returned as an overlay on top of the cached one until the informer has moved
  past the version the write replaced (or a minute passes, in case the informer never sees it).
- **Sharing.** Several sync workers need the same caches (namespaces, Secrets on both sides, the
  local objects of one CRD). `InformerPool` hands out one `Cache` per source and selector,
  counts its users, and stops the informer when the last one lets go. Each user subscribes its
  own event handler and unsubscribes when it stops (informers themselves cannot forget handlers).

A `Cache` can keep one secondary index (e.g. local primaries by their link labels), fed both by
informer events and by own writes.

Deliberately not here: what an event means to a controller, and any API request.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from typing import Any

import attrs
from attrs import frozen

from servlet.app.runtime.index_sets import IndexSets
from servlet.app.runtime.informer import Informer
from servlet.app.runtime.informer_events import Event, EventType, Handler, Keep, ObjectKey
from servlet.app.runtime.sharded_informer import CacheFeed, ShardedInformer
from servlet.core.ports import WatchSource

Object = dict[str, Any]
IndexFunction = Callable[[Object], Hashable | None]
# Longest time an own write shadows the cache; an informer normally catches up in milliseconds.
OVERLAY_TTL = 60.0
DELETION_REQUESTED = "deletion requested by the servlet"


def resource_version(obj: Object | None) -> str:
    if obj is None:
        return ""
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


@frozen
class _Overlay:
    replaced: str  # resourceVersion of the cached object the write replaced ("" when there was none)
    obj: Object
    until: float


class Cache:
    """Reads over one informer, plus the servlet's own writes not seen by the informer yet."""

    def __init__(
        self,
        informer: CacheFeed,
        *,
        index: IndexFunction | None = None,
        cluster: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.informer = informer
        #: The logical cluster every object of a one-workspace cache carries (kcp sets
        #: `kcp.io/cluster` on all of them, the org workspace's included); "" elsewhere.
        self.cluster = cluster
        self._clock = clock
        self._overlay: dict[ObjectKey, _Overlay] = {}
        self._index_function = index
        self._index: IndexSets[Hashable, ObjectKey] = IndexSets()
        self._subscribers: list[Handler] = []
        informer.add_handler(self._on_event)
        if index is not None:
            for key in informer.keys():
                self._index_add(key, informer.get(key))

    @property
    def name(self) -> str:
        return self.informer.name

    @property
    def synced(self) -> bool:
        return self.informer.has_synced

    @property
    def catching_up(self) -> bool:
        """A share cache that lists again for workspaces this replica just got (`InformerPool.reshare`)."""
        return self.informer.catching_up

    async def wait_synced(self) -> None:
        await self.informer.wait_synced()

    # -- reading -----------------------------------------------------------------------------

    def key(self, name: str, namespace: str = "") -> ObjectKey:
        """The key of an object of this cache's one cluster."""
        return ObjectKey(cluster=self.cluster, namespace=namespace, name=name)

    def get(self, key: ObjectKey) -> Object | None:
        cached = self.informer.get(key)
        pending = self._overlay.get(key)
        if pending is not None:
            if self._ahead(pending, cached):
                return pending.obj
            del self._overlay[key]
            if cached is None:
                self._index_remove(key, pending.obj)
        return cached

    def _ahead(self, pending: _Overlay, cached: Object | None) -> bool:
        """Whether an own write's answer is still newer than what the informer holds."""
        if resource_version(cached) != pending.replaced or self._clock() >= pending.until:
            return False
        # Not held, though the informer has followed every change up to the answer: the object
        # was deleted (or left the informer's view) while its watch was down, and no event will
        # name an object the informer never held.
        return cached is not None or not self.informer.reflects(resource_version(pending.obj))

    def objects(self) -> list[Object]:
        """Every cached object (own writes not included: for counting and orphan checks)."""
        return self.informer.objects()

    def keys(self) -> list[ObjectKey]:
        return self.informer.keys()

    @property
    def pending_writes(self) -> int:
        """Own writes whose answers are kept because the informer has not shown them yet."""
        return len(self._overlay)

    def lookup(self, value: Hashable) -> list[Object]:
        """Objects whose index value is `value`, own writes included (needs an index)."""
        found: list[Object] = []
        for key in sorted(self._index.get(value), key=lambda k: (k.cluster, k.namespace, k.name)):
            obj = self.get(key)
            if obj is not None and self._index_function is not None and self._index_function(obj) == value:
                found.append(obj)
        return found

    # -- own writes ----------------------------------------------------------------------------

    def wrote(self, key: ObjectKey, obj: Object, *, created: bool = False) -> None:
        """Remember what the server answered to a write of `key`, until the informer catches up.

        `created`: the write made the object appear here (a create, or an adoption into a
        label-filtered cache). An update of an object the informer no longer holds (and no own
        write introduced) is not remembered: the informer has seen it deleted meanwhile, and the
        answer must not bring it back.
        """
        cached = self.informer.get(key)
        if cached is None and not created and key not in self._overlay:
            return
        if cached is not None and resource_version(cached) == resource_version(obj) != "":
            # The watch event beat the answer: the informer holds this write already. Kept as an
            # overlay, the answer would be a second copy of the object until it was read again.
            self._overlay.pop(key, None)
            return
        self._remember(key, obj, cached)

    def _remember(self, key: ObjectKey, obj: Object, cached: Object | None) -> None:
        # Measured against the informer, not an earlier overlay: a second write before the
        # informer saw the first still replaces the version the informer holds.
        self._overlay[key] = _Overlay(replaced=resource_version(cached), obj=obj, until=self._clock() + OVERLAY_TTL)
        self._index_add(key, obj)

    def deleting(self, key: ObjectKey) -> None:
        """A delete was sent: until the informer notices, the object reads as being deleted."""
        current = self.get(key)
        if current is None:
            return
        metadata = dict(current.get("metadata") or {})
        metadata.setdefault("deletionTimestamp", DELETION_REQUESTED)
        self._remember(key, {**current, "metadata": metadata}, self.informer.get(key))

    def pin(self, key: ObjectKey, obj: Object) -> None:
        """Hold `obj`, read directly, though this replica's share leaves it out: an object of another
        share in the way of a write (a copy at the name it wanted). Held until it is deleted."""
        self.informer.pin(key, obj)

    def refilter(self, *, more: bool) -> None:
        """The share changed (`Informer.refilter`); the index forgets what the informer dropped."""
        self.informer.refilter(more=more)
        if self._index_function is not None:
            held = set(self.informer.keys())
            self._index.retain(lambda key: key in held or key in self._overlay)

    # -- events ------------------------------------------------------------------------------

    def subscribe(self, handler: Handler) -> Callable[[], None]:
        """Call `handler` for every event of this cache; returns the function that unsubscribes."""
        return subscription(self._subscribers, handler)

    def _on_event(self, event: Event) -> None:
        pending = self._overlay.get(event.key)
        if (
            pending is not None
            and event.type is not EventType.DELETED
            and resource_version(event.obj) == resource_version(pending.obj) != ""
        ):
            event = attrs.evolve(event, own=True)
        if pending is not None and resource_version(event.obj) != pending.replaced:
            del self._overlay[event.key]
        if self._index_function is not None:
            if event.old is not None:
                self._index_remove(event.key, event.old)
            if event.type is EventType.DELETED:
                self._index_remove(event.key, event.obj)
            else:
                self._index_add(event.key, event.obj)
        for handler in list(self._subscribers):
            handler(event)

    def _index_add(self, key: ObjectKey, obj: Object | None) -> None:
        if self._index_function is None or obj is None:
            return
        value = self._index_function(obj)
        if value is not None:
            self._index.add(value, key)

    def _index_remove(self, key: ObjectKey, obj: Object) -> None:
        if self._index_function is None:
            return
        value = self._index_function(obj)
        if value is not None:
            self._index.discard(value, key)


# (source, label selector, compact, keep): compact informers keep objects as JSON bytes
# (`stores.py`); with `keep`, only the objects it keeps.
MakeInformer = Callable[[WatchSource[Any], "str | None", bool, "Keep | None"], Informer]
# The workspace an object of the service cluster belongs to (a copy's label), None if to none.
WorkspaceOf = Callable[[Object], "str | None"]


class InformerPool:
    """One started `Cache` per (source, label selector), shared by reference count.

    A VW resource comes as one source per VW URL (kcp shard); its cache reads the union of one
    informer per source (`ShardedInformer`), or the one informer when there is one URL.

    With `share` (`--buckets`: whether a workspace is in this replica's share), the caches acquired
    with `share=True` (of the virtual workspace) or `share_by` (of the service cluster) hold only
    the objects of those workspaces; `reshare` follows a change.
    """

    def __init__(self, make_informer: MakeInformer, *, share: Callable[[str], bool] | None = None) -> None:
        self._make = make_informer
        self._share = share
        self._caches: dict[tuple[tuple[str, ...], str, str, bool], Cache] = {}
        self._users: dict[tuple[tuple[str, ...], str, str, bool], int] = {}
        self._shared: dict[Cache, bool] = {}  # share caches, and whether of the service cluster

    def acquire(
        self,
        source: WatchSource[Any] | Sequence[WatchSource[Any]],
        *,
        label_selector: str | None = None,
        index: IndexFunction | None = None,
        cluster: str = "",
        compact: bool = False,
        share: bool = False,
        share_by: WorkspaceOf | None = None,
    ) -> Cache:
        """The cache for `source` (started on first use); every acquire needs one `release`.

        `cluster`: the logical cluster of a one-workspace source (see `Cache.cluster`); `compact`: for
        caches of many objects read one at a time; `share`: of a virtual workspace's objects, only
        those of this replica's share of the workspaces; `share_by`: of the service cluster's
        objects, those `share_by` says belong to a workspace of the share, and those it says belong
        to none (the first acquire of a source decides)."""
        sources = (source,) if isinstance(source, WatchSource) else tuple(source)
        first = sources[0]
        locations = tuple(each.collection.location for each in sources)
        key = (locations, first.name, label_selector or "", first.metadata_only)
        cache = self._caches.get(key)
        if cache is None:
            keep = self._keep_of(share=share, share_by=share_by)
            informer: CacheFeed
            if len(sources) == 1:
                informer = self._make(first, label_selector, compact, keep)
            else:
                shards = [self._make(each, label_selector, compact, keep) for each in sources]
                informer = ShardedInformer(shards, name=first.name)
            cache = Cache(informer, index=index, cluster=cluster)
            if share or share_by is not None:
                self._shared[cache] = share_by is not None
            self._caches[key] = cache
            self._users[key] = 0
            informer.start()
        self._users[key] += 1
        return cache

    async def release(self, cache: Cache) -> None:
        for key, held in list(self._caches.items()):
            if held is cache:
                self._users[key] -= 1
                if self._users[key] <= 0:
                    del self._caches[key], self._users[key]
                    self._shared.pop(cache, None)
                    await cache.informer.stop()
                return

    def reshare(self, *, more: bool) -> None:
        """This replica's share changed: share caches drop the workspaces it gave up and, with
        `more` (it got some), list again to find theirs."""
        for cache in self._shared:
            cache.refilter(more=more)

    def shared_objects(self, *, local: bool) -> int:
        """The objects the caches acquired with `share` (`local`: with `share_by`) hold (with
        `--buckets`, this replica's share)."""
        return sum(len(cache.keys()) for cache, of_local in self._shared.items() if of_local == local)

    def _keep_of(self, *, share: bool, share_by: WorkspaceOf | None) -> Keep | None:
        in_share = self._share
        if in_share is None:
            return None
        if share_by is not None:
            return Keep(by_content=lambda obj: (workspace := share_by(obj)) is None or in_share(workspace))
        return Keep(by_key=lambda key: in_share(key.cluster)) if share else None

    def retry_failing(self, name: str) -> None:
        """Every informer named `name` that is pausing after a failure tries again now."""
        for cache in self.caches():
            if cache.name == name and cache.informer.last_error is not None:
                cache.informer.retry_now()

    def caches(self) -> list[Cache]:
        return list(self._caches.values())

    def locations(self) -> list[str]:
        """Every collection an informer of the pool lists and watches (its URL), sorted."""
        return sorted({location for key in self._caches for location in key[0]})

    def alive(self) -> tuple[bool, str]:
        """Liveness: every informer loop has shown signs of life recently."""
        dead = [cache.name for cache in self._caches.values() if not cache.informer.is_alive()]
        return (not dead, f"watch loops not alive: {', '.join(sorted(dead))}" if dead else "")

    async def stop_all(self) -> None:
        caches, self._caches, self._users = list(self._caches.values()), {}, {}
        self._shared.clear()
        for cache in caches:
            await cache.informer.stop()


def subscription(subscribers: list[Handler], handler: Handler) -> Callable[[], None]:
    """Add `handler` to `subscribers`; returns the function that takes it out again."""
    subscribers.append(handler)

    def unsubscribe() -> None:
        if handler in subscribers:
            subscribers.remove(handler)

    return unsubscribe


def caches_ready(caches: tuple[Cache, ...]) -> tuple[bool, str]:
    """A readiness check's answer: whether every cache has synced, else which have not."""
    waiting = [cache.name for cache in caches if not cache.synced]
    return (not waiting, f"caches not synced: {', '.join(waiting)}" if waiting else "")
