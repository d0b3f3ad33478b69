"""values.schema.json and the chart's own checks stop a bad install with a message that names
the value, before anything reaches the cluster."""

from __future__ import annotations

import copy
import json
import re
import shlex
from typing import Any

import helm_python
import pytest

from tests.chart.rendering import (
    CERTIFICATES,
    CHART,
    NAMESPACE,
    REQUIRED_VALUES,
    one,
    render,
    render_error,
    with_required,
)


def _without(path: str) -> dict[str, Any]:
    values = copy.deepcopy(REQUIRED_VALUES)
    *parents, leaf = path.split(".")
    target = values
    for key in parents:
        target = target[key]
    del target[leaf]
    return values


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("servlet.name", "at '/servlet': missing property 'name'"),
        ("servlet.apiGroup", "at '/servlet': missing property 'apiGroup'"),
        ("servlet.apiExport", "at '/servlet': missing property 'apiExport'"),
        ("kcpKubeconfig.secretName", "at '/kcpKubeconfig': missing property 'secretName'"),
    ],
)
def test_a_missing_required_value_is_named(missing: str, message: str) -> None:
    assert message in render_error(_without(missing))


def test_an_install_without_values_names_all_four_required_values() -> None:
    error = render_error({})
    assert "at '/servlet': missing properties 'name', 'apiGroup', 'apiExport'" in error
    assert "at '/kcpKubeconfig': missing property 'secretName'" in error


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (with_required(replicaCount="two"), "at '/replicaCount': got string, want integer"),
        (with_required(deleteOrphans="yes"), "at '/deleteOrphans': got string, want boolean"),
        (with_required(leaderElection={"enabled": "true"}), "at '/leaderElection/enabled': got string, want boolean"),
        (with_required(metrics={"port": "8080"}), "at '/metrics/port': got string, want integer"),
        (
            with_required(publishedResources={"apiGroup": "cert-manager.io"}),
            "at '/publishedResources': got object, want array",
        ),
        (
            with_required(publishedResourceSelector={"team": "certs"}),
            "at '/publishedResourceSelector': got object, want string",
        ),
        (with_required(nodeSelector={"zone": 1}), "at '/nodeSelector/zone': got number, want string"),
        (with_required(servlet="tom"), "at '/servlet': got string, want object"),
    ],
)
def test_a_value_of_the_wrong_type_is_named_with_both_types(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (with_required(servlet={"name": "Tom"}), "at '/servlet/name': 'Tom' does not match pattern"),
        (
            with_required(servlet={"apiExportEndpointSlice": "root:Shared:certificates"}),
            "at '/servlet/apiExportEndpointSlice': 'root:Shared:certificates' does not match pattern",
        ),
        (
            with_required(servlet={"apiGroup": "certificates"}),
            "at '/servlet/apiGroup': 'certificates' does not match pattern",
        ),
        (with_required(kcpKubeconfig={"secretName": ""}), "at '/kcpKubeconfig/secretName': '' does not match pattern"),
        (with_required(logFormat="text"), "at '/logFormat': value must be one of 'json', 'console'"),
        (with_required(replicaCount=0), "at '/replicaCount': minimum: got 0, want 1"),
        (
            with_required(publishedResources=[{**CERTIFICATES, "relatedKinds": ["Secrets"]}]),
            "at '/publishedResources/0/relatedKinds/0': value must be one of 'Secret', 'ConfigMap'",
        ),
        (
            with_required(publishedResources=[{"apiGroup": "cert-manager.io"}]),
            "at '/publishedResources/0': missing property 'resources'",
        ),
        (
            with_required(publishedResources=[{"apiGroup": "cert-manager.io", "resources": []}]),
            "at '/publishedResources/0/resources': minItems: got 0, want 1",
        ),
        (with_required(podDisruptionBudget={"maxUnavailable": "half"}), "at '/podDisruptionBudget/maxUnavailable'"),
    ],
)
def test_a_bad_value_is_named_with_what_is_wrong(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (with_required(replicas=3), "at '': additional properties 'replicas' not allowed"),
        (with_required(servlet={"apiexport": "x"}), "at '/servlet': additional properties 'apiexport' not allowed"),
        (
            with_required(kcpKubeconfig={"secret": "x"}),
            "at '/kcpKubeconfig': additional properties 'secret' not allowed",
        ),
    ],
)
def test_a_misspelt_key_is_rejected_instead_of_ignored(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            with_required(leaderElection={"enabled": False}),
            "leaderElection.enabled: must be true when replicaCount is 2; without leader election every replica would write",
        ),
        (
            with_required(podDisruptionBudget={"minAvailable": 1, "maxUnavailable": 1}),
            "podDisruptionBudget: set either minAvailable or maxUnavailable, not both",
        ),
        (with_required(health={"port": 8080}), "metrics.port and health.port: both are 8080; they must differ"),
        (
            with_required(metrics={"service": {"enabled": False}, "serviceMonitor": {"enabled": True}}),
            "metrics.serviceMonitor.enabled: the ServiceMonitor scrapes the metrics Service; set metrics.service.enabled=true too",
        ),
        (
            with_required(serviceAccount={"create": False}),
            "serviceAccount.name: the name of an existing ServiceAccount is required when serviceAccount.create is false",
        ),
    ],
)
def test_combinations_the_schema_cannot_express_fail_with_a_sentence(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


def test_the_required_values_alone_install() -> None:
    assert render(with_required())


@pytest.mark.parametrize("kube_version", ["v1.27.0", "v1.37.0"])
def test_helm_lint_in_strict_mode_finds_nothing_beyond_information(kube_version: str) -> None:
    report = helm_python.lint(
        str(CHART), values=with_required(), strict=True, kube_version=kube_version, namespace=NAMESPACE
    )
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] > 1] == []


