"""Small things kubectl users notice: a server-side dry-run delete deletes nothing, namespaces
carry `kubernetes.io/metadata.name`, and kcp's Workspaces answer to `ws`. Each is checked over
raw HTTP and through the real kubectl."""

from __future__ import annotations

from pathlib import Path

import pytest

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import Raw
from tests.integration.kcpsim.kubectl import kubectl

NAME_LABEL = "kubernetes.io/metadata.name"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"


def _configmap(raw: Raw, name: str) -> None:
    response = raw("POST", CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
    assert response.status_code == 201, response.text


@pytest.mark.parametrize("how", ["body", "query"])
def test_a_dry_run_delete_answers_as_a_delete_but_keeps_the_object(raw: Raw, how: str) -> None:
    _configmap(raw, "keep")
    if how == "body":  # what kubectl sends: DeleteOptions with dryRun
        response = raw("DELETE", f"{CONFIGMAPS}/keep", {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]})
    else:
        response = raw("DELETE", f"{CONFIGMAPS}/keep", params={"dryRun": "All"})
    assert response.status_code == 200 and response.json()["metadata"]["name"] == "keep"
    assert raw("GET", f"{CONFIGMAPS}/keep").status_code == 200
    assert raw("DELETE", f"{CONFIGMAPS}/keep").status_code == 200
    assert raw("GET", f"{CONFIGMAPS}/keep").status_code == 404


def test_kubectl_delete_dry_run_server_deletes_nothing(kcpsim: KcpSim, raw: Raw, tmp_path: Path) -> None:
    _configmap(raw, "keep")
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["service"]
    result = kubectl(kubeconfig, "delete", "configmap", "keep", "-n", "default", "--dry-run=server", cache=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == 'configmap "keep" deleted (server dry run)'
    assert raw("GET", f"{CONFIGMAPS}/keep").status_code == 200


@pytest.mark.parametrize("base", ["", "/clusters/root:myorg:team-a"], ids=["service-cluster", "workspace"])
def test_namespaces_carry_their_name_as_a_label_that_clients_cannot_change(raw: Raw, base: str) -> None:
    created = raw(
        "POST",
        f"{base}/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop", "labels": {NAME_LABEL: "other"}}},
    )
    assert created.status_code == 201
    assert created.json()["metadata"]["labels"][NAME_LABEL] == "shop"  # (in a workspace, kcp's claim label too)
    patched = raw(
        "PATCH",
        f"{base}/api/v1/namespaces/shop",
        {"metadata": {"labels": {NAME_LABEL: None, "team": "a"}}},
        content_type="application/merge-patch+json",
    )
    labels = patched.json()["metadata"]["labels"]
    assert (labels[NAME_LABEL], labels["team"]) == ("shop", "a")
    selected = raw("GET", f"{base}/api/v1/namespaces", params={"labelSelector": f"{NAME_LABEL}=default"})
    assert [ns["metadata"]["name"] for ns in selected.json()["items"]] == ["default"]


def test_kubectl_selects_a_namespace_by_its_name_label(kcpsim: KcpSim, tmp_path: Path) -> None:
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["service"]
    result = kubectl(kubeconfig, "get", "namespaces", "-l", f"{NAME_LABEL}=kube-system", "-o", "name", cache=tmp_path)
    assert (result.returncode, result.stdout.split()) == (0, ["namespace/kube-system"]), result.stderr


def test_workspaces_have_the_short_name_ws_in_discovery(raw: Raw) -> None:
    listing = raw("GET", "/clusters/root:myorg/apis/tenancy.kcp.io/v1alpha1").json()
    (workspaces,) = [r for r in listing["resources"] if r["name"] == "workspaces"]
    assert workspaces["shortNames"] == ["ws"] and workspaces["categories"] == ["kcp"]


def test_kubectl_get_ws_lists_the_workspaces(kcpsim: KcpSim, tmp_path: Path) -> None:
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["kcp"]
    result = kubectl(kubeconfig, "get", "ws", "-o", "name", cache=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["workspace.tenancy.kcp.io/team-a", "workspace.tenancy.kcp.io/team-b"]


@pytest.mark.parametrize(
    ("parent", "default_type"),
    [("root", {"name": "organization", "path": "root"}), ("root:myorg", {"name": "universal", "path": "root"})],
)
def test_a_workspace_created_without_a_type_gets_its_parents_default_child_type(
    raw: Raw, parent: str, default_type: dict[str, str]
) -> None:
    created = raw(
        "POST",
        f"/clusters/{parent}/apis/tenancy.kcp.io/v1alpha1/workspaces",
        {"apiVersion": "tenancy.kcp.io/v1alpha1", "kind": "Workspace", "metadata": {"name": "fresh"}},
    )
    assert created.status_code == 201, created.text
    assert created.json()["spec"]["type"] == default_type
