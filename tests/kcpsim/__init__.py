"""kcpsim: a Kubernetes + kcp API simulator for integration tests, benchmarks and local trials.

It speaks the HTTP API of a kube-apiserver and of a single kcp shard (workspaces, APIExports,
APIBindings and the APIExport virtual workspace) on 127.0.0.1, so the servlet can be tested with
its real client. It is test support, not product code: it keeps everything in memory and does
no authentication.
"""

from tests.kcpsim.faults import ErrorRule, FaultPlan, LatencyRule
from tests.kcpsim.requestlog import RequestLog, RequestRecord
from tests.kcpsim.sim import KcpSim, SimConfig
from tests.kcpsim.topology import Topology, WorkspaceSpec

__all__ = [
    "ErrorRule", "FaultPlan", "KcpSim", "LatencyRule", "RequestLog", "RequestRecord", "SimConfig",
    "Topology", "WorkspaceSpec",
]
