"""The sync worker's orphan scan: copies whose remote object is gone for good, reported or deleted.

Orphans are decided by `core.orphans` from the worker's caches; this module reports each one once
(log, `servlet_orphaned_objects`), and deletes them only with `--delete-orphans`. With `--buckets`
it judges only the copies of workspaces whose bucket this replica owns.

A scan reads every local copy and every remote key: about 2 s for 100,000 objects. It runs when
the worker starts, at each resync and after remote deletions; after deletions it waits at least
`SCAN_DELAY`, and long enough that scans take at most a tenth of the time (`delay`), so tenants
deleting objects all day cannot keep a large servlet scanning.

Deliberately not here: what an orphan is (the core) and when to scan (the worker's queue).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Set as AbstractSet
from contextlib import AbstractAsyncContextManager

from servlet.app.controllers.caches import Cache
from servlet.app.controllers.queues import Requeue
from servlet.app.observability.logs import FieldLogger
from servlet.app.observability.metrics import Metrics
from servlet.app.runtime.informer_events import ObjectKey
from servlet.core.model import RemoteKey
from servlet.core.orphans import delete_orphans, find_orphans
from servlet.core.plan import SyncContext
from servlet.core.ports import ActionExecutor

# A remote deletion is followed by the local one within moments; looking for orphans a little
# later avoids reporting a copy that is about to go anyway.
SCAN_DELAY = 2.0
# After deletions, scans take at most this share of the time.
_SCAN_SHARE = 0.1


def _describe(key: RemoteKey) -> str:
    return f"{key.namespace}/{key.name}" if key.namespace else key.name


class OrphanScan:
    def __init__(
        self,
        *,
        name: str,
        context: SyncContext,
        remote: Cache,
        local: Cache,
        remote_keys: Callable[[], list[RemoteKey]],
        executor: ActionExecutor,
        metrics: Metrics,
        log: FieldLogger,
        delete: bool,
        unreadable_workspaces: AbstractSet[str] = frozenset(),
        owns: Callable[[str], bool] = lambda cluster: True,
        writing: Callable[[str], AbstractAsyncContextManager[None]] = lambda cluster: contextlib.nullcontext(),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._name = name
        self._context = context
        self._remote = remote
        self._local = local
        self._remote_keys = remote_keys
        self._executor = executor
        self._metrics = metrics
        self._log = log
        self._delete = delete
        # Workspaces of kcp shards whose VW URL left the endpoint slice (the sync manager's set,
        # shared and kept current): their copies are not judged while none of their objects is seen.
        self._unreadable = unreadable_workspaces
        self._reported: set[tuple[str, str]] = set()
        self._clock = clock
        self._last_seconds = 0.0  # how long the last scan took to judge the copies
        # With --buckets: only copies of this replica's workspaces are judged, and deleted in
        # `writing` of their workspace; the other replicas judge the rest.
        self._owns = owns
        self._writing = writing

    def delay(self) -> float:
        """How long to wait after a remote deletion before scanning."""
        return max(SCAN_DELAY, self._last_seconds * (1 / _SCAN_SHARE - 1))

    async def scan(self, *, enabled: bool) -> None:
        if not enabled:
            self._metrics.set_orphaned_objects(published_resource=self._name, count=0)
            return
        if not (self._remote.synced and self._local.synced):
            raise Requeue("caches are not synced yet")
        if self._remote.catching_up:  # workspaces just got are listed: their copies are no orphans
            raise Requeue("listing the workspaces of buckets just got")
        context = self._context
        started = self._clock()
        remote_keys = self._remote_keys()
        seen = {key.cluster for key in remote_keys}
        orphans = find_orphans(
            servlet_name=context.servlet.name,
            remote_resource=context.projected.remote,
            local_objects=self._local.objects(),
            remote_keys=remote_keys,
            unreadable_workspaces={cluster for cluster in self._unreadable if cluster not in seen},
        )
        orphans = tuple(orphan for orphan in orphans if self._owns(orphan.remote.cluster))
        self._last_seconds = self._clock() - started
        self._metrics.set_orphaned_objects(published_resource=self._name, count=len(orphans))
        current = {(orphan.local.namespace, orphan.local.name) for orphan in orphans}
        for orphan in orphans:
            if (orphan.local.namespace, orphan.local.name) not in self._reported:
                self._log.warning(
                    "orphaned local object: its remote object is gone"
                    + (
                        ", deleting it (--delete-orphans)"
                        if self._delete
                        else "; kept (start with --delete-orphans to delete such objects)"
                    ),
                    object=f"{orphan.local.namespace}/{orphan.local.name}"
                    if orphan.local.namespace
                    else orphan.local.name,
                    workspace=orphan.remote.cluster,
                    remote=_describe(orphan.remote),
                )
        self._reported = current
        if not self._delete:
            return
        remaining = len(orphans)
        deletions = delete_orphans(orphans=orphans, resource=context.projected.local)
        for orphan, action in zip(orphans, deletions, strict=True):
            async with self._writing(orphan.remote.cluster):
                await self._executor.execute(action)
            self._local.deleting(ObjectKey(cluster="", namespace=action.target.namespace, name=action.target.name))
            remaining -= 1
            self._metrics.count_orphan_deleted(published_resource=self._name)
            self._metrics.set_orphaned_objects(published_resource=self._name, count=remaining)
            self._log.info("orphan deleted", action=action.type, target=action.target.to_dict())
