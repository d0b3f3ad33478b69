"""Fault injection (error rates, latency, cut watches, refused connections) and the request log,
through the fixture API and the admin endpoints."""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import httpx2
import pytest
from lightkube import ApiError, Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Secret

from kcpsim import ErrorRule, FaultPlan, KcpSim, LatencyRule
from kcpsim.waiting import eventually
from tests.integration.kcpsim.helpers import Raw, read_events


def test_an_error_rule_fires_for_its_verb_and_resource_up_to_its_limit(kcpsim: KcpSim, service: Client) -> None:
    kcpsim.set_faults(FaultPlan(errors=(ErrorRule(status=500, verb="list", resource="secrets", limit=2),)))
    for _ in range(2):
        with pytest.raises(ApiError) as caught:
            list(service.list(Secret, namespace="default"))
        assert (caught.value.status.code, caught.value.status.reason) == (500, "InternalError")
    assert list(service.list(Secret, namespace="default")) == []
    assert list(service.list(ConfigMap, namespace="default")) == []


def test_429_carries_retry_after(kcpsim: KcpSim, raw: Raw) -> None:
    kcpsim.set_faults(FaultPlan(errors=(ErrorRule(status=429, retry_after=3),)))
    response = raw("GET", "/api/v1/namespaces")
    assert response.status_code == 429
    assert response.headers["Retry-After"] == "3"
    assert response.json()["reason"] == "TooManyRequests"


def test_an_injected_conflict_looks_like_a_conflict(kcpsim: KcpSim, service: Client) -> None:
    service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="default")))
    kcpsim.set_faults(FaultPlan(errors=(ErrorRule(status=409, verb="update"),)))
    with pytest.raises(ApiError) as caught:
        service.replace(ConfigMap(metadata=ObjectMeta(name="c", namespace="default"), data={"a": "b"}))
    assert caught.value.status.reason == "Conflict"


def test_error_rules_can_target_one_workspace(kcpsim: KcpSim, team_a: Client, team_b: Client) -> None:
    kcpsim.set_faults(FaultPlan(errors=(ErrorRule(status=500, cluster="k7v2m9x4q1w8z3r5"),)))
    with pytest.raises(ApiError):
        list(team_a.list(ConfigMap, namespace="default"))
    assert list(team_b.list(ConfigMap, namespace="default")) == []


def _outcomes(sim: KcpSim, raw_for: Callable[[KcpSim], Raw]) -> list[int]:
    raw = raw_for(sim)
    return [raw("GET", "/api/v1/namespaces").status_code for _ in range(30)]


def test_rates_are_reproducible_with_the_same_seed(
    kcpsim_factory: Callable[..., KcpSim], raw_for: Callable[[KcpSim], Raw]
) -> None:
    plan = FaultPlan(errors=(ErrorRule(status=500, rate=0.5),), seed=7)
    first = _outcomes(kcpsim_factory(faults=plan), raw_for)
    second = _outcomes(kcpsim_factory(faults=plan), raw_for)
    assert first == second and {200, 500} == set(first)


def test_latency_is_added(kcpsim: KcpSim, raw: Raw) -> None:
    kcpsim.set_faults(FaultPlan(latency=(LatencyRule(seconds=0.2, verb="get"),)))
    started = time.monotonic()
    raw("GET", "/api/v1/namespaces/default")
    assert time.monotonic() - started >= 0.2
    assert kcpsim.requests.records()[-1].duration >= 0.2


def test_cutting_watches_ends_open_streams(kcpsim: KcpSim, raw: Raw) -> None:
    params = {"watch": "true", "resourceVersion": str(kcpsim.world.store.rv), "timeoutSeconds": "30"}
    with raw.client.stream("GET", "/api/v1/configmaps", params=params) as response:
        time.sleep(0.1)
        assert kcpsim.cut_watches() == 1
        started = time.monotonic()
        assert list(response.iter_lines()) == []
    assert time.monotonic() - started < 2


def test_aborting_watches_drops_the_connection(kcpsim: KcpSim, raw: Raw) -> None:
    params = {"watch": "true", "resourceVersion": str(kcpsim.world.store.rv), "timeoutSeconds": "30"}
    with raw.client.stream("GET", "/api/v1/configmaps", params=params) as response:
        time.sleep(0.1)
        kcpsim.cut_watches(abort=True)
        with pytest.raises(httpx2.HTTPError):
            list(response.iter_lines())


def test_a_plan_can_cut_every_watch_after_a_while(
    kcpsim: KcpSim, service: Client, raw_for: Callable[[KcpSim], Raw]
) -> None:
    kcpsim.set_faults(FaultPlan(watch_max_seconds=0.3))
    started = time.monotonic()
    raw = raw_for(kcpsim)
    with raw.client.stream(
        "GET", "/api/v1/configmaps", params={"watch": "true", "resourceVersion": str(kcpsim.world.store.rv)}
    ) as response:
        list(response.iter_lines())
    assert 0.25 <= time.monotonic() - started < 2
    # The server logs a watch when its handler finishes, just after the client saw the end.
    eventually(
        lambda: kcpsim.requests.matching(verb="watch", where=lambda r: r.fault == "watch cut"),
        what="the cut watch in the request log",
    )


