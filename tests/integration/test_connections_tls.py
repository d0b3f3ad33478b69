"""TLS set up once per target is as strict as lightkube's own per-client setup.

Every client of a target shares one SSL context (building one per workspace loaded the system CA
bundle each time). Sharing must not loosen anything: with the kubeconfig's CA every client, the
first and the later ones, trusts the server; without it every one refuses the server.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from lightkube import AsyncClient, KubeConfig
from lightkube.resources.core_v1 import Namespace

from kcpsim import KcpSim
from servlet.adapters.connections import Connections
from servlet.adapters.kube import ClusterClients, async_client, http_client
from servlet.core.model import ResourceType

WORKSPACES = ("root:myorg:team-a", "root:myorg:team-b")


def _config(sim: KcpSim, *, server: str, with_ca: bool) -> KubeConfig:
    config = sim.kubeconfig_dict(server)
    if not with_ca:
        del config["clusters"][0]["cluster"]["certificate-authority-data"]
    return KubeConfig.from_dict(config)


def _configs(sim: KcpSim, *, with_ca: bool) -> tuple[KubeConfig, KubeConfig]:
    """Service and kcp (org workspace) kubeconfigs."""
    return (
        _config(sim, server=sim.base_url, with_ca=with_ca),
        _config(sim, server=sim.workspace_url("root:myorg"), with_ca=with_ca),
    )


async def _names(client: AsyncClient) -> list[str]:
    return [ns.metadata.name async for ns in client.list(Namespace) if ns.metadata and ns.metadata.name]


async def _through_connections(configs: tuple[KubeConfig, KubeConfig], sim: KcpSim) -> list[Any]:
    connections = Connections(service_config=configs[0], kcp_config=configs[1], trust_env=False)
    connections.set_virtual_workspace_url(sim.base_url)
    try:
        results: list[Any] = [await _names(connections.service), await _names(connections.org)]
        for workspace in WORKSPACES:
            results.append(await _names(connections.virtual_workspace(sim.cluster_of(workspace))))
        watch_http = connections.service_source(_namespaces()).collection.http
        results.append((await watch_http.get("api/v1/namespaces")).status_code)
        return results
    finally:
        await connections.aclose()


async def _through_cluster_clients(configs: tuple[KubeConfig, KubeConfig], sim: KcpSim) -> list[Any]:
    clients = ClusterClients(configs[0], base_url=sim.base_url, trust_env=False)
    try:
        return [await _names(clients.get(sim.cluster_of(workspace))) for workspace in WORKSPACES]
    finally:
        await clients.aclose()


async def _through_single_clients(configs: tuple[KubeConfig, KubeConfig], sim: KcpSim) -> list[Any]:
    client = async_client(configs[0], trust_env=False)
    http = http_client(configs[0], trust_env=False)
    try:
        return [await _names(client), (await http.get("api/v1/namespaces")).status_code]
    finally:
        await client.close()
        await http.aclose()


def _namespaces() -> ResourceType:
    return ResourceType(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False)


WAYS: dict[str, Callable[[tuple[KubeConfig, KubeConfig], KcpSim], Any]] = {
    "connections": _through_connections,
    "cluster clients": _through_cluster_clients,
    "single clients": _through_single_clients,
}


@pytest.mark.parametrize("way", sorted(WAYS))
async def test_every_client_trusts_the_server_with_the_kubeconfigs_ca(
    kcpsim_factory: Callable[..., KcpSim], way: str
) -> None:
    sim = kcpsim_factory(tls=True)
    results = await WAYS[way](_configs(sim, with_ca=True), sim)
    assert results and all(result for result in results)


@pytest.mark.parametrize("way", sorted(WAYS))
async def test_without_the_ca_every_client_refuses_the_server(kcpsim_factory: Callable[..., KcpSim], way: str) -> None:
    sim = kcpsim_factory(tls=True)
    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        await WAYS[way](_configs(sim, with_ca=False), sim)


async def test_a_later_client_of_the_same_target_refuses_the_server_too(kcpsim_factory: Callable[..., KcpSim]) -> None:
    # The second workspace's client gets the context the first one already used.
    sim = kcpsim_factory(tls=True)

    service, kcp = _configs(sim, with_ca=False)
    connections = Connections(service_config=service, kcp_config=kcp, trust_env=False)
    connections.set_virtual_workspace_url(sim.base_url)
    refused: list[str] = []
    try:
        for workspace in WORKSPACES:
            try:
                await _names(connections.virtual_workspace(sim.cluster_of(workspace)))
            except httpx2.ConnectError as exc:
                refused.append(f"{workspace}: {'CERTIFICATE_VERIFY_FAILED' in str(exc)}")
    finally:
        await connections.aclose()
    result = refused

    assert result == [f"{workspace}: True" for workspace in WORKSPACES]
