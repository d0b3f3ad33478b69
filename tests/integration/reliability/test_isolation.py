"""Isolation (issue 7, item 5), end to end: what a tenant cannot make the servlet do.

- overwrite or adopt a local object the servlet did not create (a name chosen to collide);
- read another workspace's related Secret by naming it in its own object;
- inject link metadata (labels/annotations under `syncer.kdp.k8c.io/`) to take over another
  tenant's local copy.
Each refusal shows up where an operator looks (log, `servlet_sync_conflicts_total`), and the
servlet keeps serving the tenant's other objects.
"""

from __future__ import annotations

import base64

from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    LINK,
    REMOTE_WIDGET,
    SECRET,
    WIDGET,
    default_local_name,
    published_resource,
    remote_object,
    secret,
    sha1,
    widget_crd,
)

CREDS = [{"identifier": "creds", "origin": "platform", "kind": "Secret", "reference": {"name": {"path": "spec.note"}}}]
UP = [{"identifier": "creds", "origin": "service", "kind": "Secret", "reference": {"name": {"path": "spec.note"}}}]


def _start(e2e: E2E, **spec: object) -> None:
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget", **spec))


def test_a_name_chosen_to_collide_with_a_service_owners_object_is_refused_and_reported(e2e: E2E) -> None:
    _start(e2e)
    cluster = e2e.world.cluster("team-a")
    local_name = default_local_name(namespace="default", name="squatter")
    e2e.world.ensure_namespace(cluster)
    owners = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": local_name, "namespace": cluster},
        "spec": {"size": 42, "note": "owner's"},
    }
    e2e.rest.create(WIDGET.path(namespace=cluster), owners)
    servlet = e2e.servlet()
    e2e.wait_served("team-a", REMOTE_WIDGET)
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "squatter", namespace="default", size=1))
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "honest", namespace="default", size=2))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="honest"))
    e2e.eventually(lambda: sum(servlet.metric("servlet_sync_conflicts_total")) >= 1, what="the conflict to be counted")
    found = e2e.local(WIDGET, namespace=cluster, name=local_name) or {}
    assert found.get("spec") == {"size": 42, "note": "owner's"}, "the service owner's object was changed"
    assert not any(k.startswith(LINK) for k in (found["metadata"].get("labels") or {})), "it was adopted"
    # The conflict is counted just before it is logged.
    e2e.eventually(lambda: "squatter" in servlet.log_text(), what="the conflict over squatter to be logged")


def test_a_tenant_cannot_read_another_workspaces_secret_by_naming_it(e2e: E2E) -> None:
    _start(e2e, related=CREDS)
    e2e.servlet()
    for workspace in ("team-a", "team-b"):
        e2e.wait_served(workspace, REMOTE_WIDGET)
    data = {"password": base64.b64encode(b"team-b's secret").decode()}
    e2e.create_remote("team-b", SECRET, secret("b-only", namespace="default", data=data))
    e2e.create_remote("team-b", REMOTE_WIDGET, remote_object("Widget", "owner", namespace="default", note="b-only"))
    cluster_a, cluster_b = e2e.world.cluster("team-a"), e2e.world.cluster("team-b")
    e2e.wait_local(SECRET, namespace=cluster_b, name="b-only")  # team-b's own use works
    # team-a names the same Secret: the servlet only ever looks in team-a's workspace.
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "thief", namespace="default", note="b-only"))
    e2e.wait_local(WIDGET, namespace=cluster_a, name=default_local_name(namespace="default", name="thief"))
    e2e.consistently(
        lambda: (
            e2e.local(SECRET, namespace=cluster_a, name="b-only") is None
            and e2e.remote("team-a", SECRET, namespace="default", name="b-only") is None
        ),
        what="team-b's Secret staying out of team-a's reach",
    )


def test_a_tenant_cannot_pull_up_a_secret_from_another_tenants_local_namespace(e2e: E2E) -> None:
    _start(e2e, related=UP)
    e2e.servlet()
    for workspace in ("team-a", "team-b"):
        e2e.wait_served(workspace, REMOTE_WIDGET)
    cluster_a, cluster_b = e2e.world.cluster("team-a"), e2e.world.cluster("team-b")
    e2e.create_remote("team-b", REMOTE_WIDGET, remote_object("Widget", "owner", namespace="default", note="b-creds"))
    e2e.wait_local(WIDGET, namespace=cluster_b, name=default_local_name(namespace="default", name="owner"))
    e2e.world.apply(secret("b-creds", namespace=cluster_b, data={"token": base64.b64encode(b"b").decode()}))
    e2e.eventually(
        lambda: e2e.remote("team-b", SECRET, namespace="default", name="b-creds"),
        what="team-b's service Secret in team-b's workspace",
    )
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "thief", namespace="default", note="b-creds"))
    e2e.wait_local(WIDGET, namespace=cluster_a, name=default_local_name(namespace="default", name="thief"))
    e2e.consistently(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="b-creds") is None,
        what="team-b's local Secret staying out of team-a's workspace",
    )


def test_forged_link_metadata_cannot_take_over_another_tenants_copy(e2e: E2E) -> None:
    _start(e2e)
    e2e.servlet()
    for workspace in ("team-a", "team-b"):
        e2e.wait_served(workspace, REMOTE_WIDGET)
    cluster_a, cluster_b = e2e.world.cluster("team-a"), e2e.world.cluster("team-b")
    e2e.create_remote("team-b", REMOTE_WIDGET, remote_object("Widget", "victim", namespace="default", size=1))
    victim_name = default_local_name(namespace="default", name="victim")
    e2e.wait_local(WIDGET, namespace=cluster_b, name=victim_name)

    forged = {
        f"{LINK}/servlet": "tom",
        f"{LINK}/remote-object-cluster": cluster_b,
        f"{LINK}/remote-object-name-hash": sha1("victim"),
        f"{LINK}/remote-object-namespace-hash": sha1("default"),
    }
    attacker = remote_object("Widget", "attacker", namespace="default", labels=forged, size=666)
    attacker["metadata"]["annotations"] = {
        f"{LINK}/remote-object-name": "victim",
        f"{LINK}/last-known-state": '{"spec": {"size": 666}}',
    }
    e2e.create_remote("team-a", REMOTE_WIDGET, attacker)
    own = e2e.wait_local(WIDGET, namespace=cluster_a, name=default_local_name(namespace="default", name="attacker"))
    assert own["metadata"]["labels"][f"{LINK}/remote-object-cluster"] == cluster_a
    assert own["metadata"]["labels"][f"{LINK}/remote-object-name-hash"] == sha1("attacker")
    assert own["metadata"]["annotations"].get(f"{LINK}/remote-object-name") == "attacker"
    e2e.consistently(
        lambda: (e2e.local(WIDGET, namespace=cluster_b, name=victim_name) or {}).get("spec") == {"size": 1},
        what="team-b's copy staying untouched",
    )
