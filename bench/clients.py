"""Client creation cost (issue 6): one VW client per workspace, 1,000 workspaces.

The servlet makes a lightkube client per workspace of the virtual workspace. What each costs
depends on TLS setup, so this times `Connections.virtual_workspace` for fresh workspaces with a
kubeconfig that carries no CA (verification against the system trust store, the costly case) and
one that carries a CA. It opens no connection: creating a client sends nothing.
"""

from __future__ import annotations

import asyncio
import base64
import statistics
import time

from lightkube import KubeConfig

from kcpsim import tls
from servlet.adapters.connections import Connections

WORKSPACES = 1_000
SERVER = "https://kcp.example.test:6443/clusters/root:org"


def _config(*, ca_pem: bytes | None) -> KubeConfig:
    cluster: dict[str, object] = {"server": SERVER}
    if ca_pem is not None:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    return KubeConfig.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "c",
            "clusters": [{"name": "c", "cluster": cluster}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        }
    )


async def _create_clients(config: KubeConfig, workspaces: int) -> float:
    connections = Connections(service_config=config, kcp_config=config)
    connections.set_virtual_workspace_url("https://kcp.example.test:6443/services/apiexport/root:org/widgets")
    started = time.perf_counter()
    for number in range(workspaces):
        connections.virtual_workspace(f"ws{number}")
    elapsed = time.perf_counter() - started
    await connections.aclose()
    return elapsed


def measure(workspaces: int = WORKSPACES, *, repeats: int = 3) -> dict[str, float]:
    """Median seconds to create `workspaces` VW clients, per kind of kubeconfig."""
    ca_pem = tls.generate().ca_pem
    cases = {"system trust store": _config(ca_pem=None), "CA in the kubeconfig": _config(ca_pem=ca_pem)}
    return {
        name: statistics.median(asyncio.run(_create_clients(config, workspaces)) for _ in range(repeats))
        for name, config in cases.items()
    }


def main() -> None:
    for name, seconds in measure().items():
        print(f"{WORKSPACES} VW clients, {name}: {seconds:.3f} s ({seconds / WORKSPACES * 1e3:.3f} ms each)")


if __name__ == "__main__":
    main()
