"""Built-in types as CRDs: a kind's OpenAPI v3 definition made structural (`openapi_schema.py`),
and the CRD a built-in type would have, from a group-version document's paths or from discovery
(`builtin_types.py`)."""

from __future__ import annotations

from typing import Any

import attrs

from servlet.core.builtin_types import (
    builtin_crds,
    is_openapi_document,
    resources_from_discovery,
    resources_in_document,
)
from servlet.core.inventory import Document, build_inventory
from servlet.core.keys import CLUSTER_ANNOTATION
from servlet.core.model import ServletIdentity
from servlet.core.openapi_schema import structural_schema
from servlet.core.preview import plan_servlet

REF = "#/components/schemas/"
META = "io.k8s.apimachinery.pkg.apis.meta.v1."
APPS = "io.k8s.api.apps.v1."


def ref(name: str) -> dict[str, str]:
    return {"$ref": REF + name}


def _gvk(kind: str, group: str = "apps", version: str = "v1") -> list[dict[str, str]]:
    return [{"group": group, "kind": kind, "version": version}]


DEFINITIONS: dict[str, Any] = {
    META + "ObjectMeta": {"type": "object", "properties": {"name": {"type": "string"}}},
    META + "LabelSelector": {
        "type": "object",
        "properties": {"matchLabels": {"type": "object", "additionalProperties": {"type": "string"}}},
        "x-kubernetes-map-type": "atomic",
    },
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": {"type": "string", "format": "int-or-string"},
    "io.k8s.apimachinery.pkg.api.resource.Quantity": {"oneOf": [{"type": "string"}, {"type": "number"}]},
    "io.k8s.apimachinery.pkg.runtime.RawExtension": {"type": "object", "x-kubernetes-embedded-resource": True},
    # A definition that contains itself, as JSONSchemaProps does.
    "io.example.Props": {
        "type": "object",
        "properties": {"items": {"allOf": [ref("io.example.Props")]}, "title": {"type": "string"}},
    },
    APPS + "DeploymentSpec": {
        "type": "object",
        "required": ["selector"],
        "properties": {
            "replicas": {"type": "integer", "format": "int32"},
            "selector": {"allOf": [ref(META + "LabelSelector")], "description": "Which pods."},
            "maxSurge": {"allOf": [ref("io.k8s.apimachinery.pkg.util.intstr.IntOrString")]},
            "memory": ref("io.k8s.apimachinery.pkg.api.resource.Quantity"),
            "template": ref("io.k8s.apimachinery.pkg.runtime.RawExtension"),
            "props": ref("io.example.Props"),
            "anything": {"description": "no type at all"},
            "ports": {
                "type": "array",
                "items": {"type": "object", "properties": {"name": {"type": "string"}}},
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["name"],
                "x-kubernetes-patch-strategy": "merge",
                "x-kubernetes-patch-merge-key": "name",
            },
        },
    },
    APPS + "Deployment": {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"allOf": [ref(META + "ObjectMeta")], "default": {}},
            "spec": {"allOf": [ref(APPS + "DeploymentSpec")], "default": {}},
            "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
        },
        "x-kubernetes-group-version-kind": _gvk("Deployment"),
    },
    APPS + "DeploymentList": {"type": "object", "x-kubernetes-group-version-kind": _gvk("DeploymentList")},
}


def _path_item(kind: str, group: str = "apps", version: str = "v1") -> dict[str, Any]:
    return {"get": {"x-kubernetes-action": "get", "x-kubernetes-group-version-kind": _gvk(kind, group, version)[0]}}


def document(**extra_paths: Any) -> dict[str, Any]:
    item = "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
    return {
        "openapi": "3.0.0",
        "paths": {
            "/apis/apps/v1/namespaces/{namespace}/deployments": {"get": {"x-kubernetes-action": "list"}},
            item: _path_item("Deployment"),
            item + "/status": _path_item("Deployment"),
            item + "/scale": _path_item("Scale", "autoscaling"),
            "/apis/apps/v1/watch/namespaces/{namespace}/deployments/{name}": {"get": {"x-kubernetes-action": "watch"}},
            **extra_paths,
        },
        "components": {"schemas": DEFINITIONS},
    }


