"""Leader election against a real Lease on kcpsim's service cluster.

The electors share one controllable clock, so "the lease has expired" is a clock step, not a
wait; only the pauses between attempts of the running loop are real (and short).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

import pytest

from kcpsim import FaultPlan, KcpSim, LatencyRule
from kcpsim.faults import ErrorRule
from servlet.adapters.kube import async_client, resource_class
from servlet.adapters.leases import LeasesAdapter
from servlet.app.runtime.leader import LeaderElector, LeaseTiming
from servlet.core.ports import LEASE_TYPE as LEASE

T = TypeVar("T")
TIMING = LeaseTiming(lease_duration=15, renew_deadline=10, retry_period=0.05)
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 21, 9, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


class Election:
    """Two (or more) candidates for the Lease `servlet-system/tom.certificates.example.corp`."""

    def __init__(self, sim: KcpSim, clock: Clock) -> None:
        self.sim = sim
        self.clock = clock
        self.clients = [async_client(sim.service_config(), trust_env=False)]
        self.lost: list[str] = []

    def candidate(self, identity: str) -> LeaderElector:
        client = async_client(self.sim.service_config(), trust_env=False)
        self.clients.append(client)
        return LeaderElector(
            LeasesAdapter(client),
            name="tom.certificates.example.corp",
            namespace="default",
            identity=identity,
            clock=self.clock,
            timing=TIMING,
            on_lost=lambda: self.lost.append(identity),
        )

    async def lease(self) -> dict[str, Any]:
        return dict(
            await self.clients[0].get(resource_class(LEASE), "tom.certificates.example.corp", namespace="default")
        )

    async def close(self) -> None:
        for client in self.clients:
            await client.close()


async def elect(sim: KcpSim, body: Callable[[Election], Awaitable[T]]) -> T:
    election = Election(sim, Clock())
    try:
        return await body(election)
    finally:
        await election.close()


async def test_of_two_candidates_racing_for_a_new_lease_exactly_one_wins(kcpsim: KcpSim) -> None:
    async def body(e: Election) -> tuple[list[bool], str, int]:
        a, b = e.candidate("a"), e.candidate("b")
        results = list(await asyncio.gather(a.attempt(), b.attempt()))
        again = list(await asyncio.gather(a.attempt(), b.attempt()))
        assert again == results, "the winner keeps it, the loser stays a follower"
        lease = await e.lease()
        return results, lease["spec"]["holderIdentity"], lease["spec"]["leaseTransitions"]

    results, holder, transitions = await elect(kcpsim, body)
    assert sorted(results) == [False, True]
    assert holder == ("a" if results[0] else "b")
    assert transitions == 0


async def test_the_lease_records_holder_duration_and_microsecond_times(kcpsim: KcpSim) -> None:
    async def body(e: Election) -> dict[str, Any]:
        a = e.candidate("pod-a")
        assert await a.attempt()
        return (await e.lease())["spec"]

    spec = await elect(kcpsim, body)
    assert spec["holderIdentity"] == "pod-a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["renewTime"] == "2026-11-21T09:00:00.000000Z"
    assert MICRO_TIME.match(spec["acquireTime"])


async def test_a_follower_takes_over_only_after_the_lease_expired_and_the_old_leader_steps_down(kcpsim: KcpSim) -> None:
    async def body(e: Election) -> tuple[list[bool], list[str], dict[str, Any]]:
        a, b = e.candidate("a"), e.candidate("b")
        steps = [await a.attempt()]
        e.clock.advance(14)  # a stopped renewing (say, paused), but the lease has not expired yet
        steps.append(await b.attempt())
        e.clock.advance(2)  # renewTime + 15 s is now in the past
        steps.append(await b.attempt())
        steps.append(await a.attempt())  # a finds b holding it, and a's renew deadline has passed
        steps.extend([a.is_leader, b.is_leader])
        return steps, e.lost, (await e.lease())["spec"]

    steps, lost, spec = await elect(kcpsim, body)
    assert steps == [True, False, True, False, False, True]
    assert lost == ["a"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1


async def test_releasing_the_lease_lets_a_follower_take_over_at_once(kcpsim: KcpSim) -> None:
    async def body(e: Election) -> tuple[bool, bool, bool, list[str], str | None]:
        a, b = e.candidate("a"), e.candidate("b")
        assert await a.attempt()
        assert a.became_leader.is_set()
        assert not await b.attempt()
        await a.release()
        released_holder = (await e.lease())["spec"].get("holderIdentity")
        took_over = await b.attempt()  # no clock step: the lease is free now
        return a.is_leader, a.became_leader.is_set(), took_over, e.lost, released_holder

    a_leads, a_event, took_over, lost, released_holder = await elect(kcpsim, body)
    assert (a_leads, a_event, took_over) == (False, False, True)
    assert lost == ["a"]
    assert released_holder in (None, "")


async def test_a_leader_that_cannot_renew_steps_down_when_the_renew_deadline_passes(kcpsim: KcpSim) -> None:
    async def body(e: Election) -> tuple[list[bool], list[str]]:
        a = e.candidate("a")
        assert await a.attempt()
        kcpsim.set_faults(FaultPlan(errors=(ErrorRule(status=500, resource="leases"),)))
        e.clock.advance(5)
        steps = [await a.attempt()]  # renew failed, still within the 10 s deadline: keeps leading
        e.clock.advance(5)
        steps.append(await a.attempt())  # 10 s without a renew: steps down before anyone can take over
        kcpsim.clear_faults()
        return steps, e.lost

    steps, lost = await elect(kcpsim, body)
    assert steps == [True, False]
    assert lost == ["a"]


async def test_a_write_race_lost_on_resource_version_leaves_the_candidate_a_follower(kcpsim: KcpSim) -> None:
    async def body(e: Election) -> tuple[bool, int]:
        a, b = e.candidate("a"), e.candidate("b")
        assert await a.attempt()
        e.clock.advance(20)  # expired: both a (renewing) and b (taking over) want to write
        # Hold the reads back so both candidates decide on the same resourceVersion, and the writes
        # longer, so neither write lands before the other candidate has read.
        kcpsim.set_faults(
            FaultPlan(
                latency=(
                    LatencyRule(seconds=0.2, verb="get", resource="leases"),
                    LatencyRule(seconds=0.4, verb="update", resource="leases"),
                )
            )
        )
        kcpsim.requests.clear()
        results = await asyncio.gather(a.attempt(), b.attempt())
        kcpsim.clear_faults()
        conflicts = kcpsim.requests.count(verb="update", resource="leases", status=409)
        return sum(results) == 1, conflicts

    one_winner, conflicts = await elect(kcpsim, body)
    assert one_winner
    assert conflicts == 1


async def test_running_electors_hand_over_when_the_leader_stops(kcpsim: KcpSim) -> None:
    async def body(e: Election) -> tuple[int, int, bool]:
        a, b = e.candidate("a"), e.candidate("b")
        a.start()
        await asyncio.wait_for(a.became_leader.wait(), timeout=5)
        b.start()
        await asyncio.sleep(0.2)
        leaders_before = [a.is_leader, b.is_leader].count(True)
        await a.stop()  # releases
        await asyncio.wait_for(b.became_leader.wait(), timeout=5)
        leaders_after = [a.is_leader, b.is_leader].count(True)
        await b.stop()
        return leaders_before, leaders_after, b.leadership_known

    before, after, known = await elect(kcpsim, body)
    assert (before, after, known) == (1, 1, True)


@pytest.mark.parametrize(
    ("duration", "deadline", "retry"),
    [(15, 10, 10), (15, 15, 2), (10, 15, 2), (15, 10, 0)],
    ids=["retry-equals-deadline", "deadline-equals-duration", "deadline-over-duration", "no-retry-period"],
)
def test_lease_timings_that_would_let_two_leaders_overlap_are_refused(
    duration: float, deadline: float, retry: float
) -> None:
    with pytest.raises(ValueError, match="retry_period < renew_deadline < lease_duration"):
        LeaseTiming(lease_duration=duration, renew_deadline=deadline, retry_period=retry)


async def test_a_leader_whose_election_loop_is_cancelled_stops_leading_at_once(kcpsim: KcpSim) -> None:
    async def body(e: Election) -> tuple[bool, list[str], str]:
        a = e.candidate("a")
        task = a.start()
        await asyncio.wait_for(a.became_leader.wait(), timeout=5)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return a.is_leader, e.lost, (await e.lease())["spec"]["holderIdentity"]

    leads, lost, holder = await elect(kcpsim, body)
    assert (leads, lost) == (False, ["a"])
    assert holder == "a", "without release() the lease simply runs out"


async def test_a_leader_whose_renew_hangs_steps_down_by_its_deadline_not_by_the_http_timeout(kcpsim: KcpSim) -> None:
    async def main() -> tuple[bool, bool, float, list[str]]:
        lost: list[str] = []
        client = async_client(kcpsim.service_config(), trust_env=False)
        try:
            a = LeaderElector(
                LeasesAdapter(client),
                name="hangs",
                namespace="default",
                identity="a",
                clock=lambda: datetime.now(UTC),
                timing=LeaseTiming(lease_duration=3, renew_deadline=0.5, retry_period=0.1),
                on_lost=lambda: lost.append("a"),
            )
            first = await a.attempt()
            kcpsim.set_faults(FaultPlan(latency=(LatencyRule(seconds=3, resource="leases"),)))
            loop = asyncio.get_running_loop()
            started = loop.time()
            second = await a.attempt()
            return first, second, loop.time() - started, lost
        finally:
            kcpsim.clear_faults()
            await client.close()

    first, second, took, lost = await main()
    assert (first, second, lost) == (True, False, ["a"])
    assert took < 1.0


async def test_a_leader_past_its_renew_deadline_may_not_write_even_before_its_loop_runs(kcpsim: KcpSim) -> None:
    """What the executor asks before each write: a leader resumed after a long pause says no at once."""

    async def body(e: Election) -> list[tuple[bool, bool]]:
        a = e.candidate("a")
        assert await a.attempt()
        seen = [(a.is_leader, a.holds_lease())]
        e.clock.advance(TIMING.renew_deadline - 1)
        seen.append((a.is_leader, a.holds_lease()))
        e.clock.advance(2)  # past the deadline, with no attempt in between (as after SIGSTOP)
        seen.append((a.is_leader, a.holds_lease()))
        return seen

    assert await elect(kcpsim, body) == [(True, True), (True, True), (True, False)]
