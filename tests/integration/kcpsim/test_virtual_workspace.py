"""The APIExport virtual workspace end to end: wildcard list/watch, per-workspace writes,
claims and their acceptance, and the 400/403/404 cases of the kcp reference (6.6)."""

from __future__ import annotations

import threading
import time

import pytest
from lightkube import ApiError, Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Namespace, Secret
from lightkube.types import PatchType

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import (
    EXPORT,
    EXPORT_HASH,
    ORG,
    SECRETS_CLAIM,
    TEAM_A,
    TEAM_B,
    APIBinding,
    APIExport,
    Certificate,
    EndpointSlice,
    Raw,
    certificate,
    read_events,
)

GROUP_PATH = f"/apis/{EXPORT}/v1alpha1"


@pytest.fixture
def vw_base(kcpsim: KcpSim) -> str:
    return f"/services/apiexport/{ORG}/{EXPORT}"


@pytest.fixture
def in_a(kcpsim: KcpSim) -> Client:
    client = kcpsim.client(kcpsim.vw_config(TEAM_A))
    yield client  # type: ignore[misc]
    client.close()


def test_wildcard_list_spans_workspaces_with_one_resource_version(
    vw: Client, team_a: Client, team_b: Client, raw: Raw, vw_base: str
) -> None:
    team_a.create(certificate("web"))
    team_b.create(Namespace(metadata=ObjectMeta(name="prod")))
    team_b.create(certificate("api", namespace="prod"))
    team_b.create(certificate("web"))
    items = {
        (c.metadata.annotations["kcp.io/cluster"], c.metadata.namespace, c.metadata.name)
        for c in vw.list(Certificate, namespace="*")
    }
    assert items == {(TEAM_A, "default", "web"), (TEAM_B, "prod", "api"), (TEAM_B, "default", "web")}
    body = raw("GET", f"{vw_base}/clusters/*{GROUP_PATH}/certificates").json()
    assert body["kind"] == "CertificateList" and int(body["metadata"]["resourceVersion"]) >= max(
        int(i["metadata"]["resourceVersion"]) for i in body["items"]
    )


def test_wildcard_watch_sees_events_from_every_workspace(
    vw: Client, team_a: Client, team_b: Client, kcpsim: KcpSim
) -> None:
    start = str(kcpsim.world.store.rv)
    team_a.create(certificate("one"))
    team_b.create(certificate("two"))
    seen = []
    for kind, obj in vw.watch(Certificate, namespace="*", resource_version=start, server_timeout=2):
        seen.append((kind, obj.metadata.annotations["kcp.io/cluster"], obj.metadata.name))
        if len(seen) == 2:
            break
    assert seen == [("ADDED", TEAM_A, "one"), ("ADDED", TEAM_B, "two")]


def test_a_workspace_bound_later_appears_on_a_running_wildcard_watch(vw: Client, kcpsim: KcpSim) -> None:
    seen: list[str] = []

    def watch() -> None:
        for _, obj in vw.watch(
            Certificate, namespace="*", resource_version=str(kcpsim.world.store.rv), server_timeout=5
        ):
            seen.append(obj.metadata.annotations["kcp.io/cluster"])
            return

    thread = threading.Thread(target=watch)
    thread.start()
    time.sleep(0.2)
    cluster = kcpsim.add_workspace("team-late")
    with kcpsim.client(kcpsim.workspace_config("team-late")) as late:
        late.create(certificate("x"))
    thread.join(timeout=5)
    assert seen == [cluster]


def test_per_workspace_create_get_update_status_and_delete(in_a: Client, team_a: Client) -> None:
    created = in_a.create(certificate("web", secretName="web-tls"))
    assert created.metadata.annotations["kcp.io/cluster"] == TEAM_A
    assert team_a.get(Certificate, "web", namespace="default")["spec"]["secretName"] == "web-tls"
    fetched = in_a.get(Certificate, "web", namespace="default")
    fetched["status"] = {"phase": "Ready"}
    in_a.replace(Certificate.Status(fetched))
    assert team_a.get(Certificate, "web", namespace="default")["status"] == {"phase": "Ready"}
    in_a.delete(Certificate, "web", namespace="default")
    assert list(team_a.list(Certificate, namespace="*")) == []


