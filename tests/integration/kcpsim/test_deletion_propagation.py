"""Deletion propagation as kube-apiserver and its garbage collector do it: Foreground keeps the
owner (deletionTimestamp, `foregroundDeletion`) until its blocking dependents are gone; Orphan
keeps the dependents and drops their references (the `orphan` finalizer). Over raw HTTP and
`kubectl delete --cascade`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import Raw
from tests.integration.kcpsim.kubectl import kubectl

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
SECRETS = "/api/v1/namespaces/default/secrets"
HOLD = "example.com/hold"
MERGE = "application/merge-patch+json"


def _create(raw: Raw, path: str, kind: str, name: str, **metadata: Any) -> dict[str, Any]:
    response = raw("POST", path, {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, **metadata}})
    assert response.status_code == 201, response.text
    return response.json()  # type: ignore[no-any-return]


def _ref(owner: dict[str, Any], *, block: bool) -> dict[str, Any]:
    meta = owner["metadata"]
    return {
        "apiVersion": "v1",
        "kind": owner["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "blockOwnerDeletion": block,
    }


def _family(raw: Raw) -> dict[str, Any]:
    """An owner ConfigMap; a blocking Secret that holds a finalizer; a non-blocking Secret."""
    owner = _create(raw, CONFIGMAPS, "ConfigMap", "owner")
    _create(raw, SECRETS, "Secret", "blocking", ownerReferences=[_ref(owner, block=True)], finalizers=[HOLD])
    _create(raw, SECRETS, "Secret", "loose", ownerReferences=[_ref(owner, block=False)])
    return owner


def _release(raw: Raw, path: str) -> None:
    assert raw("PATCH", path, {"metadata": {"finalizers": None}}, content_type=MERGE).status_code == 200


@pytest.mark.parametrize("how", ["body", "query"])
def test_foreground_deletion_waits_for_the_blocking_dependents(raw: Raw, how: str) -> None:
    _family(raw)
    if how == "body":
        deleted = raw(
            "DELETE",
            f"{CONFIGMAPS}/owner",
            {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground"},
        )
    else:
        deleted = raw("DELETE", f"{CONFIGMAPS}/owner", params={"propagationPolicy": "Foreground"})
    assert deleted.status_code == 200
    assert deleted.json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    owner = raw("GET", f"{CONFIGMAPS}/owner").json()
    assert owner["metadata"]["finalizers"] == ["foregroundDeletion"] and owner["metadata"]["deletionTimestamp"]
    assert raw("GET", f"{SECRETS}/loose").status_code == 404
    assert raw("GET", f"{SECRETS}/blocking").json()["metadata"]["deletionTimestamp"]
    _release(raw, f"{SECRETS}/blocking")
    assert raw("GET", f"{SECRETS}/blocking").status_code == 404
    assert raw("GET", f"{CONFIGMAPS}/owner").status_code == 404


def test_foreground_deletion_without_blocking_dependents_goes_at_once(raw: Raw) -> None:
    owner = _create(raw, CONFIGMAPS, "ConfigMap", "owner")
    _create(raw, SECRETS, "Secret", "loose", ownerReferences=[_ref(owner, block=False)], finalizers=[HOLD])
    assert raw("DELETE", f"{CONFIGMAPS}/owner", params={"propagationPolicy": "Foreground"}).status_code == 200
    assert raw("GET", f"{CONFIGMAPS}/owner").status_code == 404
    assert raw("GET", f"{SECRETS}/loose").json()["metadata"]["deletionTimestamp"]
    _release(raw, f"{SECRETS}/loose")


def test_foreground_deletion_goes_down_the_generations(raw: Raw) -> None:
    owner = _create(raw, CONFIGMAPS, "ConfigMap", "owner")
    child = _create(raw, CONFIGMAPS, "ConfigMap", "child", ownerReferences=[_ref(owner, block=True)])
    _create(raw, SECRETS, "Secret", "grandchild", ownerReferences=[_ref(child, block=True)], finalizers=[HOLD])
    assert raw("DELETE", f"{CONFIGMAPS}/owner", params={"propagationPolicy": "Foreground"}).status_code == 200
    # The child has dependents of its own, so it is deleted in the foreground too, and waits.
    assert raw("GET", f"{CONFIGMAPS}/child").json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    assert raw("GET", f"{CONFIGMAPS}/owner").status_code == 200
    _release(raw, f"{SECRETS}/grandchild")
    for path in (f"{SECRETS}/grandchild", f"{CONFIGMAPS}/child", f"{CONFIGMAPS}/owner"):
        assert raw("GET", path).status_code == 404, path


def test_orphan_deletion_keeps_the_dependents_without_their_reference(raw: Raw) -> None:
    _family(raw)
    deleted = raw("DELETE", f"{CONFIGMAPS}/owner", params={"propagationPolicy": "Orphan"})
    assert deleted.status_code == 200
    assert deleted.json()["metadata"]["finalizers"] == ["orphan"] and deleted.json()["metadata"]["deletionTimestamp"]
    assert raw("GET", f"{CONFIGMAPS}/owner").status_code == 404
    for name in ("blocking", "loose"):
        dependent = raw("GET", f"{SECRETS}/{name}").json()
        assert "ownerReferences" not in dependent["metadata"] and "deletionTimestamp" not in dependent["metadata"]
    _release(raw, f"{SECRETS}/blocking")


def test_an_owner_with_its_own_finalizer_keeps_it_after_orphaning(raw: Raw) -> None:
    owner = _create(raw, CONFIGMAPS, "ConfigMap", "owner", finalizers=[HOLD])
    _create(raw, SECRETS, "Secret", "loose", ownerReferences=[_ref(owner, block=False)])
    assert raw("DELETE", f"{CONFIGMAPS}/owner", params={"propagationPolicy": "Orphan"}).status_code == 200
    assert raw("GET", f"{CONFIGMAPS}/owner").json()["metadata"]["finalizers"] == [HOLD]
    assert "ownerReferences" not in raw("GET", f"{SECRETS}/loose").json()["metadata"]
    _release(raw, f"{CONFIGMAPS}/owner")
    assert raw("GET", f"{CONFIGMAPS}/owner").status_code == 404


def test_kubectl_delete_cascade_foreground_and_orphan(kcpsim: KcpSim, raw: Raw, tmp_path: Path) -> None:
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["service"]
    _family(raw)
    foreground = kubectl(
        kubeconfig,
        "delete",
        "configmap",
        "owner",
        "-n",
        "default",
        "--cascade=foreground",
        "--wait=false",
        cache=tmp_path,
    )
    assert (foreground.returncode, foreground.stdout.strip()) == (0, 'configmap "owner" deleted'), foreground.stderr
    assert raw("GET", f"{CONFIGMAPS}/owner").json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    _release(raw, f"{SECRETS}/blocking")
    assert raw("GET", f"{CONFIGMAPS}/owner").status_code == 404
    owner = _create(raw, CONFIGMAPS, "ConfigMap", "owner")
    _create(raw, SECRETS, "Secret", "kept", ownerReferences=[_ref(owner, block=True)])
    orphan = kubectl(kubeconfig, "delete", "configmap", "owner", "-n", "default", "--cascade=orphan", cache=tmp_path)
    assert orphan.returncode == 0, orphan.stderr
    assert raw("GET", f"{CONFIGMAPS}/owner").status_code == 404
    assert "ownerReferences" not in raw("GET", f"{SECRETS}/kept").json()["metadata"]