def test_references_and_all_of_are_inlined_and_what_a_crd_cannot_say_is_widened() -> None:
    schema, problems = structural_schema(DEFINITIONS, APPS + "Deployment")
    assert problems == ()
    assert schema["properties"]["metadata"] == {"type": "object"}, "a CRD's metadata is the server's"
    spec = schema["properties"]["spec"]
    assert spec["required"] == ["selector"] and spec["default"] == {}
    selector = spec["properties"]["selector"]
    assert selector["description"] == "Which pods." and selector["x-kubernetes-map-type"] == "atomic"
    assert selector["properties"]["matchLabels"]["additionalProperties"] == {"type": "string"}
    assert spec["properties"]["maxSurge"] == {"x-kubernetes-int-or-string": True}
    assert spec["properties"]["memory"] == {"x-kubernetes-int-or-string": True}
    assert spec["properties"]["template"] == {"type": "object", "x-kubernetes-embedded-resource": True}
    assert spec["properties"]["anything"] == {
        "description": "no type at all",
        "x-kubernetes-preserve-unknown-fields": True,
    }
    ports = spec["properties"]["ports"]
    assert (ports["x-kubernetes-list-type"], ports["x-kubernetes-list-map-keys"]) == ("map", ["name"])
    assert "x-kubernetes-patch-strategy" not in ports, "patch strategies mean nothing in a CRD schema"
    assert "x-kubernetes-group-version-kind" not in schema


def test_a_recursive_definition_ends_in_preserved_unknown_fields_one_level_down() -> None:
    schema, problems = structural_schema(DEFINITIONS, APPS + "DeploymentSpec")
    assert problems == ()
    props = schema["properties"]["props"]
    assert props["properties"]["title"] == {"type": "string"}
    assert props["properties"]["items"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}


def test_a_dangling_reference_is_a_problem_naming_where_it_is_and_what_is_missing() -> None:
    definitions = {"io.example.A": {"type": "object", "properties": {"b": ref("io.example.Missing")}}}
    schema, problems = structural_schema(definitions, "io.example.A", field="doc.json components.schemas")
    assert [str(p) for p in problems] == [
        "doc.json components.schemas.io.example.A.properties.b.$ref: refers to 'io.example.Missing', "
        "which the document does not define"
    ]
    assert schema["properties"]["b"] == {"x-kubernetes-preserve-unknown-fields": True}


def test_the_paths_give_plural_scope_and_the_subresources_that_exist() -> None:
    resources, problems = resources_in_document(document())
    assert problems == ()
    (deployment,) = resources
    assert (deployment.group, deployment.version, deployment.kind, deployment.plural) == (
        "apps",
        "v1",
        "Deployment",
        "deployments",
    )
    assert deployment.namespaced and deployment.subresources == ("status", "scale")
    (crd,) = builtin_crds(resources)
    (version,) = crd["spec"]["versions"]
    assert crd["metadata"]["name"] == "deployments.apps" and crd["spec"]["scope"] == "Namespaced"
    assert version["subresources"] == {
        "status": {},
        "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"},
    }
    assert (version["served"], version["storage"]) == (True, True)


def test_a_cluster_scoped_core_kind_without_status_path_has_no_status_subresource() -> None:
    definitions = {
        "io.k8s.api.core.v1.PersistentVolume": {
            "type": "object",
            "x-kubernetes-group-version-kind": _gvk("PersistentVolume", "", "v1"),
        }
    }
    doc = {
        "openapi": "3.0.0",
        "paths": {"/api/v1/persistentvolumes/{name}": _path_item("PersistentVolume", "", "v1")},
        "components": {"schemas": definitions},
    }
    (crd,) = builtin_crds(resources_in_document(doc)[0])
    assert crd["metadata"]["name"] == "persistentvolumes.core"
    assert (crd["spec"]["group"], crd["spec"]["scope"]) == ("", "Cluster")
    assert "subresources" not in crd["spec"]["versions"][0]


