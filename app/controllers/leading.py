"""The controllers that write, wired together: the leader's, and the sync manager with its workers.

`SharedCaches` are the daemon-wide informer caches (PublishedResources, CRDs, schemas, the export
and its endpoint slice, local namespaces) that every replica keeps warm, leader or not, so a new
leader starts from full caches. `SyncControllers` is the sync manager (which runs the sync
workers) with its queue and the status board its workers report to. `LeadingControllers` is one
term of leadership: the status, schema and export controllers with their work queues. Without
`--buckets` a term also builds and runs its own `SyncControllers`, so only the leader syncs; with
`--buckets` every replica runs one `SyncControllers` for its life (its share of the workspaces,
`sync_env.py`) and the leader's controllers report through its board. `stop()` unsubscribes, lets
in-flight reconciles finish and stops every sync worker it started. A later term builds afresh.

How the controllers wake each other: a PublishedResource or CRD event queues the schema, export
and sync manager reconciles; a published schema queues the export; a changed export or endpoint
slice queues the sync manager; every changed report on the status board queues that
PublishedResource's status write.

Deliberately not here: leader election and process lifecycle (`app/daemon.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from attrs import define, field, frozen

from servlet.app.controllers import apiexport, schemas, syncmanager
from servlet.app.controllers.builtins import BuiltinTypes
from servlet.app.controllers.caches import Cache, InformerPool
from servlet.app.controllers.catalog import Catalog
from servlet.app.controllers.queues import QueueDepths, controller_queue
from servlet.app.controllers.status import StatusBoard, StatusController
from servlet.app.controllers.sync_env import SyncEnvironment
from servlet.app.controllers.sync_tally import SyncShares
from servlet.app.observability.events import EventRecorder
from servlet.app.observability.logs import FieldLogger
from servlet.app.observability.metrics import Metrics
from servlet.app.runtime.buckets import BucketCoordinator
from servlet.app.runtime.informer_events import Event, EventType
from servlet.app.runtime.workqueue import WorkQueue
from servlet.core.ports import (
    ActionExecutor,
    OrgWorkspace,
    ServiceCluster,
    VirtualWorkspace,
    VirtualWorkspaceLocation,
    WatchSources,
)

STATUS_COALESCE_SECONDS = 0.2


@frozen
class SharedCaches:
    published: Cache
    crds: Cache
    schemas: Cache
    exports: Cache
    slices: Cache
    local_namespaces: Cache

    def all(self) -> tuple[Cache, ...]:
        return (self.published, self.crds, self.schemas, self.exports, self.slices, self.local_namespaces)


@frozen
class Options:
    delete_orphans: bool = False
    resync_period: float | None = 600.0
    sync_workers: int = 4


@define
class Shared:
    """Everything a term of leadership uses and that outlives it."""

    servlet_name: str
    export_name: str
    catalog: Catalog
    caches: SharedCaches
    pool: InformerPool
    sources: WatchSources[Any]
    location: VirtualWorkspaceLocation
    org: OrgWorkspace
    service: ServiceCluster
    vw: VirtualWorkspace
    executor: ActionExecutor
    metrics: Metrics
    depths: QueueDepths
    log: FieldLogger
    now: Callable[[], str]
    options: Options = Options()
    events: EventRecorder | None = None
    # `--apiexportendpointslice`; None: the slice named like the export.
    endpoint_slice: syncmanager.EndpointSliceUse | None = None
    # The CRDs of built-in types PublishedResources name; None: built-in types are not looked up.
    builtins: BuiltinTypes | None = None
    # Workspaces last read from a VW URL that left the endpoint slice: kept for the process's life,
    # so a later term of leadership does not judge their copies orphans either.
    unreadable_workspaces: set[str] = field(factory=set)


def _queue(
    shared: Shared, controller: str, handler: Callable[[str], Any], keys: Callable[[], list[str]]
) -> WorkQueue[str]:
    resync = shared.options.resync_period
    return controller_queue(
        controller=controller,
        name=controller,
        handler=handler,
        metrics=shared.metrics,
        depths=shared.depths,
        log=shared.log.bind(controller=controller),
        resync_every=resync,
        resync_keys=keys if resync else None,
    )


class SyncControllers:
    """The sync manager and its workers; with `buckets`, for this replica's share of the workspaces."""

    def __init__(
        self,
        shared: Shared,
        *,
        buckets: BucketCoordinator | None = None,
        shares: SyncShares | None = None,
        executor: ActionExecutor | None = None,
    ) -> None:
        self._shared = shared
        caches = shared.caches
        options = shared.options
        self.board = StatusBoard()
        env = SyncEnvironment(
            servlet_name=shared.servlet_name,
            pool=shared.pool,
            sources=shared.sources,
            executor=executor or shared.executor,
            service=shared.service,
            vw=shared.vw,
            board=self.board,
            metrics=shared.metrics,
            depths=shared.depths,
            log=shared.log,
            local_namespaces=caches.local_namespaces,
            delete_orphans=options.delete_orphans,
            resync_period=options.resync_period,
            workers=options.sync_workers,
            events=shared.events,
            unreadable_workspaces=shared.unreadable_workspaces,
            buckets=buckets,
            shares=shares,
        )
        self.manager = syncmanager.SyncManager(
            export_name=shared.export_name,
            catalog=shared.catalog,
            exports=caches.exports,
            slices=caches.slices,
            endpoint_slice=shared.endpoint_slice,
            location=shared.location,
            env=env,
            board=self.board,
            log=shared.log.bind(controller=syncmanager.CONTROLLER),
        )
        self.sync_queue = _queue(shared, syncmanager.CONTROLLER, self.manager.reconcile, lambda: [syncmanager.KEY])
        self._unsubscribe: list[Callable[[], None]] = []
        self._owned: frozenset[int] = frozenset()

    def start(self) -> None:
        caches = self._shared.caches
        self._unsubscribe = [
            caches.published.subscribe(self._on_published),
            *(cache.subscribe(self._wake) for cache in (caches.crds, caches.schemas, caches.exports, caches.slices)),
        ]
        self.sync_queue.start()
        self.sync_queue.add(syncmanager.KEY)

    async def stop(self, *, timeout: float = 5.0) -> None:
        """Stop taking work, let in-flight reconciles finish, stop every sync worker."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        await self.sync_queue.shutdown(timeout=timeout)
        await self.manager.stop()

    def owned(self, buckets: frozenset[int]) -> None:
        """The coordinator's news (`on_owned`): the caches of the virtual workspace drop the
        workspaces of buckets handed back and list again for those of buckets just got, whose
        objects the workers then queue; the workers forget what they knew of the others."""
        got, gone, self._owned = buckets - self._owned, self._owned - buckets, buckets
        self._shared.pool.reshare(more=bool(got))
        if gone:
            self.manager.give_up(gone)
        if got:
            self.manager.claim(got)
            self.sync_queue.add(syncmanager.KEY)

    def _wake(self, _: Event) -> None:
        self.sync_queue.add(syncmanager.KEY)

    def _on_published(self, event: Event) -> None:
        if event.type is EventType.DELETED:
            name = event.key.name
            self.board.forget(name)
            self._shared.catalog.forget(name, str((event.obj.get("metadata") or {}).get("uid") or ""))
        self.sync_queue.add(syncmanager.KEY)


class LeadingControllers:
    """One term of leadership: status, schema and export controllers, and the sync manager's unless
    `sync` (with `--buckets`, the one every replica runs) is given."""

    def __init__(self, shared: Shared, sync: SyncControllers | None = None) -> None:
        self._shared = shared
        caches = shared.caches
        catalog = shared.catalog
        self._own_sync = sync is None
        self.sync = sync if sync is not None else SyncControllers(shared)
        self.board = self.sync.board
        self.status = StatusController(
            board=self.board,
            published=caches.published,
            service=shared.service,
            now=shared.now,
            log=shared.log.bind(controller="status"),
            events=shared.events,
        )
        self.schemas = schemas.SchemaController(
            catalog=catalog,
            schemas=caches.schemas,
            org=shared.org,
            board=self.board,
            on_published=lambda: self.export_queue.add(apiexport.KEY),
            log=shared.log.bind(controller=schemas.CONTROLLER),
        )
        self.export = apiexport.ExportController(
            name=shared.export_name,
            catalog=catalog,
            schemas=caches.schemas,
            exports=caches.exports,
            org=shared.org,
            board=self.board,
            on_exported=lambda: self.sync_queue.add(syncmanager.KEY),
            log=shared.log.bind(controller=apiexport.CONTROLLER),
        )
        self.status_queue = _queue(shared, "status", self.status.reconcile, catalog.names)
        self.schema_queue = _queue(shared, schemas.CONTROLLER, self.schemas.reconcile, catalog.names)
        self.export_queue = _queue(shared, apiexport.CONTROLLER, self.export.reconcile, lambda: [apiexport.KEY])
        self._unsubscribe: list[Callable[[], None]] = []

    @property
    def shared(self) -> Shared:
        return self._shared

    @property
    def manager(self) -> syncmanager.SyncManager:
        return self.sync.manager

    @property
    def sync_queue(self) -> WorkQueue[str]:
        return self.sync.sync_queue

    @property
    def queues(self) -> tuple[WorkQueue[str], ...]:
        return (self.schema_queue, self.export_queue, self.sync_queue, self.status_queue)

    def start(self) -> None:
        caches = self._shared.caches
        if self._own_sync:
            self.sync.start()
        # Reports come in bursts (a new PublishedResource touches every condition within
        # milliseconds): waiting a moment turns a burst into one status write.
        self._unsubscribe = [
            self.board.on_change(lambda name: self.status_queue.add_after(name, STATUS_COALESCE_SECONDS)),
            caches.published.subscribe(self._on_published),
            caches.crds.subscribe(self._on_crd),
            caches.schemas.subscribe(self._on_schema),
            caches.exports.subscribe(self._on_export),
        ]
        if self._shared.builtins is not None:
            self._unsubscribe.append(self._shared.builtins.subscribe(self._on_crd))
        for work in (self.schema_queue, self.export_queue, self.status_queue):
            work.start()
        for name in self._shared.catalog.names():
            self.schema_queue.add(name)
            if not self._own_sync:  # the board outlives terms: a new leader writes what it holds
                self.status_queue.add(name)
        self.export_queue.add(apiexport.KEY)

    async def stop(self, *, timeout: float = 5.0) -> None:
        """Stop taking work, let in-flight reconciles finish, stop every sync worker it started."""
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        self._unsubscribe = []
        own = (self.sync.stop(timeout=timeout),) if self._own_sync else ()
        await asyncio.gather(
            *(work.shutdown(timeout=timeout) for work in (self.schema_queue, self.export_queue, self.status_queue)),
            *own,
        )

    # -- events --------------------------------------------------------------------------------

    def _on_published(self, event: Event) -> None:
        name = event.key.name
        if event.type is EventType.DELETED:
            self.board.forget(name)
            self._shared.catalog.forget(name, str((event.obj.get("metadata") or {}).get("uid") or ""))
        else:
            self.status_queue.add(name)
        self.schema_queue.add(name)
        self.export_queue.add(apiexport.KEY)

    def _on_crd(self, event: Event) -> None:
        for name in self.schemas.keys_for_crd(event):
            self.schema_queue.add(name)
        self.export_queue.add(apiexport.KEY)

    def _on_schema(self, event: Event) -> None:
        for name in self.schemas.keys_for_schema(event):
            self.schema_queue.add(name)
        self.export_queue.add(apiexport.KEY)

    def _on_export(self, event: Event) -> None:
        self.export_queue.add(apiexport.KEY)
