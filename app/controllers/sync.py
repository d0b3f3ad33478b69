"""The `sync` controller: one PublishedResource's objects, kept in sync between kcp and the service cluster.

A `SyncWorker` runs for one PublishedResource whose schema is exported. It watches (through the
shared informer pool):

- the projected resource across every workspace that binds the export (the VW wildcard of each
  kcp shard's URL, read as one cache);
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

The worker itself wires its parts together and runs the reconcile loop; each part has a module:
which objects an event wakes (`sync_events.py`), the reads (`sync_reads.py`), executing a plan
(`sync_execution.py`), logs and metrics (`sync_reports.py`), what is remembered per remote object
(`object_book.py`), the `Synced` condition (`sync_tally.py`), and the orphan scan (`orphan_scan.py`).

Deliberately not here: deciding anything (the core), starting and stopping workers (the sync
manager), and API details (the executor).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from servlet.app.controllers.caches import Cache
from servlet.app.controllers.links import RelatedObjectKey, link_value, workspace_of_copy
from servlet.app.controllers.object_book import ObjectBook
from servlet.app.controllers.orphan_scan import OrphanScan
from servlet.app.controllers.queues import Requeue, controller_queue
from servlet.app.controllers.related_contents import RelatedCaches
from servlet.app.controllers.sync_env import SyncEnvironment
from servlet.app.controllers.sync_events import SyncWakes
from servlet.app.controllers.sync_execution import PlanExecution
from servlet.app.controllers.sync_reads import SnapshotReader
from servlet.app.controllers.sync_reports import CONTROLLER, SyncReporter
from servlet.app.controllers.sync_tally import SyncTally, objects_synced
from servlet.app.runtime.informer_events import ObjectKey
from servlet.app.runtime.workqueue import WorkQueue
from servlet.core.actions import Conflict, Release
from servlet.core.conditions import Condition, ConditionType
from servlet.core.gather import computed_local_key
from servlet.core.keys import remote_key_of
from servlet.core.model import LocalKey, RemoteKey
from servlet.core.plan import ObjectPlan, SyncContext, plan_object
from servlet.core.ports import InvolvedObject
from servlet.core.related_sides import watched_types
from servlet.core.releases import finalizer_releases
from servlet.core.targets import NAMESPACE_TYPE

ORPHANS_KEY = "orphans"
# Plans executed in one reconcile before it yields to other objects: a fresh object with
# related resources needs three; more means something keeps changing under the plan.
PLANS_PER_RECONCILE = 8


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
        self._caches: list[Cache] = []
        self._unsubscribe: list[Callable[[], None]] = []
        self._remote_namespaces: Cache | None = None
        # A naming template may read the whole remote object: the cache's current version.
        self._book = ObjectBook(
            compute_name=lambda key: computed_local_key(
                context, key, remote_object=self._remote.get(ObjectKey.at(key))
            ),
            clock=time.monotonic,
        )
        self._reporter = SyncReporter(
            name=name,
            servlet_name=env.servlet_name,
            metrics=env.metrics,
            log=self._log,
            events=env.events,
            regarding=self._regarding,
            primary_kind=context.projected.local.kind,
        )
        self._tally = SyncTally(
            name=name,
            board=env.board,
            total=lambda: objects_synced(self.context, self._remote),
            clock=time.monotonic,
            shares=env.shares,
        )
        self._task: asyncio.Task[None] | None = None
        self._started = False
        projected = context.projected
        # Compact caches (JSON, read one at a time) of all objects on both sides, not only our copies: what
        # sits at a computed local name must be known before the remote object gets a finalizer. With
        # `--buckets`, they hold only this replica's workspaces and their copies (`share`, `share_by`):
        # a copy of another share at a wanted name is learnt from the create's AlreadyExists (`pin`).
        self._remote = self._acquire(env.sources.virtual_workspace_sources(projected.remote), compact=True, share=True)
        self._local = self._acquire(
            env.sources.service_source(projected.local),
            index=link_value,
            compact=True,
            share_by=lambda obj: workspace_of_copy(obj, servlet_name=env.servlet_name),
        )
        self.related = RelatedCaches(
            types=(pair for item in context.published.spec.related for pair in watched_types(item)),
            acquire=self._acquire,
            sources=env.sources,
            service=env.service,
            vw=env.vw,
            log=self._log,
        )
        if self.related:
            self._remote_namespaces = self._acquire(env.sources.virtual_workspace_sources(NAMESPACE_TYPE), share=True)
        self._reader = SnapshotReader(
            context=context,
            remote=self._remote,
            local=self._local,
            names=self._book.names,
            related=self.related,
            local_namespaces=env.local_namespaces,
            remote_namespaces=self._remote_namespaces,
            service=env.service,
            vw=env.vw,
            log=self._log,
        )
        self._execution = PlanExecution(
            context=context,
            executor=env.executor,
            service=env.service,
            writing=env.writing,
            book=self._book,
            reporter=self._reporter,
            remote=self._remote,
            local=self._local,
            related=self.related,
            local_namespaces=env.local_namespaces,
            remote_namespaces=self._remote_namespaces,
            namespace_locks=env.namespace_locks,
        )
        self._orphans = OrphanScan(
            name=name,
            context=context,
            remote=self._remote,
            local=self._local,
            remote_keys=self._remote_keys,
            executor=env.executor,
            metrics=env.metrics,
            log=self._log,
            delete=env.delete_orphans,
            unreadable_workspaces=env.unreadable_workspaces,
            owns=env.owns,
            writing=env.writing,
        )
        queue_name = f"sync/{name}"
        self.queue: WorkQueue[RemoteKey] = controller_queue(
            controller=CONTROLLER,
            name=queue_name,
            handler=self._reconcile,
            metrics=env.metrics,
            depths=env.depths,
            log=self._log,
            workers=env.workers,
            resync_every=env.resync_period,
            resync_keys=self._remote_keys if env.resync_period else None,
            accept=lambda key: env.owns(key.cluster),  # with --buckets, only this replica's share
        )
        self._orphan_queue: WorkQueue[str] = controller_queue(
            controller=CONTROLLER,
            name=f"{queue_name}/orphans",
            handler=self._scan_orphans,
            metrics=env.metrics,
            depths=env.depths,
            log=self._log,
            resync_every=env.resync_period,
            resync_keys=(lambda: [ORPHANS_KEY]) if env.resync_period else None,
        )
        self._wakes = wakes = SyncWakes(
            context=context,
            servlet_name=env.servlet_name,
            queue=self.queue,
            book=self._book,
            remote=self._remote,
            local=self._local,
            reporter=self._reporter,
            remote_gone=self._schedule_orphan_scan,
        )
        self._unsubscribe.append(self._remote.subscribe(wakes.on_remote))
        self._unsubscribe.append(self._local.subscribe(wakes.on_local))
        for (side, resource), cache in self.related.caches().items():
            self._unsubscribe.append(cache.subscribe(wakes.related_handler(side, resource)))
        self._unsubscribe.append(self.related.unsubscribe)

    # -- lifecycle -----------------------------------------------------------------------------

    def _acquire(self, source: Any, **options: Any) -> Cache:
        """A cache from the shared pool (`InformerPool.acquire`'s options), released with this worker."""
        cache = self._env.pool.acquire(source, **options)
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
        env.board.report(
            self.name,
            Condition.false(
                ConditionType.SYNCING,
                reason="CachesNotSynced",
                message=f"waiting for the caches of {self._describe_resources()} to fill",
            ),
        )
        await asyncio.gather(*(cache.wait_synced() for cache in self.caches))
        self.queue.start()
        self._orphan_queue.start()
        self._started = True
        for remote in self._remote.objects():
            self._book.names.index(remote_key_of(remote))
        for obj in self._local.objects():
            self._reporter.count_managed(
                ObjectKey(cluster="", namespace=obj["metadata"].get("namespace", ""), name=obj["metadata"]["name"]), obj
            )
        for key in self._remote_keys():
            self.queue.add(key)
        self._orphan_queue.add(ORPHANS_KEY)
        self._reporter.start_counting()
        env.board.report(
            self.name,
            Condition.true(ConditionType.SYNCING, reason="Syncing", message=f"syncing {self._describe_resources()}"),
        )
        self._tally.report()
        self._log.info(
            "sync worker started",
            remote=self.context.projected.remote.api_version,
            local=self.context.projected.local.api_version,
        )

    async def stop(self, *, timeout: float = 5.0) -> None:
        """Stop taking work, let in-flight reconciles finish (up to `timeout`), release the caches."""
        self._tally.stop()
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

    def claim(self, buckets: frozenset[int]) -> None:
        """Queue every cached object of the workspaces in `buckets`, which this replica just got."""
        coordinator = self._env.buckets
        if not self._started or coordinator is None:
            return  # a worker starting queues every key it may sync anyway
        for key in self._remote_keys():
            if coordinator.bucket_of(key.cluster) in buckets:
                self.queue.add(key)
        self._orphan_queue.add(ORPHANS_KEY)

    def give_up(self, buckets: frozenset[int]) -> None:
        """Forget the objects of the workspaces in `buckets`, which another replica syncs now (their
        caches dropped them without a word: they were not deleted)."""
        coordinator = self._env.buckets
        if coordinator is None:
            return
        for key in self._book.keys():
            if coordinator.bucket_of(key.cluster) in buckets:
                self.related.forget(self._book.gone(key))
                self._tally.forget(key)
        self._wakes.forget_workspaces(lambda cluster: coordinator.bucket_of(cluster) in buckets)

    def releases(self) -> list[Release]:
        """Taking the servlet's finalizer off every remote object that has it, from the cache.

        For a PublishedResource that was deleted: nothing will clean up for these objects any more,
        so a finalizer left on them would block their deletion forever. Local copies are kept.
        """
        return finalizer_releases(self._remote.objects(), resource=self.context.projected.remote)

    def _describe_resources(self) -> str:
        projected = self.context.projected
        return (
            f"{projected.remote.plural}.{projected.remote.group} in every workspace and "
            f"{projected.local.plural}.{projected.local.group} on the service cluster"
        )

    def _regarding(self, key: RemoteKey) -> InvolvedObject:
        """The user's object `key`, as its Events name it (the uid from the cache, when it has it)."""
        remote = self._remote.get(ObjectKey.at(key)) or {}
        uid = str((remote.get("metadata") or {}).get("uid") or "")
        return InvolvedObject(
            resource=self.context.projected.remote, name=key.name, namespace=key.namespace, uid=uid, cluster=key.cluster
        )

    def _remote_keys(self) -> list[RemoteKey]:
        return [RemoteKey(cluster=k.cluster, namespace=k.namespace, name=k.name) for k in self._remote.keys()]

    # -- reconcile -----------------------------------------------------------------------------

    async def _reconcile(self, key: RemoteKey) -> None:
        echoes = self._book.begin_reconcile(key)
        try:
            await self._reconcile_once(key)
        except Requeue:
            raise  # waiting, or a conflict its reports already name
        except Exception as error:
            self._tally.note(key, f"{type(error).__name__}: {error}")
            raise
        finally:
            self._book.end_reconcile(key)
            if not echoes.only_own():
                self.queue.add(key)  # still being processed: the queue runs it again right after

    async def _reconcile_once(self, key: RemoteKey) -> None:
        """Plan, execute and plan again until a plan writes nothing (or waits, or conflicts)."""
        if not self.synced:
            raise Requeue("caches are not synced yet")
        for _ in range(PLANS_PER_RECONCILE):
            remote = self._remote.get(ObjectKey.at(key))
            if remote is None:
                # Gone for good; a copy left behind is an orphan, which the orphan scan handles.
                self.related.forget(self._book.gone(key))
                self._tally.forget(key)
                return
            plan = await self._plan(key, remote)
            reports = await self._execution.execute(key, plan)
            self._book.set_reported(key, reports)
            self._tally.note(key, reports[0].reason if reports else None)
            conflict = next(
                (
                    report.target
                    for report in reports
                    if report.type == Conflict.type
                    and report.target is not None
                    and report.target.resource == self.context.projected.local
                ),
                None,
            )
            self._book.names.wait(key, None if conflict is None else LocalKey(conflict.namespace, conflict.name))
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
            self.related.forget(self._book.related.set(key, watched))
        return plan_object(context=self.context, inputs=inputs)

    # -- orphans -------------------------------------------------------------------------------

    def _schedule_orphan_scan(self) -> None:
        if self._started:
            self._orphan_queue.add_after(ORPHANS_KEY, self._orphans.delay())

    async def _scan_orphans(self, _: str) -> None:
        await self._orphans.scan(enabled=self.orphans_enabled)
