"""`python -m bench.scale_out`: the initial sync over shards, on one replica and shared by several.

    .venv/bin/python -m bench.scale_out                  # 100,000 objects, 10,000 workspaces, 4 shards; 1, 2, 4 replicas
    .venv/bin/python -m bench.scale_out --objects 10000 --workspaces 1000 --replicas 1,2
    .venv/bin/python -m bench.scale_out --objects 10000 --workspaces 1000 --replicas 1 --padding 4000
    .venv/bin/python -m bench.scale_out --smoke          # tiny, seconds: proves every figure is produced

Every replica count gets a fresh world (`bench.scenario`, the objects already there, the workspaces
spread over the shards by a hash of their logical cluster) and as many `servlet run` processes,
started together; with more than one they share the workspaces with `--buckets`. Convergence is
decided as in `bench.sync`: every object has its finalizer and its local copy, read from kcpsim's
request log. The same invocation runs the floor (`bench.floor`) once at the full size, and one
replica once more at a quarter of the objects in the same workspaces, so the RSS each object adds
can be set against the JSON cached for it (`bench.sync.memory_growth`).

Who wrote what comes from the server side: each replica has its own token, and the `CallerLog`
records every request with its token and the times it arrived and was answered. For each
workspace, `kcpsim.harness.writers` counts the replicas that wrote to it, how often the writer
changed, and the pairs of writes by two replicas in flight at the same time (the law: none).
The figures are written to the JSON file after each run, so an interrupted run keeps the finished
ones. Targets are not checked here; docs/performance.md sets the figures next to them.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from bench.__main__ import machine
from bench.floor import floor_seconds
from bench.report import report
from bench.scenario import (
    LOCAL,
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
from bench.sync import WORKERS, memory_growth
from kcpsim.harness.process import ServletProcess
from kcpsim.harness.world import Call
from kcpsim.harness.writers import NOT_WORK, handovers, overlapping, writes_by_workspace
from kcpsim.requestlog import RequestRecord
from servlet.app.observability.metrics import DURATION_BUCKETS, LOOP_LAG
from tests.integration.e2e.env import E2E

BUCKETS = 16  # the servlet's default number: 1, 2 and 4 replicas hold equal shares
FULL = Scale(objects=100_000, workspaces=10_000, shards=4)
SMOKE = Scale(objects=60, workspaces=12, shards=4)
BASELINE_FRACTION = 4  # the baseline run syncs a quarter of the objects in the same workspaces


@attrs.frozen
class Plan:
    scale: Scale
    replicas: tuple[int, ...]
    settle: float = 2.0  # seconds after convergence whose requests still count as the initial sync

    def timeout(self, objects: int) -> float:
        return 120 + objects * 0.1


def distinct(test: Callable[[RequestRecord], bool]) -> Callable[[RequestRecord], bool]:
    """`test`, true only for the first matching request of each path: an object's patches count
    once, even when its bucket changed hands and two replicas patched it."""
    seen: set[str] = set()

    def first(record: RequestRecord) -> bool:
        if not test(record) or record.path in seen:
            return False
        seen.add(record.path)
        return True

    return first


def tokens(replicas: int) -> list[str]:
    return [f"replica-{number}" for number in range(1, replicas + 1)]


def writers(env: E2E, scale: Scale, replicas: int) -> dict[str, Any]:
    """Per workspace, the replicas that wrote to it, from the server's record of who called."""
    clusters = {env.world.cluster(f"team-{w}"): f"team-{w}" for w in range(1, scale.workspaces + 1)}
    calls: list[Call] = [
        call for token in tokens(replicas) for call in env.simulated.callers.writes(token=token, ignore=NOT_WORK)
    ]
    by_workspace = {workspace: found for workspace, found in writes_by_workspace(calls, clusters).items() if found}
    shared = {workspace: found for workspace, found in by_workspace.items() if len({c.token for c in found}) > 1}
    local_creates = [c for c in calls if c.method == "POST" and c.status == 201 and c.path.endswith(f"/{LOCAL.plural}")]
    return {
        "workspaces_written": len(by_workspace),
        "workspaces_by_more_than_one_replica": len(shared),
        "handovers": sum(handovers(found) for found in shared.values()),
        "overlapping_writes": sum(len(overlapping(found)) for found in shared.values()),
        "workspaces_per_replica": {
            token: sum(1 for found in by_workspace.values() if any(c.token == token for c in found))
            for token in tokens(replicas)
        },
        "objects_per_replica": {token: sum(1 for c in local_creates if c.token == token) for token in tokens(replicas)},
    }


