"""Which objects of one sync worker fail, told as the PublishedResource's `Synced` condition.

Each reconcile notes whether its object syncs or why not (a conflict or error of its plan, or a
write that failed). Writing the status for every such note would cost one status write per
object event; instead the condition is computed from the tally at most once every `interval`
seconds, and the status board writes only when the condition changed.

Deliberately not here: what the condition says (`core.conditions.synced_condition`) and writing
the status (`status.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from servlet.app.controllers.status import StatusBoard
from servlet.core.conditions import synced_condition
from servlet.core.model import RemoteKey

# At most one Synced report per PublishedResource in this many seconds.
REPORT_INTERVAL = 5.0
# A failure's reason as a Synced message quotes it; the whole reason is in the object's Event.
REASON_LIMIT = 300


def describe_failure(key: RemoteKey) -> str:
    return "/".join(part for part in (key.cluster, key.namespace, key.name) if part)


class SyncTally:
    """The failing objects of one PublishedResource (`name`), reported to `board` now and then."""

    def __init__(
        self,
        *,
        name: str,
        board: StatusBoard,
        total: Callable[[], int],
        clock: Callable[[], float],
        interval: float = REPORT_INTERVAL,
    ) -> None:
        self._name = name
        self._board = board
        self._total = total
        self._clock = clock
        self._interval = interval
        self._failures: dict[RemoteKey, str] = {}
        self._last: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False

    def note(self, key: RemoteKey, failure: str | None) -> None:
        """What the last reconcile of `key` found: None when it syncs, else why it does not."""
        if failure is None:
            self._failures.pop(key, None)
        else:
            self._failures[key] = failure if len(failure) <= REASON_LIMIT else failure[: REASON_LIMIT - 3] + "..."
        self._schedule()

    def forget(self, key: RemoteKey) -> None:
        self._failures.pop(key, None)
        self._schedule()

    @property
    def failing(self) -> int:
        return len(self._failures)

    def report(self) -> None:
        """Report the condition now (the worker does once its caches are synced)."""
        self._timer = None
        if self._stopped:
            return
        self._last = self._clock()
        failures = [(describe_failure(key), reason) for key, reason in sorted(self._failures.items())]
        self._board.report(self._name, synced_condition(total=self._total(), failures=failures))

    def _schedule(self) -> None:
        if self._timer is not None or self._stopped or self._last is None:
            return  # a report is due already, or the first one has not been made
        wait = max(0.0, self._last + self._interval - self._clock())
        self._timer = asyncio.get_running_loop().call_later(wait, self.report)

    def stop(self) -> None:
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
