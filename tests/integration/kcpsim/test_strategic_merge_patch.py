"""Strategic merge patches of built-in kinds merge lists by the built-ins' merge keys and honour
the patch directives, as kube-apiserver does: over raw HTTP, and as `kubectl patch`, client-side
`kubectl apply` and `kubectl edit` send them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import Raw
from tests.integration.kcpsim.kubectl import kubectl

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
ROLES = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
SMP = "application/strategic-merge-patch+json"


def _configmap(raw: Raw, name: str, **metadata: Any) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **metadata}, "data": {"a": "1"}}
    response = raw("POST", CONFIGMAPS, body)
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def _owner(raw: Raw, name: str) -> dict[str, str]:
    uid = _configmap(raw, name)["metadata"]["uid"]
    return {"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid}


def test_finalizers_merge_as_a_set_in_the_order_the_patch_sets(raw: Raw) -> None:
    _configmap(raw, "c", finalizers=["example.com/a", "example.com/b"])
    added = raw("PATCH", f"{CONFIGMAPS}/c", {"metadata": {"finalizers": ["example.com/c"]}}, content_type=SMP)
    # As apimachinery orders a merged list: an item the server did not have cannot be placed
    # against the server's, so the patch's items come first.
    assert added.json()["metadata"]["finalizers"] == ["example.com/c", "example.com/a", "example.com/b"]
    reordered = {
        "metadata": {
            "$setElementOrder/finalizers": ["example.com/c", "example.com/a"],
            "$deleteFromPrimitiveList/finalizers": ["example.com/b"],
        }
    }
    patched = raw("PATCH", f"{CONFIGMAPS}/c", reordered, content_type=SMP)
    assert patched.status_code == 200, patched.text
    assert patched.json()["metadata"]["finalizers"] == ["example.com/c", "example.com/a"]
    raw("PATCH", f"{CONFIGMAPS}/c", {"metadata": {"finalizers": None}}, content_type=SMP)


def test_owner_references_merge_by_uid_and_delete_by_directive(raw: Raw) -> None:
    first, second = _owner(raw, "owner-1"), _owner(raw, "owner-2")
    _configmap(raw, "c", ownerReferences=[first, second])
    patch = {"metadata": {"ownerReferences": [{"uid": first["uid"], "controller": True}]}}
    refs = raw("PATCH", f"{CONFIGMAPS}/c", patch, content_type=SMP).json()["metadata"]["ownerReferences"]
    assert refs == [first | {"controller": True}, second]
    gone = {"metadata": {"ownerReferences": [{"uid": second["uid"], "$patch": "delete"}]}}
    refs = raw("PATCH", f"{CONFIGMAPS}/c", gone, content_type=SMP).json()["metadata"]["ownerReferences"]
    assert refs == [first | {"controller": True}]


def test_rbac_rules_are_replaced_whole_and_maps_follow_their_directives(raw: Raw) -> None:
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "r"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}],
    }
    assert raw("POST", ROLES, role).status_code == 201
    rules = [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]}]
    assert raw("PATCH", f"{ROLES}/r", {"rules": rules}, content_type=SMP).json()["rules"] == rules
    _configmap(raw, "c")
    replaced = raw("PATCH", f"{CONFIGMAPS}/c", {"data": {"$patch": "replace", "b": "2"}}, content_type=SMP)
    assert replaced.json()["data"] == {"b": "2"}
    deleted = raw("PATCH", f"{CONFIGMAPS}/c", {"data": {"$patch": "delete"}}, content_type=SMP)
    assert "data" not in deleted.json()


def test_an_item_without_its_merge_key_is_refused(raw: Raw) -> None:
    _configmap(raw, "c")
    response = raw("PATCH", f"{CONFIGMAPS}/c", {"metadata": {"ownerReferences": [{"name": "x"}]}}, content_type=SMP)
    assert response.status_code == 400
    assert "does not contain declared merge key: uid" in response.json()["message"]


def test_kubectl_patch_apply_and_edit_merge_finalizers(
    kcpsim: KcpSim, raw: Raw, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["service"]
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "finalizers": ["example.com/a", "example.com/b"]},
        "data": {"k": "v"},
    }
    applied = kubectl(kubeconfig, "apply", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(manifest))
    assert applied.returncode == 0, applied.stderr
    # Another writer adds a finalizer; kubectl's patch (the default type is strategic) adds one more.
    patched = kubectl(
        kubeconfig,
        "patch",
        "configmap",
        "c",
        "-n",
        "default",
        "-p",
        '{"metadata":{"finalizers":["example.com/z"]}}',
        cache=tmp_path,
    )
    assert patched.returncode == 0, patched.stderr
    # The next apply reorders its own finalizers and adds one ($setElementOrder); the other
    # writer's finalizer keeps its place before them.
    manifest["metadata"]["finalizers"] = ["example.com/b", "example.com/a", "example.com/c"]
    applied = kubectl(kubeconfig, "apply", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(manifest))
    assert applied.returncode == 0, applied.stderr
    finalizers = raw("GET", f"{CONFIGMAPS}/c").json()["metadata"]["finalizers"]
    assert finalizers == ["example.com/z", "example.com/b", "example.com/a", "example.com/c"]
    editor = tmp_path / "editor.sh"
    editor.write_text("#!/bin/sh\nsed -i 's|- example.com/a$|- example.com/e|' \"$1\"\n")
    editor.chmod(0o755)
    monkeypatch.setenv("KUBE_EDITOR", str(editor))
    edited = kubectl(kubeconfig, "edit", "configmap", "c", "-n", "default", cache=tmp_path)
    assert edited.returncode == 0, edited.stderr
    finalizers = raw("GET", f"{CONFIGMAPS}/c").json()["metadata"]["finalizers"]
    assert finalizers == ["example.com/z", "example.com/b", "example.com/e", "example.com/c"]
    raw("PATCH", f"{CONFIGMAPS}/c", {"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")
