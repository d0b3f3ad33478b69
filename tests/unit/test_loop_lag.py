"""The event loop's lag is measured (`app/observability/loop_lag.py`)."""

from __future__ import annotations

import asyncio
import time

from servlet.app.observability.loop_lag import watch_loop_lag


async def test_a_task_that_holds_the_loop_shows_as_lag_and_a_free_loop_as_none() -> None:
    observed: list[float] = []
    watcher = asyncio.create_task(watch_loop_lag(observed.append, interval=0.01))
    try:
        await asyncio.sleep(0.1)
        free = list(observed)
        time.sleep(0.3)  # a reconcile that never yields
        await asyncio.sleep(0.05)
    finally:
        watcher.cancel()
    assert free and max(free) < 0.1, f"lag on a free loop: {free}"
    assert max(observed) >= 0.25, f"a 0.3 s hold was not seen: {observed}"