def test_the_provider_finalizer_flow(in_a: Client, team_a: Client) -> None:
    created = team_a.create(certificate("web"))
    in_a.patch(
        Certificate,
        "web",
        {
            "metadata": {
                "finalizers": ["syncer.kdp.k8c.io/cleanup"],
                "resourceVersion": created.metadata.resourceVersion,
            }
        },
        namespace="default",
        patch_type=PatchType.MERGE,
    )
    team_a.delete(Certificate, "web", namespace="default")
    marked = in_a.get(Certificate, "web", namespace="default")
    assert marked.metadata.deletionTimestamp is not None
    in_a.patch(Certificate, "web", {"metadata": {"finalizers": None}}, namespace="default", patch_type=PatchType.MERGE)
    with pytest.raises(ApiError) as caught:
        team_a.get(Certificate, "web", namespace="default")
    assert caught.value.status.code == 404


def test_a_stale_update_through_the_virtual_workspace_is_a_conflict(in_a: Client, team_a: Client) -> None:
    created = team_a.create(certificate("web"))
    team_a.patch(Certificate, "web", {"spec": {"secretName": "x"}}, namespace="default", patch_type=PatchType.MERGE)
    created["spec"]["secretName"] = "y"
    with pytest.raises(ApiError) as caught:
        in_a.replace(created)
    assert caught.value.status.code == 409


def test_claimed_secrets_are_visible_and_carry_the_claim_label(in_a: Client, team_a: Client, vw: Client) -> None:
    team_a.create(Secret(metadata=ObjectMeta(name="web-tls", namespace="default"), stringData={"k": "v"}))
    secret = in_a.get(Secret, "web-tls", namespace="default")
    assert secret.metadata.labels[f"claimed.internal.apis.kcp.io/{EXPORT_HASH}"] == SECRETS_CLAIM
    assert "web-tls" in {s.metadata.name for s in vw.list(Secret, namespace="*")}
    in_a.create(Namespace(metadata=ObjectMeta(name="made-by-provider")))
    assert "made-by-provider" in {n.metadata.name for n in team_a.list(Namespace)}


@pytest.mark.parametrize(
    ("method", "path", "code", "fragment"),
    [
        (
            "GET",
            "/clusters/*/apis/certificates.example.corp/v1alpha1/namespaces/default/certificates",
            400,
            "cross-cluster LIST and WATCH are required to be cross-namespace, not scoped to namespace default",
        ),
        ("GET", "/clusters/root:myorg:team-a/apis/certificates.example.corp/v1alpha1/certificates", 404, ""),
        ("GET", "/clusters/*/api/v1/configmaps", 404, ""),
        (
            "GET",
            f"/clusters/{ORG}/apis/certificates.example.corp/v1alpha1/certificates",
            403,
            "could not find suitable APIBinding in target logical cluster",
        ),
        (
            "POST",
            f"/clusters/{TEAM_A}/apis/apis.kcp.io/v1alpha1/apibindings",
            403,
            "write access to APIBinding is not allowed from virtual workspace",
        ),
        ("GET", "/clusters/*/apis/certificates.example.corp/v1alpha1/namespaces/default/certificates/web", 400, ""),
        (
            "GET",
            f"/clusters/{TEAM_A}/apis/certificates.example.corp/v1alpha1/namespaces/default/certificates/web/scale",
            404,
            "",
        ),
    ],
)
def test_requests_the_virtual_workspace_rejects(
    raw: Raw, vw_base: str, method: str, path: str, code: int, fragment: str
) -> None:
    body = (
        {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIBinding", "metadata": {"name": "x"}}
        if method == "POST"
        else None
    )
    response = raw(method, vw_base + path, body)
    assert response.status_code == code
    assert response.headers["Content-Type"] == "application/json"
    assert fragment in response.json()["message"]


@pytest.mark.parametrize(
    "base",
    [
        f"/services/apiexport/root:myorg/{EXPORT}",
        f"/services/apiexport/{ORG}/nope",
        f"/services/apiexport/{ORG}/{EXPORT}/api/v1",
    ],
)
def test_unknown_exports_and_malformed_virtual_workspace_urls_are_not_found(raw: Raw, base: str) -> None:
    assert raw("GET", f"{base}/clusters/*/api/v1/secrets").status_code == 404


def test_bindings_are_listed_read_only_and_only_for_this_export(
    kcpsim: KcpSim, raw: Raw, vw: Client, org: Client, team_a: Client
) -> None:
    org.create(APIExport({"metadata": {"name": "other.example.corp"}, "spec": {}}))
    team_a.create(
        APIBinding(
            {
                "metadata": {"name": "other"},
                "spec": {"reference": {"export": {"path": "root:myorg", "name": "other.example.corp"}}},
            }
        )
    )
    names = {(b.metadata.annotations["kcp.io/cluster"], b.metadata.name) for b in vw.list(APIBinding)}
    assert names == {(TEAM_A, EXPORT), (TEAM_B, EXPORT)}


def test_discovery_lists_exported_claimed_and_binding_resources(raw: Raw, vw_base: str) -> None:
    groups = {
        g["name"]: [v["version"] for v in g["versions"]]
        for g in raw("GET", f"{vw_base}/clusters/*/apis").json()["groups"]
    }
    assert groups == {"apis.kcp.io": ["v1alpha2", "v1alpha1"], EXPORT: ["v1alpha1"]}
    core = {(r["name"], r["namespaced"]) for r in raw("GET", f"{vw_base}/clusters/*/api/v1").json()["resources"]}
    assert core == {("namespaces", False), ("namespaces/status", False), ("secrets", True)}
    resources = raw("GET", f"{vw_base}/clusters/*{GROUP_PATH}").json()["resources"]
    assert [(r["name"], r["verbs"]) for r in resources] == [
        ("certificates", ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]),
        ("certificates/status", ["get", "patch", "update"]),
    ]
    bindings = raw("GET", f"{vw_base}/clusters/*/apis/apis.kcp.io/v1alpha1").json()["resources"]
    assert ("apibindings", ["get", "list", "watch"]) in [(r["name"], r["verbs"]) for r in bindings]


