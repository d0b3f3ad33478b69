"""What owners and tenants see: Events on PublishedResources and users' objects, and the `Synced` condition.

The export claims `events` and the workspaces accepted it, as KDP sets a Service up. A tenant
whose object cannot be synced sees a Warning saying why in `kubectl describe`; an owner sees
`SchemaPublished` and `Exported` on the PublishedResource, and `Synced=False` counting the
objects that fail (naming the first) until they sync again. A burst of objects costs a few
status writes, not one per object.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.parse
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcpsim import Topology
from tests.integration.e2e.env import E2E, WorldOptions
from tests.integration.e2e.manifests import REMOTE_WIDGET, WIDGET, default_local_name, remote_object

EVENTS_CLAIMED = Topology(with_schema=False, claims=("namespaces", "secrets", "events"))
BURST = 30
BURST_SPACING = 0.1
# The sync worker reports Synced at most every 5 s; Ready and the others change a few times more.
STATUS_WRITES_IN_A_BURST = 4


def _events(e2e: E2E, path: str, **fields: str) -> list[dict[str, Any]]:
    selector = ",".join(f"{key}={value}" for key, value in fields.items())
    return e2e.rest.list(f"{path}?fieldSelector={urllib.parse.quote(selector)}")


def _reasons(events: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(event["type"], event["reason"]) for event in events}


def _conflict(e2e: E2E, cluster: str, name: str) -> dict[str, Any]:
    """A Widget of the service owner's at the local name the remote Widget `name` computes."""
    e2e.world.ensure_namespace(cluster)
    local = default_local_name(namespace="default", name=name)
    return e2e.rest.create(
        WIDGET.path(namespace=cluster),
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": local, "namespace": cluster},
            "spec": {"size": 99},
        },
    )


@pytest.mark.parametrize("e2e", [EVENTS_CLAIMED], indirect=True, ids=["events-claimed"])
@pytest.mark.kcpsim_only("counts requests in kcpsim's request log")
def test_owner_and_tenant_see_what_happened_and_synced_counts_the_failures(e2e: E2E) -> None:
    _, cluster = e2e.serve_widgets()
    e2e.wait_condition("widgets", "Ready")
    # The owner: the schema was published and exported, in the Events of the PublishedResource.
    e2e.eventually(
        lambda: (
            {("Normal", "SchemaPublished"), ("Normal", "Exported")}
            <= _reasons(
                _events(
                    e2e,
                    "/api/v1/namespaces/default/events",
                    **{"involvedObject.kind": "PublishedResource", "involvedObject.name": "widgets"},
                )
            )
        ),
        what="SchemaPublished and Exported Events on the PublishedResource",
    )

    foreign = _conflict(e2e, cluster, "w")
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "ok", namespace="default", size=1))
    created = e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", size=1))

    # The tenant: a Warning on the object, in its workspace and through the VW.
    about_w = {
        "involvedObject.name": "w",
        "involvedObject.namespace": "default",
        "involvedObject.kind": "Widget",
        "involvedObject.uid": created["metadata"]["uid"],
    }
    workspace_events = e2e.world.in_workspace("team-a", "/api/v1/namespaces/default/events")
    (warning,) = e2e.eventually(
        lambda: [event for event in _events(e2e, workspace_events, **about_w) if event["reason"] == "NameConflict"],
        what="a NameConflict Event on the tenant's Widget",
    )
    assert warning["type"] == "Warning" and "already exists" in warning["message"], warning
    vw = e2e.simulated.sim.vw_url().removeprefix(e2e.simulated.sim.base_url)
    assert _reasons(_events(e2e, f"{vw}/clusters/{cluster}/api/v1/namespaces/default/events", **about_w)) == {
        ("Warning", "NameConflict")
    }
    e2e.eventually(
        lambda: (
            {("Normal", "Accepted"), ("Normal", "Synced")}
            <= _reasons(_events(e2e, workspace_events, **{"involvedObject.name": "ok"}))
        ),
        what="Accepted and Synced on the other",
    )

    # The owner: Synced counts the failure and names it; one tenant's object leaves Ready True.
    synced = e2e.wait_condition("widgets", "Synced", "False")
    assert synced["reason"] == "ObjectsFailing"
    assert synced["message"].startswith(f"1 of 2 object(s) fail to sync: {cluster}/default/w: "), synced
    assert e2e.condition("widgets", "Ready")["status"] == "True"  # type: ignore[index]
    e2e.eventually(
        lambda: (
            ("Warning", "ObjectsFailing")
            in _reasons(_events(e2e, "/api/v1/namespaces/default/events", **{"involvedObject.name": "widgets"}))
        ),
        what="an ObjectsFailing Event on the PublishedResource",
    )

    # The way is cleared: the object syncs, Synced is True again.
    e2e.rest.delete(WIDGET.path(namespace=cluster, name=foreign["metadata"]["name"]))
    e2e.wait_condition("widgets", "Synced", "True")
    e2e.eventually(
        lambda: ("Normal", "Synced") in _reasons(_events(e2e, workspace_events, **about_w)),
        what="a Synced Event on the tenant's Widget once the name is free",
    )


