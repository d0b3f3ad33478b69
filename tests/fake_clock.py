"""An asyncio event loop with a fake clock, for tests of code that keeps time with its loop.

`loop.time()` starts at 0 and moves only when every task is waiting: instead of sleeping until
the next timer is due, the loop jumps straight to it. Timers then fire at exactly their due
time, in order, in no real time; a test can wait a minute of loop time in microseconds, and
"nothing happened within a second" means nothing could have happened.

Tests opt in with `@pytest.mark.fake_clock` (tests/conftest.py gives pytest-asyncio this loop
for them). Real I/O still works: ready sockets are served first, and the clock only jumps when
none is ready.
"""

from __future__ import annotations

import asyncio
import selectors
from typing import Any


class _JumpingSelector(selectors.DefaultSelector):
    """Polls without blocking; when nothing is ready, moves the loop's clock by the wait instead."""

    def __init__(self) -> None:
        super().__init__()
        self.loop: FakeClockLoop | None = None

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        ready: list[tuple[selectors.SelectorKey, int]] = super().select(0)
        if ready or timeout == 0:
            return ready
        if timeout is None:  # no timer pending: only I/O or another thread can wake the loop
            result: list[tuple[selectors.SelectorKey, int]] = super().select(None)
            return result
        assert self.loop is not None
        self.loop.now += timeout
        return ready


class FakeClockLoop(asyncio.SelectorEventLoop):
    def __init__(self) -> None:
        selector = _JumpingSelector()
        super().__init__(selector=selector)
        selector.loop = self
        self.now = 0.0

    def time(self) -> float:
        return self.now


def new_fake_clock_loop(**_: Any) -> asyncio.AbstractEventLoop:
    return FakeClockLoop()
