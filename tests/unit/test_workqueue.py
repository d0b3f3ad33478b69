"""The work queue: deduplication, no concurrent reconcile of one key, backoff, workers, shutdown.

The queue keeps time with its event loop (`loop.time()`, `call_at`, `asyncio.sleep`), so these
tests run it on a loop with a fake clock (tests/fake_clock.py): time moves only when every task
is waiting, and then straight to the next timer. `await elapse(s)` lets `s` seconds of loop time pass, with
everything due in them run to completion, in no real time. Delays are then exact, and "nothing
happened" means nothing could have happened, not that it had not happened yet.
"""

from __future__ import annotations

import asyncio
import itertools

import pytest

from servlet.app.runtime.workqueue import Backoff, WorkQueue


async def elapse(seconds: float) -> None:
    """Let `seconds` of fake loop time pass; every task runs until it waits for something."""
    await asyncio.sleep(seconds)


def now() -> float:
    return asyncio.get_running_loop().time()


@pytest.mark.parametrize(
    ("failures", "expected"),
    [(0, 0.0), (1, 0.5), (2, 1.0), (3, 2.0), (10, 256.0), (11, 300.0), (10_000, 300.0)],
)
def test_backoff_doubles_per_failure_up_to_the_cap(failures: int, expected: float) -> None:
    assert Backoff(base=0.5, cap=300.0).delay(failures) == expected


@pytest.mark.parametrize("adds", [1, 2, 10])
@pytest.mark.fake_clock
async def test_a_key_added_many_times_while_waiting_is_processed_once(adds: int) -> None:
    seen: list[str] = []

    async def handler(key: str) -> None:
        seen.append(key)

    queue: WorkQueue[str] = WorkQueue(name="t", handler=handler)
    for _ in range(adds):
        queue.add("a")
    queue.add("b")
    assert queue.depth == 2
    queue.start()
    await elapse(1)
    await queue.shutdown()

    assert sorted(seen) == ["a", "b"]


@pytest.mark.fake_clock
async def test_a_key_added_while_processing_runs_once_more_afterwards_never_concurrently() -> None:
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
    await elapse(1)
    assert calls == 1
    for _ in range(5):
        queue.add("a")
    await elapse(1)
    assert calls == 1, "a second worker must not pick up a key that is being processed"
    release.set()
    await elapse(1)
    await queue.shutdown()

    assert (calls, most) == (2, 1)


@pytest.mark.parametrize("workers", [1, 2, 4])
@pytest.mark.fake_clock
async def test_no_more_reconciles_run_at_once_than_there_are_workers(workers: int) -> None:
    running = 0
    most = 0
    finished: list[float] = []

    async def handler(key: int) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(1)
        running -= 1
        finished.append(now())

    queue: WorkQueue[int] = WorkQueue(name="t", handler=handler, workers=workers)
    for key in range(8):
        queue.add(key)
    started = now()
    queue.start()
    await elapse(10)
    await queue.shutdown()

    assert most == workers
    assert len(finished) == 8
    assert max(finished) - started == pytest.approx(8 / workers), "the workers did not work in parallel"


@pytest.mark.fake_clock
async def test_failures_are_retried_with_growing_delays_and_success_resets_the_backoff() -> None:
    stamps: list[float] = []
    outcomes: list[BaseException | None] = []

    async def handler(key: str) -> None:
        stamps.append(now())
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
    await elapse(10)
    await queue.shutdown()
    gaps = [later - earlier for earlier, later in itertools.pairwise(stamps)]

    assert gaps == pytest.approx([0.02, 0.04, 0.05, 0.05]), "a success must not schedule another retry"
    assert queue.failures("a") == 0
    assert [type(o) for o in outcomes] == [RuntimeError] * 4 + [type(None)]


@pytest.mark.fake_clock
async def test_add_after_waits_and_the_earliest_pending_delay_wins() -> None:
    start = now()
    seen: list[tuple[str, float]] = []

    async def handler(key: str) -> None:
        seen.append((key, now() - start))

    queue: WorkQueue[str] = WorkQueue(name="t", handler=handler)
    queue.start()
    queue.add_after("late", 0.2)
    queue.add_after("late", 0.05)  # earlier: replaces the pending 0.2
    queue.add_after("early", 0.01)
    queue.add_after("early", 0.5)  # later: ignored
    queue.add_after("now", 0)
    await elapse(1)
    await queue.shutdown()

    assert [key for key, _ in seen] == ["now", "early", "late"]
    assert [at for _, at in seen] == pytest.approx([0, 0.01, 0.05])


@pytest.mark.fake_clock
async def test_periodic_resync_queues_every_known_key() -> None:
    seen: list[tuple[str, float]] = []
    start = now()

    async def handler(key: str) -> None:
        seen.append((key, round(now() - start, 6)))

    queue: WorkQueue[str] = WorkQueue(name="t", handler=handler, resync_every=0.02, resync_keys=lambda: ["x", "y"])
    queue.start()
    await elapse(0.05)
    await queue.shutdown()

    assert sorted(seen) == [("x", 0.02), ("x", 0.04), ("y", 0.02), ("y", 0.04)]