def test_a_kind_the_document_does_not_define_is_a_problem_naming_the_path() -> None:
    item = "/apis/apps/v1/namespaces/{namespace}/replicasets/{name}"
    resources, problems = resources_in_document(document(**{item: _path_item("ReplicaSet")}), source="apps.json")
    assert [r.kind for r in resources] == ["Deployment"]
    assert [str(p) for p in problems] == [
        f"apps.json paths[{item}]: components.schemas has no definition of kind 'ReplicaSet' apps/v1"
    ]


def test_discovery_decides_plural_scope_and_subresources_and_the_preferred_version_is_stored() -> None:
    listing = {
        "groupVersion": "apps/v1",
        "resources": [
            {"name": "deployments", "kind": "Deployment", "namespaced": True},
            {"name": "deployments/status", "kind": "Deployment", "namespaced": True},
            {"name": "replicasets", "kind": "ReplicaSet", "namespaced": True},
        ],
    }
    v1, problems = resources_from_discovery(listing, document(), kinds=["Deployment"], source="apps/v1")
    assert problems == ()
    assert [(r.plural, r.subresources) for r in v1] == [("deployments", ("status",))], "discovery lists no scale"
    v2 = [attrs.evolve(resource, version="v2") for resource in v1]
    (crd,) = builtin_crds([*v1, *v2], storage_versions={("apps", "Deployment"): "v1"})
    assert [(v["name"], v["storage"]) for v in crd["spec"]["versions"]] == [("v2", False), ("v1", True)]
    (newest_stored,) = builtin_crds([*v1, *v2])
    assert [(v["name"], v["storage"]) for v in newest_stored["spec"]["versions"]] == [("v2", True), ("v1", False)]


def test_plan_input_may_hold_openapi_documents_and_a_real_crd_of_the_same_kind_wins() -> None:
    assert is_openapi_document(document()) and not is_openapi_document({"apiVersion": "v1", "kind": "List"})
    inventory = build_inventory([Document(source="apps.json", content=document())])
    assert [crd["metadata"]["name"] for crd in inventory.crds] == ["deployments.apps"]
    real = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "deployments.apps"},
        "spec": {"group": "apps", "names": {"kind": "Deployment", "plural": "deployments"}, "versions": []},
    }
    both = build_inventory([Document(source="apps.json", content=document()), Document(source="crd", content=real)])
    assert both.crds == (real,)


def _status_actions(*, with_status_path: bool) -> list[str]:
    """The actions planned for a published Deployment whose local copy has a status."""
    doc = document()
    if not with_status_path:
        del doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/status"]
    identity = ServletIdentity(name="tom", api_group="kube.example.corp")
    published = {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": "deployments"},
        "spec": {"resource": {"apiGroup": "apps", "kind": "Deployment"}, "projection": {"kind": "KubeDeployment"}},
    }
    remote = {
        "apiVersion": "kube.example.corp/v1",
        "kind": "KubeDeployment",
        "metadata": {"name": "web", "namespace": "default", "annotations": {CLUSTER_ANNOTATION: "c1"}},
        "spec": {"replicas": 2},
    }

    def planned(*locals_: dict[str, Any]) -> dict[str, Any]:
        documents = [doc, published, remote, *locals_]
        inventory = build_inventory([Document(source=f"doc#{i}", content=d) for i, d in enumerate(documents)])
        return plan_servlet(inventory=inventory, servlet=identity).to_dict()

    (first,) = planned()["objects"]
    (copy,) = [action["object"] for action in first["actions"] if action["type"] == "create"]
    (second,) = planned({**copy, "status": {"replicas": 2}})["objects"]
    return [action["type"] for action in second["actions"]]


def test_status_flows_up_only_when_the_type_has_a_status_subresource() -> None:
    assert "patchRemoteStatus" in _status_actions(with_status_path=True)
    assert "patchRemoteStatus" not in _status_actions(with_status_path=False)
