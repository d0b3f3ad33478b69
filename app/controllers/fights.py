"""Noticing that another writer keeps undoing the servlet's changes to a local copy, and backing off.

When a controller on the service cluster insists on its own value for a synced field, the servlet
puts the platform value back, the other writer changes it again, and both would spin, each write
answered by the other's. A correction that repeats the very same patch the servlet sent shortly
before is such an answer; after `THRESHOLD` of them within `WINDOW` seconds the object is in a
fight: the sync worker reports it once (log and metric) and waits an exponentially growing time
before correcting again. Any other patch (the platform value changed, or a different field
drifted) ends the fight, so the platform's new value is written at once.

Deliberately not here: deciding the patch (the core) or executing it (the sync worker); this only
remembers recent corrections per remote object and answers "go" or "wait this long".
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Any

from attrs import define, field, frozen

from servlet.core.hashing import canonical_json
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION

THRESHOLD = 3  # identical corrections within WINDOW before it counts as a fight
WINDOW = 30.0  # seconds
FIRST_BACKOFF = 2.0  # seconds; doubled with each further correction, up to MAX_BACKOFF
MAX_BACKOFF = 120.0


@frozen
class Verdict:
    """`wait` seconds before the correction may be sent (0: now); `started`: a fight just began."""

    wait: float
    started: bool = False


@define
class _Corrections:
    patch: str
    times: list[float] = field(factory=list)
    reported: bool = False


def patch_identity(patch: dict[str, Any]) -> str:
    """The patch without its last-known-state annotation, which carries the same content again."""
    metadata = dict(patch.get("metadata") or {})
    annotations = {k: v for k, v in (metadata.get("annotations") or {}).items() if k != LAST_KNOWN_STATE_ANNOTATION}
    metadata["annotations"] = annotations
    return canonical_json({**patch, "metadata": metadata})


class FightTracker:
    """Per remote object, the recent identical corrections of its local copy."""

    def __init__(self, *, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._recent: dict[Hashable, _Corrections] = {}

    def consider(self, key: Hashable, patch: dict[str, Any]) -> Verdict:
        """Whether the correction `patch` of `key`'s local copy may be sent now.

        Call `sent` once it was sent. A patch different from the last one starts afresh.
        """
        identity = patch_identity(patch)
        now = self._clock()
        recent = self._recent.get(key)
        if recent is None or recent.patch != identity:
            self._recent[key] = _Corrections(patch=identity)
            return Verdict(wait=0.0)
        recent.times = [t for t in recent.times if now - t <= max(WINDOW, self._backoff(len(recent.times)))]
        if len(recent.times) < THRESHOLD:
            return Verdict(wait=0.0)
        wait = max(0.0, recent.times[-1] + self._backoff(len(recent.times)) - now)
        started = wait > 0 and not recent.reported
        recent.reported = recent.reported or started
        return Verdict(wait=wait, started=started)

    def sent(self, key: Hashable) -> None:
        recent = self._recent.get(key)
        if recent is not None:
            recent.times.append(self._clock())

    def in_fight(self, key: Hashable) -> bool:
        recent = self._recent.get(key)
        return recent is not None and len(recent.times) >= THRESHOLD

    def forget(self, key: Hashable) -> None:
        self._recent.pop(key, None)

    @staticmethod
    def _backoff(corrections: int) -> float:
        return min(MAX_BACKOFF, FIRST_BACKOFF * float(2 ** max(0, corrections - THRESHOLD)))
