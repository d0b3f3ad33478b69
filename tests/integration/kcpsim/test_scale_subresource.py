"""The scale subresource of a CRD declaring `subresources.scale`: an `autoscaling/v1` Scale read
through the CRD's replica and selector paths, written back by PUT and PATCH; `kubectl scale`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import CRDS, Raw, example_io_widget_crd
from tests.integration.kcpsim.kubectl import kubectl

WIDGETS = "/apis/example.io/v1/namespaces/default/widgets"
SCALE = {
    "specReplicasPath": ".spec.size.replicas",
    "statusReplicasPath": ".status.ready",
    "labelSelectorPath": ".status.selector",
}


@pytest.fixture
def widgets(raw: Raw) -> Raw:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {"size": {"type": "object", "properties": {"replicas": {"type": "integer"}}}},
            },
            "status": {"type": "object", "properties": {"ready": {"type": "integer"}, "selector": {"type": "string"}}},
        },
    }
    crd = example_io_widget_crd(schema, subresources={"status": {}, "scale": SCALE})
    assert raw("POST", CRDS, crd).status_code == 201
    widget = {
        "apiVersion": "example.io/v1",
        "kind": "Widget",
        "metadata": {"name": "w"},
        "spec": {"size": {"replicas": 2}},
    }
    assert raw("POST", WIDGETS, widget).status_code == 201
    status = {"status": {"ready": 1, "selector": "app=w"}}
    patched = raw("PATCH", f"{WIDGETS}/w/status", status, content_type="application/merge-patch+json")
    assert patched.status_code == 200, patched.text
    return raw


def test_get_answers_a_scale_read_through_the_crds_paths(widgets: Raw) -> None:
    widget = widgets("GET", f"{WIDGETS}/w").json()
    scale = widgets("GET", f"{WIDGETS}/w/scale").json()
    assert scale == {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: widget["metadata"][key] for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        },
        "spec": {"replicas": 2},
        "status": {"replicas": 1, "selector": "app=w"},
    }


@pytest.mark.parametrize(
    ("content_type", "patch"),
    [
        ("application/merge-patch+json", {"spec": {"replicas": 5}}),
        ("application/strategic-merge-patch+json", {"spec": {"replicas": 5}}),
        ("application/json-patch+json", [{"op": "replace", "path": "/spec/replicas", "value": 5}]),
    ],
    ids=["merge", "strategic", "json"],
)
def test_a_patch_of_the_scale_sets_the_spec_replicas_path(widgets: Raw, content_type: str, patch: Any) -> None:
    response = widgets("PATCH", f"{WIDGETS}/w/scale", patch, content_type=content_type)
    assert response.status_code == 200, response.text
    assert response.json()["spec"] == {"replicas": 5}
    widget = widgets("GET", f"{WIDGETS}/w").json()
    assert widget["spec"]["size"]["replicas"] == 5 and widget["status"]["ready"] == 1
    assert response.json()["metadata"]["resourceVersion"] == widget["metadata"]["resourceVersion"]
    assert widget["metadata"]["managedFields"][-1]["subresource"] == "scale"


def test_a_put_of_the_scale_checks_its_resource_version(widgets: Raw) -> None:
    scale = widgets("GET", f"{WIDGETS}/w/scale").json()
    scale["spec"]["replicas"] = 3
    assert widgets("PUT", f"{WIDGETS}/w/scale", scale).json()["spec"] == {"replicas": 3}
    stale = widgets("PUT", f"{WIDGETS}/w/scale", scale)  # the resourceVersion read before the first PUT
    assert stale.status_code == 409 and stale.json()["reason"] == "Conflict"
    scale["spec"]["replicas"] = -1
    scale["metadata"].pop("resourceVersion")
    negative = widgets("PUT", f"{WIDGETS}/w/scale", scale)
    assert negative.status_code == 422
    assert negative.json()["details"]["causes"][0] == {
        "reason": "FieldValueInvalid",
        "message": "Invalid value: -1: must be greater than or equal to 0",
        "field": "spec.replicas",
    }


def test_a_resource_without_scale_has_no_scale_subresource(widgets: Raw) -> None:
    assert widgets("GET", "/api/v1/namespaces/default/configmaps/x/scale").status_code == 404
    assert widgets("GET", f"{WIDGETS}/missing/scale").status_code == 404


def test_kubectl_scale_sets_the_replicas(kcpsim: KcpSim, widgets: Raw, tmp_path: Path) -> None:
    # kubectl finds the subresource through discovery, as against a real apiserver.
    listing = widgets("GET", "/apis/example.io/v1").json()
    scale = next(resource for resource in listing["resources"] if resource["name"] == "widgets/scale")
    assert (scale["group"], scale["version"], scale["kind"]) == ("autoscaling", "v1", "Scale")
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["service"]
    scaled = kubectl(kubeconfig, "scale", "widget", "w", "-n", "default", "--replicas=4", cache=tmp_path)
    assert scaled.returncode == 0, scaled.stderr
    assert scaled.stdout.strip() == "widget.example.io/w scaled"
    widget = json.loads(kubectl(kubeconfig, "get", "widget", "w", "-n", "default", "-o", "json", cache=tmp_path).stdout)
    assert widget["spec"]["size"]["replicas"] == 4
