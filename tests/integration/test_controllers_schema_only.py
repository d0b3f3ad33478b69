"""A schema-only PublishedResource through the running daemon: exported, Ready, and none of its objects synced."""

from __future__ import annotations

from pathlib import Path

from kcpsim import Topology
from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import TEAM_A, settle, world_and_daemon
from tests.integration.e2e.manifests import (
    FINALIZER,
    GADGET,
    REMOTE_WIDGET,
    WIDGET,
    gadget_crd,
    published_resource,
    remote_object,
    widget_crd,
)

EXPORT = "/apis/apis.kcp.io/v1alpha1/apiexports"
REMOTE_GADGET_PATH = "/apis/certificates.example.corp/v1/gadgets"


async def test_a_schema_only_resource_is_exported_but_none_of_its_objects_is_synced(tmp_path: Path) -> None:
    documents = (
        widget_crd(),
        gadget_crd(),
        published_resource("widgets", kind="Widget", synchronization={"enabled": False}),
        published_resource("gadgets", kind="Gadget"),  # synced: shows the daemon is at work meanwhile
    )
    async with world_and_daemon(tmp_path, documents=documents) as h:
        syncing = await h.wait_condition("widgets", "Syncing")
        assert syncing["reason"] == "SynchronizationDisabled"
        await h.wait_condition("widgets", "Ready")
        await h.wait_condition("gadgets", "Ready")
        published = h.rest.get("/apis/services.kdp.k8c.io/v1alpha1/publishedresources/widgets")
        schema = published["status"]["resourceSchemaName"]
        export = h.rest.get(h.world.in_org(f"{EXPORT}/{h.world.export}"))
        assert schema in export["spec"]["latestResourceSchemas"]

        widget_path = h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default"))
        h.rest.create(widget_path, remote_object("Widget", "w1", namespace="default"))
        h.rest.create(h.world.in_workspace("team-a", REMOTE_GADGET_PATH), remote_object("Gadget", "g1"))
        await eventually_async(
            lambda: [gadget for gadget in h.rest.list(GADGET.path()) if TEAM_A in gadget["metadata"]["name"]] or None,
            what="the gadget's local copy",
        )
        await settle(h.world)

        assert "widgets" not in h.controllers.manager.workers
        assert h.rest.list(WIDGET.path()) == []
        remote = h.rest.get(f"{widget_path}/w1")
        assert FINALIZER not in (remote["metadata"].get("finalizers") or [])
        assert not [request for request in h.requests(since_mark=False) if " widgets" in request and "vw:" in request]


async def test_a_schema_only_resource_is_ready_before_any_workspace_binds_the_export(tmp_path: Path) -> None:
    async with world_and_daemon(
        tmp_path,
        topology=Topology(with_schema=False, workspaces=()),
        documents=(
            widget_crd(),
            gadget_crd(),
            published_resource("widgets", kind="Widget", synchronization={"enabled": False}),
            published_resource("gadgets", kind="Gadget"),
        ),
    ) as h:
        ready = await h.wait_condition("widgets", "Ready")
        assert ready["reason"] == "Ready"
        assert (await h.wait_condition("widgets", "Syncing"))["reason"] == "SynchronizationDisabled"
        # A synced one waits for the virtual workspace, which kcp publishes with the first binding.
        assert (await h.wait_condition("gadgets", "Syncing", "False"))["reason"] == "WaitingForVirtualWorkspace"
