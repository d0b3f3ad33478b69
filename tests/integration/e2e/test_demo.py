"""The newcomer demo (`kcpsim demo`, docs/demo.md) runs to the end and says so, from any directory."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kcpsim.harness.process import child_environment


@pytest.mark.kcpsim_only("runs the demo's own simulator")
def test_the_demo_command_syncs_both_ways_and_exits_cleanly(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "kcpsim", "demo", "--timeout", "60", "--dir", str(tmp_path)],
        cwd=tmp_path,
        env=child_environment(),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"the demo exited with {result.returncode}:\n{output[-3000:]}"
    for line in (
        "schema published: APIResourceSchema v",
        "export updated: APIExport certificates.example.corp",
        "local copy: team-a default/web -> Certificate",
        "local copy: team-b prod/api -> Certificate",
        "status back up: team-a default/web is Ready=True",
        "status back up: team-b prod/api is Ready=True",
        "related Secret up: team-a default/web-tls",
        "related Secret up: team-b prod/api-tls",
        "servlet stopped (SIGTERM), exit code 0",
        "Demo finished",
    ):
        assert line in result.stdout, f"missing from the demo's output: {line!r}\n{result.stdout[-3000:]}"
