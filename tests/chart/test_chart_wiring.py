"""The parts of the chart find each other: selectors select the pods, ports and probes point at
what `servlet run` listens on, the kcp Secret is mounted where `--kcp-kubeconfig` looks, and the
args are flags `servlet run` accepts with the values the service owner gave."""

from __future__ import annotations

from typing import Any

import pytest
from typer.main import get_command

from servlet.app.cli import app
from tests.chart.rendering import CERTIFICATES, NAMESPACE, one, render, with_required

EVERYTHING = with_required(
    servlet={"apiExportEndpointSlice": "root:shared:certificates"},
    kcpKubeconfig={"secretName": "kdp-kubeconfig", "context": "myorg"},
    publishedResources=[CERTIFICATES],
    metrics={"serviceMonitor": {"enabled": True}},
    podLabels={"tier": "control"},
    publishedResourceSelector="team in (certs,pki)",
    deleteOrphans=True,
    logFormat="console",
)


def _pod(documents: list[dict[str, Any]]) -> dict[str, Any]:
    template: dict[str, Any] = one(documents, "Deployment")["spec"]["template"]
    return template


def _container(documents: list[dict[str, Any]]) -> dict[str, Any]:
    (container,) = _pod(documents)["spec"]["containers"]
    return dict(container)


def _selects(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(key) == value for key, value in selector.items())


def _run_command() -> Any:
    """The click command behind `servlet run` (typer ships its own copy of click, hence Any)."""
    group: Any = get_command(app)
    command = group.commands.get("run")
    assert command is not None, "`servlet run` is not a command of the CLI"
    return command


def _parsed_args(documents: list[dict[str, Any]]) -> dict[str, Any]:
    """The args as `servlet run` parses them; a flag it does not know or a bad value fails here."""
    args = _container(documents)["args"]
    assert args[0] == "run", "the image's entrypoint is `servlet`; the first arg picks the command"
    context = _run_command().make_context("run", list(args[1:]))
    return dict(context.params)


# ---- selectors -------------------------------------------------------------------------------------


def test_the_deployment_selects_its_own_pods_and_extra_pod_labels_do_not_change_the_selector() -> None:
    documents = render(EVERYTHING)
    deployment = one(documents, "Deployment")
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert _selects(selector, _pod(documents)["metadata"]["labels"])
    assert _pod(documents)["metadata"]["labels"]["tier"] == "control"
    assert "tier" not in selector, "the selector is immutable: pod labels must not leak into it"
    assert selector == one(render(with_required()), "Deployment")["spec"]["selector"]["matchLabels"]


