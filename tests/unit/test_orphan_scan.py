"""How often the orphan scan runs after deletions (`app/controllers/orphan_scan.py`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from servlet.app.controllers.caches import Cache
from servlet.app.controllers.orphan_scan import SCAN_DELAY, OrphanScan
from servlet.app.observability.logs import get_logger
from servlet.app.observability.metrics import Metrics
from tests.fake_informer import FakeInformer
from tests.unit.test_plan import make_context


def _scan(clock: Iterator[float]) -> OrphanScan:
    return OrphanScan(
        name="widgets",
        context=make_context(),
        remote=Cache(FakeInformer()),  # type: ignore[arg-type]
        local=Cache(FakeInformer()),  # type: ignore[arg-type]
        remote_keys=list,
        executor=None,  # type: ignore[arg-type]  # nothing is deleted without --delete-orphans
        metrics=Metrics(version="test"),
        log=get_logger("test"),
        delete=False,
        clock=lambda: next(clock),
    )


@pytest.mark.parametrize(
    ("scan_seconds", "delay"),
    [(0.01, SCAN_DELAY), (0.2, SCAN_DELAY), (0.5, 4.5), (3.0, 27.0)],
)
async def test_after_deletions_scans_take_at_most_a_tenth_of_the_time(scan_seconds: float, delay: float) -> None:
    scan = _scan(iter([100.0, 100.0 + scan_seconds]))
    assert scan.delay() == SCAN_DELAY  # before the first scan
    await scan.scan(enabled=True)
    assert scan.delay() == pytest.approx(delay)
    assert scan_seconds / (scan.delay() + scan_seconds) <= 0.1 + 1e-9
