"""Two PublishedResources projecting to the same APIResourceSchema, against kcpsim in-process.

Identical projections give one schema name. Only the oldest PublishedResource (creationTimestamp,
then name) is exported and synced; the other reports the resource as taken, naming it.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import TEAM_A, Harness, settle, world_and_daemon
from tests.integration.e2e.manifests import (
    FINALIZER,
    REMOTE_WIDGET,
    WIDGET,
    Resource,
    default_local_name,
    published_resource,
    remote_object,
    widget_crd,
)

PUBLISHED = "/apis/services.kdp.k8c.io/v1alpha1/publishedresources"
TWIN_WIDGET = Resource("twin.example.org", "v1", "widgets")


def twin_widget_crd() -> dict[str, Any]:
    """Widgets in another group: once projected into the servlet's group, the very same schema."""
    crd = copy.deepcopy(widget_crd())
    crd["metadata"]["name"] = "widgets.twin.example.org"
    crd["spec"]["group"] = "twin.example.org"
    return crd


async def _settled(h: Harness, name: str, type_: str) -> dict[str, Any]:
    """The condition once its controller has seen both PublishedResources (no longer a waiting reason)."""

    def check() -> dict[str, Any]:
        condition = h.condition(name, type_)
        assert condition is not None and condition["reason"] not in (
            "SchemaNotPublished",
            "WaitingForExport",
            "CachesNotSynced",
            "Pending",
        ), condition
        return condition

    return await eventually_async(check, what=f"{name} {type_} to settle")


async def test_the_younger_of_two_identical_projections_reports_the_resource_taken_and_syncs_nothing(
    tmp_path: Path,
) -> None:
    documents = (widget_crd(), twin_widget_crd(), published_resource("zeta", kind="Widget"))
    async with world_and_daemon(tmp_path, documents=documents) as h:
        await h.wait_condition("zeta", "Ready")
        await asyncio.sleep(1.1)  # creation timestamps have whole seconds
        h.world.apply(published_resource("alpha", kind="Widget", api_group="twin.example.org"))

        exported = await _settled(h, "alpha", "Exported")
        assert (exported["status"], exported["reason"]) == ("False", "ResourceTaken"), exported
        assert "PublishedResource zeta already publishes" in exported["message"], exported
        syncing = await _settled(h, "alpha", "Syncing")
        assert (syncing["status"], syncing["reason"]) == ("False", "ResourceTaken"), syncing
        assert "PublishedResource zeta syncs these objects" in syncing["message"], syncing
        ready = await h.wait_condition("alpha", "Ready", "False")
        assert ready["reason"] == "ResourceTaken"
        assert (h.condition("zeta", "Ready") or {}).get("status") == "True"
        assert sorted(h.controllers.manager.workers) == ["zeta"]

        h.rest.create(
            h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default")),
            remote_object("Widget", "w1", namespace="default", size=1),
        )
        local_name = default_local_name(namespace="default", name="w1")
        await eventually_async(
            lambda: h.rest.get(WIDGET.path(namespace=TEAM_A, name=local_name)), what="the copy in the keeper's CRD"
        )
        await settle(h.world)
        assert h.rest.list(TWIN_WIDGET.path()) == [], "the object was copied into the younger twin's CRD too"
        remote = h.rest.get(h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default", name="w1")))
        assert (remote or {})["metadata"]["finalizers"] == [FINALIZER]

        # The keeper goes: the other one takes the resource over and syncs its objects.
        h.rest.delete(f"{PUBLISHED}/zeta")
        await h.wait_condition("alpha", "Ready")
        await eventually_async(
            lambda: h.rest.get(TWIN_WIDGET.path(namespace=TEAM_A, name=local_name)),
            what="the copy in the new keeper's CRD",
        )
        remote = h.rest.get(h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default", name="w1")))
        assert (remote or {})["metadata"]["finalizers"] == [FINALIZER]
