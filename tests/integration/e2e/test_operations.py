"""Running the servlet: probes, logs, SIGTERM, restarts, replicas, losing the Lease, API economy, live plan (SPEC 9)."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from kcpsim import ErrorRule, FaultPlan
from kcpsim.harness.process import run_servlet_plan
from kcpsim.harness.world import SERVLET_NAMESPACE
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    FINALIZER,
    GROUP,
    LINK,
    REMOTE_WIDGET,
    SECRET,
    SERVLET,
    WIDGET,
    ZERTIFIKAT,
    certificate_crd,
    certificates_with_platform_secret,
    default_local_name,
    example_local_name,
    example_published_resource,
    published_resource,
    remote_object,
    secret,
    sha1,
    widget_crd,
    zertifikat,
)

LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{SERVLET_NAMESPACE}/leases/{SERVLET}.{GROUP}"
# Leader election itself writes the Lease, and Events are reports, not work: neither counts as
# "writing" when checking that only the leader does the job.
NOT_WORK = ("/leases", "/events")


def _lease(e2e: E2E) -> dict[str, Any]:
    lease = e2e.rest.get(LEASE)
    assert lease is not None, f"no Lease {LEASE}"
    return lease


def _holder(e2e: E2E) -> str:
    holder = str(_lease(e2e)["spec"].get("holderIdentity") or "")
    assert holder, "the Lease has no holder"
    return holder


def test_probes_metrics_and_json_logs_then_sigterm_stops_cleanly_and_releases_the_lease(e2e: E2E) -> None:
    e2e.publish(certificate_crd(), example_published_resource())
    servlet = e2e.servlet()
    e2e.eventually(lambda: servlet.probe("/readyz") == 200, what="/readyz to answer 200")
    e2e.eventually(lambda: _holder(e2e), what="the servlet to hold its Lease")
    assert servlet.metric("servlet_build_info") == [1.0]
    e2e.eventually(lambda: servlet.metric("servlet_leader") == [1.0], what="servlet_leader to be 1 on the leader")

    started = time.monotonic()
    code = servlet.terminate(timeout=10)
    assert code == 0, f"servlet run ended with {code} after SIGTERM (None: still running after 10 s)"
    assert time.monotonic() - started < 5, "SIGTERM took longer than 5 s"
    assert not _lease(e2e)["spec"].get("holderIdentity"), "the Lease was not released on shutdown"

    lines = [line for line in servlet.log_text().splitlines() if line.strip()]
    assert lines, "--log-format json produced no log lines"
    for line in lines:
        try:
            assert isinstance(json.loads(line), dict)
        except (ValueError, AssertionError):
            raise AssertionError(f"not a JSON log line: {line[:200]}") from None


@pytest.mark.parametrize(
    "setting, expected_words",
    [
        ({"kcp_server": "{base}"}, ["workspace"]),  # the kcp kubeconfig points at no workspace
        ({"apiexport": "nope.example.corp"}, ["nope.example.corp"]),  # an APIExport that does not exist
    ],
    ids=["kubeconfig-outside-a-workspace", "missing-apiexport"],
)
@pytest.mark.kcpsim_only("points the servlet at kcpsim's base URL")
def test_startup_fails_fast_with_a_clear_message(e2e: E2E, setting: dict[str, str], expected_words: list[str]) -> None:
    options = {key: value.format(base=e2e.simulated.sim.base_url) for key, value in setting.items()}
    servlet = e2e.servlet_process(**options).launch()
    servlet.stopping = True  # ending by itself is the point here
    code = servlet.wait(timeout=20)
    output = servlet.log_text()
    assert code is not None, f"servlet run kept running: {output[-1000:]}"
    assert code != 0, "servlet run exited with 0 on a configuration it cannot work with"
    assert "Traceback" not in output, output[-2000:]
    for word in expected_words:
        assert word in output.lower(), f"{word!r} is not mentioned in: {output[-1000:]}"


def test_a_servlet_killed_during_a_burst_converges_after_restart(e2e: E2E) -> None:
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    first = e2e.servlet(leader_election=False)
    for workspace in ("team-a", "team-b"):
        e2e.wait_served(workspace, REMOTE_WIDGET)
    objects = [("team-a" if i % 2 else "team-b", f"burst-{i:02d}") for i in range(30)]

    for workspace, name in objects[:15]:
        e2e.create_remote(workspace, REMOTE_WIDGET, remote_object("Widget", name, namespace="default", size=1))
    e2e.eventually(lambda: e2e.local_objects(WIDGET), what="the first local copies of the burst")
    first.kill()
    for workspace, name in objects[15:]:
        e2e.create_remote(workspace, REMOTE_WIDGET, remote_object("Widget", name, namespace="default", size=1))

    e2e.servlet(leader_election=False)
    expected = sorted(
        (e2e.world.cluster(ws), default_local_name(namespace="default", name=name)) for ws, name in objects
    )

    def converged() -> bool:
        local = sorted((o["metadata"]["namespace"], o["metadata"]["name"]) for o in e2e.local_objects(WIDGET))
        assert len(local) == len(set(local)), "duplicate local objects"
        missing = sorted(set(expected) - set(local))
        extra = sorted(set(local) - set(expected))
        assert not missing and not extra, f"{len(missing)} missing, unexpected: {extra}"
        return True

    e2e.eventually(converged, what="all 30 objects to have exactly one local copy", timeout=30)
    for workspace, name in objects:
        remote = e2e.remote(workspace, REMOTE_WIDGET, namespace="default", name=name) or {}
        assert (remote["metadata"].get("finalizers") or []).count(FINALIZER) == 1, f"{workspace}/{name}"
    by_hash = [o["metadata"]["labels"][f"{LINK}/remote-object-name-hash"] for o in e2e.local_objects(WIDGET)]
    assert len(by_hash) == 30 and set(by_hash) == {sha1(name) for _, name in objects}


@pytest.mark.kcpsim_only("tells replicas apart in kcpsim's request log")
def test_two_replicas_only_the_leader_writes_and_a_killed_leader_hands_over(e2e: E2E) -> None:
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    leader = e2e.servlet(token="replica-1")
    first_holder = e2e.eventually(lambda: _holder(e2e), what="replica-1 to take the Lease")
    follower = e2e.servlet(token="replica-2")
    for workspace in ("team-a", "team-b"):
        e2e.wait_served(workspace, REMOTE_WIDGET)
    for workspace in ("team-a", "team-b"):
        e2e.create_remote(workspace, REMOTE_WIDGET, remote_object("Widget", "shared", namespace="default", size=1))
        e2e.wait_local(
            WIDGET, namespace=e2e.world.cluster(workspace), name=default_local_name(namespace="default", name="shared")
        )
    callers = e2e.simulated.callers
    assert callers.writes(token="replica-1", ignore=NOT_WORK), "the leader wrote nothing"
    follower_writes = callers.writes(token="replica-2", ignore=NOT_WORK)
    assert follower_writes == [], f"the follower wrote: {follower_writes[:5]}"
    assert _holder(e2e) == first_holder
    assert (leader.metric("servlet_leader"), follower.metric("servlet_leader")) == ([1.0], [0.0])

    lease_duration = float(_lease(e2e)["spec"].get("leaseDurationSeconds") or 15)
    leader.kill()
    killed = time.monotonic()
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "after-failover", namespace="default", size=2))
    e2e.wait_local(
        WIDGET,
        namespace=e2e.world.cluster("team-a"),
        name=default_local_name(namespace="default", name="after-failover"),
        timeout=lease_duration + 15,
    )
    took = time.monotonic() - killed
    assert took <= lease_duration + 5, f"the follower took over after {took:.1f} s (lease duration {lease_duration} s)"
    assert _holder(e2e) != first_holder
    assert callers.writes(token="replica-2", ignore=NOT_WORK), "the new leader wrote nothing"
    assert follower.metric("servlet_leader") == [1.0]


def _plan_json(e2e: E2E) -> dict[str, Any]:
    result = run_servlet_plan(e2e.world, extra=("-o", "json"))
    assert result.returncode == 0, (
        f"servlet plan exited with {result.returncode}: {(result.stdout + result.stderr)[-2000:]}"
    )
    return dict(json.loads(result.stdout))


def _plan_reads_only(e2e: E2E) -> None:
    calls = e2e.simulated.callers.calls(token="plan")
    assert calls, "servlet plan made no API request at all"
    not_reads = [f"{c.method} {c.path}" for c in calls if c.method != "GET"]
    assert not_reads == [], f"servlet plan wrote: {not_reads[:5]}"


@pytest.mark.kcpsim_only("reads kcpsim's request log")
def test_live_plan_on_a_fresh_world_shows_schema_export_and_objects_and_writes_nothing(e2e: E2E) -> None:
    """No `servlet run` here: an operator follows the plan's schema steps by hand."""
    e2e.publish(certificate_crd(), example_published_resource())
    plan = _plan_json(e2e)
    (schema,) = plan["schemas"]
    assert schema["action"] == "create" and schema["name"].endswith(".zertifikate.certificates.example.corp")
    assert schema["name"] in plan["apiExport"]["spec"]["latestResourceSchemas"]
    _plan_reads_only(e2e)
    schemas = e2e.world.in_org("/apis/apis.kcp.io/v1alpha1/apiresourceschemas")
    assert e2e.rest.list(schemas) == [], "the plan created a schema"

    # Do what the plan says for the schema and the export, then let a user create an object.
    e2e.rest.create(
        schemas,
        {
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIResourceSchema",
            "metadata": {"name": schema["name"]},
            "spec": schema["spec"],
        },
    )
    e2e.rest.merge_patch(
        e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{e2e.world.export}"), plan["apiExport"]["patch"]
    )
    e2e.wait_served("team-b", ZERTIFIKAT)
    e2e.create_remote("team-b", ZERTIFIKAT, zertifikat("api", namespace="prod"))

    plan = _plan_json(e2e)
    assert plan["schemas"] == [] or all(s["action"] != "create" for s in plan["schemas"]), plan["schemas"]
    local_name = example_local_name(namespace="prod", name="api")
    (planned,) = [o for o in plan["objects"] if o.get("remote", {}).get("name") == "api"]
    assert planned["local"]["name"] == local_name, planned["local"]
    assert {a["type"] for a in planned["actions"]} >= {"addFinalizer", "create"}, planned["actions"]
    _plan_reads_only(e2e)
    assert e2e.local(CERTIFICATE, namespace=e2e.world.cluster("team-b"), name=local_name) is None
    assert not e2e.has_finalizer("team-b", ZERTIFIKAT, namespace="prod", name="api")


