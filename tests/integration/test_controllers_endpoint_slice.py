"""`--apiexportendpointslice`: the VW URLs come from a chosen slice, which may live in another workspace.

The slice here lives in team-a's workspace and points at the org's export by `spec.export`; kcpsim
fills its endpoints like kcp does. With two shards it lists both URLs, so a Widget in team-b
(on shard-1) syncing proves the servlet took the URLs from it.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from kcpsim import Topology
from kcpsim.harness.world import World, start_world
from kcpsim.topology import WorkspaceSpec
from kcpsim.waiting import eventually_async
from servlet.app.daemon import EXIT_STARTUP_FAILED, Daemon
from servlet.core.endpoint_slices import SliceChoice
from tests.integration.controllers_support import TEAM_B, _connect, config_for, world_and_daemon
from tests.integration.e2e.manifests import (
    REMOTE_WIDGET,
    WIDGET,
    default_local_name,
    published_resource,
    remote_object,
    widget_crd,
)

TWO_SHARDS = Topology(
    with_schema=False, workspaces=(WorkspaceSpec("team-a", shard=0), WorkspaceSpec("team-b", shard=1))
)
WIDGETS = (widget_crd(), published_resource("widgets", kind="Widget"))
ELSEWHERE = SliceChoice(name="certs", workspace="root:myorg:team-a")
TEAM_A_SLICES = "/clusters/root:myorg:team-a/apis/apis.kcp.io/v1alpha1/apiexportendpointslices"


def _create_slice(world: World, *, name: str = "certs", export: str = "certificates.example.corp") -> None:
    world.rest.create(
        TEAM_A_SLICES,
        {
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIExportEndpointSlice",
            "metadata": {"name": name},
            "spec": {"export": {"path": "root:myorg", "name": export}},
        },
    )


async def test_the_urls_come_from_the_chosen_slice_in_another_workspace(tmp_path: Path) -> None:
    async with world_and_daemon(
        tmp_path, topology=TWO_SHARDS, shards=2, documents=WIDGETS, prepare=_create_slice, endpoint_slice=ELSEWHERE
    ) as h:
        await h.wait_condition("widgets", "Ready")
        h.rest.create(
            h.world.in_workspace("team-b", REMOTE_WIDGET.path(namespace="default")),
            remote_object("Widget", "w1", namespace="default", size=1),
        )
        local = WIDGET.path(namespace=TEAM_B, name=default_local_name(namespace="default", name="w1"))
        await eventually_async(lambda: h.rest.get(local), what="the local copy of team-b's w1")
        assert any(call.path.startswith(TEAM_A_SLICES) for call in h.world.callers.calls(token=h.token)), (
            "the slice was not read from team-a's workspace"
        )

        # Without its slice the servlet stops syncing and says why; it does not fall back.
        h.rest.delete(f"{TEAM_A_SLICES}/certs")
        condition = await h.wait_condition("widgets", "Syncing", status="False")
        assert condition["reason"] == "EndpointSliceUnusable"
        assert "--apiexportendpointslice" in condition["message"] and "'certs'" in condition["message"]


@pytest.mark.parametrize(
    ("prepare", "expected"),
    [
        (lambda world: None, "the APIExportEndpointSlice 'certs' does not exist in workspace root:myorg:team-a"),
        (
            lambda world: _create_slice(world, export="other.example.corp"),
            "is for the APIExport root:myorg:other.example.corp",
        ),
    ],
    ids=["missing", "for-another-export"],
)
async def test_a_chosen_slice_that_cannot_serve_stops_the_start_naming_the_flag(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, prepare: Any, expected: str
) -> None:
    world = start_world(tmp_path / "world")
    try:
        prepare(world)
        daemon = Daemon(config_for(world, tmp_path, endpoint_slice=ELSEWHERE), connect=_connect, identity="replica")
        with caplog.at_level(logging.ERROR):
            code = await asyncio.wait_for(daemon.run(asyncio.Event()), timeout=20)
        assert code == EXIT_STARTUP_FAILED
        messages = [record.getMessage() for record in caplog.records if "cannot start" in record.getMessage()]
        assert any("--apiexportendpointslice" in message and expected in message for message in messages), messages
    finally:
        world.stop()
