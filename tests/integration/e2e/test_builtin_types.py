"""Built-in types published without a CRD (issue 17, item 2): the service cluster's Roles appear
in kcp as `KubeRole`, its ConfigMaps (core group) as `KubeConfigMap`. Their schemas come from the
service cluster's discovery and OpenAPI v3 documents; a tenant's objects become plain Roles and
ConfigMaps in the tenant's namespace, follow its changes and go with it. Neither type has a
status subresource, so the schemas have none and nothing is ever written to a status."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.e2e.env import E2E, WorldOptions
from tests.integration.e2e.manifests import CONFIGMAP, GROUP, Resource, published_resource

ROLE = Resource("rbac.authorization.k8s.io", "v1", "roles")
KUBE_ROLE = Resource(GROUP, "v1", "kuberoles")
KUBE_CONFIGMAP = Resource(GROUP, "v1", "kubeconfigmaps")
NAMING = {"namespace": "$remoteClusterName", "name": "$remoteName"}
RULES = [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]


def _publish_builtins(e2e: E2E) -> None:
    e2e.publish(
        published_resource(
            "roles", kind="Role", api_group="rbac.authorization.k8s.io", projection={"kind": "KubeRole"}, naming=NAMING
        ),
        published_resource(
            "configmaps", kind="ConfigMap", api_group="", projection={"kind": "KubeConfigMap"}, naming=NAMING
        ),
    )


def _schema(e2e: E2E, published_resource_name: str) -> dict[str, Any]:
    e2e.wait_condition(published_resource_name, "Ready")
    found = e2e.published_resource(published_resource_name)
    assert found is not None
    name = found["status"]["resourceSchemaName"]
    schema = e2e.rest.get(e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiresourceschemas/{name}"))
    assert schema is not None, f"{name} is named in the status but does not exist"
    return dict(schema["spec"])


def test_roles_and_configmaps_are_published_from_discovery_and_sync_both_ways(e2e: E2E) -> None:
    _publish_builtins(e2e)
    e2e.servlet()

    role_schema = _schema(e2e, "roles")
    assert (role_schema["names"]["kind"], role_schema["names"]["plural"], role_schema["scope"]) == (
        "KubeRole",
        "kuberoles",
        "Namespaced",
    )
    (role_version,) = role_schema["versions"]
    assert "subresources" not in role_version, "a Role has no status subresource, so neither has a KubeRole"
    rules = role_version["schema"]["properties"]["rules"]
    assert rules["type"] == "array" and "verbs" in rules["items"]["required"], "the OpenAPI schema was not resolved"
    configmap_schema = _schema(e2e, "configmaps")
    assert configmap_schema["names"]["kind"] == "KubeConfigMap"
    (configmap_version,) = configmap_schema["versions"]
    assert configmap_version["schema"]["properties"]["data"]["additionalProperties"]["type"] == "string"

    # Down: a tenant's objects become plain built-in objects in the tenant's namespace.
    e2e.wait_served("team-a", KUBE_ROLE)
    e2e.wait_served("team-a", KUBE_CONFIGMAP)
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote(
        "team-a",
        KUBE_ROLE,
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "KubeRole",
            "metadata": {"name": "reader", "namespace": "default"},
            "rules": RULES,
        },
    )
    e2e.create_remote(
        "team-a",
        KUBE_CONFIGMAP,
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "KubeConfigMap",
            "metadata": {"name": "settings", "namespace": "default"},
            "data": {"color": "blue"},
        },
    )
    role = e2e.wait_local(ROLE, namespace=cluster, name="reader")
    assert (role["apiVersion"], role["kind"], role["rules"]) == ("rbac.authorization.k8s.io/v1", "Role", RULES)
    configmap = e2e.wait_local(CONFIGMAP, namespace=cluster, name="settings")
    assert (configmap["kind"], configmap["data"]) == ("ConfigMap", {"color": "blue"})

    # Up: the servlet claims the tenant's objects (its finalizer), and a change follows them down.
    e2e.wait_finalizer("team-a", KUBE_ROLE, namespace="default", name="reader")
    e2e.wait_finalizer("team-a", KUBE_CONFIGMAP, namespace="default", name="settings")
    e2e.patch_remote("team-a", KUBE_CONFIGMAP, namespace="default", name="settings", patch={"data": {"color": "red"}})
    e2e.eventually(
        lambda: (
            (e2e.local(CONFIGMAP, namespace=cluster, name="settings") or {}).get("data") == {"color": "red"} or None
        ),
        what="the tenant's change on the local ConfigMap",
    )

    # Deleting the tenant's object deletes its copy, then releases the tenant's object.
    e2e.rest.delete(e2e.remote_path("team-a", KUBE_ROLE, namespace="default", name="reader"))
    e2e.eventually(
        lambda: e2e.local(ROLE, namespace=cluster, name="reader") is None or None, what="the local Role deleted"
    )
    e2e.eventually(
        lambda: e2e.remote("team-a", KUBE_ROLE, namespace="default", name="reader") is None or None,
        what="the KubeRole gone once its finalizer is removed",
    )


@pytest.mark.kcpsim_only("reads kcpsim's request log")
def test_nothing_is_written_to_a_status_of_a_type_without_a_status_subresource(e2e: E2E) -> None:
    _publish_builtins(e2e)
    e2e.servlet()
    e2e.wait_served("team-a", KUBE_CONFIGMAP)
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote(
        "team-a",
        KUBE_CONFIGMAP,
        {"apiVersion": f"{GROUP}/v1", "kind": "KubeConfigMap", "metadata": {"name": "c", "namespace": "default"}},
    )
    e2e.wait_local(CONFIGMAP, namespace=cluster, name="c")
    e2e.wait_finalizer("team-a", KUBE_CONFIGMAP, namespace="default", name="c")
    status_writes = [
        f"{call.method} {call.path}"
        for call in e2e.simulated.callers.calls(token="servlet")
        if call.method in ("PUT", "PATCH") and call.path.endswith("/status") and "publishedresources" not in call.path
    ]
    assert status_writes == []


# Over HTTPS: kubectl sends the kubeconfig's token over HTTPS only.
@pytest.mark.parametrize("e2e", [WorldOptions(tls=True)], indirect=True, ids=["tls"])
@pytest.mark.kcpsim_only("writes kubeconfigs of kcpsim's admin")
def test_a_tenant_applies_a_kube_configmap_with_kubectl_and_gets_a_configmap(e2e: E2E, tmp_path: Path) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH: the tenant's view cannot be checked")
    _publish_builtins(e2e)
    e2e.servlet()
    e2e.wait_served("team-a", KUBE_CONFIGMAP)
    config = tmp_path / "team-a.kubeconfig"
    config.write_text(
        yaml.safe_dump(e2e.simulated.sim.kubeconfig_dict(e2e.simulated.sim.workspace_url("root:myorg:team-a")))
    )
    e2e.world.ensure_namespace("default", workspace="team-a")
    manifest = {
        "apiVersion": f"{GROUP}/v1",
        "kind": "KubeConfigMap",
        "metadata": {"name": "from-kubectl", "namespace": "default"},
        "data": {"size": "3"},
    }
    applied = subprocess.run(
        [kubectl, "--kubeconfig", str(config), "apply", "-f", "-"],
        input=yaml.safe_dump(manifest),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert applied.returncode == 0, applied.stderr
    configmap = e2e.wait_local(CONFIGMAP, namespace=e2e.world.cluster("team-a"), name="from-kubectl")
    assert configmap["data"] == {"size": "3"}
