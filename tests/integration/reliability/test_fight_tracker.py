"""The fight rule on its own: when a repeated correction is a fight, and how long the servlet waits."""

from __future__ import annotations

import pytest

from servlet.app.controllers.fights import FIRST_BACKOFF, MAX_BACKOFF, THRESHOLD, FightTracker
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _patch(size: int, state: str = "s") -> dict[str, object]:
    return {"spec": {"size": size}, "metadata": {"annotations": {LAST_KNOWN_STATE_ANNOTATION: state}}}


def _correct(tracker: FightTracker, clock: Clock, patch: dict[str, object], *, every: float) -> list[float]:
    waits = []
    for _ in range(THRESHOLD + 4):
        verdict = tracker.consider("obj", patch)
        waits.append(verdict.wait)
        clock.now += verdict.wait
        tracker.sent("obj")
        clock.now += every
    return waits


def test_the_same_correction_again_and_again_backs_off_exponentially_up_to_a_cap() -> None:
    clock = Clock()
    waits = _correct(FightTracker(clock=clock), clock, _patch(1), every=0.2)
    assert waits[:THRESHOLD] == [0.0] * THRESHOLD
    assert waits[THRESHOLD] == pytest.approx(FIRST_BACKOFF - 0.2)
    assert all(later >= earlier for earlier, later in zip(waits[THRESHOLD:], waits[THRESHOLD + 1 :]))
    assert max(waits) <= MAX_BACKOFF


@pytest.mark.parametrize("every", [40.0, 120.0])
def test_corrections_far_apart_are_no_fight(every: float) -> None:
    clock = Clock()
    assert set(_correct(FightTracker(clock=clock), clock, _patch(1), every=every)) == {0.0}


def test_a_different_correction_ends_the_fight_at_once() -> None:
    clock = Clock()
    tracker = FightTracker(clock=clock)
    _correct(tracker, clock, _patch(1), every=0.1)
    assert tracker.in_fight("obj")
    assert tracker.consider("obj", _patch(3)).wait == 0.0  # the platform changed its value
    assert not tracker.in_fight("obj")


def test_the_state_annotation_alone_does_not_make_a_correction_different() -> None:
    clock = Clock()
    tracker = FightTracker(clock=clock)
    for state in ("a", "b", "c"):
        tracker.consider("obj", _patch(1, state))
        tracker.sent("obj")
    assert tracker.consider("obj", _patch(1, "d")).wait > 0


def test_a_fight_is_reported_once() -> None:
    clock = Clock()
    tracker = FightTracker(clock=clock)
    for _ in range(THRESHOLD):
        tracker.consider("obj", _patch(1))
        tracker.sent("obj")
    starts = [tracker.consider("obj", _patch(1)).started for _ in range(5)]
    assert starts == [True, False, False, False, False]
