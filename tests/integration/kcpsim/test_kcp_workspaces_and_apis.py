"""kcp: workspaces and logical clusters, APIResourceSchema, APIExport (both versions), endpoint
slices and APIBindings, with the fixture values of the kcp reference."""

from __future__ import annotations

import copy
from collections.abc import Callable

import pytest
from lightkube import ApiError, Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Namespace
from lightkube.types import PatchType

from kcpsim import KcpSim, Topology
from kcpsim.topology import schema_for
from tests.integration.kcpsim.helpers import (
    EXPORT,
    EXPORT_HASH,
    IDENTITY,
    NAMESPACES_CLAIM,
    ORG,
    TEAM_A,
    APIBinding,
    APIBindingV2,
    APIExport,
    APIExportV2,
    APIResourceSchema,
    Certificate,
    EndpointSlice,
    LogicalCluster,
    Raw,
    Workspace,
    certificate,
)


@pytest.mark.parametrize(
    ("path", "cluster", "kcp_path"),
    [
        ("root:myorg", ORG, "root:myorg"),
        (ORG, ORG, "root:myorg"),
        ("root:myorg:team-a", TEAM_A, "root:myorg:team-a"),
        (TEAM_A, TEAM_A, "root:myorg:team-a"),
    ],
)
def test_a_workspace_tells_its_logical_cluster_name_and_path(
    kcpsim: KcpSim, path: str, cluster: str, kcp_path: str
) -> None:
    with kcpsim.client(kcpsim.kcp_config(path)) as client:
        lc = client.get(LogicalCluster, "cluster")
    assert lc.metadata.annotations["kcp.io/cluster"] == cluster
    assert lc.metadata.annotations["kcp.io/path"] == kcp_path
    assert lc["status"]["URL"].endswith(f"/clusters/{cluster}")
    assert lc["status"]["phase"] == "Ready"


def test_the_root_logical_cluster_has_no_path_annotation(kcpsim: KcpSim) -> None:
    with kcpsim.client(kcpsim.kcp_config("root")) as client:
        lc = client.get(LogicalCluster, "cluster")
    assert "kcp.io/path" not in lc.metadata.annotations and lc.metadata.annotations["kcp.io/cluster"] == "root"


def test_every_object_carries_its_true_cluster_annotation(team_a: Client) -> None:
    created = team_a.create(
        ConfigMap(metadata=ObjectMeta(name="c", namespace="default", annotations={"kcp.io/cluster": "forged"}))
    )
    assert created.metadata.annotations["kcp.io/cluster"] == TEAM_A
    assert all(c.metadata.annotations["kcp.io/cluster"] == TEAM_A for c in team_a.list(ConfigMap, namespace="*"))


def test_service_cluster_objects_carry_no_cluster_annotation(service: Client) -> None:
    created = service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="default")))
    assert not created.metadata.annotations


def test_the_same_names_live_apart_in_different_workspaces(team_a: Client, team_b: Client) -> None:
    team_a.create(ConfigMap(metadata=ObjectMeta(name="same", namespace="default"), data={"who": "a"}))
    team_b.create(ConfigMap(metadata=ObjectMeta(name="same", namespace="default"), data={"who": "b"}))
    assert team_a.get(ConfigMap, "same", namespace="default").data == {"who": "a"}


@pytest.mark.parametrize(
    "path",
    [
        "/clusters/root:nope/api/v1/namespaces",
        "/clusters/*/api/v1/namespaces",
        "/clusters/Root:X/api/v1/namespaces",
        "/clusters/nothere/api/v1/namespaces",
    ],
)
def test_unknown_or_wildcard_workspaces_are_forbidden_like_the_front_proxy(raw: Raw, path: str) -> None:
    response = raw("GET", path)
    assert response.status_code == 403
    assert response.json()["message"] == "workspace access not permitted"


def test_child_workspaces_are_listed_in_the_org(org: Client) -> None:
    found = {w.metadata.name: w["spec"]["cluster"] for w in org.list(Workspace)}
    assert found == {"team-a": TEAM_A, "team-b": "p4n8c2l6t0y9h1j3"}


