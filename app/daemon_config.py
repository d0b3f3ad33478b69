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
from servlet.app.observability.probes import Address
from servlet.app.runtime.leader import LeaseTiming
from servlet.core.model import ServletIdentity


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
