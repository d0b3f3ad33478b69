"""A sharded kcp: workspaces on every shard are synced, each write goes to its workspace's shard.

kcpsim runs two shards: team-a on `root` (the usual VW URL), team-b on `shard-1` (its own VW URL
under `/shards/shard-1`). Each VW URL serves only its own workspaces, so an object of team-b is
only seen, and can only be written, through shard-1's URL.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from kcpsim import Topology
from kcpsim.harness.world import SERVLET_NAMESPACE
from kcpsim.topology import WorkspaceSpec
from kcpsim.waiting import eventually_async
from servlet.app.runtime.leader import format_micro_time
from tests.integration.controllers_support import TEAM_A, TEAM_B, Harness, settle, world_and_daemon
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    REMOTE_WIDGET,
    SECRET,
    WIDGET,
    ZERTIFIKAT,
    certificate_crd,
    default_local_name,
    example_local_name,
    example_published_resource,
    published_resource,
    remote_object,
    secret,
    widget_crd,
    zertifikat,
)

TWO_SHARDS = Topology(
    with_schema=False, workspaces=(WorkspaceSpec("team-a", shard=0), WorkspaceSpec("team-b", shard=1))
)
ONLY_ROOT_BOUND = Topology(with_schema=False, workspaces=(WorkspaceSpec("team-a", shard=0),))
WIDGETS = (widget_crd(), published_resource("widgets", kind="Widget"))
SHARD_1 = "/shards/shard-1/services/apiexport/"
ROOT = "/services/apiexport/"


def _slice_urls(h: Harness) -> list[str]:
    found = (
        h.rest.get(f"/clusters/{h.world.org}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/{h.world.export}") or {}
    )
    return [endpoint["url"] for endpoint in (found.get("status") or {}).get("endpoints") or []]


def _vw_writes(h: Harness, cluster: str) -> list[str]:
    """The paths of the servlet's writes through a VW to workspace `cluster`."""
    return [
        call.path
        for call in h.world.callers.calls(token=h.token)
        if call.method != "GET" and "/services/apiexport/" in call.path and f"/clusters/{cluster}/" in call.path
    ]


def _local_widget(cluster: str, name: str) -> str:
    return WIDGET.path(namespace=cluster, name=default_local_name(namespace="default", name=name))


def _watched(h: Harness) -> list[str]:
    """Every URL the daemon's informers watch."""
    return h.controllers.shared.pool.locations()