def _claim_configmaps(org: Client) -> None:
    export = org.get(APIExport, EXPORT)
    claims = [*export["spec"]["permissionClaims"], {"group": "", "resource": "configmaps", "all": True}]
    org.patch(APIExport, EXPORT, {"spec": {"permissionClaims": claims}}, patch_type=PatchType.MERGE)


def _accept_configmaps(consumer: Client) -> None:
    binding = consumer.get(APIBinding, EXPORT)
    claims = [
        *binding["spec"]["permissionClaims"],
        {"group": "", "resource": "configmaps", "all": True, "state": "Accepted"},
    ]
    consumer.patch(APIBinding, EXPORT, {"spec": {"permissionClaims": claims}}, patch_type=PatchType.MERGE)


def test_a_claim_added_later_is_not_accepted_until_the_consumer_accepts_it(
    org: Client, team_a: Client, in_a: Client, vw: Client
) -> None:
    team_a.create(ConfigMap(metadata=ObjectMeta(name="settings", namespace="default")))
    _claim_configmaps(org)
    binding = team_a.get(APIBinding, EXPORT)
    assert {"group": "", "resource": "configmaps"} in binding["status"]["exportPermissionClaims"]
    with pytest.raises(ApiError) as caught:
        in_a.get(ConfigMap, "settings", namespace="default")
    assert caught.value.status.code == 403
    assert "failed to find suitable reason to allow access in APIBinding" in caught.value.status.message
    assert list(vw.list(ConfigMap, namespace="*")) == []
    _accept_configmaps(team_a)
    assert in_a.get(ConfigMap, "settings", namespace="default").metadata.labels
    assert {c.metadata.name for c in vw.list(ConfigMap, namespace="*")} == {"settings"}


def test_accepting_a_claim_shows_existing_objects_as_added_on_a_wildcard_watch(
    kcpsim: KcpSim, org: Client, team_a: Client, raw: Raw, vw_base: str
) -> None:
    team_a.create(ConfigMap(metadata=ObjectMeta(name="settings", namespace="default")))
    _claim_configmaps(org)
    start = str(kcpsim.world.store.rv)
    _accept_configmaps(team_a)
    params = {"watch": "true", "resourceVersion": start, "timeoutSeconds": "5"}
    with raw.client.stream("GET", f"{vw_base}/clusters/*/api/v1/configmaps", params=params) as response:
        events = read_events(response, 1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "settings")]


