"""kcpsim as a sharded kcp: one VW URL per shard with a binding, each serving its own workspaces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kcpsim import KcpSim, Topology
from kcpsim.shards import Shards
from kcpsim.topology import WorkspaceSpec
from tests.integration.kcpsim.helpers import Raw

TEAM_A, TEAM_B = "k7v2m9x4q1w8z3r5", "p4n8c2l6t0y9h1j3"
TWO_SHARDS = Topology(workspaces=(WorkspaceSpec("team-a", shard=0), WorkspaceSpec("team-b", shard=1)))
SLICES = "/clusters/root:myorg/apis/apis.kcp.io/v1alpha1/apiexportendpointslices"


def _endpoints(raw: Raw, sim: KcpSim, name: str = "certificates.example.corp") -> list[str]:
    found = raw("GET", f"{SLICES}/{name}").json()
    return [endpoint["url"].removeprefix(sim.base_url) for endpoint in found["status"].get("endpoints") or []]


def _clusters(raw: Raw, vw: str) -> list[str]:
    items: list[dict[str, Any]] = raw("GET", f"{vw}/clusters/*/api/v1/namespaces").json()["items"]
    return sorted({item["metadata"]["annotations"]["kcp.io/cluster"] for item in items})


def test_the_slice_lists_each_shard_with_a_binding_and_each_url_serves_its_own_workspaces(
    kcpsim_factory: Callable[..., KcpSim],
) -> None:
    sim = kcpsim_factory(topology=TWO_SHARDS, shards=3)
    with Raw(sim) as raw:
        root, shard_1 = sim.vw_url(shard=0), sim.vw_url(shard=1)
        assert _endpoints(raw, sim) == [root.removeprefix(sim.base_url), shard_1.removeprefix(sim.base_url)]
        assert _clusters(raw, root.removeprefix(sim.base_url)) == [TEAM_A]
        assert _clusters(raw, shard_1.removeprefix(sim.base_url)) == [TEAM_B]
        elsewhere = raw("GET", f"{shard_1.removeprefix(sim.base_url)}/clusters/{TEAM_A}/api/v1/namespaces")
        assert elsewhere.status_code == 403
        assert "not served by shard shard-1" in elsewhere.json()["message"]
        # Workspace URLs go through the front proxy: every shard's workspaces answer there.
        assert raw("GET", "/clusters/root:myorg:team-b/api/v1/namespaces").status_code == 200

        sim.add_workspace("team-c", shard=2)
        assert len(_endpoints(raw, sim)) == 3

        sim.remove_shard(1)
        assert _endpoints(raw, sim) == [root.removeprefix(sim.base_url), sim.vw_url(shard=2).removeprefix(sim.base_url)]
        assert raw("GET", f"{shard_1.removeprefix(sim.base_url)}/clusters/*/api/v1/namespaces").status_code == 404


def test_one_shard_keeps_the_usual_url_and_a_hash_spreads_workspaces_the_same_way_each_time() -> None:
    assert Shards().shard_of(TEAM_A) == 0
    spread = [Shards(count=4).shard_of(f"cluster{index}") for index in range(40)]
    assert spread == [Shards(count=4).shard_of(f"cluster{index}") for index in range(40)]
    assert set(spread) == {0, 1, 2, 3}
    assert Shards().base_url("http://kcp", 0) == "http://kcp"
    assert Shards(count=2).base_url("http://kcp", 1) == "http://kcp/shards/shard-1"


def test_a_slice_in_another_workspace_gets_the_urls_of_the_export_it_names(
    kcpsim_factory: Callable[..., KcpSim],
) -> None:
    sim = kcpsim_factory(topology=TWO_SHARDS, shards=2)
    with Raw(sim) as raw:
        team_a_slices = "/clusters/root:myorg:team-a/apis/apis.kcp.io/v1alpha1/apiexportendpointslices"
        for name, export in (("elsewhere", "certificates.example.corp"), ("dangling", "no-such-export")):
            body = {
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIExportEndpointSlice",
                "metadata": {"name": name},
                "spec": {"export": {"path": "root:myorg", "name": export}},
            }
            assert raw("POST", team_a_slices, body).status_code == 201
        elsewhere = raw("GET", f"{team_a_slices}/elsewhere").json()
        assert [e["url"] for e in elsewhere["status"]["endpoints"]] == [sim.vw_url(shard=0), sim.vw_url(shard=1)]
        dangling = raw("GET", f"{team_a_slices}/dangling").json()
        assert dangling["status"]["endpoints"] == []
        valid = next(c for c in dangling["status"]["conditions"] if c["type"] == "APIExportValid")
        assert valid["status"] == "False"
