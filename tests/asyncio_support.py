"""Running async test bodies: bounded in time, so a hang fails the test instead of stalling CI."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")


def run(main: Callable[[], Awaitable[T]], *, timeout: float = 20.0) -> T:
    async def bounded() -> T:
        return await asyncio.wait_for(main(), timeout=timeout)

    return asyncio.run(bounded())


async def eventually(check: Callable[[], bool], *, within: float = 5.0, poll: float = 0.01) -> None:
    """Wait until `check()` holds, yielding to the loop in between; fail after `within` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not check():
        if loop.time() > deadline:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(poll)
