"""Related objects (Secrets, ConfigMaps) as a sync worker reads them: every object's metadata,
the content only of those a primary references.

Why: related kinds are watched in every bound workspace and on the service cluster, and a tenant
can create any number of large Secrets the servlet has no use for. Caching them whole let a
tenant grow the servlet's memory at will. So:

- the informers of related kinds are metadata-only (shared through the pool): they know every
  object's key and resourceVersion, which is what wakes the primaries that reference an object
  (`links.RelatedIndex`) and what tells whether a held copy is still current;
- `RelatedContents` holds the whole object only for objects a primary read in its last plan:
  fetched with one GET the first time, and again only once the informer shows another
  resourceVersion. A converged resync therefore sends no request at all;
- a held copy is dropped when its object changes or goes away, and when no primary reads it any
  more; the answer to the servlet's own write is held as it comes (it is current), so the plan
  after a write needs no GET either.

Deliberately not here: which objects are related (`core.related`), waking primaries (`links.py`)
and planning.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol

import attrs

from servlet.app.controllers.caches import Cache, resource_version
from servlet.app.controllers.links import RelatedObjectKey
from servlet.app.observability.logs import FieldLogger
from servlet.app.runtime.informer_events import Event, EventType, ObjectKey
from servlet.app.runtime.stores import is_partial
from servlet.core.errors import Forbidden
from servlet.core.gather import UNREADABLE, Answer, ObjectAt, ObjectsMatching
from servlet.core.model import ResourceType
from servlet.core.ports import ServiceCluster, VirtualWorkspace, WatchSource, WatchSources
from servlet.core.targets import Side

Object = dict[str, Any]
Fetch = Callable[[ObjectKey], Awaitable["Object | None"]]


class RelatedContents:
    """The whole objects, among those of one metadata-only cache, that primaries read."""

    def __init__(self, cache: Cache, fetch: Fetch) -> None:
        self.cache = cache
        self._fetch = fetch
        self._held: dict[ObjectKey, Object] = {}
        self.unsubscribe = cache.subscribe(self._on_event)

    def __len__(self) -> int:
        return len(self._held)

    def held_keys(self) -> list[ObjectKey]:
        return sorted(self._held, key=lambda k: (k.cluster, k.namespace, k.name))

    async def get(self, key: ObjectKey) -> Object | None:
        """The object at `key` as current as the cache knows it, fetched only when not held."""
        current = self.cache.get(key)
        if current is None:
            self._held.pop(key, None)
            return None
        if not is_partial(current):  # the answer to an own write, ahead of the informer
            self._held[key] = current
            return current
        held = self._held.get(key)
        if held is None or resource_version(held) != resource_version(current):
            held = await self._fetch(key)
            if held is None:  # deleted since the informer last heard of it
                self._held.pop(key, None)
                return None
            held.get("metadata", {}).pop("managedFields", None)
            self._held[key] = held
        return _marked_deleting(held, current)

    def hold(self, key: ObjectKey, obj: Object) -> None:
        """The server's answer to a write of `key`: the object as it is now."""
        self._held[key] = obj

    def forget(self, key: ObjectKey) -> None:
        self._held.pop(key, None)

    def _on_event(self, event: Event) -> None:
        held = self._held.get(event.key)
        if held is not None and (
            event.type is EventType.DELETED or resource_version(held) != resource_version(event.obj)
        ):
            del self._held[event.key]  # stale: the next read fetches it again, if any primary still reads it


def _marked_deleting(held: Object, current: Object) -> Object:
    """`held`, with the deletion mark the cache shows for it (a delete the servlet just sent)."""
    deleting = (current.get("metadata") or {}).get("deletionTimestamp")
    if deleting is None or (held.get("metadata") or {}).get("deletionTimestamp") is not None:
        return held
    return {**held, "metadata": {**held["metadata"], "deletionTimestamp": deleting}}