@pytest.mark.kcpsim_only("reads kcpsim's request log")
def test_live_plan_after_a_run_prints_the_remaining_work_and_writes_nothing(e2e: E2E) -> None:
    e2e.publish(certificate_crd(), example_published_resource())
    servlet = e2e.servlet(leader_election=False)
    e2e.wait_served("team-b", ZERTIFIKAT)
    servlet.stop()
    # Created while no servlet runs: a plan must show its local copy as still to be made.
    e2e.create_remote("team-b", ZERTIFIKAT, zertifikat("api", namespace="prod"))

    result = run_servlet_plan(e2e.world)
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"servlet plan exited with {result.returncode}: {output[-2000:]}"
    assert example_local_name(namespace="prod", name="api") in result.stdout, result.stdout[-2000:]
    _plan_reads_only(e2e)
    assert (
        e2e.local(
            CERTIFICATE, namespace=e2e.world.cluster("team-b"), name=example_local_name(namespace="prod", name="api")
        )
        is None
    )
    assert not e2e.has_finalizer("team-b", ZERTIFIKAT, namespace="prod", name="api")


@pytest.mark.kcpsim_only("injects faults")
def test_a_leader_that_cannot_renew_its_lease_stops_writing_at_once(e2e: E2E) -> None:
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    timing = ("--lease-duration", "4", "--lease-renew-deadline", "3", "--lease-retry-period", "0.5")
    servlet = e2e.servlet(extra=timing)
    e2e.eventually(lambda: servlet.metric("servlet_leader") == [1.0], what="the servlet to lead")
    e2e.wait_served("team-a", REMOTE_WIDGET)
    cluster = e2e.world.cluster("team-a")

    # The Lease can no longer be renewed (say, the API server rejects the writes).
    e2e.simulated.sim.set_faults(
        FaultPlan(
            errors=(
                ErrorRule(status=500, verb="update", resource="leases"),
                ErrorRule(status=500, verb="patch", resource="leases"),
            )
        )
    )
    e2e.eventually(lambda: servlet.metric("servlet_leader") == [0.0], what="the leader to step down")
    stepped_down = len(e2e.simulated.callers.calls(token="servlet"))
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "unled", namespace="default", size=1))
    name = default_local_name(namespace="default", name="unled")
    e2e.consistently(
        lambda: e2e.local(WIDGET, namespace=cluster, name=name) is None, what="no local copy while nobody leads"
    )
    later = e2e.simulated.callers.calls(token="servlet")[stepped_down:]
    writes = [f"{c.method} {c.path}" for c in later if c.method != "GET" and not any(p in c.path for p in NOT_WORK)]
    assert writes == [], f"the servlet wrote without the Lease: {writes[:5]}"
    assert not e2e.has_finalizer("team-a", REMOTE_WIDGET, namespace="default", name="unled")

    # Once the Lease can be written again, the servlet leads again and catches up.
    e2e.simulated.sim.clear_faults()
    e2e.wait_local(WIDGET, namespace=cluster, name=name, timeout=20)
    assert servlet.metric("servlet_leader") == [1.0]


