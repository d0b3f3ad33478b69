"""The org-workspace adapter and the kcp kubeconfig checks, over HTTP against kcpsim's seeded org.

kcpsim seeds `root:myorg` (logical cluster `abc123xyz`) with the APIExport
`certificates.example.corp`, one schema in it, and an endpoint slice naming the VW.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from kcpsim import KcpSim
from servlet.adapters.connections import (
    KCP_KUBECONFIG_FLAG,
    ConfigurationError,
    Connections,
    load_kcp_config,
    split_workspace_server,
)
from servlet.adapters.kube import resource_class
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.core.errors import AlreadyExists, Conflict
from servlet.core.ports import SCHEMA_TYPE, WorkspaceIdentity

T = TypeVar("T")
EXPORT = "certificates.example.corp"


async def with_org(
    sim: KcpSim, body: Callable[[OrgWorkspaceAdapter], Awaitable[T]], *, workspace: str | None = None
) -> T:
    connections = Connections(
        service_config=sim.service_config(), kcp_config=sim.kcp_config(workspace), trust_env=False
    )
    try:
        return await body(OrgWorkspaceAdapter(connections.org))
    finally:
        await connections.aclose()


def schema(name: str = "v0a1b2c3d.widgets.certificates.example.corp", *, kind: str = "Widget") -> dict[str, Any]:
    return {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {"name": name},
        "spec": {
            "group": EXPORT,
            "names": {"plural": "widgets", "singular": "widget", "kind": kind, "listKind": f"{kind}List"},
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                }
            ],
        },
    }


# -- identity ----------------------------------------------------------------------------------


@pytest.mark.parametrize("workspace", ["root:myorg", "abc123xyz"])
async def test_the_logical_cluster_resolves_to_name_and_path_whichever_way_the_kubeconfig_names_it(
    kcpsim: KcpSim, workspace: str
) -> None:
    async def body(org: OrgWorkspaceAdapter) -> WorkspaceIdentity:
        return await org.resolve_identity()

    assert await with_org(kcpsim, body, workspace=workspace) == WorkspaceIdentity(name="abc123xyz", path="root:myorg")


async def test_the_root_workspace_has_no_path_annotation_and_its_path_is_its_name(kcpsim: KcpSim) -> None:
    async def body(org: OrgWorkspaceAdapter) -> WorkspaceIdentity:
        return await org.resolve_identity()

    assert await with_org(kcpsim, body, workspace="root") == WorkspaceIdentity(name="root", path="root")


# -- schemas -----------------------------------------------------------------------------------


async def test_a_new_schema_is_created_and_stored_as_sent(kcpsim: KcpSim) -> None:
    async def body(org: OrgWorkspaceAdapter) -> dict[str, Any]:
        return await org.create_schema(schema())

    created = await with_org(kcpsim, body)
    client = kcpsim.client(kcpsim.kcp_config())
    try:
        stored = client.get(resource_class(SCHEMA_TYPE), "v0a1b2c3d.widgets.certificates.example.corp")
    finally:
        client.close()
    assert created["metadata"]["name"] == "v0a1b2c3d.widgets.certificates.example.corp"
    assert stored["spec"]["names"]["kind"] == "Widget"


async def test_creating_the_same_schema_again_is_success_and_sends_no_write_after_the_refused_create(
    kcpsim: KcpSim,
) -> None:
    async def body(org: OrgWorkspaceAdapter) -> tuple[dict[str, Any], dict[str, Any]]:
        first = await org.create_schema(schema())
        kcpsim.requests.clear()
        second = await org.create_schema(schema())
        return first, second

    first, second = await with_org(kcpsim, body)
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert [(r.verb, r.status) for r in kcpsim.requests.records()] == [("create", 409), ("get", 200)]


async def test_a_schema_name_taken_by_another_spec_is_already_exists(kcpsim: KcpSim) -> None:
    async def body(org: OrgWorkspaceAdapter) -> None:
        await org.create_schema(schema())
        await org.create_schema(schema(kind="Gadget"))

    with pytest.raises(AlreadyExists) as raised:
        await with_org(kcpsim, body)
    assert "v0a1b2c3d.widgets.certificates.example.corp" in str(raised.value)


# -- the APIExport -------------------------------------------------------------------------------


async def test_the_export_is_read_as_v1alpha1_and_a_missing_one_is_none(kcpsim: KcpSim) -> None:
    async def body(org: OrgWorkspaceAdapter) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        return await org.get_export(EXPORT), await org.get_export("nope.example.corp")

    export, missing = await with_org(kcpsim, body)
    assert export is not None
    assert export["apiVersion"] == "apis.kcp.io/v1alpha1"
    assert export["spec"]["latestResourceSchemas"] == ["v5f2a9c1e.certificates.certificates.example.corp"]
    assert missing is None


async def test_a_patch_with_the_current_resource_version_changes_only_the_patched_list(kcpsim: KcpSim) -> None:
    async def body(org: OrgWorkspaceAdapter) -> tuple[dict[str, Any], dict[str, Any]]:
        before = await org.get_export(EXPORT)
        assert before is not None
        schemas = [*before["spec"]["latestResourceSchemas"], "v0a1b2c3d.widgets.certificates.example.corp"]
        patched = await org.patch_export(
            EXPORT,
            {"spec": {"latestResourceSchemas": schemas}},
            resource_version=before["metadata"]["resourceVersion"],
        )
        return before, patched

    before, patched = await with_org(kcpsim, body)
    assert patched["spec"]["latestResourceSchemas"] == [
        "v5f2a9c1e.certificates.certificates.example.corp",
        "v0a1b2c3d.widgets.certificates.example.corp",
    ]
    assert patched["spec"]["permissionClaims"] == before["spec"]["permissionClaims"]
    assert patched["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]


async def test_a_patch_with_a_stale_resource_version_is_a_conflict_and_changes_nothing(kcpsim: KcpSim) -> None:
    async def body(org: OrgWorkspaceAdapter) -> dict[str, Any] | None:
        before = await org.get_export(EXPORT)
        assert before is not None
        stale = before["metadata"]["resourceVersion"]
        # Someone else changes the export after we read it.
        await org.patch_export(EXPORT, {"metadata": {"labels": {"touched": "yes"}}}, resource_version=stale)
        with pytest.raises(Conflict):
            await org.patch_export(EXPORT, {"spec": {"latestResourceSchemas": []}}, resource_version=stale)
        return await org.get_export(EXPORT)

    after = await with_org(kcpsim, body)
    assert after is not None
    assert after["spec"]["latestResourceSchemas"] == ["v5f2a9c1e.certificates.certificates.example.corp"]


async def test_the_patch_carries_the_resource_version_inside_the_merge_patch_body(kcpsim: KcpSim) -> None:
    async def body(org: OrgWorkspaceAdapter) -> None:
        before = await org.get_export(EXPORT)
        assert before is not None
        kcpsim.requests.clear()
        await org.patch_export(EXPORT, {"spec": {}}, resource_version=before["metadata"]["resourceVersion"])

    await with_org(kcpsim, body)
    (record,) = kcpsim.requests.records()
    assert (record.method, record.verb, record.resource, record.cluster) == (
        "PATCH",
        "patch",
        "apiexports",
        "abc123xyz",
    )
    assert "/apis/apis.kcp.io/v1alpha1/apiexports/" in record.path


# -- the endpoint slice ----------------------------------------------------------------------------


async def test_the_endpoint_slice_named_like_the_export_gives_the_vw_url(kcpsim: KcpSim) -> None:
    async def body(org: OrgWorkspaceAdapter) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        return await org.get_endpoint_slice(EXPORT), await org.get_endpoint_slice("nope.example.corp")

    found, missing = await with_org(kcpsim, body)
    assert found is not None
    assert [endpoint["url"] for endpoint in found["status"]["endpoints"]] == [kcpsim.vw_url()]
    assert missing is None


# -- the kcp kubeconfig ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "server",
    [
        "https://kcp.example.test:6443",
        "https://kcp.example.test:6443/",
        "https://kcp.example.test:6443/clusters/",
        "https://kcp.example.test:6443/clusters/*",
        "https://kcp.example.test:6443/services/apiexport/abc123xyz/certificates.example.corp",
        "kcp.example.test/clusters/root:myorg",
    ],
)
def test_a_kcp_kubeconfig_that_does_not_point_into_a_workspace_is_a_clear_error(kcpsim: KcpSim, server: str) -> None:
    with pytest.raises(ConfigurationError) as raised:
        Connections(service_config=kcpsim.service_config(), kcp_config=kcpsim.config_for(server), trust_env=False)
    assert KCP_KUBECONFIG_FLAG in str(raised.value)
    assert repr(server) in str(raised.value)


def test_the_kcp_kubeconfig_file_is_checked_when_loaded(kcpsim: KcpSim, tmp_path: Path) -> None:
    path = tmp_path / "kcp.kubeconfig"
    path.write_text(yaml.safe_dump(kcpsim.kubeconfig_dict(kcpsim.base_url)))
    with pytest.raises(ConfigurationError) as raised:
        load_kcp_config(str(path))
    assert KCP_KUBECONFIG_FLAG in str(raised.value) and kcpsim.base_url in str(raised.value)


def test_a_missing_kcp_kubeconfig_file_names_the_flag_and_the_path(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError) as raised:
        load_kcp_config(str(tmp_path / "absent.kubeconfig"))
    assert KCP_KUBECONFIG_FLAG in str(raised.value) and "absent.kubeconfig" in str(raised.value)


@pytest.mark.parametrize(
    ("server", "expected"),
    [
        ("https://kcp.example.test:6443/clusters/root:myorg", ("https://kcp.example.test:6443", "root:myorg")),
        ("https://kcp.example.test/clusters/abc123xyz/", ("https://kcp.example.test", "abc123xyz")),
        ("https://proxy.example.test/kcp/clusters/root:a:b", ("https://proxy.example.test/kcp", "root:a:b")),
    ],
)
def test_the_workspace_and_the_kcp_base_url_are_split_from_the_server(server: str, expected: tuple[str, str]) -> None:
    assert split_workspace_server(server) == expected


async def test_the_daemon_connects_from_the_two_kubeconfig_files(kcpsim: KcpSim, tmp_path: Path) -> None:
    files = kcpsim.write_kubeconfigs(tmp_path)

    async def main() -> WorkspaceIdentity:
        connections = Connections.from_kubeconfigs(kubeconfig=str(files["service"]), kcp_kubeconfig=str(files["kcp"]))
        try:
            assert connections.workspace_path == "root:myorg"
            return await OrgWorkspaceAdapter(connections.org).resolve_identity()
        finally:
            await connections.aclose()

    assert await main() == WorkspaceIdentity(name="abc123xyz", path="root:myorg")
