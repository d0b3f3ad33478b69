"""The floor for initial sync: exactly the minimal requests, with the servlet's client and concurrency.

One list of the remote objects through the virtual workspace (one per shard), then per workspace
one local namespace, per object one finalizer patch (through its shard's VW, to the object's
workspace) and one local create, issued by `--sync-workers` concurrent workers with the same
lightkube clients the servlet uses (`servlet.adapters.kube`). No caches, no planning, no checks: whatever the servlet
spends beyond this is the price of doing it correctly. It is a yardstick, not a syncer.

It runs as its own process, like the servlet, so it does not share the simulator's interpreter.
A request that fails for a passing reason (timeout, 429, 5xx) is sent again, as the servlet would
(over 200,000 requests at 100,000 objects, one is bound to); the retries are counted.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import httpx2
from lightkube import ApiError, KubeConfig
from lightkube.resources.core_v1 import Namespace

from bench.scenario import LOCAL, NAMESPACE, REMOTE, vw_urls
from kcpsim.harness.world import World
from servlet.adapters.kube import ClusterClients, async_client, merge_patch, resource_class, wrap
from servlet.app.run_command import GC_THRESHOLDS
from servlet.core.errors import Transient
from servlet.core.metadata import FINALIZER
from servlet.core.model import ResourceType

RETRIES = 5
_PASSING = (429, 500, 502, 503, 504)


async def _retried(call: Callable[[], Awaitable[Any]], retries: list[int]) -> None:
    """`call()`, again after a passing failure; a create answered 409 on a second try was made by
    the first one, whose answer was lost."""
    for attempt in range(RETRIES):
        try:
            await call()
            return
        except (httpx2.TransportError, Transient):  # no answer (lightkube's client; the servlet's adapters)
            pass
        except ApiError as error:
            if not (error.status.code in _PASSING or (error.status.code == 409 and attempt > 0)):
                raise
            if error.status.code == 409:
                return
        retries[0] += 1
        await asyncio.sleep(0.1 * 2**attempt)
    raise RuntimeError(f"still failing after {RETRIES} tries")


REMOTE_TYPE = ResourceType(REMOTE.group, REMOTE.version, "Widget", REMOTE.plural, True)
LOCAL_TYPE = ResourceType(LOCAL.group, LOCAL.version, "Widget", LOCAL.plural, True)


async def _run(*, service_config: KubeConfig, kcp_config: KubeConfig, vw_urls: list[str], workers: int) -> float:
    service = async_client(service_config, trust_env=False)
    # One connection pool per shard, as the servlet's connections share one per target: a pool
    # per workspace opened 10,000 connections at 10,000 workspaces, more than the simulator's
    # process may hold.
    shards = [
        ClusterClients(kcp_config, base_url=url, trust_env=False, transport=httpx2.AsyncHTTPTransport())
        for url in vw_urls
    ]
    remote_cls, local_cls = resource_class(REMOTE_TYPE), resource_class(LOCAL_TYPE)
    started = time.perf_counter()
    queue: asyncio.Queue[tuple[ClusterClients, Any]] = asyncio.Queue()
    for vw in shards:
        async for obj in vw.get("*").list(remote_cls, namespace="*", chunk_size=500):  # pages, as the servlet lists
            queue.put_nowait((vw, obj))
    namespaces: set[str] = set()
    retries = [0]

    async def worker() -> None:
        while not queue.empty():
            vw, obj = queue.get_nowait()
            cluster = obj.metadata.annotations["kcp.io/cluster"]
            namespace = f"ws-{cluster}"
            if namespace not in namespaces:
                namespaces.add(namespace)
                await _retried(partial(service.create, Namespace(metadata={"name": namespace})), retries)  # type: ignore[arg-type]
            finalizer = {"metadata": {"finalizers": [FINALIZER]}}
            name = obj.metadata.name
            await _retried(
                partial(merge_patch, vw.get(cluster), remote_cls, name, finalizer, namespace=NAMESPACE), retries
            )
            copy = {
                "apiVersion": f"{LOCAL.group}/{LOCAL.version}",
                "kind": "Widget",
                "metadata": {"name": name, "namespace": namespace, "labels": dict(obj.metadata.labels or {})},
                "spec": dict(obj["spec"]),
            }
            await _retried(partial(service.create, wrap(local_cls, copy)), retries)

    await asyncio.gather(*(worker() for _ in range(workers)))
    elapsed = time.perf_counter() - started
    print(f"retries: {retries[0]}", file=sys.stderr)
    for vw in shards:
        await vw.aclose()
    await service.close()
    return elapsed


def floor_seconds(world: World, *, workers: int) -> tuple[float, float]:
    """Seconds from the first request to the last answer, measured in a child process, and the
    child's CPU seconds (start-up included, as the servlet's CPU figure includes its own)."""
    service, kcp = world.kubeconfigs("floor")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(
        [sys.executable, "-m", "bench.floor", str(service), str(kcp), ",".join(vw_urls(world)), str(workers)],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    if done.returncode != 0:
        raise RuntimeError(f"the floor failed (exit {done.returncode}):\n{done.stderr[-3000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return float(done.stdout.strip().splitlines()[-1]), cpu


def main() -> None:
    parser = argparse.ArgumentParser(description="minimal initial-sync requests (prints seconds)")
    parser.add_argument("service_kubeconfig", type=Path)
    parser.add_argument("kcp_kubeconfig", type=Path)
    parser.add_argument("vw_urls", help="the virtual workspace URL of every shard, separated by commas")
    parser.add_argument("workers", type=int)
    args = parser.parse_args()
    gc.set_threshold(*GC_THRESHOLDS)  # as `servlet run` sets it: the same interpreter settings
    print(
        asyncio.run(
            _run(
                service_config=KubeConfig.from_file(args.service_kubeconfig),
                kcp_config=KubeConfig.from_file(args.kcp_kubeconfig),
                vw_urls=args.vw_urls.split(","),
                workers=args.workers,
            )
        )
    )


if __name__ == "__main__":
    main()
