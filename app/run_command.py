"""`servlet run`: the daemon's command line (SPEC 9), every flag also read from `SERVLET_<FLAG>`.

Flags are checked before anything connects: a bad value ends the command with exit code 2 and a
message that names the flag, the way every other usage error does. A configuration the daemon
can only find unusable by talking to the clusters (no workspace, no APIExport) ends with exit
code 1 and a log line saying what to fix; a clean shutdown (SIGTERM) exits 0.

Besides SPEC 9's flags there are a few for tuning and tests: the lease timing
(`--lease-duration`, `--lease-renew-deadline`, `--lease-retry-period`), how often every object is
reconciled even without events (`--resync-period`), how many objects of one PublishedResource are
reconciled at once (`--sync-workers`) and `--log-level`.

Deliberately not here: the daemon itself (`daemon.py`).
"""

from __future__ import annotations

import asyncio
import enum
import gc
import signal
from pathlib import Path
from typing import Annotated, Any

import attrs
import typer

from servlet.app.daemon import run_daemon
from servlet.app.daemon_config import DaemonConfig
from servlet.app.observability.logs import LogFormat, configure_logging
from servlet.app.observability.probes import Address, parse_address
from servlet.app.runtime.leader import LeaseTiming
from servlet.core.endpoint_slices import parse_slice_choice
from servlet.core.filtering import label_selector_text_problem
from servlet.core.model import Problem, ServletIdentity
from servlet.core.naming import is_dns1123_label, is_dns1123_subdomain

SERVICE_ACCOUNT_NAMESPACE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
FALLBACK_NAMESPACE = "default"


class LogLevel(str, enum.Enum):
    DEBUG = "debug"
    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


# The caches hold plain JSON trees, which reference counting frees; the cyclic collector only has
# to catch the odd cycle. At Python's default (700 allocations) it scanned the young objects so
# often that it took 1.2 s of a 10,000-object initial sync; at 50,000 it took 0.16 s.
GC_THRESHOLDS = (50_000, 20, 10)


def _env(flag: str) -> str:
    return "SERVLET_" + flag.removeprefix("--").upper().replace("-", "_")


def _option(flag: str, help_text: str) -> Any:
    """A typer option for `flag` that also reads `SERVLET_<FLAG>`."""
    return typer.Option(flag, envvar=_env(flag.split("/")[0]), help=help_text, show_envvar=True)


# -- validation (pure enough to unit-test without a cluster) ---------------------------------------


def default_namespace() -> str:
    """The pod's own namespace when running in a cluster, else `default`."""
    try:
        return SERVICE_ACCOUNT_NAMESPACE.read_text().strip() or FALLBACK_NAMESPACE
    except OSError:
        return FALLBACK_NAMESPACE


