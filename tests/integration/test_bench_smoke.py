"""The benchmark harness runs end to end at a tiny size and produces every figure of issue 6.

It checks that each figure is there and plausible, not that a target is met: machines differ, and
the figures that matter come from `python -m bench --full` (docs/performance.md).
"""

from __future__ import annotations

import json

import pytest

from bench.__main__ import main
from bench.related_resync import run as related_resync


@pytest.fixture(scope="module")
def figures(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    directory = tmp_path_factory.mktemp("bench")
    output = directory / "figures.json"
    assert main(["--smoke", "--json", str(output), "--dir", str(directory / "worlds")]) == 0
    return dict(json.loads(output.read_text()))


def test_the_machine_the_figures_came_from_is_recorded(figures: dict[str, object]) -> None:
    machine = figures["machine"]
    assert isinstance(machine, dict)
    assert machine["cores"] >= 1 and machine["memory_gb"] > 0 and machine["python"].startswith("3.")


@pytest.mark.parametrize(
    "figure",
    [
        "json_roundtrip_us",
        "fresh_us",
        "converged_us",
        "fresh_vs_json",
        "converged_vs_json",
        "mutated_fresh_us",
        "mutated_converged_us",
        "mutated_converged_vs_json",
    ],
)
def test_planning_is_timed_against_a_json_round_trip(figures: dict[str, object], figure: str) -> None:
    planning = figures["planning"]
    assert isinstance(planning, dict)
    assert planning["object_bytes"] > 1500
    assert planning[figure] > 0


def test_every_size_reports_time_memory_and_writes(figures: dict[str, object]) -> None:
    runs = figures["sync"]
    assert isinstance(runs, list)
    assert [run["objects"] for run in runs] == [20, 40]
    for run in runs:
        assert 0 < run["seconds_from_first_write"] <= run["seconds_from_start"]
        assert run["peak_rss_mb"] > 10
        # Both sides of every object are cached: a Widget's JSON alone is over 200 bytes.
        assert run["cached_json_bytes"] > 2 * 200 * run["objects"]
        # Every object needs at least its finalizer and its local copy.
        assert run["writes"]["patch widgets (VW)"] == run["objects"]
        assert run["writes"]["create widgets (service)"] == run["objects"]


def test_the_largest_size_has_a_floor_and_api_economy(figures: dict[str, object]) -> None:
    largest = figures["sync"][-1]  # type: ignore[index]
    assert largest["floor_seconds"] > 0 and largest["ratio_to_floor"] > 0
    assert largest["floor_cpu_seconds"] > 0 and largest["cpu_ratio_to_floor"] > 0
    economy = largest["economy"]
    for key in ("resync_object_writes", "resync_gets", "change_writes", "change_requests"):
        assert key in economy, key


@pytest.mark.parametrize("direction", ["down", "up", "kcpsim_write"])
def test_latency_has_percentiles_for_each_direction(figures: dict[str, object], direction: str) -> None:
    latency = figures["latency"]
    assert isinstance(latency, dict)
    assert latency[direction]["count"] > 0
    assert 0 < latency[direction]["p50_ms"] <= latency[direction]["p99_ms"]


def test_related_objects_of_every_form_add_no_request_to_a_no_op_resync(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    counted = related_resync(widgets=2, directory=tmp_path_factory.mktemp("related-resync"))
    assert counted["resync"] == {}
    # After the restart each related object is read once, as the informers hold metadata only.
    restart = counted["restart"]
    assert restart["get databases (VW)"] == restart["get databases (service)"] == 4
    assert not any(
        kind.startswith(("create", "patch", "delete")) and "publishedresources" not in kind for kind in restart
    )
