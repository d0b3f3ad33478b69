"""Waiting for a condition: `eventually` (and `eventually_async` inside an event loop), `consistently`.

The one way the tests, the benchmarks' checks and the demo wait: no fixed sleeps, a check is
polled until it holds (or must keep holding for a while). `check` returns a truthy value when the
condition holds (returned to the caller) or raises AssertionError to say "not yet, and why". A
timeout fails with what was awaited and the last value or reason seen. A `guard` runs before
every attempt and raises when waiting has become pointless (the servlet process died).

`eventually_async` takes the same arguments; it sleeps with `asyncio.sleep`, so the code under
test keeps running on the same loop between attempts.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class _Attempts(Generic[T]):
    """The bookkeeping both flavours share: the deadline and why the last attempt did not count."""

    def __init__(
        self, check: Callable[[], T | None], *, what: str, timeout: float, guard: Callable[[], None] | None
    ) -> None:
        self.check = check
        self.what = what
        self.timeout = timeout
        self.guard = guard
        self.deadline = time.monotonic() + timeout
        self.reason = "the check never ran"

    def attempt(self) -> T | None:
        """The check's value when it holds, else None (and the reason is remembered)."""
        if self.guard is not None:
            self.guard()
        try:
            result = self.check()
        except AssertionError as exc:
            self.reason = str(exc) or repr(exc)
            return None
        if result:
            return result
        self.reason = f"the last check returned {result!r}"
        return None

    def expired(self) -> bool:
        return time.monotonic() >= self.deadline

    def failure(self) -> AssertionError:
        return AssertionError(f"timed out after {self.timeout:g} s waiting for {self.what}: {self.reason}")


def eventually(
    check: Callable[[], T | None],
    *,
    what: str,
    timeout: float = 10.0,
    guard: Callable[[], None] | None = None,
    interval: float = 0.02,
) -> T:
    """Poll `check` until it returns a truthy value (returned) or `timeout` seconds pass."""
    attempts = _Attempts(check, what=what, timeout=timeout, guard=guard)
    while True:
        result = attempts.attempt()
        if result:
            return result
        if attempts.expired():
            raise attempts.failure()
        time.sleep(interval)


async def eventually_async(
    check: Callable[[], T | None],
    *,
    what: str,
    timeout: float = 10.0,
    guard: Callable[[], None] | None = None,
    interval: float = 0.02,
) -> T:
    """`eventually` for a check whose condition tasks on the running event loop bring about."""
    attempts = _Attempts(check, what=what, timeout=timeout, guard=guard)
    while True:
        result = attempts.attempt()
        if result:
            return result
        if attempts.expired():
            raise attempts.failure()
        await asyncio.sleep(interval)


def consistently(
    check: Callable[[], object],
    *,
    what: str,
    duration: float,
    guard: Callable[[], None] | None = None,
    interval: float = 0.1,
) -> None:
    """`check` must hold (not raise, return truthy) on every attempt for `duration` seconds."""
    deadline = time.monotonic() + duration
    while True:
        if guard is not None:
            guard()
        try:
            result = check()
        except AssertionError as exc:
            raise AssertionError(f"{what} stopped holding: {exc}") from exc
        if not result:
            raise AssertionError(f"{what} stopped holding: the check returned {result!r}")
        if time.monotonic() >= deadline:
            return
        time.sleep(interval)