def test_refusing_connections_for_a_while(kcpsim: KcpSim) -> None:
    kcpsim.refuse_connections(0.5)
    with httpx2.Client(trust_env=False, timeout=2) as client:
        with pytest.raises(httpx2.ConnectError):
            client.get(f"{kcpsim.base_url}/api/v1/namespaces")
        time.sleep(0.7)
        assert client.get(f"{kcpsim.base_url}/api/v1/namespaces").status_code == 200


def test_the_request_log_counts_calls_with_method_path_status_and_duration(
    kcpsim: KcpSim, service: Client, team_a: Client
) -> None:
    kcpsim.requests.clear()
    service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="default")))
    list(team_a.list(ConfigMap, namespace="default"))
    with pytest.raises(ApiError):
        service.get(ConfigMap, "missing", namespace="default")
    records = kcpsim.requests.records()
    assert [(r.method, r.verb, r.resource, r.cluster, r.status) for r in records] == [
        ("POST", "create", "configmaps", "", 201),
        ("GET", "list", "configmaps", "k7v2m9x4q1w8z3r5", 200),
        ("GET", "get", "configmaps", "", 404),
    ]
    assert records[0].path == "/api/v1/namespaces/default/configmaps"
    assert all(r.duration >= 0 for r in records)
    assert kcpsim.requests.count(verb="get", status=404) == 1


def test_watches_are_logged_when_they_end(kcpsim: KcpSim, raw: Raw) -> None:
    kcpsim.requests.clear()
    with raw.client.stream("GET", "/api/v1/namespaces", params={"watch": "true", "timeoutSeconds": "5"}) as response:
        read_events(response, 1)
    eventually(lambda: kcpsim.requests.matching(verb="watch"), what="the watch in the request log")


def test_the_admin_endpoints_set_faults_and_read_the_log(kcpsim: KcpSim, raw: Raw) -> None:
    plan = {"errors": [{"status": 503, "verb": "get", "resource": "namespaces", "limit": 1}], "seed": 1}
    assert raw("PUT", "/_kcpsim/faults", plan).json()["errors"][0]["status"] == 503
    assert raw("GET", "/api/v1/namespaces/default").status_code == 503
    assert raw("GET", "/api/v1/namespaces/default").status_code == 200
    log = raw("GET", "/_kcpsim/requests").json()
    assert [entry["status"] for entry in log[-2:]] == [503, 200]
    assert log[-2]["fault"] == "error 503"
    raw("DELETE", "/_kcpsim/faults")
    raw("DELETE", "/_kcpsim/requests")
    assert raw("GET", "/_kcpsim/requests").json() == []
    assert raw("POST", "/_kcpsim/faults/cut-watches").json() == {"cut": 0}


def test_history_size_can_be_lowered_while_running(kcpsim: KcpSim, raw: Raw, service: Client) -> None:
    old = str(kcpsim.world.store.rv)
    for i in range(3):
        service.create(ConfigMap(metadata=ObjectMeta(name=f"c{i}", namespace="default")))
    raw("PUT", "/_kcpsim/history", params={"size": "1"})
    with raw.client.stream("GET", "/api/v1/configmaps", params={"watch": "true", "resourceVersion": old}) as response:
        events = [json.loads(line) for line in response.iter_lines() if line]
    assert events[0]["object"]["code"] == 410


def test_faults_can_be_set_at_start(kcpsim_factory: Callable[..., KcpSim], raw_for: Callable[[KcpSim], Raw]) -> None:
    sim: KcpSim = kcpsim_factory(faults=FaultPlan(errors=(ErrorRule(status=500, verb="list", limit=1),)))
    raw = raw_for(sim)
    assert [raw("GET", "/api/v1/namespaces").status_code for _ in range(2)] == [500, 200]


@pytest.mark.parametrize(
    ("target", "failing"),
    [("vw", {"vw"}), ("workspace", {"workspace"}), ("service", {"service"}), ("*", {"vw", "workspace", "service"})],
)
def test_error_rules_can_target_the_virtual_workspace_workspaces_or_the_service_cluster(
    kcpsim: KcpSim, raw: Raw, target: str, failing: set[str]
) -> None:
    kcpsim.set_faults(FaultPlan(errors=(ErrorRule(status=503, target=target),)))
    paths = {
        "vw": "/services/apiexport/abc123xyz/certificates.example.corp/clusters/*/api/v1/secrets",
        "workspace": "/clusters/root:myorg/api/v1/secrets",
        "service": "/api/v1/secrets",
    }
    failed = {name for name, path in paths.items() if raw("GET", path).status_code == 503}
    assert failed == failing