def test_creating_a_workspace_makes_a_reachable_logical_cluster(kcpsim: KcpSim, org: Client) -> None:
    org.create(Workspace({"metadata": {"name": "team-c"}, "spec": {"type": {"name": "universal", "path": "root"}}}))
    workspace = org.get(Workspace, "team-c")
    assert workspace["status"]["phase"] == "Ready" and workspace["spec"]["URL"].endswith("/clusters/root:myorg:team-c")
    with kcpsim.client(kcpsim.kcp_config("root:myorg:team-c")) as client:
        lc = client.get(LogicalCluster, "cluster")
    assert lc.metadata.annotations["kcp.io/cluster"] == workspace["spec"]["cluster"]


def test_the_export_identity_is_the_sha256_of_the_identity_key(org: Client) -> None:
    export = org.get(APIExport, EXPORT)
    assert export["status"]["identityHash"] == IDENTITY
    assert export["spec"]["identity"] == {"secretRef": {"namespace": "kcp-system", "name": EXPORT}}
    assert export.metadata.annotations["kcp.io/path"] == "root:myorg"


def test_a_new_export_gets_an_identity_secret_hash_and_endpoint_slice(org: Client) -> None:
    org.create(APIExport({"metadata": {"name": "other.example.corp"}, "spec": {}}))
    export = org.get(APIExport, "other.example.corp")
    assert export["spec"]["identity"]["secretRef"]["name"] == "other.example.corp"
    assert len(export["status"]["identityHash"]) == 64
    endpoint_slice = org.get(EndpointSlice, "other.example.corp")
    assert endpoint_slice["spec"]["export"] == {"path": "root:myorg", "name": "other.example.corp"}
    assert endpoint_slice["status"]["endpoints"] == []  # nobody binds it yet


def test_the_two_export_versions_are_views_of_one_object(org: Client) -> None:
    v1 = org.get(APIExport, EXPORT)
    v2 = org.get(APIExportV2, EXPORT)
    assert (v1.metadata.uid, v1.metadata.resourceVersion) == (v2.metadata.uid, v2.metadata.resourceVersion)
    assert v1["spec"]["latestResourceSchemas"] == [f"v5f2a9c1e.certificates.{EXPORT}"]
    assert v1["spec"]["permissionClaims"] == [
        {"group": "", "resource": "namespaces", "all": True},
        {"group": "", "resource": "secrets", "all": True},
    ]
    assert v2["spec"]["resources"] == [
        {"group": EXPORT, "name": "certificates", "schema": f"v5f2a9c1e.certificates.{EXPORT}", "storage": {"crd": {}}}
    ]
    assert [c["verbs"] for c in v2["spec"]["permissionClaims"]] == [["*"], ["*"]]
    assert "apis.v1alpha2.kcp.io/v1alpha1-permission-claims" in v2.metadata.annotations
    assert "apis.v1alpha2.kcp.io/v1alpha1-permission-claims" not in v1.metadata.annotations


def test_a_v1alpha1_claim_needs_all_or_a_resource_selector(org: Client) -> None:
    with pytest.raises(ApiError) as caught:
        org.patch(
            APIExport,
            EXPORT,
            {"spec": {"permissionClaims": [{"group": "", "resource": "configmaps"}]}},
            patch_type=PatchType.MERGE,
        )
    assert caught.value.status.code == 422
    assert 'either "all" or "resourceSelector" must be set' in caught.value.status.message


def test_a_claim_on_a_non_builtin_resource_needs_an_identity_hash(org: Client) -> None:
    with pytest.raises(ApiError) as caught:
        org.patch(
            APIExport,
            EXPORT,
            {"spec": {"permissionClaims": [{"group": "widgets.example.com", "resource": "widgets", "all": True}]}},
            patch_type=PatchType.MERGE,
        )
    assert caught.value.status.code == 403
    assert "identityHash is required" in caught.value.status.message


@pytest.mark.parametrize(
    ("name", "spec_change", "fragment"),
    [
        ("5f2a9c1e.certificates.certificates.example.corp", {}, "must match"),
        ("vabc.widgets.certificates.example.corp", {}, "must end in .certificates.certificates.example.corp"),
        ("vabc.certificates.core", {"group": "core"}, "must be empty string for the core group"),
        ("vabc.certificates.nodot", {"group": "nodot"}, "at least one dot"),
    ],
)
def test_schema_admission_rejects_bad_names_and_groups(
    org: Client, name: str, spec_change: dict[str, str], fragment: str
) -> None:
    body = schema_for(Topology())
    body["metadata"]["name"] = name
    body["spec"].update(spec_change)
    with pytest.raises(ApiError) as caught:
        org.create(APIResourceSchema(body))
    assert caught.value.status.code == 403 and fragment in caught.value.status.message


