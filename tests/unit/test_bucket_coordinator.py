"""The bucket coordinator on in-memory Leases: who may write, and when a bucket is handed back.

The clock is controllable, so "the renew deadline passed" is a clock step; the pauses between
rounds are real and short. The same behaviour across processes on kcpsim is in
tests/integration/replicas.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest

from kcpsim.waiting import eventually_async
from servlet.adapters.memory_leases import MemoryLeases
from servlet.adapters.memory_server import MemoryServer, Place
from servlet.app.runtime.buckets import STALE_MEMBER_DURATIONS, BucketCoordinator, BucketNotHeld
from servlet.app.runtime.leader import LeaseTiming, format_micro_time
from servlet.core.buckets import bucket_of
from servlet.core.ports import LEASE_TYPE
from servlet.core.targets import Side

TIMING = LeaseTiming(lease_duration=3, renew_deadline=2, retry_period=0.02)
BUCKETS = 4
NAMESPACE = "servlet-system"


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 24, 9, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def server() -> MemoryServer:
    return MemoryServer()


@pytest.fixture
def leases(server: MemoryServer) -> MemoryLeases:
    return MemoryLeases(server)


def stored(server: MemoryServer, name: str) -> bool:
    return server.read(Place(Side.LOCAL, LEASE_TYPE).key(namespace=NAMESPACE, name=name)) is not None


@pytest.fixture
async def alone(leases: MemoryLeases) -> AsyncIterator[tuple[BucketCoordinator, Clock]]:
    clock = Clock()
    coordinator = BucketCoordinator(
        leases, prefix="tom", namespace=NAMESPACE, identity="r1", buckets=BUCKETS, clock=clock, timing=TIMING
    )
    coordinator.start()
    await eventually_async(
        lambda: coordinator.owned() == frozenset(range(BUCKETS)) or None, what="r1 owning every bucket", timeout=5
    )
    yield coordinator, clock
    await coordinator.stop()


async def holder(leases: MemoryLeases, bucket: int) -> str | None:
    lease = await leases.get_lease(namespace=NAMESPACE, name=f"tom-bucket-{bucket}")
    return None if lease is None else lease["spec"].get("holderIdentity")


async def test_a_lone_replica_writes_to_every_workspace(alone: tuple[BucketCoordinator, Clock]) -> None:
    coordinator, _ = alone
    async with coordinator.writing("any-workspace"):
        pass
    assert coordinator.may_write("another-workspace")


async def test_a_replica_past_its_renew_deadline_refuses_to_write_before_its_loop_notices(
    alone: tuple[BucketCoordinator, Clock],
) -> None:
    coordinator, clock = alone
    clock.now += timedelta(seconds=TIMING.renew_deadline + 0.5)  # as after a freeze: no round ran yet
    with pytest.raises(BucketNotHeld, match="workspace ws-1 is in bucket"):
        async with coordinator.writing("ws-1"):
            pytest.fail("wrote without holding the bucket")


async def test_a_bucket_is_released_only_after_the_writes_in_flight_are_done(
    leases: MemoryLeases, alone: tuple[BucketCoordinator, Clock]
) -> None:
    coordinator, _ = alone
    bucket = bucket_of("ws-1", BUCKETS)
    finish = asyncio.Event()

    async def slow_write() -> None:
        async with coordinator.writing("ws-1"):
            await finish.wait()

    write = asyncio.create_task(slow_write())
    await asyncio.sleep(0)  # the write has begun
    stopping = asyncio.create_task(coordinator.stop())
    await eventually_async(lambda: not coordinator.may_write("ws-1") or None, what="writing refused at once")
    await asyncio.sleep(0.1)
    assert await holder(leases, bucket) == "r1", "released while a write was still in flight"
    assert not stopping.done()
    finish.set()
    await asyncio.gather(write, stopping)
    assert await holder(leases, bucket) is None
    assert [await holder(leases, other) for other in range(BUCKETS)] == [None] * BUCKETS


async def test_a_second_replica_gets_half_and_the_first_hands_it_over(
    leases: MemoryLeases, alone: tuple[BucketCoordinator, Clock]
) -> None:
    first, clock = alone
    second = BucketCoordinator(
        leases, prefix="tom", namespace=NAMESPACE, identity="r2", buckets=BUCKETS, clock=clock, timing=TIMING
    )
    second.start()
    try:
        await eventually_async(
            lambda: (len(first.owned()) == len(second.owned()) == BUCKETS // 2) or None,
            what="two buckets each",
            timeout=5,
        )
        assert first.owned().isdisjoint(second.owned())
    finally:
        await second.stop()
    await eventually_async(lambda: first.owned() == frozenset(range(BUCKETS)) or None, what="all back with r1")


async def test_the_membership_lease_of_a_replica_long_gone_is_deleted(
    server: MemoryServer, leases: MemoryLeases, alone: tuple[BucketCoordinator, Clock]
) -> None:
    _, clock = alone
    long_ago = clock.now - timedelta(seconds=(STALE_MEMBER_DURATIONS + 2) * TIMING.lease_duration)
    recently = clock.now - timedelta(seconds=TIMING.lease_duration + 1)
    for name, renewed in (("tom-member-gone", long_ago), ("tom-member-recent", recently)):
        await leases.create_lease(
            {
                "metadata": {"name": name, "namespace": NAMESPACE},
                "spec": {"holderIdentity": name, "leaseDurationSeconds": 3, "renewTime": format_micro_time(renewed)},
            }
        )

    await eventually_async(lambda: not stored(server, "tom-member-gone") or None, what="the stale Lease deleted")
    assert stored(server, "tom-member-recent")