async def test_objects_in_workspaces_on_every_shard_sync_both_ways(tmp_path: Path) -> None:
    documents = (certificate_crd(), example_published_resource())
    async with world_and_daemon(tmp_path, topology=TWO_SHARDS, shards=2, documents=documents) as h:
        assert len(_slice_urls(h)) == 2, "kcpsim lists one VW URL per shard with a binding"
        await h.wait_condition("publish-certmanager-certs", "Ready")
        local = example_local_name(namespace="default", name="web")
        for workspace, cluster in (("team-a", TEAM_A), ("team-b", TEAM_B)):
            h.rest.create(h.world.in_workspace(workspace, ZERTIFIKAT.path(namespace="default")), zertifikat("web"))
            await eventually_async(
                lambda cluster=cluster: h.rest.get(CERTIFICATE.path(namespace=cluster, name=local)),
                what=f"the local copy of {workspace}'s Zertifikat",
            )
            # Up: the local status and the TLS Secret the local controller writes.
            h.rest.merge_patch(
                CERTIFICATE.path(namespace=cluster, name=local) + "/status",
                {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
            )
            h.world.apply(secret("web-tls", namespace=cluster, data={"tls.crt": "YQ=="}))
            remote = h.world.in_workspace(workspace, ZERTIFIKAT.path(namespace="default", name="web"))
            await eventually_async(
                lambda remote=remote: (h.rest.get(remote) or {}).get("status", {}).get("conditions"),
                what=f"the status up in {workspace}",
            )
            await eventually_async(
                lambda workspace=workspace: h.rest.get(
                    h.world.in_workspace(workspace, SECRET.path(namespace="default", name="web-tls"))
                ),
                what=f"the TLS Secret up in {workspace}",
            )
        await settle(h.world)
        team_a, team_b = _vw_writes(h, TEAM_A), _vw_writes(h, TEAM_B)
        assert team_a and all(path.startswith(ROOT) for path in team_a), team_a
        assert team_b and all(path.startswith(SHARD_1) for path in team_b), team_b


async def test_a_shard_that_gains_its_first_consumer_later_is_picked_up(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, topology=ONLY_ROOT_BOUND, shards=2, documents=WIDGETS) as h:
        await h.wait_condition("widgets", "Ready")
        assert len(_slice_urls(h)) == 1
        team_c = h.world.sim.add_workspace("team-c", shard=1)
        await eventually_async(lambda: len(_slice_urls(h)) == 2 or None, what="shard-1's URL in the slice")

        h.rest.create(
            h.world.in_workspace("team-c", REMOTE_WIDGET.path(namespace="default")),
            remote_object("Widget", "w1", namespace="default", size=1),
        )
        await eventually_async(lambda: h.rest.get(_local_widget(team_c, "w1")), what="the local copy of team-c's w1")
        await settle(h.world)
        assert all(path.startswith(SHARD_1) for path in _vw_writes(h, team_c))


async def test_a_url_that_leaves_the_slice_stops_its_informers_and_deletes_no_copy(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, topology=TWO_SHARDS, shards=2, documents=WIDGETS, delete_orphans=True) as h:
        await h.wait_condition("widgets", "Ready")
        for workspace in ("team-a", "team-b"):
            h.rest.create(
                h.world.in_workspace(workspace, REMOTE_WIDGET.path(namespace="default")),
                remote_object("Widget", "w1", namespace="default", size=1),
            )
        for cluster in (TEAM_A, TEAM_B):
            await eventually_async(
                lambda cluster=cluster: h.rest.get(_local_widget(cluster, "w1")), what="both local copies"
            )
        before = h.worker("widgets")
        assert any(SHARD_1 in url for url in _watched(h))

        h.world.sim.remove_shard(1)
        await eventually_async(
            lambda: (h.controllers.manager.workers.get("widgets") not in (None, before)) or None,
            what="the sync worker to restart over the remaining URL",
        )
        await h.wait_condition("widgets", "Syncing")
        await settle(h.world)
        assert not any(SHARD_1 in url for url in _watched(h)), "shard-1 is still watched"
        assert any(ROOT in url and "/shards/" not in url for url in _watched(h)), "the root shard is not watched"
        # The orphan scan of the new worker ran with --delete-orphans: team-b's copy stays, as
        # its remote object is out of sight, not gone.
        assert h.rest.get(_local_widget(TEAM_B, "w1")) is not None
        assert h.rest.get(_local_widget(TEAM_A, "w1")) is not None
        assert h.rest.get(h.world.in_workspace("team-b", REMOTE_WIDGET.path(namespace="default", name="w1")))


LEASE = f"/apis/coordination.k8s.io/v1/namespaces/{SERVLET_NAMESPACE}/leases/tom.certificates.example.corp"


def _set_lease(h: Harness, **spec: Any) -> None:
    lease = h.rest.get(LEASE) or {}
    lease["spec"].update(spec)
    h.rest._send("PUT", LEASE, lease)


async def test_a_later_term_of_leadership_still_keeps_the_copies_of_a_departed_shard(tmp_path: Path) -> None:
    async with world_and_daemon(
        tmp_path, topology=TWO_SHARDS, shards=2, documents=WIDGETS, delete_orphans=True, leader_election=True
    ) as h:
        await h.wait_condition("widgets", "Ready")
        h.rest.create(
            h.world.in_workspace("team-b", REMOTE_WIDGET.path(namespace="default")),
            remote_object("Widget", "w1", namespace="default", size=1),
        )
        await eventually_async(lambda: h.rest.get(_local_widget(TEAM_B, "w1")), what="team-b's local copy")
        h.world.sim.remove_shard(1)
        await eventually_async(
            lambda: not any(SHARD_1 in url for url in _watched(h)) or None, what="shard-1 to be unwatched"
        )

        # Leadership lost and regained: a new term of the controllers, with fresh sync workers.
        _set_lease(h, holderIdentity="intruder", leaseDurationSeconds=3600, renewTime=_now())
        await eventually_async(lambda: h.daemon.controllers is None or None, what="the term to end")
        _set_lease(h, renewTime=_now(hours_ago=2))
        await eventually_async(lambda: h.daemon.controllers is not None or None, what="a new term")
        await h.wait_condition("widgets", "Syncing")
        await settle(h.world)
        assert h.rest.get(_local_widget(TEAM_B, "w1")) is not None, "a copy of a departed shard was deleted"


def _now(*, hours_ago: int = 0) -> str:
    return format_micro_time(datetime.now(UTC) - timedelta(hours=hours_ago))
