"""The work queue: deduplication, no concurrent reconcile of one key, backoff, workers, shutdown.

Real short delays (tens of milliseconds) instead of a fake clock: the queue runs on the event
loop's own timer, and every wait below is bounded.
"""

from __future__ import annotations

import asyncio

import pytest

from servlet.app.runtime.workqueue import Backoff, WorkQueue
from tests.asyncio_support import run, eventually





@pytest.mark.parametrize(
    ("failures", "expected"),
    [(0, 0.0), (1, 0.5), (2, 1.0), (3, 2.0), (10, 256.0), (11, 300.0), (10_000, 300.0)],
)
def test_backoff_doubles_per_failure_up_to_the_cap(failures: int, expected: float) -> None:
    assert Backoff(base=0.5, cap=300.0).delay(failures) == expected


@pytest.mark.parametrize("adds", [1, 2, 10])
def test_a_key_added_many_times_while_waiting_is_processed_once(adds: int) -> None:
    async def main() -> list[str]:
        seen: list[str] = []

        async def handler(key: str) -> None:
            seen.append(key)

        queue: WorkQueue[str] = WorkQueue(name="t", handler=handler)
        for _ in range(adds):
            queue.add("a")
        queue.add("b")
        assert queue.depth == 2
        queue.start()
        await eventually(lambda: len(seen) == 2)
        await asyncio.sleep(0.02)
        await queue.shutdown()
        return seen

    assert sorted(run(main)) == ["a", "b"]


def test_a_key_added_while_processing_runs_once_more_afterwards_never_concurrently() -> None:
    async def main() -> tuple[int, int]:
        running = 0
        most = 0
        calls = 0
        release = asyncio.Event()

        async def handler(key: str) -> None:
            nonlocal running, most, calls
            calls += 1
            running += 1
            most = max(most, running)
            if calls == 1:
                await release.wait()
            running -= 1

        queue: WorkQueue[str] = WorkQueue(name="t", handler=handler, workers=4)
        queue.start()
        queue.add("a")
        await eventually(lambda: calls == 1)
        for _ in range(5):
            queue.add("a")
        await asyncio.sleep(0.02)
        assert calls == 1, "a second worker must not pick up a key that is being processed"
        release.set()
        await eventually(lambda: calls == 2)
        await asyncio.sleep(0.02)
        await queue.shutdown()
        return calls, most

    assert run(main) == (2, 1)


@pytest.mark.parametrize("workers", [1, 2, 4])
def test_no_more_reconciles_run_at_once_than_there_are_workers(workers: int) -> None:
    async def main() -> int:
        running = 0
        most = 0
        done = 0

        async def handler(key: int) -> None:
            nonlocal running, most, done
            running += 1
            most = max(most, running)
            await asyncio.sleep(0.02)
            running -= 1
            done += 1

        queue: WorkQueue[int] = WorkQueue(name="t", handler=handler, workers=workers)
        for key in range(8):
            queue.add(key)
        queue.start()
        await eventually(lambda: done == 8)
        await queue.shutdown()
        return most

    assert run(main) == workers


def test_failures_are_retried_with_growing_delays_and_success_resets_the_backoff() -> None:
    async def main() -> tuple[list[float], int, list[BaseException | None]]:
        loop = asyncio.get_running_loop()
        stamps: list[float] = []
        outcomes: list[BaseException | None] = []

        async def handler(key: str) -> None:
            stamps.append(loop.time())
            if len(stamps) <= 4:
                raise RuntimeError("boom")

        queue: WorkQueue[str] = WorkQueue(
            name="t",
            handler=handler,
            backoff=Backoff(base=0.02, cap=0.05),
            on_done=lambda key, error, seconds: outcomes.append(error),
        )
        queue.start()
        queue.add("a")
        await eventually(lambda: len(stamps) == 5)
        failures_after_success = queue.failures("a")
        await asyncio.sleep(0.1)
        await queue.shutdown()
        gaps = [later - earlier for earlier, later in zip(stamps, stamps[1:])]
        return gaps, failures_after_success, outcomes

    gaps, failures, outcomes = run(main)
    assert len(gaps) == 4, "a success must not schedule another retry"
    for gap, expected in zip(gaps, [0.02, 0.04, 0.05, 0.05]):
        assert expected * 0.9 <= gap < expected + 0.05
    assert failures == 0
    assert [type(o) for o in outcomes] == [RuntimeError] * 4 + [type(None)]