def event_loop(servlet: ServletProcess) -> dict[str, float]:
    """How often the replica's event loop ran a timer more than 1 s late, the longest lag (as the
    histogram's bucket it passed: a lag near the Lease's renew deadline means the replica stalled,
    a short one that the server was slow), and the leader Leases lost (a held loop misses renewals)."""
    samples = {
        line.rsplit(" ", 1)[0]: float(line.rsplit(" ", 1)[1])
        for line in servlet.metrics().splitlines()
        if line.startswith(LOOP_LAG)
    }
    count = samples.get(f"{LOOP_LAG}_count", 0.0)
    over = {bound: count - samples.get(f'{LOOP_LAG}_bucket{{le="{bound}"}}', 0.0) for bound in DURATION_BUCKETS}
    return {
        "lags_over_1s": int(over[1.0]),
        "longest_lag_over_s": max((bound for bound, lags in over.items() if lags > 0), default=0.0),
        "leaderships_lost": servlet.log_text().count("stopped leading"),
    }


def replica_run(scale: Scale, replicas: int, *, directory: Path, timeout: float, settle: float) -> dict[str, Any]:
    """A fresh world with the objects in it, `replicas` servlets started together, until converged."""
    env = prepared_world(directory, scale)
    try:
        seed_objects(env.simulated, scale)
        requests = Requests(env.simulated)
        requests.mark()
        flags = ("--buckets", str(BUCKETS)) if replicas > 1 else ()
        launched = time.time()
        sim_cpu = time.process_time()  # kcpsim runs in this process
        servlets = [env.servlet_process(token=token, extra=flags).launch() for token in tokens(replicas)]
        records = requests.wait_for_counts(
            (is_local_create, distinct(is_finalizer_patch)),  # a 201 is one object's own
            scale.objects,
            timeout=timeout,
            what=f"{scale.objects} local copies and finalizers from {replicas} replicas",
            guard=env.guard,
        )
        converged = max(write_end(r) for r in records if is_local_create(r) or is_finalizer_patch(r))
        first_write = min(r.started for r in records if r.verb in WRITE_VERBS)
        rss = [peak_rss_mb(servlet.pid) for servlet in servlets]
        cpu = [cpu_seconds(servlet.pid) for servlet in servlets]
        loop = [event_loop(servlet) for servlet in servlets]
        sim_cpu = time.process_time() - sim_cpu
        time.sleep(settle)  # anything sent late still belongs to the initial sync
        # Stopped before the figures below, which hold the simulator (in this process) for
        # seconds at 100,000 objects: long enough for a running replica to miss its renewals.
        for servlet in servlets:
            servlet.terminate()
        cached = cached_json_bytes(env)
        writes = object_writes(requests.since_mark())
        return {
            "replicas": replicas,
            "objects": scale.objects,
            "workspaces": scale.workspaces,
            "shards": scale.shards,
            "seconds_from_start": converged - launched,
            "seconds_from_first_write": converged - first_write,
            "peak_rss_mb": max(rss),
            "peak_rss_mb_per_replica": rss,
            "cpu_seconds_per_replica": cpu,
            "servlet_cpu_seconds": sum(cpu),
            "kcpsim_cpu_seconds": sim_cpu,
            "cached_json_bytes": cached,
            "writes_per_object": len(writes) / scale.objects,
            "writes": breakdown(writes),
            "writers": writers(env, scale, replicas),
            "event_loop_per_replica": loop,
        }
    finally:
        env.stop_all()
        env.world.stop()


def floor_run(scale: Scale, *, directory: Path) -> dict[str, float]:
    env = prepared_world(directory, scale)
    try:
        seed_objects(env.simulated, scale)
        seconds, cpu = floor_seconds(env.simulated, workers=WORKERS)
    finally:
        env.world.stop()
    return {"seconds": seconds, "cpu_seconds": cpu, "cpu_ms_per_object": cpu / scale.objects * 1000}


