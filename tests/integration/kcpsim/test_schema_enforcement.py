"""Custom resources are held to their schema as kube-apiserver holds them: defaults filled in,
unknown fields pruned, invalid values refused with 422 and the apiserver's words; and objects
are held to the API server's and etcd's size limits. On the service cluster (CRDs), in kcp
workspaces and through the virtual workspace (APIResourceSchemas); over raw HTTP and kubectl."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import CRDS, Raw, example_io_widget_crd
from tests.integration.kcpsim.kubectl import kubectl

WIDGETS = "/apis/example.io/v1/namespaces/default/widgets"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
GROUP = "certificates.example.corp"
SPEC_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10, "default": 1},
        "ratio": {"type": "number", "exclusiveMinimum": True, "minimum": 0, "exclusiveMaximum": True, "maximum": 1},
        "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
        "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
        "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
        "when": {"type": "string", "format": "date-time"},
        "note": {"type": "string", "nullable": True},
        "size": {"type": "string", "default": "small"},
        "limits": {"type": "object", "properties": {"cpu": {"type": "string", "default": "1"}}, "default": {}},
        "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
    },
}


def widget_crd(spec_schema: dict[str, Any] = SPEC_SCHEMA) -> dict[str, Any]:
    return example_io_widget_crd({"type": "object", "properties": {"spec": spec_schema}})


def widget(name: str, /, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


@pytest.fixture
def widgets(raw: Raw) -> Raw:
    assert raw("POST", CRDS, widget_crd()).status_code == 201
    return raw


def test_a_value_out_of_range_is_refused_with_the_apiservers_words(widgets: Raw) -> None:
    response = widgets("POST", WIDGETS, widget("x", replicas=11))
    assert response.status_code == 422
    status = response.json()
    assert status["reason"] == "Invalid"
    assert status["message"] == (
        'Widget.example.io "x" is invalid: spec.replicas: Invalid value: 11: '
        "spec.replicas in body should be less than or equal to 10"
    )
    assert status["details"]["causes"] == [
        {
            "reason": "FieldValueInvalid",
            "message": "Invalid value: 11: spec.replicas in body should be less than or equal to 10",
            "field": "spec.replicas",
        }
    ]


@pytest.mark.parametrize(
    "spec, field, message",
    [
        (
            {"replicas": 0},
            "spec.replicas",
            "Invalid value: 0: spec.replicas in body should be greater than or equal to 1",
        ),
        ({"ratio": 1}, "spec.ratio", "Invalid value: 1: spec.ratio in body should be less than 1"),
        ({"ratio": 0}, "spec.ratio", "Invalid value: 0: spec.ratio in body should be greater than 0"),
        (
            {"replicas": "2"},
            "spec.replicas",
            'Invalid value: "string": spec.replicas in body must be of type integer: "string"',
        ),
        ({"color": "pink"}, "spec.color", 'Unsupported value: "pink": supported values: "red", "blue"'),
        ({"name": "a"}, "spec.name", 'Invalid value: "a": spec.name in body should be at least 2 chars long'),
        ({"name": "abcdef"}, "spec.name", "Too long: may not be more than 5 bytes"),
        ({"name": "AB"}, "spec.name", "Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"),
        ({"tags": []}, "spec.tags", "Invalid value: 0: spec.tags in body should have at least 1 items"),
        ({"tags": ["a", "b", "c"]}, "spec.tags", "Too many: 3: must have at most 2 items"),
        (
            {"tags": [1]},
            "spec.tags[0]",
            'Invalid value: "number": spec.tags[0] in body must be of type string: "number"',
        ),
        ({"when": "soon"}, "spec.when", 'Invalid value: "soon": spec.when in body must be of type date-time: "soon"'),
    ],
)
def test_each_schema_constraint_is_enforced(widgets: Raw, spec: dict[str, Any], field: str, message: str) -> None:
    response = widgets("POST", WIDGETS, widget("x", **spec))
    assert response.status_code == 422, response.text
    assert [(c["field"], c["message"]) for c in response.json()["details"]["causes"]] == [(field, message)]


def test_several_problems_are_listed_together(widgets: Raw) -> None:
    response = widgets("POST", WIDGETS, widget("x", replicas=11, color="pink"))
    assert response.status_code == 422
    assert response.json()["message"] == (
        'Widget.example.io "x" is invalid: [spec.replicas: Invalid value: 11: spec.replicas in body should be less '
        'than or equal to 10, spec.color: Unsupported value: "pink": supported values: "red", "blue"]'
    )
    assert [c["reason"] for c in response.json()["details"]["causes"]] == [
        "FieldValueInvalid",
        "FieldValueNotSupported",
    ]


def test_defaults_fill_missing_and_null_fields_and_unknown_fields_are_pruned(widgets: Raw) -> None:
    body = widget("x", size=None, note=None, when="2026-11-24T08:00:00Z", extra="dropped", config={"any": {"thing": 1}})
    created = widgets("POST", WIDGETS, body)
    assert created.status_code == 201, created.text
    spec = created.json()["spec"]
    assert spec == {
        "replicas": 1,
        "color": "red",
        "size": "small",  # null where the schema does not allow it: dropped, then defaulted
        "note": None,  # nullable: kept
        "limits": {"cpu": "1"},  # a defaulted object is defaulted inside too
        "when": "2026-11-24T08:00:00Z",
        "config": {"any": {"thing": 1}},  # x-kubernetes-preserve-unknown-fields
    }
    assert widgets("GET", f"{WIDGETS}/x").json()["spec"] == spec
    # An update is defaulted and pruned the same way.
    replaced = widgets("PUT", f"{WIDGETS}/x", {**created.json(), "spec": {"replicas": 3, "bogus": True}})
    assert replaced.json()["spec"] == {"replicas": 3, "color": "red", "size": "small", "limits": {"cpu": "1"}}


def test_a_default_added_later_shows_on_read(widgets: Raw) -> None:
    assert widgets("POST", WIDGETS, widget("old")).status_code == 201
    crd = widgets("GET", f"{CRDS}/widgets.example.io").json()
    schema = copy.deepcopy(SPEC_SCHEMA)
    schema["properties"]["shape"] = {"type": "string", "default": "round"}
    crd["spec"]["versions"] = widget_crd(schema)["spec"]["versions"]
    assert widgets("PUT", f"{CRDS}/widgets.example.io", crd).status_code == 200
    assert widgets("GET", f"{WIDGETS}/old").json()["spec"]["shape"] == "round"
    assert [w["spec"].get("shape") for w in widgets("GET", WIDGETS).json()["items"]] == ["round"]


def test_kubectl_shows_the_refusal(kcpsim: KcpSim, widgets: Raw, tmp_path: Path) -> None:
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["service"]
    manifest = {**widget("x", replicas=11), "metadata": {"name": "x", "namespace": "default"}}
    # kubectl leaves validation to the server (fieldValidation=Strict): its answer is what is shown.
    result = kubectl(kubeconfig, "create", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(manifest))
    assert result.returncode == 1
    assert (
        'The Widget "x" is invalid: spec.replicas: Invalid value: 11: '
        "spec.replicas in body should be less than or equal to 10" in result.stderr
    ), result.stderr
    created = kubectl(
        kubeconfig,
        "create",
        "-f",
        "-",
        "-o",
        "json",
        cache=tmp_path,
        stdin=yaml.safe_dump(widget("w2") | {"metadata": {"name": "w2", "namespace": "default"}}),
    )
    assert created.returncode == 0, created.stderr
    assert json.loads(created.stdout)["spec"]["replicas"] == 1


# ---- kcp: APIResourceSchemas in workspaces and the virtual workspace ------------------------------
def test_a_workspace_holds_objects_to_the_schema_of_the_export(kcpsim: KcpSim, raw: Raw) -> None:
    certificates = f"/clusters/root:myorg:team-a/apis/{GROUP}/v1alpha1/namespaces/default/certificates"
    body = {"apiVersion": f"{GROUP}/v1alpha1", "kind": "Certificate", "metadata": {"name": "c"}, "spec": {}}
    missing = raw("POST", certificates, body)
    assert missing.status_code == 422
    assert missing.json()["message"] == f'Certificate.{GROUP} "c" is invalid: spec.commonName: Required value'
    assert missing.json()["details"]["causes"][0]["reason"] == "FieldValueRequired"
    created = raw("POST", certificates, {**body, "spec": {"commonName": "a.example", "unknown": 1}})
    assert created.status_code == 201 and created.json()["spec"] == {"commonName": "a.example"}

    # The provider writing through the virtual workspace is held to the same schema.
    cluster = kcpsim.cluster_of("root:myorg:team-a")
    through_vw = kcpsim.vw_url().removeprefix(kcpsim.base_url) + (
        f"/clusters/{cluster}/apis/{GROUP}/v1alpha1/namespaces/default/certificates"
    )
    refused = raw("POST", through_vw, {**body, "metadata": {"name": "d"}, "spec": {"commonName": 7}})
    assert refused.status_code == 422, refused.text
    assert refused.json()["details"]["causes"][0]["field"] == "spec.commonName"


# ---- size limits ---------------------------------------------------------------------------------
def configmap(name: str, **fields: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, **fields}


def test_a_request_body_over_3_mib_is_refused_with_413(raw: Raw) -> None:
    response = raw("POST", CONFIGMAPS, configmap("big", data={"blob": "x" * (3 * 1024 * 1024)}))
    assert response.status_code == 413
    assert response.json()["reason"] == "RequestEntityTooLarge"
    assert response.json()["message"] == "Request entity too large: limit is 3145728"
    assert raw("GET", f"{CONFIGMAPS}/big").status_code == 404


def test_an_object_over_etcds_limit_is_refused_as_etcd_refuses_it(raw: Raw) -> None:
    response = raw("POST", CONFIGMAPS, configmap("big", data={"blob": "x" * (1536 * 1024)}))
    assert response.status_code == 500
    assert response.json()["message"] == "etcdserver: request is too large"
    assert raw("GET", f"{CONFIGMAPS}/big").status_code == 404
    assert raw("POST", CONFIGMAPS, configmap("fits", data={"blob": "x" * (1500 * 1024)})).status_code == 201


def test_annotations_over_256_kib_are_invalid(raw: Raw, widgets: Raw) -> None:
    annotations = {"a": "x" * (256 * 1024)}
    response = raw("POST", CONFIGMAPS, {**configmap("c"), "metadata": {"name": "c", "annotations": annotations}})
    assert response.status_code == 422
    assert response.json()["message"] == (
        'ConfigMap "c" is invalid: metadata.annotations: Too long: may not be more than 262144 bytes'
    )
    fits = {"a": "x" * (256 * 1024 - 1)}
    assert (
        raw("POST", CONFIGMAPS, {**configmap("c"), "metadata": {"name": "c", "annotations": fits}}).status_code == 201
    )
    custom = widget("w") | {"metadata": {"name": "w", "annotations": annotations}}
    assert widgets("POST", WIDGETS, custom).status_code == 422
