"""The portable end-to-end lane (docs/e2e.md) works: a subset of the e2e suite, run through the
documented command against two kubeconfigs and nothing else, passes; a test that needs the
simulator is skipped there and says why.

The clusters are a `kcpsim serve` started as a separate process, RBAC enforced, so the lane
cannot reach into a simulator: it has the kubeconfigs, as it would for a real kcp and a kind
cluster. The servlet runs as the chart's ServiceAccount (a TokenRequest) on the service cluster.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcpsim.harness.process import child_environment
from kcpsim.waiting import eventually

REPO = Path(__file__).resolve().parents[2]
# Portable tests of several areas (primaries in two workspaces, schema replacement, claims of
# related objects), run in one shared world one after another, plus one test that needs kcpsim.
SUBSET = [
    "tests/integration/e2e/test_primaries.py::test_objects_in_two_workspaces_appear_locally_under_the_naming_rules",
    "tests/integration/e2e/test_publishing.py::test_a_changed_crd_gets_a_new_schema_that_replaces_the_old_one_in_the_export",
    "tests/integration/e2e/test_related.py::test_a_workspace_configmap_comes_down_once_the_consumer_accepts_the_new_claim",
    "tests/integration/e2e/test_conflicts.py::test_a_conflict_writes_nothing_and_a_freed_name_is_taken_within_seconds",
    "tests/integration/e2e/test_redaction.py",
]

# As a fresh kcp for the servlet: the export without schemas yet; RBAC enforced.
SERVE = [sys.executable, "-m", "kcpsim", "serve", "--port", "0", "--no-schema", "--authz", "rbac"]


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[Path]:
    """`kcpsim serve` in its own process; the directory its kubeconfigs are written to."""
    directory = tmp_path / "clusters"
    log = (tmp_path / "kcpsim.log").open("wb")
    process = subprocess.Popen(
        [*SERVE, "--dir", str(directory)],
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=child_environment(),
        start_new_session=True,
    )

    def alive() -> None:
        if process.poll() is not None:
            raise AssertionError(f"kcpsim serve exited with {process.poll()}: {(tmp_path / 'kcpsim.log').read_text()}")

    try:
        eventually(
            lambda: (directory / "kcp.kubeconfig").exists() and (directory / "service.kubeconfig").exists(),
            timeout=30,
            what="kcpsim serve to write its kubeconfigs",
            guard=alive,
        )
        yield directory
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


@pytest.mark.timeout(240)
def test_the_e2e_suite_runs_against_kubeconfigs_and_skips_what_needs_the_simulator(clusters: Path) -> None:
    environment = child_environment() | {
        "E2E_KCP_KUBECONFIG": str(clusters / "kcp.kubeconfig"),
        "E2E_SERVICE_KUBECONFIG": str(clusters / "service.kubeconfig"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", *SUBSET, "-p", "no:randomly", "-p", "no:cacheprovider", "-q", "-rs"],
        cwd=REPO,
        env=environment,
        capture_output=True,
        text=True,
        timeout=220,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    assert "4 passed, 1 skipped" in output, output[-2000:]
    assert "needs kcpsim: injects faults" in output, output[-2000:]
