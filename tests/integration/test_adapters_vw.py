"""The virtual-workspace adapter over HTTP against kcpsim: per-workspace reads and the wildcard view.

The VW URL comes from the endpoint slice, as the daemon finds it; team-a (`k7v2m9x4q1w8z3r5`) and
team-b (`p4n8c2l6t0y9h1j3`) bind the export and accepted its claims (namespaces, secrets).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import pytest

from kcpsim import KcpSim
from servlet.adapters.connections import Connections, Target, VirtualWorkspaceUnknown
from servlet.adapters.kube import resource_class, wrap
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.adapters.virtual_workspace import VirtualWorkspaceAdapter
from servlet.app.runtime.informer import Informer
from servlet.app.runtime.informer_events import ObjectKey
from servlet.core.apiexport import virtual_workspace_url
from servlet.core.errors import Forbidden
from servlet.core.model import ResourceType
from servlet.core.targets import SECRET_TYPE

T = TypeVar("T")
TEAM_A = "k7v2m9x4q1w8z3r5"
TEAM_B = "p4n8c2l6t0y9h1j3"
CERTIFICATES = ResourceType(
    group="certificates.example.corp", version="v1alpha1", kind="Certificate", plural="certificates", namespaced=True
)


async def with_vw(sim: KcpSim, body: Callable[[Connections], Awaitable[T]]) -> T:
    """Connections whose VW URL was found the way the daemon finds it: in the endpoint slice."""

    connections = Connections(service_config=sim.service_config(), kcp_config=sim.kcp_config(), trust_env=False)
    try:
        org = OrgWorkspaceAdapter(connections.org)
        url = virtual_workspace_url(
            endpoint_slice=await org.get_endpoint_slice("certificates.example.corp"), export=None
        )
        assert url is not None
        connections.set_virtual_workspace_url(url)
        return await body(connections)
    finally:
        await connections.aclose()


def certificate(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "certificates.example.corp/v1alpha1",
        "kind": "Certificate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"commonName": f"{name}.example", "secretName": f"{name}-tls"},
    }


def create_in(sim: KcpSim, workspace: str, resource: ResourceType, obj: dict[str, Any]) -> None:
    client = sim.client(sim.workspace_config(workspace))
    try:
        client.create(wrap(resource_class(resource), obj))
    finally:
        client.close()


async def test_one_object_is_read_in_the_workspace_its_cluster_names(kcpsim: KcpSim) -> None:
    create_in(kcpsim, "team-a", CERTIFICATES, certificate("web", "default"))

    async def body(connections: Connections) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        vw = VirtualWorkspaceAdapter(connections)
        return (
            await vw.get(CERTIFICATES, cluster=TEAM_A, namespace="default", name="web"),
            await vw.get(CERTIFICATES, cluster=TEAM_B, namespace="default", name="web"),
        )

    in_a, in_b = await with_vw(kcpsim, body)
    assert in_a is not None
    assert in_a["metadata"]["annotations"]["kcp.io/cluster"] == TEAM_A
    assert in_a["spec"]["commonName"] == "web.example"
    assert in_b is None


async def test_a_claimed_secret_is_read_through_the_vw(kcpsim: KcpSim) -> None:
    create_in(
        kcpsim,
        "team-b",
        SECRET_TYPE,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "api-tls", "namespace": "default"},
            "data": {"tls.key": "a2V5"},
        },
    )

    async def body(connections: Connections) -> dict[str, Any] | None:
        return await VirtualWorkspaceAdapter(connections).get(
            SECRET_TYPE, cluster=TEAM_B, namespace="default", name="api-tls"
        )

    found = await with_vw(kcpsim, body)
    assert found is not None and found["data"] == {"tls.key": "a2V5"}


@pytest.mark.parametrize("workspace", ["org", "unaccepted"])
async def test_a_workspace_without_binding_or_accepted_claim_is_forbidden(kcpsim: KcpSim, workspace: str) -> None:
    cluster = "abc123xyz" if workspace == "org" else kcpsim.add_workspace("team-x", accept_claims=False)

    async def body(connections: Connections) -> dict[str, Any] | None:
        return await VirtualWorkspaceAdapter(connections).get(
            SECRET_TYPE, cluster=cluster, namespace="default", name="x"
        )

    with pytest.raises(Forbidden) as raised:
        await with_vw(kcpsim, body)
    assert raised.value.code == 403
    assert f"workspace {cluster}" in str(raised.value)


async def test_a_vw_read_before_the_url_is_known_says_so(kcpsim: KcpSim) -> None:
    async def main() -> None:
        connections = Connections(
            service_config=kcpsim.service_config(), kcp_config=kcpsim.kcp_config(), trust_env=False
        )
        try:
            await VirtualWorkspaceAdapter(connections).get(CERTIFICATES, cluster=TEAM_A, namespace="default", name="w")
        finally:
            await connections.aclose()

    with pytest.raises(VirtualWorkspaceUnknown, match="not known yet"):
        await main()
    assert kcpsim.requests.count(where=lambda r: r.virtual_workspace) == 0


async def test_workspace_clients_are_made_once_and_all_their_requests_are_counted_as_vw(kcpsim: KcpSim) -> None:
    seen: list[tuple[Target, str, int | None]] = []

    def observe(*, target: Target, verb: str, code: int | None) -> None:
        seen.append((target, verb, code))

    async def main() -> bool:
        connections = Connections(
            service_config=kcpsim.service_config(), kcp_config=kcpsim.kcp_config(), on_request=observe, trust_env=False
        )
        try:
            connections.set_virtual_workspace_url(kcpsim.vw_url())
            same = connections.virtual_workspace(TEAM_A) is connections.virtual_workspace(TEAM_A)
            vw = VirtualWorkspaceAdapter(connections)
            await vw.get(CERTIFICATES, cluster=TEAM_A, namespace="default", name="x")
            await vw.get(CERTIFICATES, cluster=TEAM_B, namespace="default", name="x")
            return same
        finally:
            await connections.aclose()

    assert await main()
    assert seen == [(Target.VIRTUAL_WORKSPACE, "get", 404)] * 2
    assert [r.cluster for r in kcpsim.requests.records()] == [TEAM_A, TEAM_B]


async def test_the_wildcard_list_spans_every_bound_workspace(kcpsim: KcpSim) -> None:
    create_in(kcpsim, "team-a", CERTIFICATES, certificate("web", "default"))
    create_in(kcpsim, "team-b", CERTIFICATES, certificate("api", "default"))

    async def body(connections: Connections) -> tuple[list[ObjectKey], str]:
        source = connections.virtual_workspace_sources(CERTIFICATES)[0]
        informer = Informer(source)
        task = asyncio.create_task(informer.run())
        try:
            await informer.wait_synced()
            return sorted(informer.keys(), key=lambda key: key.cluster), source.name
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    keys, name = await with_vw(kcpsim, body)
    assert keys == [
        ObjectKey(cluster=TEAM_A, namespace="default", name="web"),
        ObjectKey(cluster=TEAM_B, namespace="default", name="api"),
    ]
    assert name == "vw/certificates.certificates.example.corp"
    (listed,) = kcpsim.requests.matching(verb="list", resource="certificates")
    assert listed.cluster == "*" and listed.virtual_workspace


async def test_a_one_shot_list_spans_every_bound_workspace(kcpsim: KcpSim) -> None:
    create_in(kcpsim, "team-a", CERTIFICATES, certificate("web", "default"))
    create_in(kcpsim, "team-b", CERTIFICATES, certificate("api", "default"))

    async def body(connections: Connections) -> list[tuple[str, str, str]]:
        found = await VirtualWorkspaceAdapter(connections).list_objects(CERTIFICATES)
        return sorted((o["metadata"]["annotations"]["kcp.io/cluster"], o["kind"], o["metadata"]["name"]) for o in found)

    assert await with_vw(kcpsim, body) == [(TEAM_A, "Certificate", "web"), (TEAM_B, "Certificate", "api")]
    (listed,) = kcpsim.requests.matching(verb="list", resource="certificates")
    assert listed.cluster == "*"
