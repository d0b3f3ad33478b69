"""What a service owner adapts to their cluster: environment and volumes (a corporate proxy, a
private CA), labels on everything, the update strategy, probe timings and the ServiceMonitor."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.rendering import PROXY_AND_CA, one, render, render_error, with_required


def _container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    (container,) = one(documents, "Deployment")["spec"]["template"]["spec"]["containers"]
    return container


def test_the_proxy_and_ca_example_reaches_the_servlet_container() -> None:
    documents = render(with_required(**PROXY_AND_CA))
    container, pod = _container(documents), one(documents, "Deployment")["spec"]["template"]["spec"]

    assert container["env"] == PROXY_AND_CA["extraEnv"]
    assert container["volumeMounts"][-1] == PROXY_AND_CA["extraVolumeMounts"][0]
    assert [mount["name"] for mount in container["volumeMounts"]] == ["kcp-kubeconfig", "tmp", "corporate-ca"]
    assert pod["volumes"][-1] == PROXY_AND_CA["extraVolumes"][0]


def test_without_extras_the_container_has_no_environment() -> None:
    container = _container(render(with_required()))
    assert "env" not in container and "envFrom" not in container


def test_common_labels_are_on_every_object_and_the_pods_but_not_in_selectors() -> None:
    documents = render(with_required(commonLabels={"example.corp/team": "pki"}))
    for document in documents:
        assert document["metadata"]["labels"]["example.corp/team"] == "pki", document["kind"]
    deployment = one(documents, "Deployment")
    assert deployment["spec"]["template"]["metadata"]["labels"]["example.corp/team"] == "pki"
    assert "example.corp/team" not in deployment["spec"]["selector"]["matchLabels"], "selectors are immutable"


@pytest.mark.parametrize("key", ["app.kubernetes.io/name", "app.kubernetes.io/instance", "helm.sh/chart"])
def test_a_common_label_may_not_replace_a_label_of_the_chart(key: str) -> None:
    error = render_error(with_required(commonLabels={key: "mine"}))
    assert f"commonLabels.{key}: the chart sets this label itself" in error


def test_the_default_update_starts_a_new_replica_before_stopping_one() -> None:
    strategy = one(render(with_required()), "Deployment")["spec"]["strategy"]
    assert strategy == {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}


def test_a_recreate_strategy_carries_no_rolling_update() -> None:
    strategy = one(render(with_required(updateStrategy={"type": "Recreate"})), "Deployment")["spec"]["strategy"]
    assert strategy == {"type": "Recreate"}


def test_probe_timings_are_set_and_a_probe_can_be_dropped() -> None:
    container = _container(
        render(
            with_required(
                probes={"startup": {"failureThreshold": 90, "initialDelaySeconds": 3}, "liveness": {"enabled": False}}
            )
        )
    )

    assert container["startupProbe"] == {
        "httpGet": {"path": "/healthz", "port": "health"},
        "initialDelaySeconds": 3,
        "periodSeconds": 2,
        "timeoutSeconds": 1,
        "failureThreshold": 90,
    }
    assert "livenessProbe" not in container
    assert container["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "health"}


def test_a_probe_endpoint_is_not_a_value() -> None:
    assert "at '/probes/liveness': additional properties 'httpGet' not allowed" in render_error(
        with_required(probes={"liveness": {"httpGet": {"path": "/"}}})
    )


def test_the_service_monitor_can_live_elsewhere_and_relabel() -> None:
    relabel = [{"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"}]
    monitor = one(
        render(
            with_required(
                metrics={
                    "serviceMonitor": {
                        "enabled": True,
                        "namespace": "monitoring",
                        "relabelings": relabel,
                        "metricRelabelings": relabel,
                    }
                }
            )
        ),
        "ServiceMonitor",
    )

    assert monitor["metadata"]["namespace"] == "monitoring"
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["kdp-system"]}, "it scrapes the release namespace"
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["relabelings"] == relabel and endpoint["metricRelabelings"] == relabel