def build_config(
    *,
    kubeconfig: str | None,
    kcp_kubeconfig: str,
    name: str,
    api_group: str,
    apiexport: str | None,
    namespace: str | None,
    leader_election: bool,
    published_resource_selector: str | None,
    metrics_address: str,
    health_address: str,
    delete_orphans: bool,
    lease_duration: float,
    lease_renew_deadline: float,
    lease_retry_period: float,
    resync_period: float,
    sync_workers: int,
    endpoint_slice: str | None = None,
    buckets: int = 0,
) -> DaemonConfig | list[Problem]:
    """The daemon's configuration from flag values, or every problem with them (each naming its flag)."""
    problems: list[Problem] = []
    if not kcp_kubeconfig:
        problems.append(
            Problem(
                field="--kcp-kubeconfig",
                message="is required (a kubeconfig pointing into the "
                "org workspace, e.g. https://kcp.example.com/clusters/root:myorg)",
            )
        )
    if not is_dns1123_label(name):
        problems.append(Problem(field="--name", message=f"{name!r} is not a DNS-1123 label (e.g. tom)"))
    if not is_dns1123_subdomain(api_group) or "." not in api_group:
        problems.append(
            Problem(
                field="--api-group",
                message=f"{api_group!r} is not an API group "
                "(a DNS subdomain with a dot, e.g. certificates.example.corp)",
            )
        )
    export = apiexport if apiexport is not None else api_group
    if not is_dns1123_subdomain(export):
        problems.append(Problem(field="--apiexport", message=f"{export!r} is not a valid object name"))
    chosen_namespace = namespace if namespace is not None else default_namespace()
    if not is_dns1123_label(chosen_namespace):
        problems.append(Problem(field="--namespace", message=f"{chosen_namespace!r} is not a namespace name"))
    selector = (published_resource_selector or "").strip() or None
    if (
        selector is not None
        and (problem := label_selector_text_problem(selector, field="--published-resource-selector")) is not None
    ):
        problems.append(problem)
    addresses: dict[str, Address] = {}
    for flag, text in (("--metrics-address", metrics_address), ("--health-address", health_address)):
        parsed = parse_address(text, flag=flag)
        if isinstance(parsed, Problem):
            problems.append(parsed)
        else:
            addresses[flag] = parsed
    lease: LeaseTiming | None = None
    try:
        lease = LeaseTiming(
            lease_duration=lease_duration, renew_deadline=lease_renew_deadline, retry_period=lease_retry_period
        )
    except ValueError as exc:
        problems.append(
            Problem(field="--lease-duration, --lease-renew-deadline, --lease-retry-period", message=str(exc))
        )
    if resync_period < 0:
        problems.append(Problem(field="--resync-period", message=f"{resync_period} is negative (0 turns it off)"))
    if sync_workers < 1:
        problems.append(Problem(field="--sync-workers", message=f"{sync_workers} is less than 1"))
    if buckets < 0:
        problems.append(Problem(field="--buckets", message=f"{buckets} is negative (0 turns it off)"))
    elif buckets and not leader_election:
        problems.append(
            Problem(field="--buckets", message="replicas share the workspaces only with --leader-election on")
        )
    slice_choice = parse_slice_choice(endpoint_slice) if endpoint_slice else None
    if isinstance(slice_choice, Problem):
        problems.append(slice_choice)
    if problems or lease is None or isinstance(slice_choice, Problem):
        return problems
    return DaemonConfig(
        kubeconfig=kubeconfig or None,
        kcp_kubeconfig=kcp_kubeconfig,
        servlet=ServletIdentity(name=name, api_group=api_group, namespace=chosen_namespace),
        apiexport=export,
        namespace=chosen_namespace,
        leader_election=leader_election,
        published_resource_selector=selector,
        metrics_address=addresses["--metrics-address"],
        health_address=addresses["--health-address"],
        delete_orphans=delete_orphans,
        lease=lease,
        resync_period=resync_period or None,
        sync_workers=sync_workers,
        endpoint_slice=slice_choice,
        buckets=buckets,
    )


def _install_signals(stop: asyncio.Event) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)


# -- the command -----------------------------------------------------------------------------------


