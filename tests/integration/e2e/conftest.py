"""Fixtures of the end-to-end suite: a fresh kcpsim world per test, servlets as real processes.

Each test gets its own kcpsim (default topology, export without a schema yet, PublishedResource
CRD installed, namespace `kdp-system`; another `Topology` through indirect parametrization) with
RBAC enforced: the servlet processes a test starts through `e2e.servlet(...)` act as the chart's
ServiceAccount on the service cluster and as the kcp user the operations guide describes
(`identities.py`), while the test's own client is an admin.

With `E2E_KCP_KUBECONFIG` and `E2E_SERVICE_KUBECONFIG` set, the same tests run against those
clusters instead (`external.py`, docs/e2e.md); tests marked `kcpsim_only` are skipped there. Whatever a test started is stopped afterwards (SIGTERM, then SIGKILL). When a
test fails, the tail of every servlet's log is attached to its report.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcpsim import Topology
from kcpsim.harness.world import start_world
from tests.integration.e2e.env import E2E, WorldOptions
from tests.integration.e2e.external import SIMULATOR_ONLY, ExternalWorld, external_lane
from tests.integration.e2e.identities import install_servlet_identities

LOG_LINES = 60


@pytest.fixture
def e2e(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[E2E]:
    """Parametrize indirectly with a `Topology` or `WorldOptions` for another starting world."""
    if external_lane():
        yield from _external(request, tmp_path)
        return
    param: Topology | WorldOptions | None = getattr(request, "param", None)
    options = param if isinstance(param, WorldOptions) else WorldOptions(topology=param)
    world = start_world(tmp_path / "world", topology=options.topology, authz="rbac", tls=options.tls)
    try:
        identities = install_servlet_identities(world)
    except BaseException:
        world.stop()
        raise
    env = E2E(world, identities)
    try:
        yield env
        env.stop_all()  # shutting down is checked too (the Lease released)
        refused = [] if env.refusals_expected else env.refused_by_rbac()
        assert refused == [], f"the servlet lacks permissions the chart or the kcp role should grant: {refused}"
    finally:
        env.stop_all()
        env.world.stop()


def _external(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[E2E]:
    """The portable lane: the world of E2E_KCP_KUBECONFIG and E2E_SERVICE_KUBECONFIG (docs/e2e.md)."""
    if getattr(request, "param", None) is not None:
        pytest.skip("needs kcpsim: starts from a world of its own (another topology)")
    env = E2E(ExternalWorld(tmp_path / "world"))
    try:
        yield env
    finally:
        env.stop_all()
        env.world.stop()


def pytest_runtest_setup(item: pytest.Item) -> None:
    marker = item.get_closest_marker(SIMULATOR_ONLY)
    if marker is not None and external_lane():
        pytest.skip(f"needs kcpsim: {marker.args[0] if marker.args else 'simulator internals'}")


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
