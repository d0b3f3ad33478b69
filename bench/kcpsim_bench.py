"""kcpsim's own throughput, so we know when the simulator (not the servlet) is the bottleneck.

Measures, against a simulator in a separate process (the default) or in this process:
- simple writes/s: ConfigMap creates, sequential with lightkube and concurrent with raw HTTP;
- list of 10,000 objects: one unpaged GET (raw and decoded by lightkube) and a paged list;
- watch fan-out: W open watches on one resource, E writes, time until every watcher saw every
  event (events delivered per second).

Prints a table and writes the figures as JSON. It does not test correctness (the contract suite
does) and its numbers are for this machine only.

    .venv/bin/python bench/kcpsim_bench.py [--in-process] [--objects 10000] [--json FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2
from lightkube import Client
from lightkube.config.kubeconfig import KubeConfig
from lightkube.config.models import Cluster, User
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Namespace

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.report import report  # noqa: E402  (importable once the repository is on the path)


class ServerCpu:
    """CPU seconds used by the simulator process (Linux /proc), to tell its share from the client's."""

    def __init__(self, pid: int | None) -> None:
        self.pid = pid

    def seconds(self) -> float | None:
        if self.pid is None or not Path(f"/proc/{self.pid}/stat").exists():
            return None
        fields = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def simulator(*, in_process: bool) -> Iterator[tuple[str, ServerCpu]]:
    if in_process:
        from kcpsim import KcpSim, SimConfig

        with KcpSim(SimConfig(history_size=100_000)) as sim:
            yield sim.base_url, ServerCpu(None)
        return
    kubeconfigs = tempfile.mkdtemp(prefix="kcpsim-bench-")
    process = subprocess.Popen(
        [sys.executable, "-m", "kcpsim", "serve", "--dir", kubeconfigs, "--port", "0", "--history-size", "100000"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    url = ""
    for line in process.stdout:
        if match := re.search(r"serving on (http://\S+)", line):
            url = match.group(1)
        if line.startswith("Stop with"):
            break
    try:
        yield url, ServerCpu(process.pid)
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=10)
        process.stdout.close()
        shutil.rmtree(kubeconfigs, ignore_errors=True)


def _client(url: str) -> Client:
    config = KubeConfig.from_one(cluster=Cluster(server=url), user=User(token="bench"))
    return Client(config, trust_env=False, field_manager="bench")


def _configmap(name: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {"key": "value " * 8},
    }


def bench_sequential_writes(url: str, count: int) -> dict[str, float]:
    with _client(url) as client:
        client.create(Namespace(metadata=ObjectMeta(name="seq")))
        started = time.perf_counter()
        for i in range(count):
            client.create(ConfigMap(metadata=ObjectMeta(name=f"c{i}", namespace="seq"), data={"key": "value"}))
        elapsed = time.perf_counter() - started
    return {"count": count, "seconds": elapsed, "per_second": count / elapsed}


async def _concurrent_creates(url: str, namespace: str, count: int, concurrency: int) -> float:
    async with httpx2.AsyncClient(
        base_url=url, trust_env=False, timeout=60, limits=httpx2.Limits(max_connections=concurrency)
    ) as client:
        await client.post(
            "/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        queue: asyncio.Queue[int] = asyncio.Queue()
        for i in range(count):
            queue.put_nowait(i)

        async def worker() -> None:
            while not queue.empty():
                i = queue.get_nowait()
                response = await client.post(
                    f"/api/v1/namespaces/{namespace}/configmaps", json=_configmap(f"c{i}", namespace)
                )
                assert response.status_code == 201, response.text

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(concurrency)))
        return time.perf_counter() - started


def bench_concurrent_writes(url: str, count: int, concurrency: int) -> dict[str, float]:
    elapsed = asyncio.run(_concurrent_creates(url, "conc", count, concurrency))
    return {"count": count, "concurrency": concurrency, "seconds": elapsed, "per_second": count / elapsed}


def bench_list(url: str, objects: int) -> dict[str, float]:
    asyncio.run(_concurrent_creates(url, "big", objects, 16))
    with httpx2.Client(base_url=url, trust_env=False, timeout=120) as raw:
        started = time.perf_counter()
        response = raw.get("/api/v1/namespaces/big/configmaps")
        raw_seconds = time.perf_counter() - started
        assert len(response.json()["items"]) == objects
        started = time.perf_counter()
        pages, token = 0, ""
        while True:
            params = {"limit": "500", **({"continue": token} if token else {})}
            body = raw.get("/api/v1/namespaces/big/configmaps", params=params).json()
            pages += 1
            token = body["metadata"].get("continue", "")
            if not token:
                break
        paged_seconds = time.perf_counter() - started
    with _client(url) as client:
        started = time.perf_counter()
        items = list(client.list(ConfigMap, namespace="big"))
        lightkube_seconds = time.perf_counter() - started
        assert len(items) == objects
    return {
        "objects": objects,
        "bytes": len(response.content),
        "raw_seconds": raw_seconds,
        "lightkube_seconds": lightkube_seconds,
        "paged_500_seconds": paged_seconds,
        "pages": pages,
    }