def run_command(
    name: Annotated[str, _option("--name", "The servlet's name, e.g. tom (a DNS label).")],
    api_group: Annotated[str, _option("--api-group", "The KDP Service's API group, e.g. certificates.example.corp.")],
    kcp_kubeconfig: Annotated[
        str,
        _option("--kcp-kubeconfig", "Kubeconfig whose server points into the org workspace (.../clusters/root:myorg)."),
    ],
    kubeconfig: Annotated[
        str | None,
        _option(
            "--kubeconfig",
            "Kubeconfig of the service cluster (default: KUBECONFIG, else ~/.kube/config, else in-cluster).",
        ),
    ] = None,
    context: Annotated[
        str | None, _option("--context", "Context of the service cluster's kubeconfig (default: its current context).")
    ] = None,
    kcp_context: Annotated[
        str | None, _option("--kcp-context", "Context of the kcp kubeconfig (default: its current context).")
    ] = None,
    apiexport: Annotated[
        str | None, _option("--apiexport", "The APIExport the servlet manages (default: the API group).")
    ] = None,
    apiexportendpointslice: Annotated[
        str | None,
        _option(
            "--apiexportendpointslice",
            "The APIExportEndpointSlice the VW URLs come from: NAME, or WORKSPACE-PATH:NAME in another workspace "
            "(default: the one named like the APIExport, else the APIExport's status).",
        ),
    ] = None,
    namespace: Annotated[
        str | None,
        _option("--namespace", "Namespace of the leader Lease (default: the pod's namespace, else default)."),
    ] = None,
    leader_election: Annotated[
        bool,
        _option("--leader-election/--no-leader-election", "Only the holder of the Lease <name>.<api group> writes."),
    ] = True,
    published_resource_selector: Annotated[
        str | None,
        _option("--published-resource-selector", "Label selector: only these PublishedResources are served."),
    ] = None,
    metrics_address: Annotated[str, _option("--metrics-address", "host:port for /metrics.")] = ":8080",
    health_address: Annotated[str, _option("--health-address", "host:port for /healthz and /readyz.")] = ":8081",
    log_format: Annotated[LogFormat, _option("--log-format", "json or console.")] = LogFormat.JSON,
    log_level: Annotated[LogLevel, _option("--log-level", "debug, info, warning or error.")] = LogLevel.INFO,
    delete_orphans: Annotated[
        bool, _option("--delete-orphans", "Delete local copies whose workspace object is gone for good.")
    ] = False,
    lease_duration: Annotated[float, _option("--lease-duration", "Seconds a Lease is valid without renewal.")] = 15.0,
    lease_renew_deadline: Annotated[
        float, _option("--lease-renew-deadline", "Seconds the leader keeps trying to renew before it stops writing.")
    ] = 10.0,
    lease_retry_period: Annotated[
        float, _option("--lease-retry-period", "Seconds between attempts to take or renew the Lease.")
    ] = 2.0,
    resync_period: Annotated[
        float, _option("--resync-period", "Seconds between full reconciles of every object (0: only on events).")
    ] = 600.0,
    sync_workers: Annotated[
        int, _option("--sync-workers", "Objects of one PublishedResource reconciled at the same time.")
    ] = 4,
    buckets: Annotated[
        int,
        _option(
            "--buckets",
            "Replicas share the workspaces in this many buckets, each syncing its share (0: only the leader syncs).",
        ),
    ] = 0,
) -> None:
    """Run the servlet: publish PublishedResources into kcp and sync objects both ways until SIGTERM."""
    config = build_config(
        kubeconfig=kubeconfig,
        kcp_kubeconfig=kcp_kubeconfig,
        name=name,
        api_group=api_group,
        apiexport=apiexport,
        namespace=namespace,
        leader_election=leader_election,
        published_resource_selector=published_resource_selector,
        metrics_address=metrics_address,
        health_address=health_address,
        delete_orphans=delete_orphans,
        lease_duration=lease_duration,
        lease_renew_deadline=lease_renew_deadline,
        lease_retry_period=lease_retry_period,
        resync_period=resync_period,
        sync_workers=sync_workers,
        endpoint_slice=apiexportendpointslice,
        buckets=buckets,
    )
    if isinstance(config, list):
        # A usage error: exit code 2, the flags named, as for every other bad flag.
        if len(config) == 1:
            raise typer.BadParameter(config[0].message, param_hint=config[0].field)
        raise typer.BadParameter(
            "; ".join(str(problem) for problem in config), param_hint=", ".join(problem.field for problem in config)
        )
    config = attrs.evolve(config, context=context or None, kcp_context=kcp_context or None)
    configure_logging(log_format=log_format, level=log_level.value.upper())
    gc.set_threshold(*GC_THRESHOLDS)
    code = asyncio.run(run_daemon(config, install_signals=_install_signals))
    raise typer.Exit(code)
