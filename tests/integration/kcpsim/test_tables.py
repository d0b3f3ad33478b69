"""`kubectl get` shows a custom resource's printer columns: kcpsim answers a request for a
`meta.k8s.io/v1` Table with the CRD's (or APIResourceSchema's) `additionalPrinterColumns`, or
NAME and AGE when it has none. Over raw HTTP and through the real kubectl."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import CRDS, Raw
from tests.integration.kcpsim.kubectl import kubectl

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
COLUMNS = [
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Color", "type": "string", "jsonPath": ".spec.color", "priority": 1},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def crd(plural: str, kind: str, printer_columns: list[dict[str, Any]] | None) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": "v1",
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {
                "type": "object",
                "properties": {
                    "spec": {
                        "type": "object",
                        "properties": {"replicas": {"type": "integer"}, "color": {"type": "string"}},
                    }
                },
            }
        },
    }
    if printer_columns is not None:
        version["additionalPrinterColumns"] = printer_columns
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.io"},
        "spec": {
            "group": "example.io",
            "scope": "Namespaced",
            "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
            "versions": [version],
        },
    }


@pytest.fixture
def widgets(raw: Raw) -> Raw:
    assert raw("POST", CRDS, crd("widgets", "Widget", COLUMNS)).status_code == 201
    assert raw("POST", CRDS, crd("gears", "Gear", None)).status_code == 201
    for plural, kind in (("widgets", "Widget"), ("gears", "Gear")):
        body = {"apiVersion": "example.io/v1", "kind": kind, "metadata": {"name": "w1"}, "spec": {"replicas": 3}}
        assert raw("POST", f"/apis/example.io/v1/namespaces/default/{plural}", body).status_code == 201
    return raw


def get_table(raw: Raw, path: str) -> dict[str, Any]:
    response = raw.client.get(path, headers={"Accept": TABLE})
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_a_list_asked_for_as_a_table_has_the_printer_columns(widgets: Raw) -> None:
    table = get_table(widgets, "/apis/example.io/v1/namespaces/default/widgets")
    assert (table["kind"], table["apiVersion"]) == ("Table", "meta.k8s.io/v1")
    assert [(c["name"], c["type"], c["priority"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", 0),
        ("Replicas", "integer", 0),
        ("Color", "string", 1),
        ("Age", "date", 0),
    ]
    (row,) = table["rows"]
    name, replicas, color, age = row["cells"]
    assert (name, replicas, color) == ("w1", 3, None)  # a missing field is an empty cell
    assert age.endswith("s"), age  # created just now: seconds
    assert row["object"]["kind"] == "PartialObjectMetadata" and row["object"]["metadata"]["name"] == "w1"
    assert table["metadata"]["resourceVersion"]


def test_one_object_and_a_crd_without_columns_get_name_and_age(widgets: Raw) -> None:
    table = get_table(widgets, "/apis/example.io/v1/namespaces/default/gears/w1")
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Age"]
    assert [row["cells"][0] for row in table["rows"]] == ["w1"]


def test_plain_requests_stay_json(widgets: Raw) -> None:
    # (Built-in kinds print their own columns: test_tables_builtin.py.)
    plain = widgets("GET", "/apis/example.io/v1/namespaces/default/widgets").json()
    assert plain["kind"] == "WidgetList"


def test_kubectl_get_prints_the_printer_columns(kcpsim: KcpSim, widgets: Raw, tmp_path: Path) -> None:
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["service"]
    result = kubectl(kubeconfig, "get", "widgets", "-n", "default", cache=tmp_path)
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()
    assert header.split() == ["NAME", "REPLICAS", "AGE"]  # Color has priority 1: shown with -o wide
    assert row.split()[:2] == ["w1", "3"]
    wide = kubectl(kubeconfig, "get", "widgets", "-n", "default", "-o", "wide", cache=tmp_path)
    assert wide.stdout.splitlines()[0].split() == ["NAME", "REPLICAS", "COLOR", "AGE"], wide.stderr


def test_kubectl_get_in_a_workspace_prints_the_schemas_columns(kcpsim: KcpSim, raw: Raw, tmp_path: Path) -> None:
    group = kcpsim.topology.group
    body = {
        "apiVersion": f"{group}/v1alpha1",
        "kind": "Certificate",
        "metadata": {"name": "web"},
        "spec": {"commonName": "web.example"},
    }
    created = raw("POST", f"/clusters/root:myorg:team-a/apis/{group}/v1alpha1/namespaces/default/certificates", body)
    assert created.status_code == 201, created.text
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["team-a"]
    result = kubectl(kubeconfig, "get", f"certificates.{group}", "-n", "default", cache=tmp_path)
    assert result.returncode == 0, result.stderr
    header, row = result.stdout.splitlines()
    assert header.split() == ["NAME", "PHASE", "AGE"]
    assert row.split()[0] == "web"