def run(plan: Plan, *, directory: Path, save: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    """Every run of `plan`, one replica first; `save` gets the figures so far after each run."""
    scale = plan.scale
    results: dict[str, Any] = {"machine": machine(), "scale": attrs.asdict(scale), "buckets": BUCKETS, "runs": []}

    def step(what: str) -> None:
        print(f"{time.strftime('%H:%M:%S')} {what}", file=sys.stderr, flush=True)

    for replicas in plan.replicas:
        step(f"{scale}: {replicas} replica(s)")
        found = replica_run(
            scale,
            replicas,
            directory=directory / f"replicas-{replicas}",
            timeout=plan.timeout(scale.objects),
            settle=plan.settle,
        )
        results["runs"].append(found)
        if "floor" not in results:
            save(results)
            step(f"{scale}: the floor")
            results["floor"] = floor_run(scale, directory=directory / "floor")
            small = attrs.evolve(scale, objects=max(scale.workspaces, scale.objects // BASELINE_FRACTION))
            step(f"{small}: 1 replica, the baseline for RSS per object")
            results["baseline"] = replica_run(
                small, 1, directory=directory / "baseline", timeout=plan.timeout(small.objects), settle=plan.settle
            )
        floor = results["floor"]
        found["cpu_ms_per_object"] = found["servlet_cpu_seconds"] / scale.objects * 1000
        found["cpu_ratio_to_floor"] = found["servlet_cpu_seconds"] / floor["cpu_seconds"]
        found["ratio_to_floor"] = found["seconds_from_first_write"] / floor["seconds"]
        one = next((r for r in results["runs"] if r["replicas"] == 1), None)
        if one is not None and "memory" not in results:
            results["memory"] = memory_growth(results["baseline"], one)
        save(results)
    return results


def rows(results: dict[str, Any]) -> list[tuple[str, str]]:
    floor = results["floor"]
    out = [
        (
            "floor",
            f"{floor['seconds']:.1f} s, CPU {floor['cpu_seconds']:.1f} s = {floor['cpu_ms_per_object']:.2f} ms/object",
        )
    ]
    if "memory" in results:
        m, base = results["memory"], results["baseline"]
        out.append(
            (
                "RSS per object, 1 replica",
                f"{m['rss_per_object_kb']:.1f} KB from {base['objects']} to {results['scale']['objects']} objects, "
                f"cached JSON {m['cached_json_per_object_kb']:.1f} KB: {m['rss_to_cached_json']:.1f}x",
            )
        )
    for r in results["runs"]:
        w, n = r["writers"], r["replicas"]
        label = f"{n} replica{'s' if n > 1 else ''}"
        out += [
            (
                f"{label}: converged",
                f"{r['seconds_from_start']:.1f} s from start, {r['seconds_from_first_write']:.1f} s from the first write "
                f"({r['ratio_to_floor']:.2f}x the floor)",
            ),
            ("  peak RSS per replica", ", ".join(f"{mb:.0f}" for mb in r["peak_rss_mb_per_replica"]) + " MB"),
            (
                "  CPU per object",
                f"{r['cpu_ms_per_object']:.2f} ms (all replicas, {r['cpu_ratio_to_floor']:.2f}x the floor); "
                f"kcpsim {r['kcpsim_cpu_seconds']:.0f} s",
            ),
            ("  writes per object", f"{r['writes_per_object']:.3f}"),
            (
                "  event loop",
                ", ".join(
                    f"{e['lags_over_1s']} lags over 1 s (longest over {e['longest_lag_over_s']:g} s), "
                    f"{e['leaderships_lost']} leaderships lost"
                    for e in r["event_loop_per_replica"]
                ),
            ),
            (
                "  objects, workspaces per replica",
                ", ".join(
                    f"{w['objects_per_replica'][t]}/{w['workspaces_per_replica'][t]}" for t in w["objects_per_replica"]
                ),
            ),
            (
                "  never two writers",
                f"{w['workspaces_by_more_than_one_replica']} of {w['workspaces_written']} workspaces written by more "
                f"than one replica ({w['handovers']} handovers), {w['overlapping_writes']} overlapping writes",
            ),
        ]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="initial sync over shards and replicas (issue 20)")
    parser.add_argument("--objects", type=int, default=FULL.objects)
    parser.add_argument("--workspaces", type=int, default=FULL.workspaces)
    parser.add_argument("--shards", type=int, default=FULL.shards)
    parser.add_argument("--replicas", default="1,2,4", help="replica counts, separated by commas")
    parser.add_argument(
        "--padding", type=int, default=0, help="characters added to each Widget's spec (objects of a realistic size)"
    )
    parser.add_argument("--smoke", action="store_true", help=f"{SMOKE}, 1 and 2 replicas: what CI runs")
    parser.add_argument("--json", type=Path, default=Path(tempfile.gettempdir()) / "servlet-scale-out.json")
    parser.add_argument("--dir", type=Path, default=None, help="where worlds and servlet logs go (default: a temp dir)")
    args = parser.parse_args(argv)
    if args.smoke:
        plan = Plan(scale=SMOKE, replicas=(1, 2), settle=0.5)
    else:
        replicas = tuple(int(part) for part in args.replicas.split(","))
        plan = Plan(scale=Scale(args.objects, args.workspaces, args.shards, args.padding), replicas=replicas)
    directory = args.dir or Path(tempfile.mkdtemp(prefix="servlet-scale-out-"))
    results = run(plan, directory=directory, save=lambda found: args.json.write_text(json.dumps(found, indent=2)))
    m = results["machine"]
    report(
        f"servlet scale-out, {plan.scale}, {m['cores']} cores, {m['memory_gb']} GB, Python {m['python']}, {m['date']}",
        rows(results),
        results=results,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
