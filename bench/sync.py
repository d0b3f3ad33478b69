"""Initial sync throughput, peak memory and API economy of `servlet run` (issue 6, targets 2, 3, 5).

One measured run: a prepared world with the objects already there, `servlet run` started, wall
time until every object has its finalizer and its local copy, the servlet's peak RSS, and every
request it sent, counted per object from kcpsim's request log. Then, on the converged world, a
restart and one full resync (requests counted) and one changed field (requests counted). The
floor runs in a second world prepared the same way. It does not judge the figures.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.floor import floor_seconds
from bench.scenario import (
    LOCAL,
    NAMESPACE,
    REMOTE,
    WRITE_VERBS,
    Requests,
    Scale,
    breakdown,
    cached_json_bytes,
    cpu_seconds,
    is_finalizer_patch,
    is_local_create,
    object_writes,
    peak_rss_mb,
    prepared_world,
    seed_objects,
    write_end,
)
from kcpsim.harness.process import ServletProcess
from tests.integration.e2e.env import E2E

WORKERS = 4  # the servlet's default --sync-workers, also the floor's concurrency
RESYNC = 5.0
OBJECT_RESOURCES = frozenset({LOCAL.plural, REMOTE.plural, "namespaces"})


def _reconciles(servlet: ServletProcess) -> float:
    return sum(
        v
        for line in servlet.metrics().splitlines()
        if line.startswith("servlet_reconciles_total{") and 'controller="sync' in line
        for v in [float(line.rsplit(" ", 1)[1])]
    )


def initial_sync(env: E2E, scale: Scale, *, timeout: float) -> tuple[dict[str, Any], ServletProcess]:
    requests = Requests(env.world)
    requests.mark()
    launched = time.time()
    sim_cpu = time.process_time()  # kcpsim runs in this process
    servlet = env.servlet_process(token="servlet").launch()
    records = requests.wait_for_counts(
        (is_local_create, is_finalizer_patch),
        scale.objects,
        timeout=timeout,
        what=f"{scale.objects} local copies and finalizers",
        guard=servlet.check_alive,
    )
    converged = max(write_end(r) for r in records if is_local_create(r) or is_finalizer_patch(r))
    first_write = min(r.started for r in records if r.verb in WRITE_VERBS)
    rss = peak_rss_mb(servlet.pid)
    servlet_cpu, sim_cpu = cpu_seconds(servlet.pid), time.process_time() - sim_cpu
    time.sleep(2.0)  # anything sent late still belongs to the initial sync
    cached = cached_json_bytes(env)
    records = requests.since_mark()
    writes = object_writes(records)
    return {
        "seconds_from_start": converged - launched,
        "seconds_from_first_write": converged - first_write,
        "peak_rss_mb": rss,
        "cached_json_bytes": cached,
        "servlet_cpu_seconds": servlet_cpu,
        "kcpsim_cpu_seconds": sim_cpu,
        "requests": breakdown(records),
        "writes_per_object": len(writes) / scale.objects,
        "writes": breakdown(writes),
    }, servlet


def memory_growth(small: dict[str, Any], large: dict[str, Any]) -> dict[str, float]:
    """Peak RSS and cached JSON added per object from run `small` to run `large` (both with
    `objects`, `peak_rss_mb` and `cached_json_bytes`), and their ratio: what does not grow with
    the objects (the interpreter, the libraries, the workspaces) drops out of the difference."""
    added = large["objects"] - small["objects"]
    rss = (large["peak_rss_mb"] - small["peak_rss_mb"]) * 1024 * 1024 / added
    cached = (large["cached_json_bytes"] - small["cached_json_bytes"]) / added
    return {
        "rss_per_object_kb": rss / 1024,
        "cached_json_per_object_kb": cached / 1024,
        "rss_to_cached_json": rss / cached,
    }


def resync_and_change(env: E2E, scale: Scale, objects: list[Any], *, timeout: float) -> dict[str, Any]:
    """Restart with a short resync period; count one no-op resync, then one changed field."""
    requests = Requests(env.world)
    servlet = env.servlet(token="servlet-resync", extra=("--resync-period", str(RESYNC)))
    env.eventually(lambda: _reconciles(servlet) >= scale.objects, timeout=timeout, what="the restart's reconciles")
    requests.mark()
    before = _reconciles(servlet)
    env.eventually(
        lambda: _reconciles(servlet) >= before + scale.objects, timeout=timeout + RESYNC, what="one full resync"
    )
    resync = [r for r in requests.since_mark() if "leases" not in r.path]
    target = objects[0]
    requests.mark()
    env.patch_remote(target.workspace, REMOTE, namespace=NAMESPACE, name=target.name, patch={"spec": {"color": "red"}})
    requests.wait_for_counts(
        (lambda r: r.cluster == "" and r.verb == "patch" and r.resource == LOCAL.plural,),
        1,
        timeout=30,
        what="the changed field to reach the local copy",
    )
    time.sleep(1.0)
    change = [r for r in requests.since_mark() if "leases" not in r.path]
    servlet.stop()
    return {
        "resync_reconciles": scale.objects,
        "resync_requests": breakdown(resync),
        "resync_object_writes": sum(r.verb in WRITE_VERBS and r.resource in OBJECT_RESOURCES for r in resync),
        "resync_gets": sum(r.verb == "get" for r in resync),
        # Requests about anything but the objects (the PublishedResource's status after the restart).
        "resync_other": breakdown([r for r in resync if r.resource not in OBJECT_RESOURCES]),
        # The first request is the user's own patch; the rest are the servlet's.
        "change_requests": breakdown(change[1:]),
        "change_writes": sum(r.verb in WRITE_VERBS for r in change[1:]),
    }


def _servlet_run(scale: Scale, *, economy: bool, directory: Path) -> dict[str, Any]:
    timeout = 120 + scale.objects * 0.1
    env = prepared_world(directory, scale)
    try:
        objects = seed_objects(env.world, scale)
        result, servlet = initial_sync(env, scale, timeout=timeout)
        servlet.stop()
        if economy:
            result["economy"] = resync_and_change(env, scale, objects, timeout=timeout)
    finally:
        env.stop_all()
        env.world.stop()
    return result


def _floor_run(scale: Scale, *, directory: Path) -> tuple[float, float]:
    env = prepared_world(directory, scale)
    try:
        seed_objects(env.world, scale)
        return floor_seconds(env.world, workers=WORKERS)
    finally:
        env.world.stop()


def run(scale: Scale, *, economy: bool, floor: bool, repeats: int = 1, directory: Path | None = None) -> dict[str, Any]:
    """`repeats` measured runs (each followed by its floor, when asked), summarised by medians.

    The machine's speed drifts by tens of percent within minutes, so a servlet run and its floor
    run back to back form a pair, and the ratio reported is the median of the pairs' ratios.
    Request counts come from the first run (they are the same in every run); peak RSS is the
    largest of all runs.
    """
    base = Path(directory or tempfile.mkdtemp(prefix="servlet-bench-"))
    runs: list[dict[str, Any]] = []
    for attempt in range(1, repeats + 1):
        where = base / f"run-{attempt}"
        result = _servlet_run(scale, economy=economy and attempt == 1, directory=where / "servlet")
        if floor:
            result["floor_seconds"], result["floor_cpu_seconds"] = _floor_run(scale, directory=where / "floor")
            result["cpu_ratio_to_floor"] = result["servlet_cpu_seconds"] / result["floor_cpu_seconds"]
            result["ratio_to_floor"] = result["seconds_from_first_write"] / result["floor_seconds"]
        runs.append(result)
    summary = dict(runs[0])
    for figure in (
        "seconds_from_start",
        "seconds_from_first_write",
        "servlet_cpu_seconds",
        "kcpsim_cpu_seconds",
        *(("floor_seconds", "ratio_to_floor", "floor_cpu_seconds", "cpu_ratio_to_floor") if floor else ()),
    ):
        summary[figure] = statistics.median(r[figure] for r in runs)
    summary["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    summary["runs"] = [
        {
            key: r[key]
            for key in (
                "seconds_from_first_write",
                "peak_rss_mb",
                "servlet_cpu_seconds",
                "floor_seconds",
                "floor_cpu_seconds",
                "cpu_ratio_to_floor",
                "ratio_to_floor",
            )
            if key in r
        }
        for r in runs
    ]
    return {"objects": scale.objects, "workspaces": scale.workspaces, **summary}


if __name__ == "__main__":
    import json
    import sys

    print(json.dumps(run(Scale(int(sys.argv[1]), int(sys.argv[2])), economy=True, floor=True), indent=2))
