"""Waiting on conditions that a separate process brings about: `eventually` and `consistently`.

No fixed sleeps: a check is polled until it holds (or must keep holding for a while), and a
failure says what was awaited and why the last attempt did not count. A `guard` ends the wait at
once when waiting has become pointless (the servlet process died).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def eventually(check: Callable[[], T | None], *, timeout: float, what: str,
               guard: Callable[[], None] | None = None, interval: float = 0.1) -> T:
    """Poll `check` until it returns a truthy value (returned) or `timeout` seconds pass.

    `check` may raise AssertionError to say "not yet, and here is why"; the last reason is part of
    the failure message. `guard` runs before every attempt and raises when waiting is pointless
    (the servlet died), so a dead daemon fails fast instead of after the timeout.
    """
    deadline = time.monotonic() + timeout
    reason = "the condition was never met"
    while True:
        if guard is not None:
            guard()
        try:
            result = check()
        except AssertionError as exc:
            reason = str(exc) or repr(exc)
        else:
            if result:
                return result
            reason = f"the last check returned {result!r}"
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}: {reason}")
        time.sleep(interval)


def consistently(check: Callable[[], object], *, duration: float, what: str,
                 guard: Callable[[], None] | None = None, interval: float = 0.1) -> None:
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