def test_deleting_a_binding_deletes_its_objects_then_the_binding(
    kcpsim: KcpSim, team_a: Client, in_a: Client, org: Client
) -> None:
    team_a.create(
        certificate(
            "held",
        )
    )
    in_a.patch(
        Certificate,
        "held",
        {"metadata": {"finalizers": ["syncer.kdp.k8c.io/cleanup"]}},
        namespace="default",
        patch_type=PatchType.MERGE,
    )
    team_a.delete(APIBinding, EXPORT)
    assert team_a.get(APIBinding, EXPORT).metadata.deletionTimestamp is not None
    assert in_a.get(Certificate, "held", namespace="default").metadata.deletionTimestamp is not None
    in_a.patch(Certificate, "held", {"metadata": {"finalizers": None}}, namespace="default", patch_type=PatchType.MERGE)
    with pytest.raises(ApiError) as caught:
        team_a.get(APIBinding, EXPORT)
    assert caught.value.status.code == 404
    with kcpsim.client(kcpsim.workspace_config("team-b")) as team_b:
        team_b.delete(APIBinding, EXPORT)
    assert org.get(EndpointSlice, EXPORT)["status"]["endpoints"] == []


def test_claim_labels_cannot_be_changed_through_the_virtual_workspace(in_a: Client, team_a: Client) -> None:
    team_a.create(Secret(metadata=ObjectMeta(name="s", namespace="default")))
    with pytest.raises(ApiError) as caught:
        in_a.patch(
            Secret,
            "s",
            {"metadata": {"labels": {f"claimed.internal.apis.kcp.io/{EXPORT_HASH}": "other"}}},
            namespace="default",
            patch_type=PatchType.MERGE,
        )
    assert caught.value.status.code == 403


def test_wildcard_lists_page_across_workspaces(team_a: Client, team_b: Client, raw: Raw, vw_base: str) -> None:
    for client in (team_a, team_b):
        client.create(certificate("one"))
        client.create(certificate("two"))
    seen, token = [], ""
    while True:
        params = {"limit": "3", **({"continue": token} if token else {})}
        body = raw("GET", f"{vw_base}/clusters/*{GROUP_PATH}/certificates", params=params).json()
        seen += [(i["metadata"]["annotations"]["kcp.io/cluster"], i["metadata"]["name"]) for i in body["items"]]
        token = body["metadata"].get("continue", "")
        if not token:
            break
    assert sorted(seen) == sorted((c, n) for c in (TEAM_A, TEAM_B) for n in ("one", "two"))


def test_claimed_logicalclusters_serve_each_workspace_path_once_accepted(
    org: Client, team_a: Client, raw: Raw, vw_base: str
) -> None:
    cluster_path = f"{vw_base}/clusters/{TEAM_A}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"
    assert raw("GET", cluster_path).status_code == 404  # not claimed: not served
    export = org.get(APIExport, EXPORT)
    claim = {"group": "core.kcp.io", "resource": "logicalclusters", "all": True}
    org.patch(
        APIExport,
        EXPORT,
        {"spec": {"permissionClaims": [*export["spec"]["permissionClaims"], claim]}},
        patch_type=PatchType.MERGE,
    )
    assert raw("GET", cluster_path).status_code == 403  # claimed, not accepted yet
    binding = team_a.get(APIBinding, EXPORT)
    accepted = [*binding["spec"]["permissionClaims"], {**claim, "state": "Accepted"}]
    team_a.patch(APIBinding, EXPORT, {"spec": {"permissionClaims": accepted}}, patch_type=PatchType.MERGE)
    found = raw("GET", cluster_path)
    assert found.status_code == 200, found.text
    assert found.json()["metadata"]["annotations"]["kcp.io/path"] == "root:myorg:team-a"
    listed = raw("GET", f"{vw_base}/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters").json()["items"]
    assert [item["metadata"]["annotations"]["kcp.io/cluster"] for item in listed] == [TEAM_A]
