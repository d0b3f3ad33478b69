"""Workspace paths through the running daemon: the claim, the path read through the VW, the name and annotation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import TEAM_A, world_and_daemon
from tests.integration.e2e.manifests import REMOTE_WIDGET, WIDGET, published_resource, remote_object, widget_crd

CLAIM = {"group": "core.kcp.io", "resource": "logicalclusters", "all": True}
PATH_ANNOTATION = "syncer.kdp.k8c.io/remote-object-workspace-path"


async def test_a_copy_is_named_from_its_workspace_path_and_records_it(tmp_path: Path) -> None:
    naming = {"name": '{{ .ClusterPath | replace ":" "-" }}-{{ .Object.metadata.name }}'}
    documents = (widget_crd(), published_resource("widgets", kind="Widget", naming=naming, enableWorkspacePaths=True))
    async with world_and_daemon(tmp_path, documents=documents) as h:
        await h.wait_condition("widgets", "Ready")
        export_path = h.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{h.world.export}")

        def claims() -> list[dict[str, Any]]:
            found = ((h.rest.get(export_path) or {}).get("spec") or {}).get("permissionClaims") or []
            assert CLAIM in found, found
            return list(found)

        exported_claims = await eventually_async(claims, what="the claim")
        remote = h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default"))
        h.rest.create(remote, remote_object("Widget", "w1", namespace="default"))
        synced = await h.wait_condition("widgets", "Synced", "False")
        assert f"the workspace path of workspace {TEAM_A} is unknown" in synced["message"], synced
        assert h.rest.list(WIDGET.path()) == []

        # The consumer accepts the export's claims, the one on logicalclusters among them: the
        # object, planned again with backoff, is synced.
        accepted = [{**claim, "state": "Accepted"} for claim in exported_claims]
        binding = h.world.in_workspace("team-a", f"/apis/apis.kcp.io/v1alpha1/apibindings/{h.world.export}")
        h.rest.merge_patch(binding, {"spec": {"permissionClaims": accepted}})
        local_path = WIDGET.path(namespace=TEAM_A, name="root-myorg-team-a-w1")
        local = await eventually_async(lambda: h.rest.get(local_path), what="the copy named from the path")
        assert local["metadata"]["annotations"][PATH_ANNOTATION] == "root:myorg:team-a"
        assert any(
            "GET vw:" + TEAM_A + " logicalclusters cluster" in request for request in h.requests(since_mark=False)
        )
