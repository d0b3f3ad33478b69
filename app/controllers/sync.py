"""The `sync` controller: one PublishedResource's objects, kept in sync between kcp and the service cluster.

A `SyncWorker` runs for one PublishedResource whose schema is exported. It watches (through the
shared informer pool):

- the projected resource across every workspace that binds the export (the VW wildcard);
- the local copies of this servlet (label `syncer.kdp.k8c.io/servlet=<name>`), indexed by their
  link labels;
- local namespaces, and when the PublishedResource has related resources, the related kinds on
  both sides (metadata only: the content of the few objects primaries reference is held apart,
  `related_contents.py`) plus the workspaces' namespaces.

Its queue is keyed by remote object. A reconcile gathers the planner's inputs from those caches
only (`core.gather`, the same reads `servlet plan` makes; never a GET in the steady state), asks
`core.plan.plan_object` for the actions, executes them in order, stopping at the first failure
(the queue retries with backoff), and plans again until a plan writes nothing. Each write's
answer is remembered in the cache (`Cache.wrote`), so the next plan starts from it. The local
cache holds every object of the local type, not only this servlet's copies, so an object in the
way of a create is known before anything is written. A plan that waits (a local copy being
deleted) or reports a conflict is planned again with backoff, and a conflict also as soon as an
event touches the local name it wants.

Local and related events are mapped back to the remote object they belong to (`links.py`), so a
change on either side reconciles the right object promptly. A second, one-key queue looks for
orphans (local copies whose remote object is gone for good): reported in logs and the
`servlet_orphaned_objects` metric, deleted only with `--delete-orphans`.

Deliberately not here: deciding anything (the core), starting and stopping workers (the sync
manager), and API details (the executor).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from attrs import define, field, frozen

from servlet.adapters.errors import AlreadyExists
from servlet.app.controllers.caches import Cache, InformerPool, resource_version
from servlet.app.controllers.fights import FightTracker
from servlet.app.controllers.names import LocalNames
from servlet.app.controllers.orphan_scan import OrphanScan
from servlet.app.controllers.links import (
    RelatedIndex,
    RelatedObjectKey,
    link_value,
    remote_key_of_local,
)
from servlet.app.controllers.queues import QueueDepths, Requeue, controller_queue
from servlet.app.controllers.related_contents import RelatedCaches
from servlet.app.controllers.sync_reads import SnapshotReader
from servlet.app.controllers.status import StatusBoard
from servlet.app.observability.logs import FieldLogger
from servlet.app.observability.metrics import Metrics
from servlet.app.runtime.informer import Event, EventType, ObjectKey
from servlet.app.runtime.workqueue import WorkQueue
from servlet.core import metadata
from servlet.core.actions import (
    NAMESPACE_TYPE,
    Action,
    AddFinalizer,
    Adopt,
    Conflict,
    Create,
    CreateNamespace,
    CreateRelated,
    DeleteLocal,
    DeleteRelated,
    Error,
    ObjectRef,
    Patch,
    PatchRelated,
    PatchRemoteStatus,
    RecordRelatedState,
    Release,
    RemoveFinalizer,
    Side,
)
from servlet.core.conditions import Condition, ConditionType
from servlet.core.gather import computed_local_key
from servlet.core.keys import remote_key_of
from servlet.core.model import LocalKey, RelatedKind, RemoteKey
from servlet.core.plan import ObjectPlan, SyncContext, plan_object
from servlet.core.ports import ActionExecutor, ServiceCluster, VirtualWorkspace, WatchSources
from servlet.core.releases import finalizer_releases

CONTROLLER = "sync"
ORPHANS_KEY = "orphans"
# A remote deletion is followed by the local one within moments; looking for orphans a little
# later avoids reporting a copy that is about to go anyway.
ORPHAN_SCAN_DELAY = 2.0
# Plans executed in one reconcile before it yields to other objects: a fresh object with
# related resources needs three; more means something keeps changing under the plan.
PLANS_PER_RECONCILE = 8
# A create that meets an object the cache does not hold yet: plan again once the watch caught up.
ALREADY_EXISTS_RETRY = 0.5


@define
class SyncEnvironment:
    """What every sync worker shares: identity, connections, caches, reporting, options."""

    servlet_name: str
    pool: InformerPool
    sources: WatchSources[Any]
    executor: ActionExecutor
    service: ServiceCluster
    vw: VirtualWorkspace
    board: StatusBoard
    metrics: Metrics
    depths: QueueDepths
    log: FieldLogger
    local_namespaces: Cache
    delete_orphans: bool = False
    resync_period: float | None = None
    workers: int = 4
    # One namespace creation at a time per namespace, across all workers: in a burst of new
    # objects from a new workspace, the first creates the namespace and the others see it.
    namespace_locks: dict[tuple[Side, ObjectKey], asyncio.Lock] = field(factory=dict)


@frozen
class Report:
    """A conflict or error of a plan, as remembered to report it once."""

    type: str
    target: ObjectRef | None
    identifier: str
    reason: str


def object_key(key: RemoteKey) -> ObjectKey:
    return ObjectKey(cluster=key.cluster, namespace=key.namespace, name=key.name)


def target_key(target: ObjectRef) -> ObjectKey:
    return ObjectKey(cluster=target.cluster if target.side is Side.REMOTE else "", namespace=target.namespace,
                     name=target.name)


def _describe(key: RemoteKey) -> str:
    return f"{key.namespace}/{key.name}" if key.namespace else key.name


@define
class _Echoes:
    """The events of one remote object that arrived while it was being reconciled, as (cache,
    resourceVersion), and the answers to that reconcile's own writes.

    A watch event of the servlet's own write usually arrives before the write's answer, so it
    cannot be recognised on arrival; once the reconcile is over, an event whose version is one the
    reconcile wrote brought nothing that reconcile did not plan from.
    """

    events: list[tuple[str, str]] = field(factory=list)
    written: set[tuple[str, str]] = field(factory=set)

    def only_own(self) -> bool:
        return all(event in self.written for event in self.events)


class SyncWorker:
    """Syncs the objects of one PublishedResource (`context`) until stopped."""

    def __init__(self, *, name: str, context: SyncContext, env: SyncEnvironment, orphans: bool = True) -> None:
        self.name = name
        self.context = context
        self._env = env
        #: Whether orphan detection runs: off while another PublishedResource shares the local
        #: resource, because then a local copy of the other one would look orphaned here.
        self.orphans_enabled = orphans
        self._log = env.log.bind(controller=CONTROLLER, published_resource=name)
        self._related_index = RelatedIndex()
        self._caches: list[Cache] = []
        self._unsubscribe: list[Callable[[], None]] = []
        self._remote_namespaces: Cache | None = None
        self._names = LocalNames(lambda key: computed_local_key(context, key))
        self._managed: set[ObjectKey] = set()
        self._in_flight: dict[RemoteKey, _Echoes] = {}
        # Conflicts and errors already reported per remote object: each is logged and counted when
        # it appears, not again on every reconcile that finds it still there.
        self._known_reports: dict[RemoteKey, frozenset[Report]] = {}
        self._fights = FightTracker(clock=time.monotonic)
        self._task: asyncio.Task[None] | None = None
        self._started = False
        projected = context.projected
        self._remote = self._acquire(env.sources.virtual_workspace_source(projected.remote))
        # Every object of the local type, not only this servlet's copies: what sits at a computed
        # local name must be known before the remote object gets a finalizer (a conflict writes nothing).
        self._local = self._acquire(env.sources.service_source(projected.local), index=link_value)
        self.related = RelatedCaches(
            kinds=(item.kind for item in context.published.spec.related), acquire=self._acquire,
            sources=env.sources, service=env.service, vw=env.vw, log=self._log)
        if self.related:
            self._remote_namespaces = self._acquire(env.sources.virtual_workspace_source(NAMESPACE_TYPE))
        self._reader = SnapshotReader(
            context=context, remote=self._remote, local=self._local, names=self._names, related=self.related,
            local_namespaces=env.local_namespaces, remote_namespaces=self._remote_namespaces,
            service=env.service, vw=env.vw, log=self._log)
        self._orphans = OrphanScan(
            name=name, context=context, remote=self._remote, local=self._local, remote_keys=self._remote_keys,
            executor=env.executor, metrics=env.metrics, log=self._log, delete=env.delete_orphans)
        queue_name = f"sync/{name}"
        self.queue: WorkQueue[RemoteKey] = controller_queue(
            controller=CONTROLLER, name=queue_name, handler=self._reconcile, metrics=env.metrics, depths=env.depths,
            log=self._log, workers=env.workers,
            resync_every=env.resync_period, resync_keys=self._remote_keys if env.resync_period else None,
        )
        self._orphan_queue: WorkQueue[str] = controller_queue(
            controller=CONTROLLER, name=f"{queue_name}/orphans", handler=self._scan_orphans, metrics=env.metrics,
            depths=env.depths, log=self._log,
            resync_every=env.resync_period, resync_keys=(lambda: [ORPHANS_KEY]) if env.resync_period else None,
        )
        self._unsubscribe.append(self._remote.subscribe(self._on_remote))
        self._unsubscribe.append(self._local.subscribe(self._on_local))
        for (side, kind), cache in self.related.caches().items():
            self._unsubscribe.append(cache.subscribe(self._related_handler(side, kind)))
        self._unsubscribe.append(self.related.unsubscribe)

    # -- lifecycle -----------------------------------------------------------------------------

    def _acquire(self, source: Any, *, label_selector: str | None = None, index: Any = None) -> Cache:
        cache = self._env.pool.acquire(source, label_selector=label_selector, index=index)
        self._caches.append(cache)
        return cache

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name=f"sync worker {self.name}")

    @property
    def caches(self) -> list[Cache]:
        return [*self._caches, self._env.local_namespaces]

    @property
    def synced(self) -> bool:
        return all(cache.synced for cache in self.caches)

    async def _run(self) -> None:
        env = self._env
        env.board.report(self.name, Condition.false(
            ConditionType.SYNCING, reason="CachesNotSynced",
            message=f"waiting for the caches of {self._describe_resources()} to fill"))
        await asyncio.gather(*(cache.wait_synced() for cache in self.caches))
        self.queue.start()
        self._orphan_queue.start()
        self._started = True
        for remote in self._remote.objects():
            self._names.index(remote_key_of(remote))
        for obj in self._local.objects():
            self._count_managed(ObjectKey(cluster="", namespace=obj["metadata"].get("namespace", ""),
                                          name=obj["metadata"]["name"]), obj)
        for key in self._remote_keys():
            self.queue.add(key)
        self._orphan_queue.add(ORPHANS_KEY)
        self._update_managed()
        env.board.report(self.name, Condition.true(
            ConditionType.SYNCING, reason="Syncing", message=f"syncing {self._describe_resources()}"))
        self._log.info("sync worker started", remote=self.context.projected.remote.api_version,
                       local=self.context.projected.local.api_version)

    async def stop(self, *, timeout: float = 5.0) -> None:
        """Stop taking work, let in-flight reconciles finish (up to `timeout`), release the caches."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for unsubscribe in self._unsubscribe:
            unsubscribe()
        await asyncio.gather(self.queue.shutdown(timeout=timeout), self._orphan_queue.shutdown(timeout=timeout))
        for cache in self._caches:
            await self._env.pool.release(cache)
        for queue in (self.queue.name, self._orphan_queue.name):
            self._env.depths.forget(controller=CONTROLLER, queue=queue)
        self._env.metrics.forget_published_resource(self.name)
        self._log.info("sync worker stopped")

    def releases(self) -> list[Release]:
        """Taking the servlet's finalizer off every remote object that has it, from the cache.

        For a PublishedResource that was deleted: nothing will clean up for these objects any more,
        so a finalizer left on them would block their deletion forever. Local copies are kept.
        """
        return finalizer_releases(self._remote.objects(), resource=self.context.projected.remote)

    def _describe_resources(self) -> str:
        projected = self.context.projected
        return (f"{projected.remote.plural}.{projected.remote.group} in every workspace and "
                f"{projected.local.plural}.{projected.local.group} on the service cluster")

    # -- events --------------------------------------------------------------------------------

    def _remote_keys(self) -> list[RemoteKey]:
        return [RemoteKey(cluster=k.cluster, namespace=k.namespace, name=k.name) for k in self._remote.keys()]

    def _wake(self, key: RemoteKey, event: Event, cache: Cache) -> None:
        """Queue `key` for `event`, unless the event only echoes this servlet's own write.

        A plan leaves nothing for the next one except related objects, which are planned once the
        local primary exists (plan.py): with related resources, every event is reconciled.
        """
        if self.context.published.spec.related:
            self.queue.add(key)
            return
        if event.own:
            return
        in_flight = self._in_flight.get(key)
        if in_flight is not None and event.type is not EventType.DELETED:
            in_flight.events.append((cache.name, resource_version(event.obj)))  # decided when it ends
            return
        self.queue.add(key)

    def _on_remote(self, event: Event) -> None:
        key = RemoteKey(cluster=event.key.cluster, namespace=event.key.namespace, name=event.key.name)
        self._wake(key, event, self._remote)
        computed = self._names.name_of(key) if event.type is EventType.DELETED else self._names.index(key)
        if event.type is EventType.DELETED:
            self._names.forget(key)
        if computed is not None:
            self._wake_waiting(computed)  # a contender for its name may come or go
        if event.type is EventType.DELETED and self._started:
            self._orphan_queue.add_after(ORPHANS_KEY, ORPHAN_SCAN_DELAY)

    def _on_local(self, event: Event) -> None:
        for obj in (event.obj, event.old):
            key = None if obj is None else remote_key_of_local(obj, servlet_name=self._env.servlet_name)
            if key is not None:
                self._wake(key, event, self._local)
        self._wake_waiting(LocalKey(namespace=event.key.namespace, name=event.key.name))
        self._count_managed(event.key, None if event.type is EventType.DELETED else event.obj)

    def _wake_waiting(self, name: LocalKey) -> None:
        """Something happened at a local name: the remote objects refused it try again now."""
        for key in self._names.waiting(name):
            self.queue.add(key)

    def _count_managed(self, key: ObjectKey, obj: dict[str, Any] | None) -> None:
        """Keep the managed-objects gauge: the local objects carrying this servlet's label."""
        mine = obj is not None and ((obj.get("metadata") or {}).get("labels") or {}).get(
            metadata.SERVLET_LABEL) == self._env.servlet_name
        if mine:
            self._managed.add(key)
        else:
            self._managed.discard(key)
        if self._started:
            self._update_managed()

    def _related_handler(self, side: Side, kind: RelatedKind) -> Callable[[Event], None]:
        def handle(event: Event) -> None:
            related = RelatedObjectKey(side=side, kind=kind, cluster=event.key.cluster if side is Side.REMOTE else "",
                                       namespace=event.key.namespace, name=event.key.name)
            for key in self._related_index.primaries(related):
                self.queue.add(key)

        return handle

    def _update_managed(self) -> None:
        self._env.metrics.set_managed_objects(published_resource=self.name, count=len(self._managed))

    # -- reconcile -----------------------------------------------------------------------------

    async def _reconcile(self, key: RemoteKey) -> None:
        echoes = self._in_flight[key] = _Echoes()
        try:
            await self._reconcile_once(key)
        finally:
            del self._in_flight[key]
            if not echoes.only_own():
                self.queue.add(key)  # still being processed: the queue runs it again right after

    async def _reconcile_once(self, key: RemoteKey) -> None:
        """Plan, execute and plan again until a plan writes nothing (or waits, or conflicts)."""
        if not self.synced:
            raise Requeue("caches are not synced yet")
        for _ in range(PLANS_PER_RECONCILE):
            remote = self._remote.get(object_key(key))
            if remote is None:
                # Gone for good; a copy left behind is an orphan, which the orphan scan handles.
                self.related.forget(self._related_index.forget(key))
                self._known_reports.pop(key, None)
                self._fights.forget(key)
                self._names.forget(key)
                return
            plan = await self._plan(key, remote)
            reports = await self._execute(key, plan)
            if reports:
                self._known_reports[key] = frozenset(reports)
            else:
                self._known_reports.pop(key, None)
            conflict = next((report.target for report in reports
                             if report.type == Conflict.type and report.target is not None
                             and report.target.resource == self.context.projected.local), None)
            self._names.wait(key, None if conflict is None else LocalKey(conflict.namespace, conflict.name))
            if plan.waiting:
                raise Requeue(plan.waiting)
            if conflict is not None:
                raise Requeue("the local name is taken; trying again with backoff and when it is freed", after=0)
            if not plan.writes:
                return
        raise Requeue(f"still writing after {PLANS_PER_RECONCILE} plans; planning again later")

    async def _plan(self, key: RemoteKey, remote: dict[str, Any]) -> ObjectPlan:
        watched: list[RelatedObjectKey] = []
        inputs = await self._reader.inputs(remote, watched)
        if self.context.published.spec.related:
            self.related.forget(self._related_index.set(key, watched))
        return plan_object(context=self.context, inputs=inputs)

    async def _execute(self, key: RemoteKey, plan: ObjectPlan) -> list[Report]:
        """Execute the plan's actions in order; its conflicts and errors (reported, never written)."""
        reports: list[Report] = []
        for action in plan.actions:
            if isinstance(action, (Conflict, Error)):
                reports.append(self._report(key, action))
                continue
            if isinstance(action, CreateNamespace):
                await self._create_namespace(key, action)
                continue
            if isinstance(action, Patch):
                self._hold_back_in_a_fight(key, action)
            try:
                result = await self._env.executor.execute(action)
            except AlreadyExists as error:
                if not isinstance(action, Create):
                    raise
                # Created by someone else a moment ago: the local cache will show it; plan again then.
                raise Requeue(f"{action.target.namespace}/{action.target.name} appeared before the create",
                              after=ALREADY_EXISTS_RETRY) from error
            self._remember(key, action, result)
            if isinstance(action, Patch):
                self._fights.sent(key)
            self._log.info("synced", object=_describe(key), workspace=key.cluster, action=action.type,
                           target=action.target.to_dict())
        return reports

    def _hold_back_in_a_fight(self, key: RemoteKey, action: Patch) -> None:
        """Raise Requeue while another writer keeps undoing this very correction (`fights.py`)."""
        verdict = self._fights.consider(key, action.patch)
        if verdict.started:
            self._env.metrics.count_sync_fight(published_resource=self.name)
            self._log.warning("another writer keeps changing the local copy back; backing off",
                              object=_describe(key), workspace=key.cluster, target=action.target.to_dict(),
                              fields=sorted(k for k in action.patch if k != "metadata"), wait=round(verdict.wait, 1))
        if verdict.wait > 0:
            raise Requeue(f"backing off a fight over {_describe(key)}", after=verdict.wait)

    def _report(self, key: RemoteKey, action: Conflict | Error) -> Report:
        """Log and count a conflict or error the first time it shows up for this remote object."""
        report = Report(type=action.type, target=action.target, identifier=action.identifier, reason=action.reason)
        where = action.target.to_dict() if action.target is not None else None
        if report in self._known_reports.get(key, frozenset()):
            self._log.debug("still not writing", object=_describe(key), workspace=key.cluster, action=action.type,
                            target=where)
            return report
        if isinstance(action, Conflict):
            self._env.metrics.count_sync_conflict(published_resource=self.name)
            self._log.warning("conflict: not writing", object=_describe(key), workspace=key.cluster,
                              action=action.type, target=where, identifier=action.identifier or None,
                              reason=action.reason)
        else:
            self._env.metrics.count_error(controller=CONTROLLER, kind="plan")
            self._log.warning("cannot sync", object=_describe(key), workspace=key.cluster, action=action.type,
                              target=where, field=action.field or None, identifier=action.identifier or None,
                              reason=action.reason)
        return report

    async def _create_namespace(self, remote: RemoteKey, action: CreateNamespace) -> None:
        """Create a namespace unless a concurrent reconcile just did (the cache says so)."""
        key = target_key(action.target)
        cache = self._cache_for(action.target)
        lock = self._env.namespace_locks.setdefault((action.target.side, key), asyncio.Lock())
        async with lock:
            if cache is not None and cache.get(key) is not None:
                return
            result = await self._env.executor.execute(action)
            self._remember(remote, action, result)
            self._log.info("synced", object=_describe(remote), workspace=remote.cluster, action=action.type,
                           target=action.target.to_dict())

    def _remember(self, remote: RemoteKey, action: Action, result: dict[str, Any] | None) -> None:
        """Put the server's answer into the cache it belongs to, so the next plan starts from it."""
        target = action.target
        if target is None:
            return
        cache = self._cache_for(target)
        if cache is None:
            return
        in_flight = self._in_flight.get(remote)
        if in_flight is not None and result is not None:
            in_flight.written.add((cache.name, resource_version(result)))
        key = target_key(target)
        related = self.related.find(target.side, target.resource)
        if related is not None and result is not None and isinstance(action, (CreateRelated, PatchRelated)):
            related[1].hold(key, result)
        if isinstance(action, (DeleteLocal, DeleteRelated)):
            cache.deleting(key)
        elif isinstance(action, CreateNamespace):
            cache.wrote(key, result or {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": target.name}},
                        created=True)
        elif result is not None and isinstance(action, (Create, CreateRelated, Adopt)):
            cache.wrote(key, result, created=True)
        elif result is not None and isinstance(action, (
                AddFinalizer, RemoveFinalizer, Release, PatchRemoteStatus, Patch, RecordRelatedState, PatchRelated)):
            cache.wrote(key, result)

    def _cache_for(self, target: ObjectRef) -> Cache | None:
        projected = self.context.projected
        if target.resource == NAMESPACE_TYPE:
            return self._env.local_namespaces if target.side is Side.LOCAL else self._remote_namespaces
        if target.side is Side.REMOTE and target.resource == projected.remote:
            return self._remote
        if target.side is Side.LOCAL and target.resource == projected.local:
            return self._local
        related = self.related.find(target.side, target.resource)
        return None if related is None else related[1].cache

    # -- orphans -------------------------------------------------------------------------------

    async def _scan_orphans(self, _: str) -> None:
        await self._orphans.scan(enabled=self.orphans_enabled)
