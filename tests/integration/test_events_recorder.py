"""The Event recorder and the events adapter over HTTP against kcpsim.

Events about PublishedResources land in the service cluster (`default` for cluster-scoped
objects), Events about users' objects in their workspace through the VW once the workspace
accepted the export's `events` claim. Repeats count up one Event, an object over its rate limit
loses Events, a full queue drops them, and `record()` never waits for the API server.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from kcpsim import KcpSim
from kcpsim.topology import Topology
from servlet.adapters.connections import Connections
from servlet.adapters.events import EventsAdapter
from servlet.adapters.kube import resource_class
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.app.observability.events import EventRecorder
from servlet.app.observability.logs import get_logger
from servlet.app.observability.metrics import EVENTS, Metrics
from servlet.core.apiexport import virtual_workspace_url
from servlet.core.events import EventSpec
from servlet.core.model import ResourceType
from servlet.core.ports import EVENT_TYPE, PUBLISHED_RESOURCE_TYPE, InvolvedObject
from tests.integration.kcpsim.helpers import Raw

TEAM_A = "k7v2m9x4q1w8z3r5"
TEAM_B = "p4n8c2l6t0y9h1j3"
CERTIFICATES = ResourceType(
    group="certificates.example.corp", version="v1alpha1", kind="Certificate", plural="certificates", namespaced=True
)
PUBLISHED = InvolvedObject(resource=PUBLISHED_RESOURCE_TYPE, name="certificates", uid="u-1")
CONFLICT = EventSpec.warning("NameConflict", "the local name team-a/web is taken")


def _stamp() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


async def _with_recorder(sim: KcpSim, body: Callable[[EventRecorder], Awaitable[None]], **limits: Any) -> Metrics:
    metrics = Metrics(version="test")
    connections = Connections(service_config=sim.service_config(), kcp_config=sim.kcp_config(), trust_env=False)
    try:
        org = OrgWorkspaceAdapter(connections.org)
        url = virtual_workspace_url(
            endpoint_slice=await org.get_endpoint_slice("certificates.example.corp"), export=None
        )
        assert url is not None
        connections.set_virtual_workspace_url(url)
        recorder = EventRecorder(
            writer=EventsAdapter(connections),
            monotonic=time.monotonic,
            now=_stamp,
            metrics=metrics,
            log=get_logger("test"),
            **limits,
        )
        await body(recorder)
    finally:
        await connections.aclose()
    return metrics


def _counted(metrics: Metrics, result: str) -> float:
    for line in metrics.render().decode().splitlines():
        if line.startswith(f'{EVENTS}{{result="{result}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


async def _drain(recorder: EventRecorder) -> None:
    recorder.start()
    await asyncio.wait_for(recorder.flush(), timeout=30)
    await recorder.stop()


def _events(sim: KcpSim, namespace: str = "default") -> list[dict[str, Any]]:
    client = sim.client(sim.service_config())
    try:
        return [dict(item) for item in client.list(resource_class(EVENT_TYPE), namespace=namespace)]
    finally:
        client.close()


@pytest.mark.parametrize(("namespace", "expected_namespace"), [("", "default"), ("kube-system", "kube-system")])
async def test_an_event_names_its_object_and_lands_in_its_namespace_or_default(
    kcpsim: KcpSim, namespace: str, expected_namespace: str
) -> None:
    regarding = InvolvedObject(resource=PUBLISHED_RESOURCE_TYPE, name="certificates", namespace=namespace, uid="u-1")

    async def body(recorder: EventRecorder) -> None:
        recorder.record(regarding, EventSpec.warning("InvalidSpec", "spec.naming.name: unknown placeholder $remoteNme"))
        await _drain(recorder)

    await _with_recorder(kcpsim, body)
    (stored,) = _events(kcpsim, expected_namespace)
    assert stored["involvedObject"]["kind"] == "PublishedResource"
    assert stored["involvedObject"]["name"] == "certificates"
    assert stored["involvedObject"]["uid"] == "u-1"
    assert (stored["type"], stored["reason"], stored["count"]) == ("Warning", "InvalidSpec", 1)
    assert stored["message"] == "spec.naming.name: unknown placeholder $remoteNme"
    assert stored["metadata"]["name"].startswith("certificates.")
    assert stored["source"] == {"component": "kdp-servlet"}
    assert stored["firstTimestamp"] == stored["lastTimestamp"]


async def test_a_repeated_event_counts_up_one_event_in_default(kcpsim: KcpSim) -> None:
    async def body(recorder: EventRecorder) -> None:
        for _ in range(3):
            recorder.record(PUBLISHED, CONFLICT)
        recorder.record(PUBLISHED, EventSpec.normal("Exported", "in the export"))
        await _drain(recorder)

    metrics = await _with_recorder(kcpsim, body)
    by_reason = {event["reason"]: event for event in _events(kcpsim)}
    assert set(by_reason) == {"NameConflict", "Exported"}
    assert by_reason["NameConflict"]["count"] == 3
    assert by_reason["NameConflict"]["involvedObject"] == {
        "apiVersion": PUBLISHED_RESOURCE_TYPE.api_version,
        "kind": "PublishedResource",
        "name": "certificates",
        "uid": "u-1",
    }
    assert (_counted(metrics, "created"), _counted(metrics, "counted")) == (2, 2)


async def test_an_object_over_its_rate_limit_loses_events_others_do_not(kcpsim: KcpSim) -> None:
    other = InvolvedObject(resource=PUBLISHED_RESOURCE_TYPE, name="orders", uid="u-2")

    async def body(recorder: EventRecorder) -> None:
        for i in range(5):
            recorder.record(PUBLISHED, EventSpec.warning("NameConflict", f"attempt {i}"))
        recorder.record(other, CONFLICT)
        await _drain(recorder)

    metrics = await _with_recorder(kcpsim, body, burst=2)
    names = sorted(event["involvedObject"]["name"] for event in _events(kcpsim))
    assert names == ["certificates", "certificates", "orders"]
    assert _counted(metrics, "rate_limited") == 3


async def test_record_never_waits_and_a_full_queue_drops(kcpsim: KcpSim) -> None:
    async def body(recorder: EventRecorder) -> None:
        started = time.monotonic()
        for i in range(50):  # nothing writes yet: the queue fills
            recorder.record(InvolvedObject(resource=PUBLISHED_RESOURCE_TYPE, name=f"p{i}"), CONFLICT)
        assert time.monotonic() - started < 0.5
        await _drain(recorder)

    metrics = await _with_recorder(kcpsim, body, capacity=10)
    assert len(_events(kcpsim)) == 10
    assert _counted(metrics, "dropped") == 40


async def test_a_replica_that_does_not_lead_writes_no_event(kcpsim: KcpSim) -> None:
    async def body(recorder: EventRecorder) -> None:
        recorder.record(PUBLISHED, CONFLICT)
        await _drain(recorder)

    metrics = await _with_recorder(kcpsim, body, can_write=lambda: False)
    assert _events(kcpsim) == []
    assert _counted(metrics, "dropped") == 1


async def test_an_event_about_a_users_object_lands_in_its_workspace_once_the_claim_is_accepted_only(
    kcpsim_factory: Callable[..., KcpSim],
) -> None:
    # Both workspaces bound the export accepting its claims, events included; then team-b
    # withdraws its acceptance of the events claim.
    sim = kcpsim_factory(topology=Topology(claims=("namespaces", "secrets", "events")))
    binding = "/clusters/root:myorg:team-b/apis/apis.kcp.io/v1alpha1/apibindings/certificates.example.corp"
    with Raw(sim) as raw:
        found = raw("GET", binding).json()
        claims = [c for c in found["spec"]["permissionClaims"] if c["resource"] != "events"]
        assert (
            raw(
                "PATCH", binding, {"spec": {"permissionClaims": claims}}, content_type="application/merge-patch+json"
            ).status_code
            == 200
        )

        def about(cluster: str) -> InvolvedObject:
            return InvolvedObject(resource=CERTIFICATES, name="web", namespace="default", uid="c-1", cluster=cluster)

        async def body(recorder: EventRecorder) -> None:
            recorder.record(about(TEAM_A), CONFLICT)
            recorder.record(about(TEAM_B), CONFLICT)
            recorder.record(about(TEAM_B), EventSpec.normal("Synced", "copied"))
            await _drain(recorder)

        metrics = await _with_recorder(sim, body)
        selector = "involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Certificate"
        listed = raw(
            "GET", "/clusters/root:myorg:team-a/api/v1/namespaces/default/events", params={"fieldSelector": selector}
        ).json()["items"]
        assert [(e["type"], e["reason"], e["involvedObject"]["uid"]) for e in listed] == [
            ("Warning", "NameConflict", "c-1")
        ]
        assert raw("GET", "/clusters/root:myorg:team-b/api/v1/namespaces/default/events").json()["items"] == []
        assert _counted(metrics, "failed") == 2
        # The refusal is remembered: team-b was asked once, not once per Event.
        asked = [
            r for r in sim.requests.records() if r.virtual_workspace and r.resource == "events" and r.cluster == TEAM_B
        ]
        assert [(r.verb, r.status) for r in asked] == [("create", 403)]
