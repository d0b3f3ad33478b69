"""What every sync worker shares (`SyncEnvironment`), and with `--buckets` which workspaces are its.

Without a `BucketCoordinator` a replica syncs every workspace (the leader fence in the executor
guards its writes). With one, a worker handles only the objects of workspaces whose bucket this
replica owns (`owns`), and every write it makes for a workspace, to the workspace or to the local
copy that came from it, goes through `writing(cluster)`, which refuses once the bucket is no
longer held and lets the bucket be handed over only after the writes inside are done.

Deliberately not here: owning buckets (`app/runtime/buckets.py`) and what the worker does.
"""

from __future__ import annotations

import asyncio
import contextlib
from contextlib import AbstractAsyncContextManager
from typing import Any

from attrs import define, field

from servlet.app.controllers.caches import Cache, InformerPool
from servlet.app.controllers.queues import QueueDepths
from servlet.app.controllers.status import StatusBoard
from servlet.app.controllers.sync_tally import SyncShares
from servlet.app.observability.events import EventRecorder
from servlet.app.observability.logs import FieldLogger
from servlet.app.observability.metrics import Metrics
from servlet.app.runtime.buckets import BucketCoordinator
from servlet.app.runtime.informer_events import ObjectKey
from servlet.core.actions import Side
from servlet.core.ports import ActionExecutor, ServiceCluster, VirtualWorkspace, WatchSources


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
    events: EventRecorder | None = None
    # One namespace creation at a time per namespace, across all workers: in a burst of new
    # objects from a new workspace, the first creates the namespace and the others see it.
    namespace_locks: dict[tuple[Side, ObjectKey], asyncio.Lock] = field(factory=dict)
    # Workspaces last read from a VW URL (kcp shard) that left the endpoint slice: the sync
    # manager adds to it, the orphan scans leave their copies alone.
    unreadable_workspaces: set[str] = field(factory=set)
    # `--buckets`: this replica's share of the workspaces; None: all of them.
    buckets: BucketCoordinator | None = None
    # `--buckets`: the workers' `Synced` tallies, told to and by the other replicas.
    shares: SyncShares | None = None

    def owns(self, cluster: str) -> bool:
        """Whether this replica syncs the workspace whose logical cluster is `cluster` (now)."""
        return self.buckets is None or self.buckets.may_write(cluster)

    def writing(self, cluster: str) -> AbstractAsyncContextManager[None]:
        """Around one write for workspace `cluster`; raises `BucketNotHeld` when it is not ours."""
        return contextlib.nullcontext() if self.buckets is None else self.buckets.writing(cluster)
