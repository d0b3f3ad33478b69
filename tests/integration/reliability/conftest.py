"""The reliability suites reuse the end-to-end fixtures: a fresh kcpsim world per test and
`servlet run` as real processes (`e2e`), with servlet logs attached to failing reports.

Long variants are marked `slow`; the project's pytest options deselect them unless a run asks
for them with `-m slow`.
"""

from __future__ import annotations

from tests.integration.e2e.conftest import e2e, pytest_runtest_makereport

__all__ = ["e2e", "pytest_runtest_makereport"]