@pytest.mark.kcpsim_only("reads kcpsim's request log")
def test_a_synced_world_costs_no_writes_across_resyncs(e2e: E2E) -> None:
    e2e.publish(certificate_crd(), certificates_with_platform_secret())
    servlet = e2e.servlet(extra=("--resync-period", "1"))
    e2e.wait_served("team-a", ZERTIFIKAT)
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", SECRET, secret("team-issuer-ca", namespace="default", data={"ca.crt": "Y2E="}))
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web", issuer="team-issuer"))
    e2e.wait_local(SECRET, namespace=cluster, name="team-issuer-ca")
    e2e.world.apply(secret("web-tls", namespace=cluster, data={"tls.crt": "Y2E="}))
    e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="web-tls"),
        what="the TLS Secret in the workspace",
    )
    e2e.rest.merge_patch(
        CERTIFICATE.path(namespace=cluster, name=example_local_name(namespace="default", name="web")) + "/status",
        {"status": {"revision": 1}},
    )
    e2e.eventually(
        lambda: (e2e.remote("team-a", ZERTIFIKAT, namespace="default", name="web") or {}).get("status"),
        what="the status on the remote object",
    )

    def writes_since(moment: float) -> list[str]:
        return [
            f"{r.method} {r.path}"
            for r in e2e.simulated.sim.requests.records()
            if r.started >= moment and r.method != "GET" and r.resource not in ("leases", "events")
        ]

    # Settled: the echoes of the last writes have come back and were found to need nothing.
    e2e.eventually(lambda: not writes_since(time.time() - 1), what="a second without writes")
    quiet_from = time.time()
    reconciles = sum(servlet.metric("servlet_reconciles_total"))

    def no_writes() -> bool:
        writes = writes_since(quiet_from)
        assert writes == [], f"writes in a synced world: {writes[:5]}"
        return True

    e2e.consistently(no_writes, duration=3, what="no writes across three resync periods")
    assert sum(servlet.metric("servlet_reconciles_total")) > reconciles, "no reconcile ran while it was quiet"
