"""The CRD a PublishedResource publishes is deleted from the service cluster, against kcpsim in-process.

Nothing can be synced without it, so the servlet's finalizers are released (users can delete
their objects meanwhile) and `Syncing=False` says so; when the CRD returns, syncing resumes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import TEAM_A, Harness, world_and_daemon
from tests.integration.e2e.manifests import (
    FINALIZER,
    REMOTE_WIDGET,
    WIDGET,
    default_local_name,
    published_resource,
    remote_object,
    widget_crd,
)

WIDGET_CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"


def _remote(h: Harness, name: str) -> dict[str, Any] | None:
    return h.rest.get(h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default", name=name)))


def _finalizers(h: Harness, name: str) -> list[str]:
    return list(((_remote(h, name) or {}).get("metadata") or {}).get("finalizers") or [])


def _released(h: Harness) -> dict[str, Any]:
    syncing = h.condition("widgets", "Syncing")
    assert syncing is not None and syncing["status"] == "False", syncing
    assert "were released" in syncing["message"], syncing
    return syncing


def _create_remote(h: Harness, name: str) -> None:
    h.rest.create(
        h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default")),
        remote_object("Widget", name, namespace="default", size=1),
    )


async def test_a_deleted_crd_releases_the_finalizers_so_deletions_complete_and_syncing_resumes_when_it_returns(
    tmp_path: Path,
) -> None:
    async with world_and_daemon(tmp_path, documents=(widget_crd(), published_resource("widgets", kind="Widget"))) as h:
        await h.wait_condition("widgets", "Ready")
        for name in ("kept", "deleted"):
            _create_remote(h, name)
            await eventually_async(
                lambda name=name: h.rest.get(
                    WIDGET.path(  # type: ignore[misc]
                        namespace=TEAM_A, name=default_local_name(namespace="default", name=name)
                    )
                ),
                what=f"{name} copy",
            )
            assert _finalizers(h, name) == [FINALIZER]

        h.rest.delete(WIDGET_CRD)

        syncing = await eventually_async(lambda: _released(h), what="Syncing=False saying the finalizers were released")
        assert syncing["reason"] == "CRDNotFound"
        assert "CustomResourceDefinition widgets.example.com is gone" in syncing["message"], syncing
        assert "2 object(s)" in syncing["message"], syncing
        assert _finalizers(h, "kept") == [] and _finalizers(h, "deleted") == []
        assert h.controllers.manager.workers == {}

        # A user deletes an object while the CRD is gone: nothing holds the deletion up.
        h.rest.delete(h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default", name="deleted")))
        assert _remote(h, "deleted") is None, "the deletion waits on a finalizer"
        _create_remote(h, "meanwhile")

        h.world.apply(widget_crd())
        await h.wait_condition("widgets", "Ready")
        for name in ("kept", "meanwhile"):
            await eventually_async(
                lambda name=name: h.rest.get(
                    WIDGET.path(  # type: ignore[misc]
                        namespace=TEAM_A, name=default_local_name(namespace="default", name=name)
                    )
                ),
                what=f"{name} copied again once the CRD is back",
            )
            await eventually_async(
                lambda name=name: _finalizers(h, name) == [FINALIZER],  # type: ignore[misc]
                what=f"the finalizer back on {name}",
            )


async def test_a_crd_stuck_in_deletion_counts_as_gone_and_releases_the_finalizers(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=(widget_crd(), published_resource("widgets", kind="Widget"))) as h:
        await h.wait_condition("widgets", "Ready")
        _create_remote(h, "held")
        local = WIDGET.path(namespace=TEAM_A, name=default_local_name(namespace="default", name="held"))
        await eventually_async(lambda: h.rest.get(local), what="the copy")
        # Another controller's finalizer on the copy keeps the CRD deleting (Kubernetes waits for it).
        h.rest.merge_patch(local, {"metadata": {"finalizers": ["example.com/hold"]}})

        h.rest.delete(WIDGET_CRD)
        assert ((h.rest.get(WIDGET_CRD) or {}).get("metadata") or {}).get("deletionTimestamp"), (
            "the CRD should still be there, being deleted"
        )
        valid = await h.wait_condition("widgets", "Valid", "False")
        assert valid["reason"] == "CRDNotFound" and "is being deleted" in valid["message"], valid
        syncing = await eventually_async(lambda: _released(h), what="Syncing=False saying the finalizers were released")
        assert syncing["reason"] == "CRDNotFound"
        assert _finalizers(h, "held") == []


async def test_a_crd_that_no_longer_serves_the_published_version_releases_the_finalizers(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=(widget_crd(), published_resource("widgets", kind="Widget"))) as h:
        await h.wait_condition("widgets", "Ready")
        _create_remote(h, "w1")
        await eventually_async(lambda: _finalizers(h, "w1") == [FINALIZER], what="the finalizer on w1")

        crd = widget_crd()
        crd["spec"]["versions"][0]["served"] = False
        h.rest.merge_patch(WIDGET_CRD, {"spec": {"versions": crd["spec"]["versions"]}})

        syncing = await eventually_async(lambda: _released(h), what="Syncing=False saying the finalizers were released")
        assert syncing["reason"] == "NotPublished" and "1 object(s)" in syncing["message"], syncing
        assert (h.condition("widgets", "Valid") or {}).get("reason") == "InvalidProjection"
        assert _finalizers(h, "w1") == []
