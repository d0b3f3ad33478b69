"""Built-in types read from the service cluster (kcpsim over HTTP): discovery and OpenAPI v3
become the CRD each type would have, and a group nobody serves costs one request and no problem."""

from __future__ import annotations

from typing import Any

from kcpsim import KcpSim
from servlet.adapters.builtin_discovery import describe_builtin_types
from servlet.adapters.connections import Connections


async def _describe(sim: KcpSim, wanted: list[tuple[str, str]]) -> tuple[dict[str, dict[str, Any]], list[str]]:
    connections = Connections(service_config=sim.service_config(), kcp_config=sim.kcp_config(), trust_env=False)
    try:
        crds, problems = await describe_builtin_types(connections.service_http, wanted)
    finally:
        await connections.aclose()
    return {crd["spec"]["names"]["kind"]: crd for crd in crds}, [str(problem) for problem in problems]


async def test_roles_configmaps_and_namespaces_are_described_as_discovery_shows_them(kcpsim: KcpSim) -> None:
    wanted = [("rbac.authorization.k8s.io", "Role"), ("", "ConfigMap"), ("", "Namespace")]
    crds, problems = await _describe(kcpsim, wanted)
    assert problems == []
    assert sorted(crds) == ["ConfigMap", "Namespace", "Role"]
    role, configmap, namespace = crds["Role"], crds["ConfigMap"], crds["Namespace"]
    assert (role["spec"]["group"], role["spec"]["names"]["plural"], role["spec"]["scope"]) == (
        "rbac.authorization.k8s.io",
        "roles",
        "Namespaced",
    )
    assert [(v["name"], v["storage"]) for v in role["spec"]["versions"]] == [("v1", True)]
    assert "subresources" not in role["spec"]["versions"][0]
    assert configmap["metadata"]["name"] == "configmaps.core" and configmap["spec"]["group"] == ""
    assert "subresources" not in configmap["spec"]["versions"][0]
    assert namespace["spec"]["scope"] == "Cluster"
    assert namespace["spec"]["versions"][0]["subresources"] == {"status": {}}


async def test_a_group_or_kind_nobody_serves_is_left_out_without_reading_openapi(kcpsim: KcpSim) -> None:
    kcpsim.requests.clear()
    crds, problems = await _describe(kcpsim, [("nothing.example.org", "Thing")])
    assert (crds, problems) == ({}, [])
    paths = [record.path for record in kcpsim.requests.records()]
    assert not any(path.startswith("/openapi") for path in paths), paths
    crds, problems = await _describe(kcpsim, [("rbac.authorization.k8s.io", "Gizmo")])
    assert (crds, problems) == ({}, [])
