"""Telling replicas' writes apart per workspace: which workspace a path is about, overlaps, handovers."""

from __future__ import annotations

from kcpsim.harness.world import Call
from kcpsim.harness.writers import handovers, overlapping, workspace_of, writes_by_workspace

CLUSTERS = {"abc": "team-1", "def": "team-2"}


def _call(token: str, path: str, started: float, ended: float) -> Call:
    return Call(token=token, method="PATCH", path=path, status=200, started=started, ended=ended)


def test_a_path_names_its_workspace_through_the_cluster_or_the_local_namespace() -> None:
    vw = "/shards/shard-1/services/apiexport/org/widgets/clusters/abc/apis/g/v1/namespaces/default/widgets/w"
    assert workspace_of(vw, CLUSTERS) == "team-1"
    assert workspace_of("/apis/g/v1/namespaces/def/widgets", CLUSTERS) == "team-2"
    assert workspace_of("/api/v1/namespaces", CLUSTERS) is None
    assert workspace_of("/clusters/other/api/v1/namespaces/abc/configmaps", CLUSTERS) == "team-1"


def test_writes_are_grouped_per_workspace_in_log_order() -> None:
    calls = [
        _call("a", "/clusters/def/x", 1, 2),
        _call("b", "/clusters/abc/x", 2, 3),
        _call("a", "/clusters/def/y", 3, 4),
    ]
    grouped = writes_by_workspace(calls, CLUSTERS)
    assert [c.path for c in grouped["team-2"]] == ["/clusters/def/x", "/clusters/def/y"]
    assert [c.token for c in grouped["team-1"]] == ["b"]


def test_writes_of_two_tokens_in_flight_together_overlap_and_one_after_the_other_do_not() -> None:
    one_after_the_other = [_call("a", "p", 0, 1), _call("b", "p", 1, 2), _call("a", "p", 2.5, 3)]
    assert overlapping(one_after_the_other) == []
    assert handovers(one_after_the_other) == 2
    long_write = _call("a", "p", 0, 5)
    inside = _call("b", "p", 3, 4)
    assert overlapping([inside, _call("a", "p", 1, 2), long_write]) == [(long_write, inside)]
    assert overlapping([_call("a", "p", 0, 2), _call("a", "p", 1, 3)]) == []  # one token: no law broken
    assert handovers([_call("a", "p", 0, 1), _call("a", "p", 1, 2)]) == 0