def test_add_after_waits_and_the_earliest_pending_delay_wins() -> None:
    async def main() -> list[tuple[str, float]]:
        loop = asyncio.get_running_loop()
        start = loop.time()
        seen: list[tuple[str, float]] = []

        async def handler(key: str) -> None:
            seen.append((key, loop.time() - start))

        queue: WorkQueue[str] = WorkQueue(name="t", handler=handler)
        queue.start()
        queue.add_after("late", 0.2)
        queue.add_after("late", 0.05)  # earlier: replaces the pending 0.2
        queue.add_after("early", 0.01)
        queue.add_after("early", 0.5)  # later: ignored
        queue.add_after("now", 0)
        await asyncio.sleep(0.35)
        await queue.shutdown()
        return seen

    seen = run(main)
    assert [key for key, _ in seen] == ["now", "early", "late"]
    assert seen[1][1] >= 0.009
    assert 0.045 <= seen[2][1] < 0.19


def test_periodic_resync_queues_every_known_key() -> None:
    async def main() -> list[str]:
        seen: list[str] = []

        async def handler(key: str) -> None:
            seen.append(key)

        queue: WorkQueue[str] = WorkQueue(
            name="t", handler=handler, resync_every=0.02, resync_keys=lambda: ["x", "y"]
        )
        queue.start()
        await eventually(lambda: seen.count("x") >= 2 and seen.count("y") >= 2)
        await queue.shutdown()
        return seen

    assert set(run(main)) == {"x", "y"}


def test_depth_hook_sees_keys_waiting_and_drained() -> None:
    async def main() -> list[int]:
        depths: list[int] = []

        async def handler(key: str) -> None:
            await asyncio.sleep(0)

        queue: WorkQueue[str] = WorkQueue(name="t", handler=handler, on_depth=depths.append)
        queue.add("a")
        queue.add("b")
        queue.add("a")
        queue.start()
        await eventually(lambda: queue.depth == 0 and queue.in_flight == 0)
        await queue.shutdown()
        return depths

    assert run(main) == [1, 2, 1, 0]


def test_shutdown_finishes_in_flight_work_and_takes_no_more() -> None:
    async def main() -> tuple[list[str], list[str]]:
        started: list[str] = []
        finished: list[str] = []

        async def handler(key: str) -> None:
            started.append(key)
            await asyncio.sleep(0.05)
            finished.append(key)

        queue: WorkQueue[str] = WorkQueue(name="t", handler=handler, workers=1)
        queue.start()
        queue.add("first")
        queue.add("second")
        await eventually(lambda: started == ["first"])
        await queue.shutdown()
        queue.add("third")
        await asyncio.sleep(0.02)
        return started, finished

    assert run(main) == (["first"], ["first"])


def test_shutdown_cancels_a_reconcile_that_outlives_the_timeout() -> None:
    async def main() -> tuple[bool, float]:
        loop = asyncio.get_running_loop()
        cancelled = False
        started = asyncio.Event()

        async def handler(key: str) -> None:
            nonlocal cancelled
            started.set()
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                cancelled = True
                raise

        queue: WorkQueue[str] = WorkQueue(name="t", handler=handler)
        queue.start()
        queue.add("stuck")
        await started.wait()
        before = loop.time()
        await queue.shutdown(timeout=0.05)
        return cancelled, loop.time() - before

    cancelled, took = run(main)
    assert cancelled
    assert took < 1.0


def test_a_failing_key_does_not_hold_up_other_keys() -> None:
    async def main() -> list[str]:
        seen: list[str] = []

        async def handler(key: str) -> None:
            seen.append(key)
            if key == "bad":
                raise ValueError("always fails")

        queue: WorkQueue[str] = WorkQueue(
            name="t", handler=handler, backoff=Backoff(base=10, cap=10), on_done=lambda *_: None
        )
        queue.start()
        queue.add("bad")
        queue.add("good")
        await eventually(lambda: "good" in seen)
        await queue.shutdown()
        return seen

    assert run(main) == ["bad", "good"]


@pytest.mark.parametrize(
    "kwargs",
    [{"workers": 0}, {"resync_every": 1.0}, {"resync_keys": list}],
    ids=["no-workers", "period-without-keys", "keys-without-period"],
)
def test_inconsistent_settings_are_refused(kwargs: dict[str, object]) -> None:
    async def handler(key: str) -> None:
        return None

    with pytest.raises(ValueError):
        WorkQueue(name="t", handler=handler, **kwargs)  # type: ignore[arg-type]


def test_a_failure_carrying_a_longer_retry_after_waits_that_long() -> None:
    class Throttled(Exception):
        retry_after = 0.15

    async def main() -> float:
        loop = asyncio.get_running_loop()
        stamps: list[float] = []

        async def handler(key: str) -> None:
            stamps.append(loop.time())
            if len(stamps) == 1:
                raise Throttled()

        queue: WorkQueue[str] = WorkQueue(
            name="t", handler=handler, backoff=Backoff(base=0.01, cap=0.02), on_done=lambda *_: None
        )
        queue.start()
        queue.add("a")
        await eventually(lambda: len(stamps) == 2)
        await queue.shutdown()
        return stamps[1] - stamps[0]

    assert run(main) >= 0.14
