"""The servlet daemon (`servlet run`): startup checks, caches, leader election, controllers, shutdown.

The life of a process:

1. Connect (the two kubeconfigs), serve `/healthz`, `/readyz` and `/metrics`.
2. Fail fast, with a message an operator can act on, when the kcp kubeconfig does not point into
   a readable workspace or the APIExport does not exist: resolve the org workspace's logical
   cluster from its `LogicalCluster` named `cluster`, then read the export. Transient failures
   (kcp not reachable yet) are retried until SIGTERM.
3. Warm the shared caches (every replica, leader or not).
4. Campaign for the Lease `<name>.<api group>` in `--namespace`. While leading, run the
   controllers that write (`controllers/leading.py`); the executor asks the elector before every
   write, so a lost lease stops writing at once, and the controllers are then stopped until the
   lease is won again. Without leader election the controllers simply run. With `--buckets`,
   every replica also runs the sync manager for the workspaces of the buckets it owns
   (`runtime/buckets.py`), each write fenced by its bucket's Lease; the leader runs the rest.
5. On SIGTERM (or SIGINT): stop taking work, let in-flight reconciles finish, release the Lease,
   stop the caches, exit 0.

`/healthz` fails only when the process's own loops are dead (never for a kcp outage); `/readyz`
also wants the shared caches synced and leadership known (leader or follower).

Deliberately not here: flag parsing (`run_command.py`), the configuration (`daemon_config.py`) and
anything a controller decides.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from servlet.adapters.builtin_discovery import describe_builtin_types
from servlet.adapters.connections import ConfigurationError, Connections, Target
from servlet.adapters.events import EventsAdapter
from servlet.adapters.executor import Executor
from servlet.adapters.leases import LeasesAdapter
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.adapters.service_cluster import ServiceClusterAdapter
from servlet.adapters.virtual_workspace import VirtualWorkspaceAdapter
from servlet.app.controllers.builtins import BuiltinTypes
from servlet.app.controllers.caches import InformerPool, caches_ready
from servlet.app.controllers.catalog import Catalog
from servlet.app.controllers.leading import LeadingControllers, Options, Shared, SharedCaches, SyncControllers
from servlet.app.controllers.queues import QueueDepths
from servlet.app.controllers.sync_tally import SyncShares
from servlet.app.controllers.syncmanager import EndpointSliceUse
from servlet.app.daemon_config import (
    Connect,
    DaemonConfig,
    StartupError,
    bucket_coordinator,
    check_endpoint_slice,
    connect,
    replica_identity,
    rfc3339_now,
    servlet_version,
    utc_now,
)
from servlet.app.observability.events import EventRecorder
from servlet.app.observability.logs import get_logger
from servlet.app.observability.metrics import ApiTarget, Metrics
from servlet.app.observability.probes import HealthChecks, ProbeServer, task_alive
from servlet.app.runtime.informer import Informer
from servlet.app.runtime.informer_events import Keep
from servlet.app.runtime.leader import LeaderElector
from servlet.app.runtime.stopping import first_of, sleep_unless
from servlet.app.runtime.workqueue import Backoff
from servlet.core.errors import ApiFailure, Transient
from servlet.core.ports import (
    APIEXPORT_TYPE,
    CRD_TYPE,
    ENDPOINT_SLICE_TYPE,
    PUBLISHED_RESOURCE_TYPE,
    SCHEMA_TYPE,
    WatchSource,
    WorkspaceIdentity,
)
from servlet.core.targets import NAMESPACE_TYPE

EXIT_OK = 0
EXIT_STARTUP_FAILED = 1
# How long in-flight reconciles may take to finish on shutdown or when the lease is lost.
SHUTDOWN_GRACE = 3.0
_STARTUP_BACKOFF = Backoff(base=0.5, cap=10.0)

_log = get_logger("daemon")


class Daemon:
    """One servlet process; `connect` is replaceable so tests can choose how connections are built."""

    def __init__(self, config: DaemonConfig, *, identity: str | None = None, connect: Connect = connect) -> None:
        self.config = config
        self._connect = connect
        #: The controllers of the current term of leadership (None while not leading).
        self.controllers: LeadingControllers | None = None
        #: With `--buckets`: the sync manager every replica runs, for its share of the workspaces.
        self.sync: SyncControllers | None = None
        self.identity = identity or replica_identity()
        self.metrics = Metrics(version=servlet_version())
        self.checks = HealthChecks()
        self.elector: LeaderElector | None = None
        self.probes: ProbeServer | None = None
        self._lost = asyncio.Event()
        self._workspace: WorkspaceIdentity | None = None
        self.checks.add_readiness(
            "startup",
            lambda: (self._workspace is not None, "the org workspace and the APIExport are not confirmed yet"),
        )

    # -- the whole life ------------------------------------------------------------------------

    async def run(self, stop: asyncio.Event) -> int:
        config = self.config
        try:
            connections = self._connect(config, self._count_request)
        except ConfigurationError as exc:
            _log.error(f"cannot start: {exc}")
            return EXIT_STARTUP_FAILED
        probes = ProbeServer(
            checks=self.checks,
            metrics=self.metrics,
            health_address=config.health_address,
            metrics_address=config.metrics_address,
        )
        try:
            try:
                await probes.start()
            except OSError as exc:
                _log.error(
                    f"cannot start: cannot listen for probes on {config.health_address} or metrics on "
                    f"{config.metrics_address} (--health-address, --metrics-address): {exc}"
                )
                return EXIT_STARTUP_FAILED
            self.probes = probes
            _log.info(
                "servlet starting",
                servlet=config.servlet.fq_name,
                apiexport=config.apiexport,
                health=str(probes.health_address),
                metrics=str(probes.metrics_address),
                identity=self.identity,
                leader_election=config.leader_election,
            )
            try:
                workspace = await self._startup_checks(connections, stop)
            except StartupError as exc:
                _log.error(f"cannot start: {exc}")
                return EXIT_STARTUP_FAILED
            if workspace is None:  # stopped while waiting for kcp
                return EXIT_OK
            self._workspace = workspace
            await self._serve(connections, workspace, stop)
            return EXIT_OK
        finally:
            await probes.stop()
            await connections.aclose()
            _log.info("servlet stopped")

    # -- startup -------------------------------------------------------------------------------

    async def _startup_checks(self, connections: Connections, stop: asyncio.Event) -> WorkspaceIdentity | None:
        org = OrgWorkspaceAdapter(connections.org, where=f"workspace {connections.workspace_path}")
        config = self.config
        failures = 0
        while not stop.is_set():
            try:
                identity = await org.resolve_identity()
                export = await org.get_export(config.apiexport)
                unusable_slice = await check_endpoint_slice(connections, config, identity) if export else None
            except Transient as exc:
                failures += 1
                delay = _STARTUP_BACKOFF.delay(failures)
                _log.warning("kcp is not reachable yet, retrying", error=str(exc), retry_in=delay)
                await sleep_unless(stop, delay)
                continue
            except ApiFailure as exc:
                raise StartupError(
                    f"--kcp-kubeconfig must point into a kcp workspace the servlet can read (its server is "
                    f"{connections.org_url}), but reading the workspace's LogicalCluster 'cluster' or the APIExport "
                    f"failed: {exc}"
                ) from exc
            if export is None:
                raise StartupError(
                    f"the APIExport {config.apiexport!r} (--apiexport) does not exist in workspace "
                    f"{identity.path} (logical cluster {identity.name}); KDP creates it, the servlet never does"
                )
            if unusable_slice is not None:
                raise StartupError(unusable_slice)
            _log.info(
                "org workspace resolved",
                workspace=identity.path,
                logical_cluster=identity.name,
                apiexport=config.apiexport,
            )
            return identity
        return None

    # -- running -------------------------------------------------------------------------------

    async def _serve(self, connections: Connections, workspace: WorkspaceIdentity, stop: asyncio.Event) -> None:
        config = self.config
        chosen = config.endpoint_slice
        elector = self._elector(connections) if config.leader_election else None
        # `--buckets`: the sync workers' writes are fenced by their workspace's bucket, and their
        # caches of the virtual workspace hold only the workspaces of this replica's buckets.
        shares = SyncShares()
        buckets = bucket_coordinator(config, connections, self.identity, self._owned, shares) if elector else None
        pool = InformerPool(self._make_informer, share=buckets.shares if buckets else None)
        self.metrics.count_cached_objects(lambda local: pool.shared_objects(local=local))
        caches = SharedCaches(
            published=pool.acquire(
                connections.service_source(PUBLISHED_RESOURCE_TYPE), label_selector=config.published_resource_selector
            ),
            crds=pool.acquire(connections.service_source(CRD_TYPE)),
            schemas=pool.acquire(connections.org_source(SCHEMA_TYPE), cluster=workspace.name),
            exports=pool.acquire(connections.org_source(APIEXPORT_TYPE), cluster=workspace.name),
            slices=pool.acquire(
                connections.org_source(ENDPOINT_SLICE_TYPE, workspace=chosen.workspace if chosen else ""),
                cluster=workspace.name if chosen is None or not chosen.workspace else "",
            ),
            local_namespaces=pool.acquire(connections.service_source(NAMESPACE_TYPE)),
        )
        # A resource not served yet (the PublishedResource CRD installed after the servlet) is
        # listed again the moment its CRD appears or changes (established), not after a backoff.
        caches.crds.subscribe(lambda event: pool.retry_failing(f"service/{event.key.name}"))
        builtins = BuiltinTypes(
            published=caches.published,
            crds=caches.crds,
            describe=lambda wanted: describe_builtin_types(connections.service_http, wanted),
            log=get_logger("builtins"),
        )
        self.checks.add_liveness("watches", pool.alive)
        self.checks.add_readiness("caches", lambda: caches_ready(caches.all()))
        self.checks.add_readiness(
            "leadership", lambda: (elector is None or elector.leadership_known, "leadership not known yet")
        )
        # By the clock, not the loop's flag: a leader resumed after a pause past its renew deadline
        # writes nothing even before its election loop runs again.
        leading: Callable[[], bool] = elector.holds_lease if elector else (lambda: True)
        executor = Executor(connections, can_write=leading)
        events = EventRecorder(
            writer=EventsAdapter(connections),
            monotonic=time.monotonic,
            now=rfc3339_now,
            metrics=self.metrics,
            log=get_logger("events"),
            can_write=leading,
            can_write_to=buckets.may_write if buckets else None,
        )
        shared = Shared(
            servlet_name=config.servlet.name,
            export_name=config.apiexport,
            catalog=Catalog(
                published=caches.published, crds=caches.crds, servlet=config.servlet, described=builtins.crds
            ),
            caches=caches,
            pool=pool,
            sources=connections,
            location=connections,
            org=OrgWorkspaceAdapter(connections.org, where=f"workspace {workspace.path}"),
            service=ServiceClusterAdapter(connections.service),
            vw=VirtualWorkspaceAdapter(connections),
            executor=executor,
            metrics=self.metrics,
            depths=QueueDepths(self.metrics),
            log=get_logger("controllers"),
            now=rfc3339_now,
            options=Options(
                delete_orphans=config.delete_orphans,
                resync_period=config.resync_period,
                sync_workers=config.sync_workers,
            ),
            events=events,
            endpoint_slice=EndpointSliceUse(choice=chosen, org=workspace) if chosen else None,
            builtins=builtins,
        )
        events.start()
        describing: asyncio.Task[None] | None = None
        sync: SyncControllers | None = None
        try:
            if elector is not None:
                self.checks.add_liveness("leader-election", task_alive(elector.start()))
            else:
                self.metrics.set_leader(True)
            if await first_of(stop, *(cache.wait_synced() for cache in caches.all())):
                return
            _log.info("caches synced", caches=[cache.name for cache in caches.all()])
            describing = asyncio.create_task(builtins.run(), name="builtin-types")
            if buckets is not None:
                self.sync = sync = SyncControllers(
                    shared, buckets=buckets, shares=shares, executor=Executor(connections, can_write=lambda: True)
                )
                sync.start()
                self.checks.add_liveness("buckets", task_alive(buckets.start()))
            while not stop.is_set():
                if elector is not None:
                    if not elector.is_leader:
                        _log.info(
                            "waiting to become leader",
                            lease=f"{config.namespace}/{config.servlet.fq_name}",
                            identity=self.identity,
                        )
                    if await first_of(stop, elector.became_leader.wait()):
                        return
                    self._lost.clear()
                    if not elector.is_leader:
                        continue  # lost again before this term began
                    self.metrics.set_leader(True)
                await self._lead(shared, stop, elector, sync)
        finally:
            if describing is not None:
                describing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await describing
            if sync is not None:
                await sync.stop(timeout=SHUTDOWN_GRACE)
            if buckets is not None:
                await buckets.stop(release=True)  # after the writes in flight: the others take over at once
            if elector is not None:
                await elector.stop(release=True)
            self.metrics.set_leader(False)
            await events.stop()
            await pool.stop_all()

    async def _lead(
        self, shared: Shared, stop: asyncio.Event, elector: LeaderElector | None, sync: SyncControllers | None
    ) -> None:
        controllers = LeadingControllers(shared, sync)
        controllers.start()
        self.controllers = controllers
        _log.info("controllers started")
        try:
            if elector is None:
                await stop.wait()
            else:
                await first_of(stop, self._lost.wait())
        finally:
            self.controllers = None
            await controllers.stop(timeout=SHUTDOWN_GRACE)
            _log.info("controllers stopped", reason="shutdown" if stop.is_set() else "lease lost")

    def _elector(self, connections: Connections) -> LeaderElector:
        def lost() -> None:
            self.metrics.set_leader(False)
            self._lost.set()

        self.elector = LeaderElector(
            LeasesAdapter(connections.service),
            name=self.config.servlet.fq_name,
            namespace=self.config.namespace,
            identity=self.identity,
            clock=utc_now,
            timing=self.config.lease,
            on_lost=lost,
        )
        return self.elector

    def _owned(self, buckets: frozenset[int]) -> None:
        if self.sync is not None:
            self.sync.owned(buckets)

    # -- observability -------------------------------------------------------------------------

    def _make_informer(
        self,
        source: WatchSource[Any],
        label_selector: str | None,
        compact: bool,
        keep: Keep | None,
    ) -> Informer:
        return Informer(
            source,
            label_selector=label_selector,
            compact=compact,
            keep=keep,
            on_restart=lambda: self.metrics.count_watch_restart(resource=source.name),
            on_relist=lambda: self.metrics.count_watch_relist(resource=source.name),
        )

    def _count_request(self, *, target: Target, verb: str, code: int | None) -> None:
        self.metrics.count_api_request(target=ApiTarget(target.value), verb=verb, code=code)


async def run_daemon(
    config: DaemonConfig,
    *,
    stop: asyncio.Event | None = None,
    install_signals: Callable[[asyncio.Event], None] | None = None,
) -> int:
    """Run until `stop` is set (or a signal `install_signals` wires sets it); the exit code."""
    stop = stop or asyncio.Event()
    if install_signals is not None:
        install_signals(stop)
    return await Daemon(config).run(stop)
