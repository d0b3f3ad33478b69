"""`spec.related[].watch` (issue 15): a related object no primary read yet wakes the primary that
owns it (`byOwner`) or the primaries whose labels match (`bySelector`), both origins, on kcpsim.

Every servlet here resyncs once an hour, and each test waits for the sync worker to go quiet
before it creates related objects: a copy that appears within seconds was made because the new
object woke its primary. Each test also shows a matching object that wakes nothing staying
uncopied, so that no other event explains the copy.
"""

from __future__ import annotations

import base64
import time
from typing import Any

from kcpsim.harness.process import ServletProcess
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CONFIGMAP,
    REMOTE_WIDGET,
    SECRET,
    WIDGET,
    default_local_name,
    published_resource,
    remote_object,
    secret,
    widget_crd,
)

RESYNC = ("--resync-period", "3600")
LOCAL_NAME = default_local_name(namespace="default", name="w")
# A workspace ConfigMap labelled for a Widget comes down as `<name>-of-<the Widget's local name>`.
SHARED = {
    "identifier": "shared",
    "origin": "platform",
    "kind": "ConfigMap",
    "object": {
        "selector": {
            "matchLabels": {"share-with": "{{ .Object.metadata.name }}"},
            "rewrite": {"template": {"template": "{{ .Value }}-of-{{ .Object.metadata.name }}"}},
        }
    },
}
# A service Secret labelled for a Widget's local copy goes up without its `internal-` prefix.
ISSUED = {
    "identifier": "issued",
    "origin": "service",
    "kind": "Secret",
    "object": {
        "selector": {
            "matchLabels": {"issued-for": "{{ .Object.metadata.name }}"},
            "rewrite": {"regex": {"pattern": "^internal-(.+)$", "replacement": "\\1"}},
        }
    },
}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def serve_widgets_with(
    e2e: E2E, related: dict[str, Any], *, workspaces: tuple[str, ...] = ("team-a",)
) -> ServletProcess:
    """Widgets with one related entry, every claim accepted in `workspaces`, a servlet resyncing hourly."""
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget", related=[related]))
    servlet = e2e.servlet(extra=RESYNC)
    wanted = "secrets" if related["kind"] == "Secret" else "configmaps"
    export_path = e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{e2e.world.export}")

    def claimed() -> list[dict[str, Any]]:
        claims: list[dict[str, Any]] = ((e2e.rest.get(export_path) or {}).get("spec") or {}).get(
            "permissionClaims"
        ) or []
        assert wanted in {claim.get("resource") for claim in claims}, claims
        return claims

    claims = e2e.eventually(claimed, what="the APIExport to claim the related type")
    for workspace in workspaces:
        e2e.wait_served(workspace, REMOTE_WIDGET)
        e2e.rest.merge_patch(
            e2e.world.in_workspace(workspace, f"/apis/apis.kcp.io/v1alpha1/apibindings/{e2e.world.export}"),
            {"spec": {"permissionClaims": [{**claim, "state": "Accepted"} for claim in claims]}},
        )
    return servlet


def sync_reconciles(servlet: ServletProcess) -> float:
    """How many reconciles the sync workers finished so far."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in servlet.metrics().splitlines()
        if line.startswith("servlet_reconciles_total{") and 'controller="sync"' in line
    )


def settle(e2e: E2E, servlet: ServletProcess, *, quiet: float = 1.0) -> None:
    """Until the sync workers finished no reconcile for `quiet` seconds: the primaries synced, and
    the echoes of the servlet's own writes are handled; from here only a wake reconciles."""
    last: list[float] = [-1.0, time.monotonic()]

    def check() -> bool | None:
        count, now = sync_reconciles(servlet), time.monotonic()
        if count != last[0]:
            last[:] = [count, now]
            return None
        return True if now - last[1] >= quiet else None

    e2e.eventually(check, what=f"the sync workers to reconcile nothing for {quiet} s")
    assert last[0] > 0, "no reconcile of the sync workers counted: is the metric still called so?"


