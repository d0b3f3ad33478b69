"""Waiting in the daemon's loops that a stop request (SIGTERM), or another signal, must cut short."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from typing import Any, TypeVar

T = TypeVar("T")


async def first_of(stop: asyncio.Event, *waits: Any) -> bool:
    """Wait until all of `waits` are done or `stop` is set; True when stopped first."""
    stopping = asyncio.ensure_future(stop.wait())
    work = asyncio.ensure_future(asyncio.gather(*waits))
    try:
        await asyncio.wait({stopping, work}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (stopping, work):
            task.cancel()
        await asyncio.gather(stopping, work, return_exceptions=True)
    return stop.is_set()


async def sleep_unless(stop: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=seconds)


async def unless_set(signal: asyncio.Event, work: Awaitable[T]) -> T | None:
    """`work`'s result (or its exception), or None when `signal` is set first (`work` is then
    cancelled)."""
    signalled = asyncio.ensure_future(signal.wait())
    working = asyncio.ensure_future(work)
    try:
        await asyncio.wait({signalled, working}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in (signalled, working):
            if not task.done():
                task.cancel()
        await asyncio.gather(signalled, working, return_exceptions=True)
    return None if working.cancelled() else working.result()