class AcquireCache(Protocol):
    """How the caches of related kinds are got: `share` for those of the virtual workspace."""

    def __call__(self, source: Sequence[WatchSource[Any]], *, share: bool) -> Cache: ...


class RelatedCaches:
    """The related kinds of one sync worker, on both sides: metadata caches and held contents."""

    def __init__(
        self,
        *,
        types: Iterable[tuple[Side, ResourceType]],
        acquire: AcquireCache,
        sources: WatchSources[Any],
        service: ServiceCluster,
        vw: VirtualWorkspace,
        log: FieldLogger,
    ) -> None:
        self._service = service
        self._vw = vw
        self._log = log
        self.contents: dict[tuple[Side, ResourceType], RelatedContents] = {}
        for side, resource in sorted(set(types), key=lambda t: (t[0].value, t[1].group, t[1].version, t[1].plural)):
            side_sources = (
                (sources.service_source(resource),)
                if side is Side.LOCAL
                else sources.virtual_workspace_sources(resource)  # one per kcp shard
            )
            cache = acquire(
                [attrs.evolve(source, metadata_only=True) for source in side_sources], share=side is Side.REMOTE
            )
            self.contents[(side, resource)] = RelatedContents(cache, self._fetcher(side, resource))

    def __bool__(self) -> bool:
        return bool(self.contents)

    def held(self) -> int:
        """How many whole related objects are held (the rest is known by its metadata only)."""
        return sum(len(contents) for contents in self.contents.values())

    def held_names(self) -> list[tuple[str, str]]:
        """(side, name) of every whole related object held, for diagnostics and tests."""
        return sorted(
            (side.value, key.name) for (side, _), contents in self.contents.items() for key in contents.held_keys()
        )

    def caches(self) -> dict[tuple[Side, ResourceType], Cache]:
        return {where: contents.cache for where, contents in self.contents.items()}

    def unsubscribe(self) -> None:
        for contents in self.contents.values():
            contents.unsubscribe()

    def find(self, side: Side, resource: ResourceType) -> RelatedContents | None:
        return self.contents.get((side, resource))

    async def read(self, read: ObjectAt, watched: list[RelatedObjectKey]) -> Answer:
        """One related object for a plan (`watched` collects what was read); None if not related."""
        contents = self.find(read.side, read.resource)
        if contents is None:
            return None
        watched.append(
            RelatedObjectKey(
                side=read.side, resource=read.resource, cluster=read.cluster, namespace=read.namespace, name=read.name
            )
        )
        try:
            return await contents.get(ObjectKey(cluster=read.cluster, namespace=read.namespace, name=read.name))
        except Forbidden as refused:
            return refused_read(self._log, read, refused)

    def forget(self, unread: Iterable[RelatedObjectKey]) -> None:
        """Drop the contents no primary reads any more."""
        for key in unread:
            contents = self.contents.get((key.side, key.resource))
            if contents is not None:
                contents.forget(ObjectKey.at(key))

    def _fetcher(self, side: Side, resource: ResourceType) -> Fetch:
        if side is Side.LOCAL:

            async def fetch_local(key: ObjectKey) -> Object | None:
                return await self._service.get(resource, namespace=key.namespace, name=key.name)

            return fetch_local

        async def fetch_remote(key: ObjectKey) -> Object | None:
            return await self._vw.get(resource, cluster=key.cluster, namespace=key.namespace, name=key.name)

        return fetch_remote


def refused_read(log: FieldLogger, read: ObjectAt | ObjectsMatching, refused: Forbidden) -> Answer:
    """A read of related objects the API server refused: logged, and answered UNREADABLE so that
    the plan keeps their copies as they are."""
    if isinstance(read, ObjectsMatching):
        message = "cannot list related objects; their copies are kept"
        target = f"{read.resource.plural} in {read.namespace}"
    else:
        message = "cannot read a related object; its copy is kept"
        target = f"{read.resource.plural} {read.namespace}/{read.name}"
    log.warning(message, workspace=read.cluster or None, target=target, reason=str(refused))
    return UNREADABLE