def test_a_schema_of_several_versions_needs_a_conversion_strategy(org: Client) -> None:
    body = schema_for(Topology())
    body["metadata"]["name"] = f"vtwo.certificates.{EXPORT}"
    first = body["spec"]["versions"][0]
    body["spec"]["versions"] = [{**first, "name": "v2", "storage": False}, first]
    with pytest.raises(ApiError) as caught:
        org.create(APIResourceSchema(copy.deepcopy(body)))
    assert caught.value.status.code == 403 and "conversion is required" in caught.value.status.message
    body["spec"]["conversion"] = {"strategy": "None"}
    created = org.create(APIResourceSchema(body))
    assert [v["name"] for v in created["spec"]["versions"]] == ["v2", first["name"]]


def test_schema_spec_is_immutable(org: Client) -> None:
    with pytest.raises(ApiError) as caught:
        org.patch(
            APIResourceSchema,
            f"v5f2a9c1e.certificates.{EXPORT}",
            {"spec": {"scope": "Cluster"}},
            patch_type=PatchType.MERGE,
        )
    assert caught.value.status.code == 403 and "immutable" in caught.value.status.message


def test_the_endpoint_slice_points_at_the_virtual_workspace_on_the_same_server(kcpsim: KcpSim, org: Client) -> None:
    endpoint_slice = org.get(EndpointSlice, EXPORT)
    assert endpoint_slice["status"]["endpoints"] == [{"url": f"{kcpsim.base_url}/services/apiexport/{ORG}/{EXPORT}"}]


def test_endpoints_appear_with_the_first_binding(kcpsim_factory: Callable[..., KcpSim]) -> None:
    sim: KcpSim = kcpsim_factory(topology=Topology(workspaces=()))
    with sim.client(sim.kcp_config()) as org:
        assert org.get(EndpointSlice, EXPORT)["status"]["endpoints"] == []
        sim.add_workspace("late")
        assert len(org.get(EndpointSlice, EXPORT)["status"]["endpoints"]) == 1


def test_seeded_bindings_are_bound_with_labels_and_finalizer(team_a: Client) -> None:
    binding = team_a.get(APIBindingV2, EXPORT)
    assert binding.metadata.labels == {"internal.apis.kcp.io/export": EXPORT_HASH}
    assert binding.metadata.finalizers == ["apis.kcp.io/apibinding-finalizer"]
    assert binding.metadata.annotations["kcp.io/path"] == "root:myorg:team-a"
    status = binding["status"]
    assert status["phase"] == "Bound" and status["apiExportClusterName"] == ORG
    assert status["boundResources"][0]["schema"]["identityHash"] == IDENTITY
    assert {c["type"]: c["status"] for c in status["conditions"]}["Ready"] == "True"
    assert [c["state"] for c in binding["spec"]["permissionClaims"]] == ["Accepted", "Accepted"]


def test_claimed_objects_in_a_consumer_workspace_get_claim_labels(team_a: Client) -> None:
    default = team_a.get(Namespace, "default")
    assert default.metadata.labels[f"claimed.internal.apis.kcp.io/{EXPORT_HASH}"] == NAMESPACES_CLAIM


def test_users_cannot_forge_claim_labels(team_a: Client) -> None:
    with pytest.raises(ApiError) as caught:
        team_a.create(
            ConfigMap(
                metadata=ObjectMeta(
                    name="c", namespace="default", labels={f"claimed.internal.apis.kcp.io/{EXPORT_HASH}": "x"}
                )
            )
        )
    assert caught.value.status.code == 403 and "must not be set" in caught.value.status.message


def test_a_bound_resource_is_served_in_the_consumer_workspace_only(team_a: Client, org: Client) -> None:
    created = team_a.create(certificate("web"))
    assert created.metadata.annotations["kcp.io/cluster"] == TEAM_A
    with pytest.raises(ApiError) as caught:
        org.list(Certificate, namespace="*").__iter__().__next__()
    assert caught.value.status.code == 404


