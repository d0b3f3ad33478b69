"""The primaries a related event wakes through `spec.related[].watch`, found in the sync worker's caches.

`core.related_watch` says which ownerReferences and selectors count; this module looks the
primaries up, without any API request:

- `byOwner`, origin platform: the remote primary at the reference's name in the event's logical
  cluster (and namespace, for a namespaced primary), one cache read; origin service: the local
  copy at that name, mapped back to its remote object through its link metadata. Either wakes
  only when the primary's uid is the reference's.
- `bySelector`: the primaries each selector matches, kept up to date from the primaries' own
  events (an index per selector: remote primaries by logical cluster, local copies by the remote
  object they belong to), so an event costs a dictionary read, not a scan of every primary.

The logical cluster of a remote event comes from the event's key (where the informer found the
object), never from the object's content: a tenant cannot wake the primaries of another workspace.

Deliberately not here: the primaries that read an object (`links.RelatedIndex`), queueing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from servlet.app.controllers.caches import Cache
from servlet.app.controllers.links import remote_key_of_local
from servlet.app.runtime.informer_events import Event, EventType, ObjectKey
from servlet.core.actions import Side
from servlet.core.context import SyncContext
from servlet.core.model import LabelSelector, RemoteKey, ResourceType
from servlet.core.related_watch import matching, owners_of_type, selectors_of, uid_of, watching


class _RemoteSelections:
    """Remote primaries by selector and logical cluster, for the selectors of origin platform."""

    def __init__(self, selectors: tuple[LabelSelector, ...], remote: Cache) -> None:
        self._selectors = selectors
        self._matches: dict[LabelSelector, dict[str, set[RemoteKey]]] = {selector: {} for selector in selectors}
        if selectors:
            for key in remote.keys():  # once, when the worker starts on a cache another worker filled
                obj = remote.get(key)
                if obj is not None:
                    self._set(_remote_key(key), obj)

    def on_event(self, event: Event) -> None:
        if self._selectors:
            self._set(_remote_key(event.key), None if event.type is EventType.DELETED else event.obj)

    def forget_workspaces(self, gone: Callable[[str], bool]) -> None:
        for clusters in self._matches.values():
            for cluster in [cluster for cluster in clusters if gone(cluster)]:
                del clusters[cluster]

    def primaries(self, selectors: Iterable[LabelSelector], cluster: str) -> set[RemoteKey]:
        found: set[RemoteKey] = set()
        for selector in selectors:
            found |= self._matches.get(selector, {}).get(cluster, set())
        return found

    def _set(self, key: RemoteKey, obj: dict[str, object] | None) -> None:
        matched = matching(self._selectors, obj) if obj is not None else []
        for selector, clusters in self._matches.items():
            keys = clusters.setdefault(key.cluster, set())
            if selector in matched:
                keys.add(key)
            else:
                keys.discard(key)
            if not keys:
                del clusters[key.cluster]


class _LocalSelections:
    """The remote objects whose local copies each selector matches, for the selectors of origin service."""

    def __init__(self, selectors: tuple[LabelSelector, ...], local: Cache, servlet_name: str) -> None:
        self._selectors = selectors
        self._servlet_name = servlet_name
        self._matches: dict[LabelSelector, dict[ObjectKey, RemoteKey]] = {selector: {} for selector in selectors}
        if selectors:
            for key in local.keys():
                obj = local.get(key)
                if obj is not None:
                    self._set(key, obj)

    def on_event(self, event: Event) -> None:
        if self._selectors:
            self._set(event.key, None if event.type is EventType.DELETED else event.obj)

    def primaries(self, selectors: Iterable[LabelSelector]) -> set[RemoteKey]:
        found: set[RemoteKey] = set()
        for selector in selectors:
            found.update(self._matches.get(selector, {}).values())
        return found

    def _set(self, key: ObjectKey, obj: dict[str, object] | None) -> None:
        remote = None if obj is None else remote_key_of_local(obj, servlet_name=self._servlet_name)
        matched = matching(self._selectors, obj) if obj is not None and remote is not None else []
        for selector, copies in self._matches.items():
            if selector in matched and remote is not None:
                copies[key] = remote
            else:
                copies.pop(key, None)


class WatchWakes:
    """The primaries an origin-side related event wakes through `watch` (see the module's docstring)."""

    def __init__(self, *, context: SyncContext, servlet_name: str, remote: Cache, local: Cache) -> None:
        self._context = context
        self._servlet_name = servlet_name
        self._remote = remote
        self._local = local
        related = context.published.spec.related
        self._remote_selections = _RemoteSelections(selectors_of(related, Side.REMOTE), remote)
        self._local_selections = _LocalSelections(selectors_of(related, Side.LOCAL), local, servlet_name)
        self._watching: dict[tuple[Side, ResourceType], tuple[bool, tuple[LabelSelector, ...]]] = {}

    def on_remote(self, event: Event) -> None:
        """A remote primary changed: it may now match a selector, or no longer."""
        self._remote_selections.on_event(event)

    def forget_workspaces(self, gone: Callable[[str], bool]) -> None:
        """With `--buckets`: the remote primaries of workspaces handed back to another replica,
        which the caches dropped without an event."""
        self._remote_selections.forget_workspaces(gone)

    def on_local(self, event: Event) -> None:
        """A local object changed: a copy may now match a selector, or no longer."""
        self._local_selections.on_event(event)

    def primaries(self, side: Side, resource: ResourceType, event: Event) -> set[RemoteKey]:
        answer = self._watching.get((side, resource))
        if answer is None:
            answer = watching(self._context.published.spec.related, side=side, resource=resource)
            self._watching[side, resource] = answer
        by_owner, selectors = answer
        found: set[RemoteKey] = set()
        if by_owner:
            found |= self._owners(side, event)
        if selectors:
            if side is Side.REMOTE:
                found |= self._remote_selections.primaries(selectors, event.key.cluster)
            else:
                found |= self._local_selections.primaries(selectors)
        return found

    def _owners(self, side: Side, event: Event) -> set[RemoteKey]:
        projected = self._context.projected
        primary = projected.remote if side is Side.REMOTE else projected.local
        cache = self._remote if side is Side.REMOTE else self._local
        found: set[RemoteKey] = set()
        for reference in owners_of_type((event.obj, event.old), primary):
            key = ObjectKey(
                cluster=event.key.cluster if side is Side.REMOTE else "",
                namespace=event.key.namespace if primary.namespaced else "",
                name=reference.name,
            )
            obj = cache.get(key)
            if obj is None or uid_of(obj) != reference.uid:
                continue
            if side is Side.REMOTE:
                found.add(_remote_key(key))
            else:
                remote = remote_key_of_local(obj, servlet_name=self._servlet_name)
                if remote is not None:
                    found.add(remote)
        return found


def _remote_key(key: ObjectKey) -> RemoteKey:
    return RemoteKey(cluster=key.cluster, namespace=key.namespace, name=key.name)
