"""`python -m bench`: every figure of issue 6 in one run, printed as a table and written as JSON.

    .venv/bin/python -m bench                 # reduced size, a few minutes
    .venv/bin/python -m bench --full          # 10,000 objects in 1,000 workspaces
    .venv/bin/python -m bench --smoke         # tiny, seconds: proves every figure is produced

Sizes are objects; each run spreads them over objects/10 workspaces. The largest size also counts
API economy (a restart with one full resync, one changed field) and runs the floor. Targets are
not checked here (machines differ): docs/performance.md sets the figures next to them.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import tempfile
from pathlib import Path
from typing import Any

import attrs

from bench import latency, planning, sync
from bench.report import report
from bench.scenario import Scale, prepared_world, seed_objects


@attrs.frozen
class Plan:
    sizes: tuple[int, ...]
    latency_objects: int
    latency_seconds: float
    latency_rate: float
    planning_seconds: float
    repeats: int  # runs per size; the median is reported


PLANS = {
    "smoke": Plan(
        sizes=(20, 40), latency_objects=20, latency_seconds=2.0, latency_rate=10.0, planning_seconds=0.3, repeats=1
    ),
    "reduced": Plan(
        sizes=(300, 1000, 3000),
        latency_objects=1000,
        latency_seconds=20.0,
        latency_rate=50.0,
        planning_seconds=3.0,
        repeats=3,
    ),
    "full": Plan(
        sizes=(1000, 3000, 10000),
        latency_objects=1000,
        latency_seconds=60.0,
        latency_rate=50.0,
        planning_seconds=5.0,
        repeats=3,
    ),
}


def scale_of(objects: int) -> Scale:
    return Scale(objects=objects, workspaces=max(1, objects // 10))


def machine() -> dict[str, Any]:
    memory_kb = (
        next(
            (
                int(line.split()[1])
                for line in Path("/proc/meminfo").read_text().splitlines()
                if line.startswith("MemTotal:")
            ),
            0,
        )
        if Path("/proc/meminfo").exists()
        else 0
    )
    return {
        "cores": os.cpu_count(),
        "memory_gb": round(memory_kb / 1024 / 1024, 1),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
    }


def run_latency(plan: Plan, directory: Path) -> dict[str, Any]:
    scale = scale_of(plan.latency_objects)
    env = prepared_world(directory, scale)
    try:
        objects = seed_objects(env.world, scale)
        sync.initial_sync(env, scale, timeout=120 + scale.objects * 0.1)
        return latency.measure(env, objects, rate=plan.latency_rate, seconds=plan.latency_seconds)
    finally:
        env.stop_all()
        env.world.stop()


def run(plan: Plan, *, directory: Path) -> dict[str, Any]:
    results: dict[str, Any] = {"machine": machine(), "plan": attrs.asdict(plan)}
    print(f"planning ({plan.planning_seconds} s)", file=sys.stderr, flush=True)
    results["planning"] = planning.measure(seconds=plan.planning_seconds).as_dict()
    results["sync"] = []
    for objects in plan.sizes:
        largest = objects == max(plan.sizes)
        print(
            f"initial sync of {scale_of(objects)}{' with economy and floor' if largest else ''}",
            file=sys.stderr,
            flush=True,
        )
        results["sync"].append(
            sync.run(
                scale_of(objects),
                economy=largest,
                floor=largest,
                repeats=plan.repeats,
                directory=directory / f"sync-{objects}",
            )
        )
    print(
        f"latency: {plan.latency_objects} objects, {plan.latency_rate}/s for {plan.latency_seconds} s",
        file=sys.stderr,
        flush=True,
    )
    results["latency"] = run_latency(plan, directory / "latency")
    return results


def rows(results: dict[str, Any]) -> list[tuple[str, str]]:
    p = results["planning"]
    out = [
        ("1 planning, object size", f"{p['object_bytes']} bytes of JSON"),
        ("1 json.loads(json.dumps(obj))", f"{p['json_roundtrip_us']:.1f} us"),
        (
            "1 plan, fresh object",
            f"{p['fresh_us']:.1f} us = {p['fresh_per_second']:.0f} plans/s = {p['fresh_vs_json']:.1f}x json",
        ),
        (
            "1 plan, converged object",
            f"{p['converged_us']:.1f} us = {p['converged_per_second']:.0f} plans/s = "
            f"{p['converged_vs_json']:.1f}x json",
        ),
        (
            "1 plan with mutations (4 steps), fresh",
            f"{p['mutated_fresh_us']:.1f} us = {p['mutated_fresh_vs_json']:.1f}x json",
        ),
        (
            "1 plan with mutations (4 steps), converged",
            f"{p['mutated_converged_us']:.1f} us = {p['mutated_converged_vs_json']:.1f}x json",
        ),
    ]
    largest = results["sync"][-1]
    n = largest["objects"]
    out.append(
        (
            f"2 initial sync, writes per object ({n})",
            f"{largest['writes_per_object']:.3f}: " + ", ".join(f"{k} {v}" for k, v in largest["writes"].items()),
        )
    )
    economy = largest["economy"]
    out.append(
        (
            f"2 no-op resync of {n} objects",
            f"{economy['resync_object_writes']} object writes, "
            f"{economy['resync_gets']} GETs, other requests: {economy['resync_other'] or 'none'}",
        )
    )
    out.append(("2 one changed field", f"{economy['change_writes']} writes: {economy['change_requests']}"))
    pairs = ", ".join(f"{r['seconds_from_first_write']:.1f}/{r['floor_seconds']:.1f} s" for r in largest["runs"])
    out.append(
        (
            f"3 initial sync {largest['objects']} objects / {largest['workspaces']} workspaces",
            f"median {largest['seconds_from_first_write']:.1f} s (from start {largest['seconds_from_start']:.1f} s), "
            f"floor {largest['floor_seconds']:.1f} s, ratio {largest['ratio_to_floor']:.2f} "
            f"(median of {len(largest['runs'])} pairs: {pairs})",
        )
    )
    each_rss = ", ".join(f"{r['peak_rss_mb']:.0f}" for r in largest["runs"])
    out.append(("3 peak RSS", f"{largest['peak_rss_mb']:.0f} MB (largest of {each_rss})"))
    out.append(
        (
            "3 CPU during initial sync",
            f"servlet {largest['servlet_cpu_seconds']:.1f} s "
            f"({largest['servlet_cpu_seconds'] / largest['objects'] * 1000:.2f} ms per object), "
            f"floor {largest['floor_cpu_seconds']:.1f} s "
            f"({largest['floor_cpu_seconds'] / largest['objects'] * 1000:.2f} ms per object), "
            f"ratio {largest['cpu_ratio_to_floor']:.2f} (median of the pairs); kcpsim {largest['kcpsim_cpu_seconds']:.1f} s",
        )
    )
    lat = results["latency"]
    for direction, label in (("down", "remote change -> local copy"), ("up", "local status -> remote status")):
        d = lat[direction]
        out.append(
            (
                f"4 {label}",
                f"p50 {d['p50_ms']:.1f} ms, p99 {d['p99_ms']:.1f} ms, max {d['max_ms']:.1f} ms ({d['count']} changes)",
            )
        )
    w = lat["kcpsim_write"]
    out.append(("4 kcpsim's own write latency", f"p50 {w['p50_ms']:.1f} ms, p99 {w['p99_ms']:.1f} ms"))
    out.append(("4 changes not propagated", str(lat["missed"])))
    for run_ in results["sync"]:
        out.append(
            (
                f"5 growth {run_['objects']} objects / {run_['workspaces']} workspaces",
                f"median {run_['seconds_from_first_write']:.1f} s of {len(run_['runs'])} "
                f"({run_['seconds_from_first_write'] / run_['objects'] * 1000:.1f} ms/object), "
                f"peak RSS {run_['peak_rss_mb']:.0f} MB",
            )
        )
    out.append(("5 memory per cached object", memory_per_object(results["sync"])))
    return out


def memory_per_object(runs: list[dict[str, Any]]) -> str:
    """Peak RSS added per object between the two largest sizes, against the JSON it caches.

    The difference of two sizes leaves out what does not grow with the objects (the interpreter,
    the libraries, the caches of CRDs and schemas); the JSON is that of the synced kind's objects
    on both sides, measured in the same runs.
    """
    if len(runs) < 2:
        return "needs two sizes"
    small, large = sorted(runs, key=lambda r: r["objects"])[-2:]
    growth = sync.memory_growth(small, large)
    return (
        f"{growth['rss_per_object_kb']:.1f} KB of RSS per object from {small['objects']} to {large['objects']}, "
        f"{growth['cached_json_per_object_kb']:.1f} KB of cached JSON: {growth['rss_to_cached_json']:.1f}x"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="servlet benchmarks (issue 6)")
    size = parser.add_mutually_exclusive_group()
    size.add_argument(
        "--full", action="store_const", dest="plan", const="full", help="10,000 objects, 1,000 workspaces"
    )
    size.add_argument("--smoke", action="store_const", dest="plan", const="smoke", help="tiny, for CI")
    parser.add_argument("--json", type=Path, default=Path(tempfile.gettempdir()) / "servlet-bench.json")
    parser.add_argument("--dir", type=Path, default=None, help="where worlds and servlet logs go (default: a temp dir)")
    args = parser.parse_args(argv)
    plan = PLANS[args.plan or "reduced"]
    directory = args.dir or Path(tempfile.mkdtemp(prefix="servlet-bench-"))
    results = run(plan, directory=directory)
    m = results["machine"]
    report(
        f"servlet benchmark ({args.plan or 'reduced'}), {m['cores']} cores, {m['memory_gb']} GB, "
        f"Python {m['python']}, {m['date']}",
        rows(results),
        results=results,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
