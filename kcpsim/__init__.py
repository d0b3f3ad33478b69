"""kcpsim: a Kubernetes + kcp API simulator for integration tests, benchmarks and local trials.

It speaks the HTTP API of a kube-apiserver and of a single kcp shard (workspaces, APIExports,
APIBindings and the APIExport virtual workspace) on 127.0.0.1, so the servlet can be tested with
its real client. It is the servlet's test world, not product code: it keeps everything in memory
and authenticates and authorizes only when asked to (`SimConfig(authn=..., authz=...)`). It is a
distribution of its own (kcpsim/pyproject.toml, console script `kcpsim`), installed beside the
servlet for development and never shipped with it.
"""

from kcpsim.faults import ErrorRule, FaultPlan, LatencyRule
from kcpsim.requestlog import RequestLog, RequestRecord
from kcpsim.sim import KcpSim, SimConfig
from kcpsim.topology import Topology, WorkspaceSpec

__all__ = [
    "ErrorRule",
    "FaultPlan",
    "KcpSim",
    "LatencyRule",
    "RequestLog",
    "RequestRecord",
    "SimConfig",
    "Topology",
    "WorkspaceSpec",
]