@pytest.mark.fake_clock
async def test_depth_hook_sees_keys_waiting_and_drained() -> None:
    depths: list[int] = []

    async def handler(key: str) -> None:
        await asyncio.sleep(0)

    queue: WorkQueue[str] = WorkQueue(name="t", handler=handler, on_depth=depths.append)
    queue.add("a")
    queue.add("b")
    queue.add("a")
    queue.start()
    await elapse(1)
    await queue.shutdown()

    assert depths == [1, 2, 1, 0]


@pytest.mark.fake_clock
async def test_shutdown_finishes_in_flight_work_and_takes_no_more() -> None:
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
    await elapse(0.01)
    assert started == ["first"]
    await queue.shutdown()
    queue.add("third")
    await elapse(1)

    assert (started, finished) == (["first"], ["first"])


@pytest.mark.fake_clock
async def test_shutdown_cancels_a_reconcile_that_outlives_the_timeout() -> None:
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
    before = now()
    await queue.shutdown(timeout=0.05)

    assert cancelled
    assert now() - before == pytest.approx(0.05), "shutdown waited for more than its timeout"


@pytest.mark.fake_clock
async def test_a_failing_key_does_not_hold_up_other_keys() -> None:
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
    await elapse(1)
    await queue.shutdown()

    assert seen == ["bad", "good"]


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


@pytest.mark.fake_clock
async def test_a_failure_carrying_a_longer_retry_after_waits_that_long() -> None:
    class Throttled(Exception):
        retry_after = 0.15

    stamps: list[float] = []

    async def handler(key: str) -> None:
        stamps.append(now())
        if len(stamps) == 1:
            raise Throttled()

    queue: WorkQueue[str] = WorkQueue(
        name="t", handler=handler, backoff=Backoff(base=0.01, cap=0.02), on_done=lambda *_: None
    )
    queue.start()
    queue.add("a")
    await elapse(1)
    await queue.shutdown()

    assert len(stamps) == 2
    assert stamps[1] - stamps[0] == pytest.approx(0.15)


@pytest.mark.fake_clock
async def test_a_replica_queues_only_the_keys_it_accepts_and_drops_keys_it_gave_up_since() -> None:
    """`accept` is a replica's share: keys of buckets it does not hold are never reconciled, and
    a key queued while its bucket was held but handed over before a worker took it is dropped
    (another replica reconciles it now), leaving the queue empty."""
    held = {"a", "b", "c"}
    seen: list[str] = []
    depths: list[int] = []

    async def handler(key: str) -> None:
        seen.append(key)

    queue: WorkQueue[str] = WorkQueue(name="t", handler=handler, accept=lambda key: key in held, on_depth=depths.append)
    for key in ("a", "b", "c", "foreign"):
        queue.add(key)
    assert queue.depth == 3  # "foreign" was refused outright
    held.discard("b")  # handed over while "b" waits
    queue.start()
    await elapse(1)
    queue.add("b")  # an event for a key no longer held
    await elapse(1)
    await queue.shutdown()

    assert seen == ["a", "c"]
    assert queue.depth == 0
    assert depths[-1] == 0


@pytest.mark.fake_clock
async def test_a_failed_key_whose_bucket_was_handed_over_is_not_retried() -> None:
    held = {"a"}
    attempts: list[float] = []
    start = now()

    async def handler(key: str) -> None:
        attempts.append(round(now() - start, 6))
        held.clear()  # the bucket goes to another replica while this reconcile fails
        raise RuntimeError("conflict")

    queue: WorkQueue[str] = WorkQueue(
        name="t", handler=handler, accept=lambda key: key in held, backoff=Backoff(base=0.5, cap=1.0)
    )
    queue.add("a")
    queue.start()
    await elapse(5)
    await queue.shutdown()

    assert attempts == [0.0]
    assert queue.failures("a") == 0  # its backoff is forgotten with it


@pytest.mark.fake_clock
async def test_reconciles_that_never_wait_still_let_other_tasks_run_between_them() -> None:
    """A converged key's reconcile does no I/O: a worker running thousands of them back to back
    must not hold the event loop (a Lease renewal waiting on it would miss its deadline)."""
    done = 0

    async def handler(key: int) -> None:
        nonlocal done
        done += 1

    queue: WorkQueue[int] = WorkQueue(name="t", handler=handler, workers=1)
    for key in range(10_000):
        queue.add(key)
    seen_by_another_task: list[int] = []

    async def another_task() -> None:
        for _ in range(3):
            seen_by_another_task.append(done)
            await asyncio.sleep(0)

    queue.start()
    await asyncio.gather(another_task(), elapse(1))
    await queue.shutdown()

    assert done == 10_000
    assert seen_by_another_task[-1] < 10, f"the other task ran only after {seen_by_another_task} reconciles"
