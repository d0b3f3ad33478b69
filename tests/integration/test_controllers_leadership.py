"""Leadership in the running daemon against kcpsim, in-process: only the leader writes.

Two daemons share one event loop and one world; each has its own client token, so the request
log tells their writes apart. Lease timing is short (3 s lease, 2 s renew deadline).
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from kcpsim.harness.world import SERVLET_NAMESPACE, World, start_world
from kcpsim.waiting import eventually_async
from servlet.app.runtime.leader import format_micro_time
from tests.integration.controllers_support import TEAM_A, daemon_running, settle
from tests.integration.e2e.manifests import (
    REMOTE_WIDGET,
    WIDGET,
    default_local_name,
    published_resource,
    remote_object,
    widget_crd,
)

LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{SERVLET_NAMESPACE}/leases/tom.certificates.example.corp"


def _world(tmp_path: Path) -> World:
    world = start_world(tmp_path / "world")
    for document in (widget_crd(), published_resource("widgets", kind="Widget")):
        world.apply(document)
    return world


def _create(world: World, name: str) -> str:
    world.rest.create(
        world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default")),
        remote_object("Widget", name, namespace="default", size=1),
    )
    return WIDGET.path(namespace=TEAM_A, name=default_local_name(namespace="default", name=name))


async def test_only_the_leader_writes_and_a_stopped_leader_hands_over_at_once(tmp_path: Path) -> None:
    world = _world(tmp_path)
    try:
        async with (
            daemon_running(world, tmp_path, token="replica-1", leader_election=True) as first,
            daemon_running(
                world, tmp_path, token="replica-2", leader_election=True, wait_for_controllers=False
            ) as second,
        ):
            await eventually_async(
                lambda: second.daemon.elector is not None and second.daemon.elector.leadership_known,
                what="the follower to know its role",
            )
            await first.wait_condition("widgets", "Ready")
            w1 = _create(world, "w1")
            await eventually_async(lambda: world.rest.get(w1), what="w1 synced by the leader")
            await settle(world, token="replica-1")
            assert first.requests(since_mark=False, writes_only=True), "the leader wrote nothing"
            assert second.requests(since_mark=False, writes_only=True) == [], "the follower wrote"
            assert second.daemon.controllers is None

            first.stop.set()  # SIGTERM: finish, release the lease
            await eventually_async(
                lambda: second.daemon.controllers is not None,
                timeout=2.0,
                what="the follower to take over well before the lease would expire",
            )
            w2 = _create(world, "w2")
            await eventually_async(lambda: world.rest.get(w2), what="w2 synced by the new leader")
            assert any("widgets" in r for r in second.requests(since_mark=False, writes_only=True))
    finally:
        world.stop()


async def test_a_lost_lease_stops_all_writes_and_a_regained_one_resumes_them(tmp_path: Path) -> None:
    world = _world(tmp_path)
    try:
        async with daemon_running(world, tmp_path, leader_election=True) as h:
            await h.wait_condition("widgets", "Ready")
            metrics = h.daemon.metrics
            assert b"servlet_leader 1.0" in metrics.render()

            lease = world.rest.get(LEASE) or {}
            lease["spec"].update(
                holderIdentity="intruder", leaseDurationSeconds=3600, renewTime=format_micro_time(datetime.now(UTC))
            )
            world.rest._send("PUT", LEASE, lease)
            await eventually_async(
                lambda: h.daemon.controllers is None,
                timeout=5.0,
                what="the controllers to stop once the lease cannot be renewed",
            )
            assert b"servlet_leader 0.0" in metrics.render()

            h.set_mark()
            local = _create(world, "while-not-leading")
            await asyncio.sleep(1.0)
            assert h.requests(writes_only=True) == [], "a replica without the lease wrote"
            assert world.rest.get(local) is None

            lease = world.rest.get(LEASE) or {}
            lease["spec"].update(renewTime=format_micro_time(datetime.now(UTC) - timedelta(hours=2)))
            world.rest._send("PUT", LEASE, lease)  # the intruder's lease runs out
            await eventually_async(lambda: world.rest.get(local), what="syncing to resume with the lease")
            assert b"servlet_leader 1.0" in metrics.render()
    finally:
        world.stop()
