"""The reliability suites reuse the end-to-end fixtures: a fresh kcpsim world per test and
`servlet run` as real processes (`e2e`), with servlet logs attached to failing reports.

Long variants are marked `slow` and deselected (reported as deselected, never skipped) unless
the run asks for them with `-m slow`.
"""

from __future__ import annotations

import pytest

from tests.integration.e2e.conftest import e2e, pytest_runtest_makereport

__all__ = ["e2e", "pytest_runtest_makereport"]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "slow" in (config.getoption("markexpr") or ""):
        return
    here = __file__.rsplit("/", 1)[0]
    long_ones = [item for item in items if item.get_closest_marker("slow") and str(item.path).startswith(here)]
    if long_ones:
        config.hook.pytest_deselected(items=long_ones)
        items[:] = [item for item in items if item not in long_ones]