def widget(
    e2e: E2E, workspace: str, name: str = "w", *, labels: dict[str, str] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Widget created in `workspace`, and its local copy once the servlet made it."""
    remote = e2e.create_remote(
        workspace, REMOTE_WIDGET, remote_object("Widget", name, namespace="default", labels=labels, size=1)
    )
    local = e2e.wait_local(
        WIDGET, namespace=e2e.world.cluster(workspace), name=default_local_name(namespace="default", name=name)
    )
    return remote, local


def owner(obj: dict[str, Any]) -> dict[str, str]:
    """An ownerReference naming `obj`."""
    metadata = obj["metadata"]
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": metadata["name"], "uid": metadata["uid"]}


def configmap(name: str, *, share_with: str, owners: list[dict[str, str]] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "labels": {"share-with": share_with}}
    if owners:
        metadata["ownerReferences"] = owners
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": {"name": name}}


def test_a_workspace_configmap_owned_by_a_widget_wakes_it_and_comes_down_at_once(e2e: E2E) -> None:
    servlet = serve_widgets_with(e2e, {**SHARED, "watch": {"byOwner": {}}})
    cluster = e2e.world.cluster("team-a")
    remote, _ = widget(e2e, "team-a")
    settle(e2e, servlet)

    # Matching the selector, but owned by nothing: nobody reads it until the Widget is synced again.
    e2e.create_remote("team-a", CONFIGMAP, configmap("colors", share_with="w"))
    e2e.consistently(
        lambda: e2e.local(CONFIGMAP, namespace=cluster, name=f"colors-of-{LOCAL_NAME}") is None,
        what="a ConfigMap the Widget does not own to wait for the Widget's next sync",
    )

    e2e.create_remote("team-a", CONFIGMAP, configmap("sizes", share_with="w", owners=[owner(remote)]))
    for name in ("sizes", "colors"):  # the woken Widget finds both
        e2e.wait_local(CONFIGMAP, namespace=cluster, name=f"{name}-of-{LOCAL_NAME}")


def test_a_workspace_configmap_wakes_the_widgets_a_selector_matches_and_no_other(e2e: E2E) -> None:
    servlet = serve_widgets_with(e2e, {**SHARED, "watch": {"bySelector": {"matchLabels": {"shop": "main"}}}})
    cluster = e2e.world.cluster("team-a")
    widget(e2e, "team-a", "w", labels={"shop": "main"})
    widget(e2e, "team-a", "v", labels={"shop": "outlet"})
    settle(e2e, servlet)

    e2e.create_remote("team-a", CONFIGMAP, configmap("for-v", share_with="v"))
    e2e.create_remote("team-a", CONFIGMAP, configmap("for-w", share_with="w"))

    e2e.wait_local(CONFIGMAP, namespace=cluster, name=f"for-w-of-{LOCAL_NAME}")
    v_name = default_local_name(namespace="default", name="v")
    e2e.consistently(
        lambda: e2e.local(CONFIGMAP, namespace=cluster, name=f"for-v-of-{v_name}") is None,
        what="the ConfigMap of the Widget the selector does not match to wait for its next sync",
    )


def test_a_service_secret_owned_by_a_local_copy_wakes_its_widget_and_goes_up_at_once(e2e: E2E) -> None:
    servlet = serve_widgets_with(e2e, {**ISSUED, "watch": {"byOwner": {}}})
    cluster = e2e.world.cluster("team-a")
    _, local = widget(e2e, "team-a")
    settle(e2e, servlet)

    e2e.world.apply(
        secret("internal-web", namespace=cluster, data={"k": b64("web")}, labels={"issued-for": LOCAL_NAME})
    )
    e2e.consistently(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="web") is None,
        what="a Secret the local copy does not own to wait for the Widget's next sync",
    )

    # The operator issues a Secret it marks as the local copy's, as controllers do.
    owned = secret("internal-db", namespace=cluster, data={"k": b64("db")}, labels={"issued-for": LOCAL_NAME})
    owned["metadata"]["ownerReferences"] = [owner(local)]
    e2e.world.apply(owned)
    for name in ("db", "web"):
        copied = e2e.eventually(
            lambda name=name: e2e.remote("team-a", SECRET, namespace="default", name=name),
            what=f"the Secret internal-{name} in the workspace as {name}",
        )
        assert copied["data"] == {"k": b64(name)}


def test_a_service_secret_wakes_the_widgets_whose_local_copies_a_selector_matches(e2e: E2E) -> None:
    servlet = serve_widgets_with(e2e, {**ISSUED, "watch": {"bySelector": {"matchLabels": {"shop": "main"}}}})
    cluster = e2e.world.cluster("team-a")
    _, local_w = widget(e2e, "team-a", "w", labels={"shop": "main"})
    _, local_v = widget(e2e, "team-a", "v", labels={"shop": "outlet"})
    assert local_w["metadata"]["labels"]["shop"] == "main", "the selector reads the local copies' labels"
    settle(e2e, servlet)

    for name, issued_for in (("internal-for-v", local_v), ("internal-for-w", local_w)):
        labels = {"issued-for": issued_for["metadata"]["name"]}
        e2e.world.apply(secret(name, namespace=cluster, data={"k": b64(name)}, labels=labels))

    e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="for-w"),
        what="the Secret of the Widget the selector matches in the workspace",
    )
    e2e.consistently(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="for-v") is None,
        what="the Secret of the Widget the selector does not match to wait for its next sync",
    )


def test_an_owner_reference_to_another_workspaces_widget_wakes_nothing_there(e2e: E2E) -> None:
    servlet = serve_widgets_with(e2e, {**SHARED, "watch": {"byOwner": {}}}, workspaces=("team-a", "team-b"))
    cluster_a, cluster_b = e2e.world.cluster("team-a"), e2e.world.cluster("team-b")
    mine, _ = widget(e2e, "team-a")
    theirs, _ = widget(e2e, "team-b")
    assert mine["metadata"]["uid"] != theirs["metadata"]["uid"]
    settle(e2e, servlet)
    # team-b has a ConfigMap for its Widget that only a wake of that Widget would copy now.
    e2e.create_remote("team-b", CONFIGMAP, configmap("b-data", share_with="w"))

    # A tenant of team-a names team-b's Widget (same name and namespace, its uid) as an owner, next
    # to its own Widget: the event wakes team-a's Widget, which copies the ConfigMap down ...
    owners = [owner(theirs), owner(mine)]
    e2e.create_remote("team-a", CONFIGMAP, configmap("a-data", share_with="w", owners=owners))
    e2e.wait_local(CONFIGMAP, namespace=cluster_a, name=f"a-data-of-{LOCAL_NAME}")
    # ... and nothing in team-b.
    e2e.consistently(
        lambda: e2e.local(CONFIGMAP, namespace=cluster_b, name=f"b-data-of-{LOCAL_NAME}") is None,
        what="team-b's Widget not to be woken by an object of team-a",
    )

    # The same reference in team-b itself does wake it.
    e2e.create_remote("team-b", CONFIGMAP, configmap("b-more", share_with="w", owners=[owner(theirs)]))
    e2e.wait_local(CONFIGMAP, namespace=cluster_b, name=f"b-data-of-{LOCAL_NAME}")
