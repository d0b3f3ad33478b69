"""What `servlet run` was told (`DaemonConfig`) and the few process facts the daemon reads.

Kept apart from `daemon.py` so the flag parser and the tests build a configuration without the
daemon's machinery; the clock, the hostname and the package version are read here and passed in.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from importlib import metadata as package_metadata

from attrs import frozen

from servlet.adapters.connections import Connections, RequestObserver
from servlet.adapters.leases import LeasesAdapter
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.app.controllers.sync_tally import SyncShares
from servlet.app.observability.probes import Address
from servlet.app.runtime.buckets import BucketCoordinator
from servlet.app.runtime.leader import LeaseTiming
from servlet.core.endpoint_slices import SliceChoice, slice_mismatch, slice_missing
from servlet.core.model import ServletIdentity
from servlet.core.ports import WorkspaceIdentity


@frozen
class DaemonConfig:
    """Everything `servlet run` was told, validated."""

    kcp_kubeconfig: str
    servlet: ServletIdentity
    apiexport: str
    namespace: str
    kubeconfig: str | None = None
    # Contexts of the two kubeconfigs (`--context`, `--kcp-context`); None: their current ones.
    context: str | None = None
    kcp_context: str | None = None
    leader_election: bool = True
    published_resource_selector: str | None = None
    metrics_address: Address = Address(host="", port=8080)
    health_address: Address = Address(host="", port=8081)
    delete_orphans: bool = False
    lease: LeaseTiming = LeaseTiming()
    resync_period: float | None = 600.0
    sync_workers: int = 4
    # `--apiexportendpointslice`: where the VW URLs come from; None: the slice named like the export.
    endpoint_slice: SliceChoice | None = None
    # `--buckets`: replicas share the workspaces in this many buckets; 0: only the leader syncs.
    buckets: int = 0


class StartupError(Exception):
    """The daemon cannot work with this configuration; the message says what to fix."""


def servlet_version() -> str:
    try:
        return package_metadata.version("kdp-servlet")
    except package_metadata.PackageNotFoundError:
        return "unknown"


def utc_now() -> datetime:
    return datetime.now(UTC)


def rfc3339_now() -> str:
    return utc_now().strftime("%Y-%m-%dT%H:%M:%SZ")


def replica_identity() -> str:
    """Unique per process: the pod name (hostname) plus a random suffix, as client-go does."""
    return f"{socket.gethostname()}_{uuid.uuid4().hex[:10]}"


Connect = Callable[[DaemonConfig, RequestObserver], Connections]


def connect(config: DaemonConfig, observer: RequestObserver) -> Connections:
    """Connections from the `--kubeconfig` and `--kcp-kubeconfig` files (ConfigurationError if unusable)."""
    return Connections.from_kubeconfigs(
        kubeconfig=config.kubeconfig,
        kcp_kubeconfig=config.kcp_kubeconfig,
        context=config.context,
        kcp_context=config.kcp_context,
        on_request=observer,
    )


async def check_endpoint_slice(
    connections: Connections, config: DaemonConfig, identity: WorkspaceIdentity
) -> str | None:
    """Why the slice `--apiexportendpointslice` names cannot be used (missing, for another export);
    None when it can, or when the flag is not given. Read failures are raised as they are."""
    choice = config.endpoint_slice
    if choice is None:
        return None
    client = connections.workspace(choice.workspace) if choice.workspace else connections.org
    where = f"workspace {choice.workspace or identity.path}"
    found = await OrgWorkspaceAdapter(client, where=where).get_endpoint_slice(choice.name)
    if found is None:
        return slice_missing(choice, org_path=identity.path)
    return slice_mismatch(
        found, choice=choice, export_name=config.apiexport, org_path=identity.path, org_cluster=identity.name
    )


def bucket_coordinator(
    config: DaemonConfig,
    connections: Connections,
    identity: str,
    on_owned: Callable[[frozenset[int]], None],
    shares: SyncShares,
) -> BucketCoordinator | None:
    """With `--buckets`: this replica's share of the workspaces, through Leases named after the
    leader's (`<name>.<api group>-bucket-<n>`, `-member-<hash>`), its membership Lease carrying
    the `Synced` tallies of its share (`shares`); None without."""
    if not config.buckets:
        return None
    return BucketCoordinator(
        LeasesAdapter(connections.service),
        prefix=config.servlet.fq_name,
        namespace=config.namespace,
        identity=identity,
        buckets=config.buckets,
        clock=utc_now,
        timing=config.lease,
        on_owned=on_owned,
        member_annotations=shares.annotations,
        on_members=shares.hear,
    )
