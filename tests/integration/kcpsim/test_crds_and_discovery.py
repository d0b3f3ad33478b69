"""CRDs make resources served (with scope, versions and schema), discovery lists what is served."""

from __future__ import annotations

import pytest
from lightkube import ApiError, Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Namespace
from lightkube.types import PatchType

from tests.integration.kcpsim.helpers import Gadget, Raw, Widget, widget_crd


def test_a_new_crd_is_established_and_served(service: Client, raw: Raw) -> None:
    assert raw("GET", "/apis/example.com/v1/widgets").status_code == 404
    service.create(widget_crd())
    crd = service.get(CustomResourceDefinition, "widgets.example.com")
    assert {c.type: c.status for c in crd.status.conditions} == {"Established": "True", "NamesAccepted": "True"}
    assert raw("GET", "/apis/example.com/v1/widgets").json()["kind"] == "WidgetList"


def test_cluster_scoped_custom_resources_have_no_namespace(service: Client, raw: Raw) -> None:
    service.create(widget_crd(scope="Cluster", kind="Gadget", plural="gadgets"))
    created = service.create(
        Gadget({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}, "spec": {"size": 1}})
    )
    assert created.metadata.namespace is None
    assert raw("GET", "/apis/example.com/v1/namespaces/default/gadgets").status_code == 404


def test_namespaced_custom_resources_are_listed_across_namespaces(service: Client) -> None:
    service.create(widget_crd())
    for ns in ("n1", "n2"):
        service.create(Namespace(metadata=ObjectMeta(name=ns)))
        service.create(Widget({"metadata": {"name": "w", "namespace": ns}, "spec": {"size": 1}}))
    assert sorted(w.metadata.namespace for w in service.list(Widget, namespace="*")) == ["n1", "n2"]


@pytest.mark.parametrize(
    ("spec", "field"),
    [({"size": "big"}, "spec.size"), ({"color": "red"}, "spec.size"), ({"size": 1, "tags": [1]}, "spec.tags[0]")],
)
def test_schema_violations_are_invalid(service: Client, spec: dict[str, object], field: str) -> None:
    service.create(widget_crd())
    with pytest.raises(ApiError) as caught:
        service.create(Widget({"metadata": {"name": "w", "namespace": "default"}, "spec": spec}))
    assert caught.value.status.code == 422
    assert field in caught.value.status.message


def test_unknown_fields_are_pruned(service: Client) -> None:
    service.create(widget_crd())
    created = service.create(
        Widget({"metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 1, "unknown": True}, "extra": 1})
    )
    assert created["spec"] == {"size": 1} and "extra" not in created


def test_every_served_version_of_a_crd_answers_with_its_own_api_version(service: Client, raw: Raw) -> None:
    service.create(widget_crd(versions=("v1", "v2")))
    service.create(Widget({"metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 1}}))
    assert raw("GET", "/apis/example.com/v2/namespaces/default/widgets/w").json()["apiVersion"] == "example.com/v2"


def test_deleting_a_crd_stops_serving_it_and_removes_its_objects(service: Client, raw: Raw) -> None:
    service.create(widget_crd())
    service.create(Widget({"metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 1}}))
    service.delete(CustomResourceDefinition, "widgets.example.com")
    assert raw("GET", "/apis/example.com/v1/widgets").status_code == 404
    service.create(widget_crd())
    assert list(service.list(Widget, namespace="*")) == []


def test_a_crd_in_one_workspace_is_not_served_in_another(team_a: Client, team_b: Client, raw: Raw) -> None:
    team_a.create(widget_crd())
    assert raw("GET", "/clusters/root:myorg:team-a/apis/example.com/v1/widgets").status_code == 200
    assert raw("GET", "/clusters/root:myorg:team-b/apis/example.com/v1/widgets").status_code == 404


def test_discovery_lists_built_ins_and_crds(service: Client, raw: Raw) -> None:
    service.create(widget_crd())
    assert raw("GET", "/api").json()["versions"] == ["v1"]
    core = {r["name"] for r in raw("GET", "/api/v1").json()["resources"]}
    assert {"namespaces", "secrets", "configmaps", "events", "namespaces/status"} <= core
    groups = {g["name"] for g in raw("GET", "/apis").json()["groups"]}
    assert {"example.com", "coordination.k8s.io", "apiextensions.k8s.io"} <= groups
    resources = raw("GET", "/apis/example.com/v1").json()["resources"]
    assert [(r["name"], r["namespaced"]) for r in resources] == [("widgets", True), ("widgets/status", True)]
    assert raw("GET", "/apis/example.com").json()["preferredVersion"]["version"] == "v1"


def test_kcp_types_are_served_in_workspaces_but_not_on_the_service_cluster(raw: Raw) -> None:
    groups = {g["name"] for g in raw("GET", "/clusters/root:myorg/apis").json()["groups"]}
    assert {"apis.kcp.io", "core.kcp.io", "tenancy.kcp.io"} <= groups
    versions = raw("GET", "/clusters/root:myorg/apis/apis.kcp.io").json()["versions"]
    assert [v["version"] for v in versions] == ["v1alpha2", "v1alpha1"]
    assert "apis.kcp.io" not in {g["name"] for g in raw("GET", "/apis").json()["groups"]}


def test_the_immutability_rule_self_equals_old_self_is_enforced(service: Client) -> None:
    service.create(widget_crd(immutable_spec=True))
    service.create(Widget({"metadata": {"name": "w", "namespace": "default"}, "spec": {"size": 1}}))
    with pytest.raises(ApiError) as caught:
        service.patch(Widget, "w", {"spec": {"size": 2}}, namespace="default", patch_type=PatchType.MERGE)
    assert caught.value.status.code == 422 and "spec is immutable" in caught.value.status.message
    labelled = service.patch(
        Widget, "w", {"metadata": {"labels": {"a": "b"}}}, namespace="default", patch_type=PatchType.MERGE
    )
    assert labelled.metadata.labels == {"a": "b"}
