"""`servlet run` as a process against a kcp of two shards, its URLs taken from a slice chosen by flag.

team-a is on the root shard, team-b on shard-1; the slice lives in team-a's workspace and points at
the org's export. Both workspaces' Widgets get local copies only if the process reads every URL of
that slice and routes each workspace's writes to its own shard.
"""

from __future__ import annotations

from pathlib import Path

from kcpsim import Topology
from kcpsim.harness.world import start_world
from kcpsim.topology import WorkspaceSpec
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import REMOTE_WIDGET, WIDGET, published_resource, remote_object, widget_crd

TWO_SHARDS = Topology(
    with_schema=False, workspaces=(WorkspaceSpec("team-a", shard=0), WorkspaceSpec("team-b", shard=1))
)


def test_a_servlet_process_syncs_both_shards_through_the_slice_its_flag_names(tmp_path: Path) -> None:
    env = E2E(start_world(tmp_path / "world", topology=TWO_SHARDS, shards=2))
    try:
        env.rest.create(
            "/clusters/root:myorg:team-a/apis/apis.kcp.io/v1alpha1/apiexportendpointslices",
            {
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIExportEndpointSlice",
                "metadata": {"name": "certs"},
                "spec": {"export": {"path": "root:myorg", "name": env.world.export}},
            },
        )
        env.publish(widget_crd(), published_resource("widgets", kind="Widget"))
        env.servlet(leader_election=False, extra=("--apiexportendpointslice", "root:myorg:team-a:certs"))
        for workspace in ("team-a", "team-b"):
            env.wait_served(workspace, REMOTE_WIDGET)
            env.create_remote(workspace, REMOTE_WIDGET, remote_object("Widget", "w1", namespace="default", size=1))
        expected = sorted(env.world.cluster(workspace) for workspace in ("team-a", "team-b"))
        env.eventually(
            lambda: sorted(obj["metadata"]["namespace"] for obj in env.local_objects(WIDGET)) == expected or None,
            what="a local copy of each shard's Widget",
        )
    finally:
        env.stop_all()
        env.world.stop()
