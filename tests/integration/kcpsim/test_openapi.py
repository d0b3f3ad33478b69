"""kcpsim publishes OpenAPI v3 documents as kube-apiserver does: a discovery document pointing at
one document per group-version by hash, each with the schemas of its kinds under Kubernetes'
definition names and a path per resource; cached by ETag and hash. Over raw HTTP and through the
real kubectl (`kubectl explain`, and `kubectl apply` trusting the server with validation)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import TEAM_A, Raw
from tests.integration.kcpsim.kubectl import kubectl

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
COMPONENT = "#/components/schemas/"


def document(raw: Raw, key: str, base: str = "") -> dict[str, Any]:
    listing = raw("GET", f"{base}/openapi/v3")
    assert listing.status_code == 200, listing.text
    url = listing.json()["paths"][key]["serverRelativeURL"]
    answer = raw("GET", f"{base}{url}")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


def test_the_discovery_document_points_at_each_built_in_group_version_by_hash(raw: Raw) -> None:
    paths = raw("GET", "/openapi/v3").json()["paths"]
    for key in ("api/v1", "apis/rbac.authorization.k8s.io/v1", "apis/coordination.k8s.io/v1"):
        url = paths[key]["serverRelativeURL"]
        assert url.startswith(f"/openapi/v3/{key}?hash=")
        served = raw("GET", url)
        assert served.headers["ETag"] == f'"{url.split("hash=")[1]}"'


def test_built_in_kinds_carry_their_kubernetes_names_kinds_and_list_extensions(raw: Raw) -> None:
    schemas = document(raw, "api/v1")["components"]["schemas"]
    configmap = schemas["io.k8s.api.core.v1.ConfigMap"]
    assert configmap["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "ConfigMap", "version": "v1"}]
    assert configmap["properties"]["metadata"]["allOf"] == [{"$ref": COMPONENT + META + "ObjectMeta"}]
    assert configmap["properties"]["data"]["additionalProperties"]["type"] == "string"
    owners = schemas[META + "ObjectMeta"]["properties"]["ownerReferences"]
    assert owners["x-kubernetes-patch-merge-key"] == "uid"
    assert owners["x-kubernetes-patch-strategy"] == "merge"
    assert (owners["x-kubernetes-list-type"], owners["x-kubernetes-list-map-keys"]) == ("map", ["uid"])
    conditions = schemas["io.k8s.api.core.v1.NamespaceStatus"]["properties"]["conditions"]
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    rbac = document(raw, "apis/rbac.authorization.k8s.io/v1")["components"]["schemas"]
    assert rbac["io.k8s.api.rbac.v1.PolicyRule"]["required"] == ["verbs"]
    assert rbac["io.k8s.api.rbac.v1.RoleBindingList"]["x-kubernetes-group-version-kind"][0]["kind"] == "RoleBindingList"


def test_paths_show_scope_and_only_the_subresources_that_exist(raw: Raw) -> None:
    paths = document(raw, "api/v1")["paths"]
    assert "/api/v1/namespaces/{namespace}/configmaps/{name}" in paths
    assert "/api/v1/configmaps/{name}" not in paths  # namespaced: no cluster-wide object path
    assert "/api/v1/namespaces/{name}/status" in paths  # cluster-scoped, with status
    assert not [p for p in paths if p.startswith("/api/v1/namespaces/{namespace}/configmaps/{name}/")]
    assert not [p for p in paths if p.endswith("/scale")]
    patch = paths["/api/v1/namespaces/{namespace}/configmaps/{name}"]["patch"]
    # What kubectl looks for before leaving validation to the server:
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "ConfigMap", "version": "v1"}
    assert {"fieldValidation", "dryRun", "fieldManager", "force"} <= {p["name"] for p in patch["parameters"]}
    assert "application/strategic-merge-patch+json" in patch["requestBody"]["content"]


def test_documents_are_cached_by_etag_and_hash(raw: Raw) -> None:
    url = raw("GET", "/openapi/v3").json()["paths"]["api/v1"]["serverRelativeURL"]
    current = raw("GET", url)
    assert current.headers["Cache-Control"] == "public, immutable"
    again = raw.client.get(url, headers={"If-None-Match": current.headers["ETag"]})
    assert again.status_code == 304 and again.content == b""
    stale = raw.client.get("/openapi/v3/api/v1?hash=0123", follow_redirects=False)
    assert (stale.status_code, stale.headers["Location"]) == (301, url)
    plain = raw("GET", "/openapi/v3/api/v1")
    assert plain.status_code == 200 and plain.headers["Cache-Control"] != "public, immutable"
    assert raw("GET", "/openapi/v3/apis/nothing.example/v1").status_code == 404


def test_a_new_crd_changes_the_discovery_document_and_is_published_from_its_schema(raw: Raw) -> None:
    before = raw("GET", "/openapi/v3")
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {
            "group": "example.io",
            "scope": "Cluster",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
                        }
                    },
                }
            ],
        },
    }
    assert raw("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd).status_code == 201
    after = raw("GET", "/openapi/v3")
    assert after.headers["ETag"] != before.headers["ETag"]
    widgets = document(raw, "apis/example.io/v1")
    widget = widgets["components"]["schemas"]["io.example.v1.Widget"]
    assert widget["properties"]["spec"]["properties"]["size"] == {"type": "integer"}
    assert widget["properties"]["metadata"]["allOf"] == [{"$ref": COMPONENT + META + "ObjectMeta"}]
    assert widget["x-kubernetes-group-version-kind"] == [{"group": "example.io", "kind": "Widget", "version": "v1"}]
    assert set(widgets["paths"]) == {
        "/apis/example.io/v1/widgets",
        "/apis/example.io/v1/widgets/{name}",
        "/apis/example.io/v1/widgets/{name}/status",
    }
    patch = widgets["paths"]["/apis/example.io/v1/widgets/{name}"]["patch"]
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    # A change of the schema is published under a new hash.
    stored = raw("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.io").json()
    stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"] = {
        "type": "string"
    }
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.io"
    assert raw("PUT", path, stored).status_code == 200
    changed = document(raw, "apis/example.io/v1")["components"]["schemas"]["io.example.v1.Widget"]
    assert changed["properties"]["spec"]["properties"]["color"] == {"type": "string"}


@pytest.mark.parametrize(
    ("field", "expected"),
    [
        ("configmap", ["KIND:       ConfigMap", "data\t<map[string]string>"]),
        ("namespace.status.conditions", ["FIELD: conditions <[]NamespaceCondition>", "type\t<string> -required-"]),
        ("roles.rules", ["GROUP:      rbac.authorization.k8s.io", "verbs\t<[]string> -required-"]),
        ("team-a:certificates.spec", ["KIND:       Certificate", "commonName\t<string>"]),
        ("team-a:workspaces", ["GROUP:      tenancy.kcp.io", "spec\t<Object>"]),
    ],
)
def test_kubectl_explain_reads_the_v3_schemas(kcpsim: KcpSim, tmp_path: Path, field: str, expected: list[str]) -> None:
    where, _, field = field.rpartition(":")
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)[where or "service"]
    result = kubectl(kubeconfig, "explain", field, cache=tmp_path)
    assert result.returncode == 0, result.stderr
    for line in expected:
        assert line in result.stdout


PROTOBUF = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"


def test_openapi_v2_is_one_swagger_document_in_json_or_protobuf(raw: Raw) -> None:
    swagger = raw.client.get("/openapi/v2", headers={"Accept": "application/json"})
    assert swagger.status_code == 200 and swagger.headers["Content-Type"] == "application/json"
    body = swagger.json()
    assert body["swagger"] == "2.0"
    configmap = body["definitions"]["io.k8s.api.core.v1.ConfigMap"]
    assert configmap["properties"]["metadata"]["$ref"] == "#/definitions/" + META + "ObjectMeta"
    patch = body["paths"]["/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles/{name}"]["patch"]
    assert "fieldValidation" in {p["name"] for p in patch["parameters"]}
    # What client-go asks for, answered with the media type Go's MIME parser reads.
    proto = raw.client.get("/openapi/v2", headers={"Accept": PROTOBUF})
    assert proto.headers["Content-Type"] == "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    assert proto.content.startswith(b"\n\x032.0")  # field 1, swagger: "2.0"
    assert proto.headers["ETag"] != swagger.headers["ETag"]
    assert raw.client.get("/openapi/v2", headers={"Accept": "application/yaml"}).status_code == 406


@pytest.mark.parametrize(
    ("where", "field", "expected"),
    [
        ("service", "namespaces.status.conditions", ["RESOURCE: conditions <[]Object>", "type\t<string> -required-"]),
        ("team-a", "certificates.spec", ["KIND:     Certificate", "commonName\t<string>"]),
    ],
)
def test_kubectl_explain_reads_the_protobuf_openapi_v2(
    kcpsim: KcpSim, tmp_path: Path, where: str, field: str, expected: list[str]
) -> None:
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)[where]
    result = kubectl(kubeconfig, "explain", field, "--output=plaintext-openapiv2", cache=tmp_path)
    assert result.returncode == 0, result.stderr
    for line in expected:
        assert line in result.stdout


def test_workspaces_and_the_virtual_workspace_publish_bound_and_kcp_types(kcpsim: KcpSim, raw: Raw) -> None:
    workspace = "/clusters/root:myorg:team-a"
    listed = set(raw("GET", f"{workspace}/openapi/v3").json()["paths"])
    assert {
        "apis/tenancy.kcp.io/v1alpha1",
        "apis/apis.kcp.io/v1alpha2",
        "apis/certificates.example.corp/v1alpha1",
    } <= listed
    bound = document(raw, "apis/certificates.example.corp/v1alpha1", workspace)
    assert "corp.example.certificates.v1alpha1.Certificate" in bound["components"]["schemas"]
    assert "/apis/certificates.example.corp/v1alpha1/namespaces/{namespace}/certificates/{name}" in bound["paths"]
    workspaces = document(raw, "apis/tenancy.kcp.io/v1alpha1", workspace)["components"]["schemas"]
    assert workspaces["io.kcp.tenancy.v1alpha1.Workspace"]["properties"]["spec"]["x-kubernetes-preserve-unknown-fields"]
    assert "apis/tenancy.kcp.io/v1alpha1" not in raw("GET", "/openapi/v3").json()["paths"]  # not a kcp cluster
    vw = kcpsim.vw_url().removeprefix(kcpsim.base_url) + f"/clusters/{TEAM_A}"
    in_vw = set(raw("GET", f"{vw}/openapi/v3").json()["paths"])
    assert {"api/v1", "apis/certificates.example.corp/v1alpha1", "apis/apis.kcp.io/v1alpha1"} <= in_vw
    core = document(raw, "api/v1", vw)["paths"]
    assert "/api/v1/namespaces/{namespace}/secrets/{name}" in core  # claimed
    assert not [path for path in core if "configmaps" in path]  # not claimed
    bindings = document(raw, "apis/apis.kcp.io/v1alpha1", vw)["paths"]["/apis/apis.kcp.io/v1alpha1/apibindings/{name}"]
    assert set(bindings) == {"get", "parameters"}  # read only through the virtual workspace
