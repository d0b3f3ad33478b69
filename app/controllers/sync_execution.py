"""Executing one plan of a sync worker: its writes one at a time in order, its reports apart.

Each write goes to the executor, inside `writing(workspace)` (with `--buckets`, the fence of the
workspace's bucket, for the local copy's writes too), and stops the plan at its first failure (the queue retries with
backoff). The answer is remembered in the cache the target belongs to (`Cache.wrote`), so the
next plan starts from it, and in the reconcile's echoes (`object_book.Echoes`). Conflicts and
errors are reported (`sync_reports.py`), never sent. Three writes get more care:

- a namespace is created under a lock shared by all workers, and not if the cache holds it
  already: in a burst of new objects from a new workspace, the first creates it;
- a correction of the local copy waits while another writer keeps undoing it (`fights.py`);
- a create that meets an object the cache does not hold yet is planned again shortly, once the
  watch caught up.

Deliberately not here: planning, reading, and sending (the executor, `adapters/executor.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any, assert_never

from servlet.app.controllers.caches import Cache, resource_version
from servlet.app.controllers.object_book import ObjectBook, Report
from servlet.app.controllers.queues import Requeue
from servlet.app.controllers.related_contents import RelatedCaches
from servlet.app.controllers.sync_reports import SyncReporter, describe
from servlet.app.runtime.informer_events import ObjectKey
from servlet.core.actions import (
    Action,
    Adopt,
    Create,
    CreateNamespace,
    CreateRelated,
    ObjectRef,
    Patch,
    PatchRelated,
    Side,
    Write,
)
from servlet.core.context import SyncContext
from servlet.core.errors import AlreadyExists
from servlet.core.model import RemoteKey
from servlet.core.plan import ObjectPlan
from servlet.core.ports import ActionExecutor, ServiceCluster
from servlet.core.targets import NAMESPACE_TYPE

# A create that meets an object the cache does not hold yet: plan again once the watch caught up.
ALREADY_EXISTS_RETRY = 0.5


def target_key(target: ObjectRef) -> ObjectKey:
    return ObjectKey(
        cluster=target.cluster if target.side is Side.REMOTE else "", namespace=target.namespace, name=target.name
    )


class PlanExecution:
    """Executes the plans of one sync worker's objects against its caches (see the module's docstring)."""

    def __init__(
        self,
        *,
        context: SyncContext,
        executor: ActionExecutor,
        service: ServiceCluster,
        writing: Callable[[str], AbstractAsyncContextManager[None]],
        book: ObjectBook,
        reporter: SyncReporter,
        remote: Cache,
        local: Cache,
        related: RelatedCaches,
        local_namespaces: Cache,
        remote_namespaces: Cache | None,
        namespace_locks: dict[tuple[Side, ObjectKey], asyncio.Lock],
    ) -> None:
        self._context = context
        self._executor = executor
        self._service = service
        self._writing = writing
        self._book = book
        self._reporter = reporter
        self._remote = remote
        self._local = local
        self._related = related
        self._local_namespaces = local_namespaces
        self._remote_namespaces = remote_namespaces
        self._namespace_locks = namespace_locks

    async def execute(self, key: RemoteKey, plan: ObjectPlan) -> list[Report]:
        """Execute the plan's writes in order; returns its conflicts and errors (reported, never written)."""
        reports: list[Report] = []
        for action in plan.actions:
            match action.write:
                case Write.NOTHING:
                    reports.append(self._reporter.problem(key, action, known=self._book.reported(key)))
                case Write.CREATE_NAMESPACE:
                    await self._create_namespace(key, action)
                case Write.CREATE | Write.DELETE | Write.FINALIZERS | Write.STATUS | Write.PATCH:
                    await self._write(key, action)
                case _:
                    assert_never(action.write)
        return reports

    async def _write(self, key: RemoteKey, action: Action) -> None:
        if isinstance(action, Patch):
            self._hold_back_in_a_fight(key, action)
        try:
            async with self._writing(key.cluster):  # the local copy's writes belong to its workspace too
                result = await self._executor.execute(action)
        except AlreadyExists as error:
            if not isinstance(action, Create):
                raise
            # Created by someone else a moment ago: the local cache will show it; plan again then.
            await self._pin_in_the_way(action)
            raise Requeue(
                f"{action.target.namespace}/{action.target.name} appeared before the create", after=ALREADY_EXISTS_RETRY
            ) from error
        self._remember(key, action, result)
        if isinstance(action, Patch):
            self._book.fights.sent(key)
        self._reporter.synced(key, action)

    async def _pin_in_the_way(self, action: Create) -> None:
        """With `--buckets` the local cache leaves out the copies of other replicas' workspaces, so
        one may hold a name this replica's plan found free: read it, and have the cache follow it
        until it is deleted, so the next plan sees the name taken (a conflict, as with any holder)."""
        target = action.target
        key = target_key(target)
        if self.cache_for(target) is not self._local or self._local.get(key) is not None:
            return
        found = await self._service.get(target.resource, namespace=target.namespace, name=target.name)
        if found is not None:
            self._local.pin(key, found)

    def _hold_back_in_a_fight(self, key: RemoteKey, action: Patch) -> None:
        """Raise Requeue while another writer keeps undoing this very correction (`fights.py`)."""
        verdict = self._book.fights.consider(key, action.patch)
        if verdict.started:
            self._reporter.fight_started(key, action, wait=verdict.wait)
        if verdict.wait > 0:
            raise Requeue(f"backing off a fight over {describe(key)}", after=verdict.wait)

    async def _create_namespace(self, remote: RemoteKey, action: CreateNamespace) -> None:
        """Create a namespace unless a concurrent reconcile just did (the cache says so)."""
        key = target_key(action.target)
        cache = self.cache_for(action.target)
        lock = self._namespace_locks.setdefault((action.target.side, key), asyncio.Lock())
        async with lock:
            if cache is not None and cache.get(key) is not None:
                return
            async with self._writing(remote.cluster):
                result = await self._executor.execute(action)
            self._remember(remote, action, result)
            self._reporter.synced(remote, action)

    def _remember(self, remote: RemoteKey, action: Action, result: dict[str, Any] | None) -> None:
        """Put the server's answer into the cache it belongs to, so the next plan starts from it."""
        target = action.target
        if target is None:
            return
        cache = self.cache_for(target)
        if cache is None:
            return
        echoes = self._book.echoes(remote)
        if echoes is not None and result is not None:
            echoes.written.add((cache.name, resource_version(result)))
        key = target_key(target)
        related = self._related.find(target.side, target.resource)
        if related is not None and result is not None and isinstance(action, (CreateRelated, PatchRelated)):
            related.hold(key, result)
        match action.write:
            case Write.DELETE:
                cache.deleting(key)
            case Write.CREATE_NAMESPACE:
                cache.wrote(key, result or action.object, created=True)
            case Write.CREATE | Write.FINALIZERS | Write.STATUS | Write.PATCH:
                # An adoption makes the object appear in a cache that filters by the link labels.
                if result is not None:
                    cache.wrote(key, result, created=action.write is Write.CREATE or isinstance(action, Adopt))
            case Write.NOTHING:
                pass
            case _:
                assert_never(action.write)

    def cache_for(self, target: ObjectRef) -> Cache | None:
        """The cache that holds `target`'s kind on `target`'s side, if this worker watches it."""
        projected = self._context.projected
        if target.resource == NAMESPACE_TYPE:
            return self._local_namespaces if target.side is Side.LOCAL else self._remote_namespaces
        if target.side is Side.REMOTE and target.resource == projected.remote:
            return self._remote
        if target.side is Side.LOCAL and target.resource == projected.local:
            return self._local
        related = self._related.find(target.side, target.resource)
        return None if related is None else related.cache
