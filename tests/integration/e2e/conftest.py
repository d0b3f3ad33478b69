"""Fixtures of the end-to-end suite: a fresh kcpsim world per test, servlets as real processes.

Each test gets its own kcpsim (default topology, export without a schema yet, PublishedResource
CRD installed, namespace `kdp-system`; another `Topology` through indirect parametrization) and starts the servlet processes it needs through
`e2e.servlet(...)`. Whatever a test started is stopped afterwards (SIGTERM, then SIGKILL). When a
test fails, the tail of every servlet's log is attached to its report.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcpsim import Topology
from kcpsim.harness.world import start_world
from tests.integration.e2e.env import E2E

LOG_LINES = 60


@pytest.fixture
def e2e(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[E2E]:
    """Parametrize indirectly with a `Topology` for another starting world."""
    topology: Topology | None = getattr(request, "param", None)
    env = E2E(start_world(tmp_path / "world", topology=topology))
    try:
        yield env
    finally:
        env.stop_all()
        env.world.stop()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    report = yield
    env = getattr(item, "funcargs", {}).get("e2e")
    if report.failed and isinstance(env, E2E):
        for process in env.processes:
            report.sections.append(
                (f"servlet {process.label} log (last {LOG_LINES} lines)", process.log_tail(LOG_LINES) or "(empty)")
            )
    return report
