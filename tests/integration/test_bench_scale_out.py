"""The scale-out benchmark runs end to end at a tiny size and produces every figure of issue 20.

Four shards, one replica and then two sharing the workspaces through bucket Leases. It checks that
each figure is there and plausible, and that the replicas kept the one law that does not depend
on the machine: no two of them write to one workspace at the same time. The figures that matter
come from `python -m bench.scale_out` (docs/performance.md, section 9).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.scale_out import SMOKE, main


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("scale-out")
    output = directory / "figures.json"
    assert main(["--smoke", "--json", str(output), "--dir", str(directory / "worlds")]) == 0
    return dict(json.loads(output.read_text()))


def test_one_and_two_replicas_are_measured_over_four_shards(figures: dict[str, Any]) -> None:
    assert figures["scale"] == {"objects": SMOKE.objects, "workspaces": SMOKE.workspaces, "shards": 4, "padding": 0}
    assert [run["replicas"] for run in figures["runs"]] == [1, 2]


def test_every_run_reports_time_memory_cpu_and_writes(figures: dict[str, Any]) -> None:
    for run in figures["runs"]:
        assert 0 < run["seconds_from_first_write"] <= run["seconds_from_start"]
        assert len(run["peak_rss_mb_per_replica"]) == run["replicas"]
        assert all(mb > 10 for mb in run["peak_rss_mb_per_replica"])
        assert len(run["cpu_seconds_per_replica"]) == run["replicas"]
        assert run["cpu_ms_per_object"] > 0 and run["cpu_ratio_to_floor"] > 0 and run["ratio_to_floor"] > 0
        # Every object needs at least its finalizer and its local copy, whichever replica wrote them.
        assert run["writes"]["patch widgets (VW)"] >= run["objects"]
        assert run["writes"]["create widgets (service)"] == run["objects"]
        assert run["writes_per_object"] >= 2
        # The event loop is watched in every replica; none held it long enough to lose its Lease.
        assert len(run["event_loop_per_replica"]) == run["replicas"]
        assert all(loop["leaderships_lost"] == 0 for loop in run["event_loop_per_replica"])


def test_the_floor_and_the_memory_per_object_are_measured(figures: dict[str, Any]) -> None:
    assert figures["floor"]["seconds"] > 0 and figures["floor"]["cpu_ms_per_object"] > 0
    assert figures["baseline"]["objects"] < figures["scale"]["objects"]
    memory = figures["memory"]
    # Both sides of every object are cached: a Widget's JSON alone is over 200 bytes.
    assert memory["cached_json_per_object_kb"] > 2 * 200 / 1024
    assert "rss_per_object_kb" in memory and "rss_to_cached_json" in memory


def test_each_workspace_is_written_by_one_replica_at_a_time_and_the_work_is_shared(figures: dict[str, Any]) -> None:
    for run in figures["runs"]:
        writers = run["writers"]
        assert writers["workspaces_written"] == figures["scale"]["workspaces"]
        assert writers["overlapping_writes"] == 0
        assert sum(writers["objects_per_replica"].values()) == run["objects"]
    two = figures["runs"][1]["writers"]
    assert all(count > 0 for count in two["objects_per_replica"].values()), two
