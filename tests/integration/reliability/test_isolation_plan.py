"""Isolation (issue 7, item 5), fast part: what `servlet plan` warns about shared local namespaces.

A fixed `naming.namespace` (or a tenant-chosen one with `allowSharedNamespaces`) is valid, so it
is no error; but tenants then share a namespace on the service cluster, and with related
resources one tenant can name another's Secret. The plan says so, in its JSON (`warnings`) and in
its text, and keeps every existing key. A system namespace is an error (namespace safety).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from servlet.app.cli import app
from servlet.core.model import Naming, PublishedResource, PublishedResourceSpec, SourceResource
from servlet.core.sharing import shared_namespace_warnings
from tests.integration.e2e.manifests import GROUP, SERVLET, published_resource, widget_crd
from tests.integration.reliability.planning import plan

RELATED = [{"identifier": "creds", "origin": "service", "kind": "Secret", "reference": {"name": {"path": "spec.note"}}}]
PLATFORM_RELATED = [
    {"identifier": "ca", "origin": "platform", "kind": "ConfigMap", "reference": {"name": {"path": "spec.note"}}}
]


def _warnings(**spec: Any) -> list[dict[str, str]]:
    return list(plan([widget_crd(), published_resource("widgets", kind="Widget", **spec)])["warnings"])


@pytest.mark.parametrize(
    "spec",
    [
        pytest.param({}, id="default-naming"),
        pytest.param({"naming": {"namespace": "$remoteClusterName"}}, id="cluster-name"),
        pytest.param({"naming": {"namespace": "tenant-$remoteClusterName"}, "related": RELATED}, id="prefixed-cluster"),
        pytest.param({"naming": {"name": "$remoteName"}}, id="name-only"),
    ],
)
def test_per_workspace_namespaces_give_no_warning(spec: dict[str, Any]) -> None:
    assert _warnings(**spec) == []


@pytest.mark.parametrize("namespace", ["shared-widgets", "$remoteNamespace", "w-$remoteNamespaceHash"])
def test_a_namespace_without_the_cluster_name_is_shared_by_every_workspace(namespace: str) -> None:
    (warning,) = _warnings(naming={"namespace": namespace, "allowSharedNamespaces": True})
    assert warning["object"] == "PublishedResource widgets" and warning["field"] == "spec.naming.namespace"
    assert namespace in warning["message"] and "$remoteClusterName" in warning["message"]


@pytest.mark.parametrize("related", [RELATED, PLATFORM_RELATED], ids=["service-secret", "platform-configmap"])
def test_related_resources_in_a_shared_namespace_are_a_cross_tenant_risk(related: list[dict[str, Any]]) -> None:
    warnings = _warnings(naming={"namespace": "shared"}, related=related)
    assert [w["field"] for w in warnings] == ["spec.naming.namespace", "spec.related"]
    assert related[0]["identifier"] in warnings[1]["message"] and "another tenant" in warnings[1]["message"]


def test_the_default_namespace_with_service_related_secrets_is_called_out() -> None:
    warnings = _warnings(naming={"namespace": "default", "allowSharedNamespaces": True}, related=RELATED)
    assert len(warnings) == 3, warnings
    assert "any Secret or ConfigMap" in warnings[2]["message"]


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease", "kube-anything"])
def test_a_kube_namespace_is_an_error_not_a_warning(namespace: str) -> None:
    result = plan(
        [
            widget_crd(),
            published_resource(
                "widgets", kind="Widget", naming={"namespace": namespace, "allowSharedNamespaces": True}
            ),
        ]
    )
    assert [(e["object"], e["field"]) for e in result["errors"]] == [
        ("PublishedResource widgets", "spec.naming.namespace")
    ]
    assert namespace in result["errors"][0]["message"] and "system namespace" in result["errors"][0]["message"]


def test_the_servlets_own_namespace_is_called_out_by_the_core_rule() -> None:
    published = PublishedResource(
        name="w",
        spec=PublishedResourceSpec(
            resource=SourceResource(api_group="example.com", kind="Widget"), naming=Naming(namespace="kdp-system")
        ),
    )
    messages = [w.message for w in shared_namespace_warnings(published, servlet_namespace="kdp-system")]
    assert any("the servlet's own namespace" in m for m in messages), messages


def test_servlet_plan_shows_the_warnings_in_text_and_json_and_keeps_its_keys(tmp_path: Path) -> None:
    documents = [
        widget_crd(),
        published_resource(
            "widgets", kind="Widget", naming={"namespace": "default", "allowSharedNamespaces": True}, related=RELATED
        ),
    ]
    path = tmp_path / "world.yaml"
    path.write_text(yaml.safe_dump_all(documents))
    identity = ["plan", "--name", SERVLET, "--api-group", GROUP, "-f", str(path)]
    text = CliRunner().invoke(app, identity)
    assert text.exit_code == 0, text.output  # a warning is no failure
    assert "\nWarnings\n" in text.output and "'default'" in text.output
    assert "0 error(s), 3 warning(s)." in text.output
    data = json.loads(CliRunner().invoke(app, [*identity, "-o", "json"]).output)
    assert {"servlet", "schemas", "apiExport", "objects", "errors", "warnings"} <= set(data)
    assert len(data["warnings"]) == 3