async def _fan_out(url: str, watchers: int, events: int) -> dict[str, float]:
    async with httpx2.AsyncClient(
        base_url=url, trust_env=False, timeout=120, limits=httpx2.Limits(max_connections=watchers + 8)
    ) as client:
        namespace = f"fan{watchers}"
        await client.post(
            "/api/v1/namespaces", json={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        )
        start_rv = (await client.get(f"/api/v1/namespaces/{namespace}/configmaps")).json()["metadata"][
            "resourceVersion"
        ]
        connected = asyncio.Event()
        opened = 0
        finished_at: list[float] = []

        async def watch() -> None:
            nonlocal opened
            params = {"watch": "true", "resourceVersion": start_rv, "timeoutSeconds": "120"}
            async with client.stream("GET", f"/api/v1/namespaces/{namespace}/configmaps", params=params) as response:
                opened += 1
                if opened == watchers:
                    connected.set()
                seen = 0
                async for line in response.aiter_lines():
                    if line:
                        seen += 1
                    if seen == events:
                        finished_at.append(time.perf_counter())
                        return

        tasks = [asyncio.create_task(watch()) for _ in range(watchers)]
        await asyncio.wait_for(connected.wait(), timeout=60)
        await asyncio.sleep(0.2)
        started = time.perf_counter()
        for i in range(events):
            response = await client.post(
                f"/api/v1/namespaces/{namespace}/configmaps", json=_configmap(f"e{i}", namespace)
            )
            assert response.status_code == 201
        writes_done = time.perf_counter()
        await asyncio.gather(*tasks)
        elapsed = max(finished_at) - started
        return {
            "watchers": watchers,
            "events": events,
            "seconds": elapsed,
            "write_seconds": writes_done - started,
            "delivered_per_second": watchers * events / elapsed,
        }


def bench_fan_out(url: str, watchers: int, events: int) -> dict[str, float]:
    return asyncio.run(_fan_out(url, watchers, events))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--in-process", action="store_true", help="run the simulator in this process (shares the GIL)")
    parser.add_argument("--writes", type=int, default=2000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--watchers", default="10,100", help="comma-separated watcher counts")
    parser.add_argument("--json", type=Path, default=Path(tempfile.gettempdir()) / "kcpsim-bench.json")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {
        "python": platform.python_version(),
        "machine": platform.machine(),
        "in_process": args.in_process,
    }
    with simulator(in_process=args.in_process) as (url, cpu):
        before = cpu.seconds()
        results["sequential_writes"] = bench_sequential_writes(url, args.writes)
        results["concurrent_writes"] = bench_concurrent_writes(url, args.writes, 16)
        after = cpu.seconds()
        if before is not None and after is not None:
            # Server CPU per create: 1 / this is the write rate at which kcpsim itself saturates a core.
            results["server_cpu_ms_per_write"] = (after - before) / (2 * args.writes + 2) * 1000
        results["list"] = bench_list(url, args.objects)
        results["watch_fan_out"] = []
        for watchers in args.watchers.split(","):
            before = cpu.seconds()
            fan = bench_fan_out(url, int(watchers), args.events)
            after = cpu.seconds()
            if before is not None and after is not None:
                fan["server_cpu_us_per_delivered_event"] = (after - before) / (fan["watchers"] * fan["events"]) * 1e6
            results["watch_fan_out"].append(fan)
    rows = [
        ("writes, sequential (lightkube)", f"{results['sequential_writes']['per_second']:.0f} creates/s"),
        ("writes, 16 concurrent (raw HTTP)", f"{results['concurrent_writes']['per_second']:.0f} creates/s"),
        (
            f"list {args.objects} objects, raw",
            f"{results['list']['raw_seconds'] * 1000:.0f} ms ({results['list']['bytes'] / 1e6:.1f} MB)",
        ),
        (f"list {args.objects} objects, lightkube", f"{results['list']['lightkube_seconds'] * 1000:.0f} ms"),
        (
            f"list {args.objects} objects, pages of 500",
            f"{results['list']['paged_500_seconds'] * 1000:.0f} ms ({results['list']['pages']} pages)",
        ),
    ]
    if "server_cpu_ms_per_write" in results:
        per = results["server_cpu_ms_per_write"]
        rows.append(("server CPU per write", f"{per:.2f} ms (kcpsim saturates a core at ~{1000 / per:.0f} writes/s)"))
    for fan in results["watch_fan_out"]:
        server = (
            f", server CPU {fan['server_cpu_us_per_delivered_event']:.0f} us/event"
            if "server_cpu_us_per_delivered_event" in fan
            else ""
        )
        rows.append(
            (
                f"watch fan-out {fan['watchers']} x {fan['events']} events",
                f"{fan['delivered_per_second']:.0f} events/s delivered, all seen after {fan['seconds']:.2f} s{server}",
            )
        )
    report(
        f"kcpsim benchmark ({'in-process' if args.in_process else 'separate process'}, Python {results['python']})",
        rows,
        results=results,
        json_path=args.json,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
