"""values.schema.json and the chart's own checks stop a bad install with a message that names
the value, before anything reaches the cluster."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.chart.rendering import CERTIFICATES, REQUIRED_VALUES, render, render_error, with_required


def _without(path: str) -> dict[str, Any]:
    values = copy.deepcopy(REQUIRED_VALUES)
    *parents, leaf = path.split(".")
    target = values
    for key in parents:
        target = target[key]
    del target[leaf]
    return values


@pytest.mark.parametrize(("missing", "message"), [
    ("servlet.name", "at '/servlet': missing property 'name'"),
    ("servlet.apiGroup", "at '/servlet': missing property 'apiGroup'"),
    ("servlet.apiExport", "at '/servlet': missing property 'apiExport'"),
    ("kcpKubeconfig.secretName", "at '/kcpKubeconfig': missing property 'secretName'"),
])
def test_a_missing_required_value_is_named(missing: str, message: str) -> None:
    assert message in render_error(_without(missing))


def test_an_install_without_values_names_all_four_required_values() -> None:
    error = render_error({})
    assert "at '/servlet': missing properties 'name', 'apiGroup', 'apiExport'" in error
    assert "at '/kcpKubeconfig': missing property 'secretName'" in error


@pytest.mark.parametrize(("values", "message"), [
    (with_required(replicaCount="two"), "at '/replicaCount': got string, want integer"),
    (with_required(deleteOrphans="yes"), "at '/deleteOrphans': got string, want boolean"),
    (with_required(leaderElection={"enabled": "true"}), "at '/leaderElection/enabled': got string, want boolean"),
    (with_required(metrics={"port": "8080"}), "at '/metrics/port': got string, want integer"),
    (with_required(publishedResources={"apiGroup": "cert-manager.io"}), "at '/publishedResources': got object, want array"),
    (with_required(publishedResourceSelector={"team": "certs"}), "at '/publishedResourceSelector': got object, want string"),
    (with_required(nodeSelector={"zone": 1}), "at '/nodeSelector/zone': got number, want string"),
    (with_required(servlet="tom"), "at '/servlet': got string, want object"),
])
def test_a_value_of_the_wrong_type_is_named_with_both_types(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


@pytest.mark.parametrize(("values", "message"), [
    (with_required(servlet={"name": "Tom"}), "at '/servlet/name': 'Tom' does not match pattern"),
    (with_required(servlet={"apiGroup": "certificates"}), "at '/servlet/apiGroup': 'certificates' does not match pattern"),
    (with_required(kcpKubeconfig={"secretName": ""}), "at '/kcpKubeconfig/secretName': '' does not match pattern"),
    (with_required(logFormat="text"), "at '/logFormat': value must be one of 'json', 'console'"),
    (with_required(replicaCount=0), "at '/replicaCount': minimum: got 0, want 1"),
    (with_required(publishedResources=[{**CERTIFICATES, "relatedKinds": ["Secrets"]}]),
     "at '/publishedResources/0/relatedKinds/0': value must be one of 'Secret', 'ConfigMap'"),
    (with_required(publishedResources=[{"apiGroup": "cert-manager.io"}]),
     "at '/publishedResources/0': missing property 'resources'"),
    (with_required(publishedResources=[{"apiGroup": "cert-manager.io", "resources": []}]),
     "at '/publishedResources/0/resources': minItems: got 0, want 1"),
    (with_required(podDisruptionBudget={"maxUnavailable": "half"}), "at '/podDisruptionBudget/maxUnavailable'"),
])
def test_a_bad_value_is_named_with_what_is_wrong(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


@pytest.mark.parametrize(("values", "message"), [
    (with_required(replicas=3), "at '': additional properties 'replicas' not allowed"),
    (with_required(servlet={"apiexport": "x"}), "at '/servlet': additional properties 'apiexport' not allowed"),
    (with_required(kcpKubeconfig={"secret": "x"}), "at '/kcpKubeconfig': additional properties 'secret' not allowed"),
])
def test_a_misspelt_key_is_rejected_instead_of_ignored(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


@pytest.mark.parametrize(("values", "message"), [
    (with_required(leaderElection={"enabled": False}),
     "leaderElection.enabled: must be true when replicaCount is 2; without leader election every replica would write"),
    (with_required(podDisruptionBudget={"minAvailable": 1, "maxUnavailable": 1}),
     "podDisruptionBudget: set either minAvailable or maxUnavailable, not both"),
    (with_required(health={"port": 8080}), "metrics.port and health.port: both are 8080; they must differ"),
    (with_required(metrics={"service": {"enabled": False}, "serviceMonitor": {"enabled": True}}),
     "metrics.serviceMonitor.enabled: the ServiceMonitor scrapes the metrics Service; set metrics.service.enabled=true too"),
    (with_required(serviceAccount={"create": False}),
     "serviceAccount.name: the name of an existing ServiceAccount is required when serviceAccount.create is false"),
])
def test_combinations_the_schema_cannot_express_fail_with_a_sentence(values: dict[str, Any], message: str) -> None:
    assert message in render_error(values)


def test_the_required_values_alone_install() -> None:
    assert render(with_required())
