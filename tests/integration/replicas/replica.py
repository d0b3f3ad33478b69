"""One replica as a process: a `BucketCoordinator` over a real service cluster, and a writer.

For every bucket it owns, the writer patches the ConfigMap named after that bucket's workspace
(one workspace per bucket, `workspace_of`) a few times a second, through `writing()` exactly as
the sync workers' writes would go. The requests carry the User-Agent `replica/<identity>`, so
the server's request log says which replica wrote what and when: the tests prove the invariants
from that log, never from what the replicas say of themselves.

Run: python -m tests.integration.replicas.replica KUBECONFIG IDENTITY (see `main` for options).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
from datetime import UTC, datetime

from servlet.adapters.kube import async_client, merge_patch, resource_class
from servlet.adapters.leases import LeasesAdapter
from servlet.app.runtime.buckets import BucketCoordinator, BucketNotHeld
from servlet.app.runtime.leader import LeaseTiming
from servlet.core.buckets import bucket_of
from servlet.core.ports import ResourceType

CONFIG_MAP = ResourceType(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
PREFIX = "tom.certificates.example.corp"
NAMESPACE = "default"
WRITE_EVERY = 0.1


def workspace_of(bucket: int, buckets: int) -> str:
    """A logical cluster name in `bucket`: the first of ws-0, ws-1, ... that hashes there."""
    return next(name for name in (f"ws-{index}" for index in range(10_000)) if bucket_of(name, buckets) == bucket)


async def run(kubeconfig: str, identity: str, buckets: int, timing: LeaseTiming) -> None:
    from lightkube import KubeConfig

    client = async_client(KubeConfig.from_file(kubeconfig), trust_env=False, user_agent=f"replica/{identity}")
    coordinator = BucketCoordinator(
        LeasesAdapter(client),
        prefix=PREFIX,
        namespace=NAMESPACE,
        identity=identity,
        buckets=buckets,
        clock=lambda: datetime.now(UTC),
        timing=timing,
    )
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    coordinator.start()
    cls = resource_class(CONFIG_MAP)
    count = 0
    try:
        while not stop.is_set():
            for bucket in sorted(coordinator.owned()):
                workspace = workspace_of(bucket, buckets)
                count += 1
                with contextlib.suppress(BucketNotHeld):
                    async with coordinator.writing(workspace):
                        await merge_patch(
                            client,
                            cls,
                            workspace,
                            {"data": {"writer": identity, "count": str(count)}},
                            namespace=NAMESPACE,
                        )
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), WRITE_EVERY)
    finally:
        await coordinator.stop(release=True)
        await client.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("kubeconfig")
    parser.add_argument("identity")
    parser.add_argument("--buckets", type=int, default=8)
    parser.add_argument("--lease-duration", type=float, default=3.0)
    parser.add_argument("--renew-deadline", type=float, default=2.0)
    parser.add_argument("--retry-period", type=float, default=0.3)
    args = parser.parse_args()
    timing = LeaseTiming(
        lease_duration=args.lease_duration, renew_deadline=args.renew_deadline, retry_period=args.retry_period
    )
    asyncio.run(run(args.kubeconfig, args.identity, args.buckets, timing))


if __name__ == "__main__":
    main()