def _schema_paths(schema: dict[str, Any], prefix: str = "") -> list[str]:
    """Dotted paths of every documented value: leaves, and objects whose fields are free-form."""
    paths = []
    for key, sub in (schema.get("properties") or {}).items():
        if key == "global":
            continue
        path = f"{prefix}{key}"
        if sub.get("type") == "object" and "properties" in sub:
            paths.extend(_schema_paths(sub, f"{path}."))
        else:
            paths.append(path)
    return paths


def test_every_value_of_the_schema_is_described_in_the_readme_and_values_file() -> None:
    schema = json.loads((CHART / "values.schema.json").read_text())
    readme = (CHART / "README.md").read_text()
    values_file = (CHART / "values.yaml").read_text()
    table = readme.split("## Values", 1)[1].split("\n## ", 1)[0]
    missing_in_readme, missing_in_values = [], []
    for path in _schema_paths(schema):
        parent, _, leaf = path.rpartition(".")
        # A row may list siblings in short form: `metrics.serviceMonitor.enabled`, `.labels`.
        if f"`{path}`" not in table and not (parent and f"`{parent}." in table and f"`.{leaf}`" in table):
            missing_in_readme.append(path)
        if not re.search(rf"^\s*#?\s*{re.escape(leaf)}:", values_file, flags=re.MULTILINE):
            missing_in_values.append(path)
    assert missing_in_readme == []
    assert missing_in_values == []


def _install_commands() -> list[str]:
    """`helm install` commands of the chart's README and of the values file's header comment."""
    readme = (CHART / "README.md").read_text().replace("\\\n", " ")
    header = "\n".join(
        line.lstrip("#").strip() for line in (CHART / "values.yaml").read_text().splitlines() if line.startswith("#")
    ).replace("\\\n", " ")
    return [
        line.strip()
        for text in (readme, header)
        for line in text.splitlines()
        if line.strip().startswith("helm install ")
    ]


@pytest.mark.parametrize("command", _install_commands())
def test_the_documented_install_commands_render(command: str) -> None:
    words = shlex.split(command)
    # Helm applies every --set to one map, in order; one comma-joined expression does the same.
    values = helm_python.parse_set_string(",".join(words[i + 1] for i, w in enumerate(words) if w == "--set"))
    namespace = words[words.index("--namespace") + 1]
    deployment = one(render(values, namespace=namespace), "Deployment")
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert f"--name={values['servlet']['name']}" in args
    assert f"--namespace={namespace}" in args


def test_both_install_commands_are_checked() -> None:
    assert len(_install_commands()) == 2
