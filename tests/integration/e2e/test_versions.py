"""Several versions of one CRD published in one schema: objects written in any of them sync."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import GROUP, Resource, default_local_name

# The service cluster stores gizmos as v2 and also serves v1; kcp serves both, stores v2.
LOCAL_V1 = Resource("example.com", "v1", "gizmos")
LOCAL_V2 = Resource("example.com", "v2", "gizmos")
REMOTE_V2 = Resource(GROUP, "v2", "gizmos")
PUBLISHED = "gizmos"


def _gizmo_crd() -> dict[str, Any]:
    # Compatible schemas: without conversion webhooks, a version is the same object under another apiVersion.
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {"type": "object", "properties": {"size": {"type": "integer"}}},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
            },
        }
    }
    version = {"served": True, "schema": schema, "subresources": {"status": {}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gizmos.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Gizmo", "listKind": "GizmoList", "plural": "gizmos", "singular": "gizmo"},
            "versions": [{"name": "v1", "storage": False, **version}, {"name": "v2", "storage": True, **version}],
        },
    }


def _gizmos_in_both_versions(spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": PUBLISHED},
        "spec": spec,
    }


# (spec of the PublishedResource, the name of the CRD's v1 in kcp)
BOTH_VERSIONS = [
    pytest.param(
        {"resource": {"apiGroup": "example.com", "kind": "Gizmo", "versions": ["v1", "v2"]}}, "v1", id="listed"
    ),
    pytest.param(
        {
            "resource": {"apiGroup": "example.com", "kind": "Gizmo", "versions": []},
            "projection": {"versions": {"v1": "v1beta1"}},
        },
        "v1beta1",
        id="all-served-one-renamed",
    ),
]


def _gizmo(version: str, name: str, *, size: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/{version}",
        "kind": "Gizmo",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"size": size},
    }


@pytest.mark.parametrize("spec, old_name", BOTH_VERSIONS)
def test_objects_written_in_either_version_sync_in_the_stored_version_and_status_flows_back(
    e2e: E2E, spec: dict[str, Any], old_name: str
) -> None:
    remote_old = Resource(GROUP, old_name, "gizmos")
    e2e.publish(_gizmo_crd(), _gizmos_in_both_versions(spec))
    e2e.servlet()
    e2e.wait_condition(PUBLISHED, "Ready")
    published = e2e.published_resource(PUBLISHED) or {}
    schema_name = published["status"]["resourceSchemaName"]
    schema = e2e.rest.get(e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiresourceschemas/{schema_name}")) or {}
    assert [(v["name"], v["storage"]) for v in schema["spec"]["versions"]] == [("v2", True), (old_name, False)]
    assert schema["spec"]["conversion"] == {"strategy": "None"}
    e2e.wait_served("team-a", remote_old)
    e2e.wait_served("team-a", REMOTE_V2)

    e2e.create_remote("team-a", remote_old, _gizmo(old_name, "old", size=1))
    e2e.create_remote("team-a", REMOTE_V2, _gizmo("v2", "new", size=2))

    cluster = e2e.world.cluster("team-a")
    for name, size in (("old", 1), ("new", 2)):
        local_name = default_local_name(namespace="default", name=name)
        local = e2e.wait_local(LOCAL_V2, namespace=cluster, name=local_name)
        assert local["apiVersion"] == "example.com/v2" and local["spec"] == {"size": size}
        e2e.wait_finalizer("team-a", REMOTE_V2, namespace="default", name=name)

        # The service reports through /status in its own version; the user reads it in any version.
        e2e.rest.merge_patch(
            LOCAL_V1.path(namespace=cluster, name=local_name) + "/status", {"status": {"phase": f"Ready-{name}"}}
        )
        for remote_type in (remote_old, REMOTE_V2):

            def remote_status(remote_type: Resource = remote_type, name: str = name) -> bool:
                remote = e2e.remote("team-a", remote_type, namespace="default", name=name) or {}
                assert remote.get("status") == {"phase": f"Ready-{name}"}, f"remote status is {remote.get('status')}"
                assert remote["apiVersion"] == f"{GROUP}/{remote_type.version}"
                return True

            e2e.eventually(remote_status, what=f"the local status on {name} read as {remote_type.version}")

    # An edit made in the other version reaches the same local copy.
    e2e.patch_remote("team-a", remote_old, namespace="default", name="new", patch={"spec": {"size": 5}})
    new_local = default_local_name(namespace="default", name="new")
    e2e.eventually(
        lambda: (e2e.local(LOCAL_V2, namespace=cluster, name=new_local) or {})["spec"].get("size") == 5,
        what=f"the size edited through {old_name} on the local copy",
    )
    assert len(e2e.local_objects(LOCAL_V2)) == 2