# Over HTTPS: kubectl sends the kubeconfig's token over HTTPS only.
@pytest.mark.parametrize("e2e", [WorldOptions(EVENTS_CLAIMED, tls=True)], indirect=True, ids=["events-claimed"])
@pytest.mark.kcpsim_only("writes kubeconfigs of kcpsim's admin")
def test_kubectl_describe_shows_the_tenant_why_the_object_does_not_sync_and_the_owner_what_happened(
    e2e: E2E, tmp_path: Path
) -> None:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not on PATH: the describe view cannot be checked")
    _, cluster = e2e.serve_widgets()
    _conflict(e2e, cluster, "w")
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", size=1))
    e2e.wait_condition("widgets", "Synced", "False")

    config = tmp_path / "team-a.kubeconfig"
    config.write_text(
        yaml.safe_dump(e2e.simulated.sim.kubeconfig_dict(e2e.simulated.sim.workspace_url("root:myorg:team-a")))
    )

    def described() -> str | None:
        result = subprocess.run(
            [
                kubectl,
                "--kubeconfig",
                str(config),
                "describe",
                "widgets.certificates.example.corp",
                "w",
                "-n",
                "default",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout if "NameConflict" in result.stdout else None

    text = e2e.eventually(described, what="kubectl describe to show the NameConflict Event")
    events = text.split("Events:", 1)[1]
    assert "Warning" in events and "NameConflict" in events and "already exists" in events, text

    # The owner describes the PublishedResource on the service cluster.
    service = tmp_path / "service.kubeconfig"
    service.write_text(yaml.safe_dump(e2e.simulated.sim.kubeconfig_dict(e2e.simulated.sim.base_url)))
    owner = subprocess.run(
        [kubectl, "--kubeconfig", str(service), "describe", "publishedresource", "widgets"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert owner.returncode == 0, owner.stderr
    owner_events = owner.stdout.split("Events:", 1)[1]
    for reason in ("SchemaPublished", "Exported", "NoObjectSyncs"):  # its one object fails
        assert reason in owner_events, owner.stdout


@pytest.mark.parametrize("e2e", [EVENTS_CLAIMED], indirect=True, ids=["events-claimed"])
@pytest.mark.kcpsim_only("counts requests in kcpsim's request log")
def test_a_burst_of_failing_objects_costs_a_few_status_writes_not_one_per_object(e2e: E2E) -> None:
    _, cluster = e2e.serve_widgets()
    e2e.wait_condition("widgets", "Ready")
    time.sleep(1.0)  # the settled writes of the start are over
    status = "/apis/services.kdp.k8c.io/v1alpha1/publishedresources/widgets/status"
    before = len([call for call in e2e.simulated.callers.writes() if call.path == status])

    for i in range(BURST):  # spread over about three seconds, as users create them
        _conflict(e2e, cluster, f"w{i}")
        e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", f"w{i}", namespace="default", size=1))
        time.sleep(BURST_SPACING)
    e2e.eventually(
        lambda: (
            (e2e.condition("widgets", "Synced") or {})
            .get("message", "")
            .startswith(f"{BURST} of {BURST} object(s) fail to sync")
        ),
        what=f"Synced to count all {BURST} failures",
    )

    writes = len([call for call in e2e.simulated.callers.writes() if call.path == status]) - before
    assert 1 <= writes <= STATUS_WRITES_IN_A_BURST, f"{writes} status writes for {BURST} failing objects"
    # Every object failing: nothing actually syncs, and Ready says so.
    ready = e2e.condition("widgets", "Ready") or {}
    assert (ready.get("status"), ready.get("reason")) == ("False", "NoObjectSyncs"), ready
