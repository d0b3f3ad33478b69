"""Which remote objects a cache event wakes in a sync worker's queue, and which events it ignores.

- A remote event wakes its object, and the objects refused the local name it computes (a
  contender for the name may have come or gone); a deletion also schedules an orphan scan.
- A local event wakes the remote object of each link it carries (before and after the change),
  and the objects refused that local name.
- A related event wakes the primaries whose last plan read that related object, and, for an
  entry with `watch`, the primaries an origin object names as its owners or whose labels match
  the entry's selector (`related_watch.py`).

An event that only echoes the servlet's own write wakes nothing. One that arrives while its
object is being reconciled is kept in that reconcile's echoes (`object_book.Echoes`) and decided
once the reconcile ends, since its answer, which tells an own write apart, is not known earlier.

Deliberately not here: reconciling, and the queue's own retries and backoff (`queues.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from servlet.app.controllers.caches import Cache, resource_version
from servlet.app.controllers.links import RelatedObjectKey, remote_key_of_local
from servlet.app.controllers.object_book import ObjectBook
from servlet.app.controllers.related_watch import WatchWakes
from servlet.app.controllers.sync_reports import SyncReporter
from servlet.app.runtime.informer_events import Event, EventType
from servlet.app.runtime.workqueue import WorkQueue
from servlet.core.actions import Side
from servlet.core.context import SyncContext
from servlet.core.model import LocalKey, RemoteKey, ResourceType


class SyncWakes:
    """Turns one sync worker's cache events into keys for its `queue` (see the module's docstring)."""

    def __init__(
        self,
        *,
        context: SyncContext,
        servlet_name: str,
        queue: WorkQueue[RemoteKey],
        book: ObjectBook,
        remote: Cache,
        local: Cache,
        reporter: SyncReporter,
        remote_gone: Callable[[], None],
    ) -> None:
        self._context = context
        self._servlet_name = servlet_name
        self._queue = queue
        self._book = book
        self._remote = remote
        self._local = local
        self._reporter = reporter
        self._remote_gone = remote_gone
        self._watch = WatchWakes(context=context, servlet_name=servlet_name, remote=remote, local=local)

    def wake(self, key: RemoteKey, event: Event, cache: Cache) -> None:
        """Queue `key` for `event`, unless the event only echoes this servlet's own write.

        A plan leaves nothing for the next one except related objects, which are planned once the
        local primary exists (plan.py): with related resources, every event is reconciled.
        """
        if self._context.published.spec.related:
            self._queue.add(key)
            return
        if event.own:
            return
        echoes = self._book.echoes(key)
        if echoes is not None and event.type is not EventType.DELETED:
            echoes.events.append((cache.name, resource_version(event.obj)))  # decided when it ends
            return
        self._queue.add(key)

    def on_remote(self, event: Event) -> None:
        names = self._book.names
        key = RemoteKey(cluster=event.key.cluster, namespace=event.key.namespace, name=event.key.name)
        self._watch.on_remote(event)
        self.wake(key, event, self._remote)
        computed = names.name_of(key) if event.type is EventType.DELETED else names.index(key)
        if event.type is EventType.DELETED:
            names.forget(key)
        if computed is not None:
            self.wake_waiting(computed)  # a contender for its name may come or go
        if event.type is EventType.DELETED:
            self._remote_gone()

    def forget_workspaces(self, gone: Callable[[str], bool]) -> None:
        """With `--buckets`: forget the remote objects of workspaces handed back (no event says so)."""
        self._watch.forget_workspaces(gone)

    def on_local(self, event: Event) -> None:
        self._watch.on_local(event)
        for obj in (event.obj, event.old):
            key = None if obj is None else remote_key_of_local(obj, servlet_name=self._servlet_name)
            if key is not None:
                self.wake(key, event, self._local)
        self.wake_waiting(LocalKey(namespace=event.key.namespace, name=event.key.name))
        self._reporter.count_managed(event.key, None if event.type is EventType.DELETED else event.obj)

    def wake_waiting(self, name: LocalKey) -> None:
        """Something happened at a local name: the remote objects refused it try again now."""
        for key in self._book.names.waiting(name):
            self._queue.add(key)

    def related_handler(self, side: Side, resource: ResourceType) -> Callable[[Event], None]:
        def handle(event: Event) -> None:
            related = RelatedObjectKey(
                side=side,
                resource=resource,
                cluster=event.key.cluster if side is Side.REMOTE else "",
                namespace=event.key.namespace,
                name=event.key.name,
            )
            for key in self._book.related.primaries(related):
                self._queue.add(key)
            for key in sorted(
                self._watch.primaries(side, resource, event), key=lambda k: (k.cluster, k.namespace, k.name)
            ):
                self._queue.add(key)

        return handle
