"""The syncmanager controller against kcpsim, in-process: waiting for the VW, one worker per PublishedResource."""

from __future__ import annotations

from pathlib import Path

from kcpsim import Topology
from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import TEAM_A, settle, world_and_daemon
from tests.integration.e2e.manifests import (
    REMOTE_WIDGET,
    WIDGET,
    Resource,
    default_local_name,
    published_resource,
    remote_object,
    widget_crd,
)

PUBLISHED = "/apis/services.kdp.k8c.io/v1alpha1/publishedresources"


async def test_syncing_waits_for_the_virtual_workspace_and_starts_with_the_first_binding(tmp_path: Path) -> None:
    async with world_and_daemon(
        tmp_path,
        topology=Topology(with_schema=False, workspaces=()),
        documents=(widget_crd(), published_resource("widgets", kind="Widget")),
    ) as h:
        await h.wait_condition("widgets", "Exported")
        syncing = await h.wait_condition("widgets", "Syncing", "False")
        assert syncing["reason"] == "WaitingForVirtualWorkspace" and "virtual workspace" in syncing["message"]
        ready = await h.wait_condition("widgets", "Ready", "False")
        assert ready["reason"] == "WaitingForVirtualWorkspace"
        assert h.controllers.manager.workers == {}

        cluster = h.world.sim.add_workspace("team-x")
        await h.wait_condition("widgets", "Ready")
        h.world.ensure_namespace("default", workspace="team-x")
        h.rest.create(
            h.world.in_workspace("team-x", REMOTE_WIDGET.path(namespace="default")),
            remote_object("Widget", "first", namespace="default", size=1),
        )
        await eventually_async(
            lambda: h.rest.get(
                WIDGET.path(namespace=cluster, name=default_local_name(namespace="default", name="first"))
            ),
            what="the first object of the first workspace to be synced",
        )


async def test_a_worker_runs_per_published_resource_and_stops_with_it(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=(widget_crd(), published_resource("widgets", kind="Widget"))) as h:
        await h.wait_condition("widgets", "Ready")
        first = h.worker("widgets")
        pool = h.controllers.shared.pool
        remote_cache = "vw/widgets.certificates.example.corp"
        assert remote_cache in {cache.name for cache in pool.caches()}

        h.rest.delete(f"{PUBLISHED}/widgets")
        await eventually_async(lambda: h.controllers.manager.workers == {}, what="the worker to stop")
        assert remote_cache not in {cache.name for cache in pool.caches()}, "the worker's watches kept running"

        h.world.apply(published_resource("widgets", kind="Widget"))
        await h.wait_condition("widgets", "Ready")
        second = h.worker("widgets")
        assert second is not first and list(h.controllers.manager.workers) == ["widgets"]
        h.rest.create(
            h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default")),
            remote_object("Widget", "again", namespace="default", size=1),
        )
        await eventually_async(
            lambda: h.rest.get(
                WIDGET.path(namespace=TEAM_A, name=default_local_name(namespace="default", name="again"))
            ),
            what="the new worker to sync",
        )


async def test_published_resources_sharing_a_local_crd_get_a_worker_each_and_no_orphan_hunting(tmp_path: Path) -> None:
    documents = (
        widget_crd(),
        published_resource("widgets", kind="Widget"),
        published_resource("doohickeys", kind="Widget", projection={"kind": "Doohickey"}),
    )
    async with world_and_daemon(tmp_path, documents=documents) as h:
        for name in ("widgets", "doohickeys"):
            await h.wait_condition(name, "Ready")
        workers = h.controllers.manager.workers
        assert sorted(workers) == ["doohickeys", "widgets"]
        assert not any(worker.orphans_enabled for worker in workers.values()), (
            "a copy made for one PublishedResource would look orphaned to the other"
        )
        doohickeys = Resource("certificates.example.corp", "v1", "doohickeys")
        h.rest.create(
            h.world.in_workspace("team-a", doohickeys.path(namespace="default")),
            {**remote_object("Doohickey", "d1", namespace="default", size=1)},
        )
        h.rest.create(
            h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default")),
            remote_object("Widget", "w1", namespace="default", size=1),
        )
        for name in ("d1", "w1"):
            await eventually_async(
                lambda name=name: h.rest.get(
                    WIDGET.path(  # type: ignore[misc]
                        namespace=TEAM_A, name=default_local_name(namespace="default", name=name)
                    )
                ),
                what=f"{name} copy",
            )
        await settle(h.world)
        assert len(h.rest.list(WIDGET.path())) == 2
