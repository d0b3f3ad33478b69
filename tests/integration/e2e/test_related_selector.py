"""Related objects found by a label selector and renamed by a rewrite (issue 15), both origins, on kcpsim."""

from __future__ import annotations

import base64
from typing import Any

from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CONFIGMAP,
    REMOTE_WIDGET,
    SECRET,
    WIDGET,
    default_local_name,
    issued_secrets,
    published_resource,
    remote_object,
    secret,
    widget_crd,
)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def serve_widgets_with(e2e: E2E, *related: dict[str, Any]) -> Any:
    """Widgets with `related`, every claim of the export accepted by team-a, as its user would."""
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget", related=list(related)))
    servlet = e2e.servlet()
    e2e.wait_served("team-a", REMOTE_WIDGET)
    export_path = e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{e2e.world.export}")
    wanted = {"secrets" if item["kind"] == "Secret" else "configmaps" for item in related}

    def claimed() -> list[dict[str, Any]]:
        claims: list[dict[str, Any]] = ((e2e.rest.get(export_path) or {}).get("spec") or {}).get(
            "permissionClaims"
        ) or []
        assert wanted <= {claim.get("resource") for claim in claims}, claims
        return claims

    claims = e2e.eventually(claimed, what="the APIExport to claim the related types")
    e2e.rest.merge_patch(
        e2e.world.in_workspace("team-a", f"/apis/apis.kcp.io/v1alpha1/apibindings/{e2e.world.export}"),
        {"spec": {"permissionClaims": [{**claim, "state": "Accepted"} for claim in claims]}},
    )
    return servlet


def test_the_service_secrets_a_selector_finds_go_up_renamed_and_leave_with_their_label(e2e: E2E) -> None:
    serve_widgets_with(e2e, issued_secrets(pattern="^internal-(.+)$"))
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", size=1))
    local_name = default_local_name(namespace="default", name="w")
    e2e.wait_local(WIDGET, namespace=cluster, name=local_name)

    # The operator issues two Secrets for the Widget, and one for something else.
    for name, issued_for in (("internal-web", local_name), ("internal-db", local_name), ("internal-x", "other")):
        e2e.world.apply(secret(name, namespace=cluster, data={"key": b64(name)}, labels={"issued-for": issued_for}))

    # Without `watch`, new Secrets are seen when the Widget is reconciled next: a change does it now.
    e2e.patch_remote("team-a", REMOTE_WIDGET, namespace="default", name="w", patch={"spec": {"size": 2}})
    for name in ("web", "db"):
        copied = e2e.eventually(
            lambda name=name: e2e.remote("team-a", SECRET, namespace="default", name=name),
            what=f"the Secret internal-{name} in the workspace as {name}",
        )
        assert copied["data"] == {"key": b64(f"internal-{name}")}
    assert e2e.remote("team-a", SECRET, namespace="default", name="x") is None

    # The operator takes the label off one: its copy goes, the other stays.
    e2e.rest.merge_patch(
        SECRET.path(namespace=cluster, name="internal-db"), {"metadata": {"labels": {"issued-for": None}}}
    )
    # A found Secret is watched like any related object its primary read: the change wakes the Widget.
    e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="db") is None,
        what="the copy of the Secret that left the selector to be deleted",
    )
    assert e2e.remote("team-a", SECRET, namespace="default", name="web") is not None
    assert e2e.local(SECRET, namespace=cluster, name="internal-db") is not None, "the origin is the operator's"


def test_workspace_configmaps_a_selector_finds_come_down_under_a_template_name(e2e: E2E) -> None:
    serve_widgets_with(
        e2e,
        {
            "identifier": "shared",
            "origin": "platform",
            "kind": "ConfigMap",
            "object": {
                "selector": {
                    "matchLabels": {"share-with": "{{ .Object.metadata.name }}"},
                    "rewrite": {"template": {"template": "{{ .Value }}-of-{{ .Object.metadata.name }}"}},
                }
            },
        },
    )
    cluster = e2e.world.cluster("team-a")
    for name, share_with in (("colors", "w"), ("sizes", "w"), ("private", "")):
        e2e.create_remote(
            "team-a",
            CONFIGMAP,
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "default", "labels": {"share-with": share_with}},
                "data": {"name": name},
            },
        )
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", size=1))
    local_name = default_local_name(namespace="default", name="w")
    e2e.wait_local(WIDGET, namespace=cluster, name=local_name)

    for name in ("colors", "sizes"):
        copied = e2e.wait_local(CONFIGMAP, namespace=cluster, name=f"{name}-of-{local_name}")
        assert copied["data"] == {"name": name}
    assert e2e.local(CONFIGMAP, namespace=cluster, name=f"private-of-{local_name}") is None


def test_two_secrets_rewritten_to_one_name_are_reported_on_the_published_resource_not_written(e2e: E2E) -> None:
    serve_widgets_with(e2e, issued_secrets(pattern="^internal-(.+)-v\\d$"))
    cluster = e2e.world.cluster("team-a")
    local_name = default_local_name(namespace="default", name="w")
    e2e.world.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": cluster}})
    for name in ("internal-web-v1", "internal-web-v2"):
        e2e.world.apply(secret(name, namespace=cluster, data={"key": b64(name)}, labels={"issued-for": local_name}))
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", size=1))

    synced = e2e.wait_condition("widgets", "Synced", "False")
    assert "spec.related[0].object.selector.rewrite" in synced["message"], synced
    assert "'internal-web-v1' and 'internal-web-v2' to 'web'" in synced["message"], synced
    assert e2e.remote("team-a", SECRET, namespace="default", name="web") is None