def test_binding_a_missing_export_is_forbidden(team_a: Client) -> None:
    with pytest.raises(ApiError) as caught:
        team_a.create(
            APIBinding(
                {
                    "metadata": {"name": "nope"},
                    "spec": {"reference": {"export": {"path": "root:myorg", "name": "nope"}}},
                }
            )
        )
    assert caught.value.status.code == 403
    assert "no permission to bind to export root:myorg:nope" in caught.value.status.message


def test_the_binding_reference_is_immutable(team_a: Client) -> None:
    with pytest.raises(ApiError) as caught:
        team_a.patch(
            APIBinding, EXPORT, {"spec": {"reference": {"export": {"name": "other"}}}}, patch_type=PatchType.MERGE
        )
    assert caught.value.status.code == 422


def test_a_new_schema_on_the_export_reaches_existing_bindings(org: Client, team_a: Client, raw: Raw) -> None:
    body = schema_for(Topology())
    body["metadata"]["name"] = f"vnew.issuers.{EXPORT}"
    body["spec"]["names"] = {"plural": "issuers", "singular": "issuer", "kind": "Issuer", "listKind": "IssuerList"}
    org.create(APIResourceSchema(body))
    export = org.get(APIExport, EXPORT)
    org.patch(
        APIExport,
        EXPORT,
        {"spec": {"latestResourceSchemas": [*export["spec"]["latestResourceSchemas"], f"vnew.issuers.{EXPORT}"]}},
        patch_type=PatchType.MERGE,
    )
    resources = {b["resource"] for b in team_a.get(APIBinding, EXPORT)["status"]["boundResources"]}
    assert resources == {"certificates", "issuers"}
    assert raw("GET", f"/clusters/root:myorg:team-a/apis/{EXPORT}/v1alpha1/issuers").status_code == 200


def test_consumer_logical_cluster_records_the_binding_lock(kcpsim: KcpSim, team_a: Client) -> None:
    lc = team_a.get(LogicalCluster, "cluster")
    assert (
        lc.metadata.annotations["internal.apis.kcp.io/resource-bindings"]
        == '{"certificates.certificates.example.corp":{"n":"certificates.example.corp"}}'
    )


def test_deprecated_virtual_workspace_urls_on_request(kcpsim_factory: Callable[..., KcpSim]) -> None:
    sim: KcpSim = kcpsim_factory(deprecated_vw_urls=True)
    with sim.client(sim.kcp_config()) as org:
        assert org.get(APIExport, EXPORT)["status"]["virtualWorkspaces"] == [{"url": sim.vw_url()}]


def test_the_reference_fixture_has_sample_objects(kcpsim_factory: Callable[..., KcpSim]) -> None:
    sim: KcpSim = kcpsim_factory(topology=Topology.reference())
    with sim.client(sim.workspace_config("team-b")) as team_b:
        cert = team_b.get(Certificate, "api", namespace="prod")
    assert cert["spec"] == {"commonName": "api.team-b.example", "secretName": "api-tls"}


def test_a_topology_of_n_bound_workspaces_under_other_names(kcpsim_factory: Callable[..., KcpSim]) -> None:
    sim = kcpsim_factory(topology=Topology.with_workspaces(5, org="root:acme", export="widgets.acme.io"))
    assert sim.vw_url().endswith(f"/services/apiexport/{sim.topology.org_cluster_name()}/widgets.acme.io")
    with sim.client(sim.vw_config("*")) as vw:
        paths = sorted(b.metadata.annotations["kcp.io/path"] for b in vw.list(APIBinding))
    assert paths == [f"root:acme:team-{i}" for i in range(1, 6)]
    with sim.client(sim.workspace_config("team-3")) as team_3:
        assert len(team_3.get(LogicalCluster, "cluster").metadata.annotations["kcp.io/cluster"]) == 16


def test_a_client_supplied_path_annotation_is_forced_to_the_canonical_path(team_a: Client) -> None:
    created = team_a.create(
        ConfigMap(metadata=ObjectMeta(name="c", namespace="default", annotations={"kcp.io/path": "root:elsewhere"}))
    )
    assert created.metadata.annotations["kcp.io/path"] == "root:myorg:team-a"