def test_the_metrics_service_pdb_and_anti_affinity_select_the_pods() -> None:
    documents = render(EVERYTHING)
    pod_labels = _pod(documents)["metadata"]["labels"]
    assert _selects(one(documents, "Service")["spec"]["selector"], pod_labels)
    assert _selects(one(documents, "PodDisruptionBudget")["spec"]["selector"]["matchLabels"], pod_labels)
    (term,) = _pod(documents)["spec"]["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert _selects(term["podAffinityTerm"]["labelSelector"]["matchLabels"], pod_labels)


def test_two_releases_in_one_namespace_do_not_select_each_others_pods() -> None:
    first, second = render(with_required(), release="servlet-a"), render(with_required(), release="servlet-b")
    selector = one(first, "Deployment")["spec"]["selector"]["matchLabels"]
    assert not _selects(selector, _pod(second)["metadata"]["labels"])
    assert one(first, "Deployment")["metadata"]["name"] != one(second, "Deployment")["metadata"]["name"]


def test_the_service_monitor_scrapes_the_metrics_service_port() -> None:
    documents = render(EVERYTHING)
    service, monitor = one(documents, "Service"), one(documents, "ServiceMonitor")
    assert _selects(monitor["spec"]["selector"]["matchLabels"], service["metadata"]["labels"])
    assert monitor["spec"]["namespaceSelector"]["matchNames"] == [NAMESPACE]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    assert endpoint["port"] in {port["name"] for port in service["spec"]["ports"]}


# ---- ports, probes and flags -----------------------------------------------------------------------


@pytest.mark.parametrize("ports", [{}, {"metrics": {"port": 9090}, "health": {"port": 9091}}])
def test_ports_and_probes_point_at_the_addresses_given_to_servlet_run(ports: dict[str, Any]) -> None:
    documents = render(with_required(**ports))
    container = _container(documents)
    numbers = {port["name"]: port["containerPort"] for port in container["ports"]}
    args = container["args"]
    assert f"--metrics-address=:{numbers['metrics']}" in args
    assert f"--health-address=:{numbers['health']}" in args
    service_port = one(documents, "Service")["spec"]["ports"][0]
    assert service_port["targetPort"] == "metrics" and service_port["port"] == numbers["metrics"]
    probes = {name: container[name]["httpGet"] for name in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probes == {
        "startupProbe": {"path": "/healthz", "port": "health"},
        "livenessProbe": {"path": "/healthz", "port": "health"},
        "readinessProbe": {"path": "/readyz", "port": "health"},
    }


def test_the_kcp_kubeconfig_secret_is_mounted_where_the_flag_points() -> None:
    documents = render(with_required(kcpKubeconfig={"secretName": "kdp-credentials", "key": "value"}))
    pod = _pod(documents)["spec"]
    container = _container(documents)
    (volume,) = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"]["secretName"] == "kdp-credentials"
    (item,) = volume["secret"]["items"]
    assert item["key"] == "value"
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == volume["name"]]
    assert mount["readOnly"] is True
    assert f"--kcp-kubeconfig={mount['mountPath']}/{item['path']}" in container["args"]


def test_the_args_are_flags_of_servlet_run_with_the_values_given() -> None:
    params = _parsed_args(render(EVERYTHING))
    expected = {
        "name": "tom",
        "api_group": "certificates.example.corp",
        "apiexport": "certificates.example.corp",
        "namespace": NAMESPACE,
        "leader_election": True,
        "published_resource_selector": "team in (certs,pki)",
        "metrics_address": ":8080",
        "health_address": ":8081",
        "delete_orphans": True,
        "apiexportendpointslice": "root:shared:certificates",
    }
    assert {key: params.get(key) for key in expected} == expected
    assert str(params["kcp_kubeconfig"]) == "/etc/servlet/kcp/kubeconfig"
    assert params["kcp_context"] == "myorg"
    assert str(getattr(params["log_format"], "value", params["log_format"])) == "console"
    # In the cluster the ServiceAccount is the service-cluster identity: no kubeconfig file.
    assert not params.get("kubeconfig")


@pytest.mark.parametrize(
    ("values", "leader_election"),
    [
        (with_required(), True),
        (with_required(replicaCount=1, leaderElection={"enabled": False}), False),
    ],
)
def test_leader_election_follows_the_value(values: dict[str, Any], leader_election: bool) -> None:
    assert _parsed_args(render(values))["leader_election"] is leader_election


@pytest.mark.parametrize(
    ("values", "buckets"),
    [
        (with_required(), 16),
        (with_required(buckets=4), 4),
        (with_required(buckets=0), 0),
        (with_required(replicaCount=1), 0),
        (with_required(replicaCount=1, leaderElection={"enabled": False}), 0),
    ],
)
def test_several_replicas_share_the_workspaces_in_the_buckets_value(values: dict[str, Any], buckets: int) -> None:
    assert _parsed_args(render(values))["buckets"] == buckets


# Left to `extraArgs`: tuning with good defaults. Never set: --kubeconfig and --context (in the
# cluster the ServiceAccount is the identity), --no-leader-election (the other spelling of one flag).
TUNING = {"--lease-duration", "--lease-renew-deadline", "--lease-retry-period", "--resync-period", "--sync-workers"}


def test_every_flag_of_servlet_run_is_set_by_the_chart_or_deliberately_left_out() -> None:
    flags = {
        option
        for param in _run_command().params
        if param.param_type_name == "option"
        for option in [*param.opts, *param.secondary_opts]
    }
    used = {arg.split("=", 1)[0] for arg in _container(render(EVERYTHING))["args"][1:]}
    assert sorted(flags - used - TUNING - {"--kubeconfig", "--context", "--no-leader-election", "--help"}) == []
    assert sorted(used - flags) == []


def test_tuning_flags_pass_through_extra_args() -> None:
    extra = ["--sync-workers=8", "--resync-period=300", "--lease-duration=30"]
    documents = render(with_required(extraArgs=extra, logLevel="debug"))
    assert _container(documents)["args"][-3:] == extra
    params = _parsed_args(documents)
    assert (params["sync_workers"], params["resync_period"], params["lease_duration"]) == (8, 300.0, 30.0)
    assert str(getattr(params["log_level"], "value", params["log_level"])) == "debug"


# ---- pod security ----------------------------------------------------------------------------------


@pytest.mark.parametrize("values", [with_required(), EVERYTHING], ids=["defaults", "everything on"])
def test_the_pod_meets_the_restricted_pod_security_standard(values: dict[str, Any]) -> None:
    documents = render(values)
    pod = _pod(documents)["spec"]
    container = _container(documents)
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["runAsUser"] != 0
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    context = container["securityContext"]
    assert context["allowPrivilegeEscalation"] is False
    assert context["privileged"] is False
    assert context["readOnlyRootFilesystem"] is True
    assert context["runAsNonRoot"] is True
    assert context["capabilities"] == {"drop": ["ALL"]}
    assert context["seccompProfile"] == {"type": "RuntimeDefault"}
    assert not {"hostNetwork", "hostPID", "hostIPC"} & set(pod)
    assert all(set(volume) & {"secret", "emptyDir"} for volume in pod["volumes"]), "only secret and emptyDir volumes"


def test_the_kubeconfig_is_readable_by_the_pods_group_only() -> None:
    pod = _pod(render(with_required()))["spec"]
    (volume,) = [v for v in pod["volumes"] if "secret" in v]
    assert volume["secret"]["defaultMode"] == 0o440
    assert pod["securityContext"]["fsGroup"] == pod["securityContext"]["runAsGroup"]


# ---- image and replicas ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ({}, "kdp-servlet:0.1.0"),
        (
            {"repository": "registry.example.corp/kdp-servlet", "tag": "1.2.3"},
            "registry.example.corp/kdp-servlet:1.2.3",
        ),
        ({"tag": "1.2.3", "digest": "sha256:" + "b" * 64}, "kdp-servlet@sha256:" + "b" * 64),
    ],
)
def test_the_image_defaults_to_the_charts_app_version(image: dict[str, Any], expected: str) -> None:
    assert _container(render(with_required(image=image)))["image"] == expected


def test_two_replicas_roll_without_a_gap() -> None:
    deployment = one(render(with_required()), "Deployment")
    assert deployment["spec"]["replicas"] == 2
    assert deployment["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 1, "maxUnavailable": 0}
    assert one(render(with_required()), "PodDisruptionBudget")["spec"] == {
        "selector": deployment["spec"]["selector"],
        "maxUnavailable": 1,
    }


def test_scheduling_values_reach_the_pod() -> None:
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "pool", "operator": "In", "values": ["control"]}]}]
            }
        }
    }
    tolerations = [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]
    pod = _pod(
        render(
            with_required(
                affinity=affinity,
                tolerations=tolerations,
                nodeSelector={"pool": "control"},
                resources={"limits": {"memory": "1Gi"}},
            )
        )
    )["spec"]
    assert pod["affinity"] == affinity, "a given affinity replaces the default anti-affinity"
    assert pod["tolerations"] == tolerations
    assert pod["nodeSelector"] == {"pool": "control"}
    assert pod["containers"][0]["resources"]["limits"] == {"memory": "1Gi"}
