"""How late the event loop runs its timers (`servlet_event_loop_lag_seconds`).

One loop carries the reconciles, the watches, the probes and the Lease renewals: a task that
holds it for seconds delays all of them, and a Lease renewed too late costs the leadership.
A timer due every `INTERVAL` seconds measures how much later than due it ran.

Deliberately not here: what holds the loop (a profile tells), and acting on it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

INTERVAL = 0.25


async def watch_loop_lag(observe: Callable[[float], None], *, interval: float = INTERVAL) -> None:
    """Until cancelled: `observe(seconds late)` after every `interval` seconds of sleep."""
    loop = asyncio.get_running_loop()
    while True:
        before = loop.time()
        await asyncio.sleep(interval)
        observe(max(0.0, loop.time() - before - interval))
