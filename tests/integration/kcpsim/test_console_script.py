"""kcpsim is installed as a command of its own: `kcpsim` (and `python -m kcpsim`) work from any
directory, not only from the repository root, and `serve` writes kubeconfigs that reach it."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx2
import yaml

SCRIPT = Path(sys.executable).parent / "kcpsim"


def _elsewhere() -> dict[str, str]:
    """This environment without anything that would put the repository on the import path."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def _script() -> str:
    assert SCRIPT.exists(), f"no `kcpsim` console script next to {sys.executable}: install it (see CONTRIBUTING.md)"
    return str(SCRIPT)


def test_the_console_script_and_the_module_show_the_same_help_outside_the_repository(tmp_path: Path) -> None:
    outputs = []
    for command in ([_script(), "--help"], [sys.executable, "-m", "kcpsim", "--help"]):
        result = subprocess.run(
            command, cwd=tmp_path, env=_elsewhere(), capture_output=True, text=True, timeout=60, check=False
        )
        assert result.returncode == 0, result.stdout + result.stderr
        outputs.append(result.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].startswith("usage: kcpsim")
    for command in ("serve", "demo", "tour"):
        assert command in outputs[0]


def test_serve_from_another_directory_writes_kubeconfigs_that_reach_it_and_stops_on_ctrl_c(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [_script(), "serve", "--port", "0", "--dir", "configs"],
        cwd=tmp_path,
        env=_elsewhere(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    try:
        for line in process.stdout:
            lines.append(line.rstrip())
            if line.startswith("Stop with Ctrl-C"):
                break
        match = re.search(r"serving on (http://\S+)", "\n".join(lines))
        assert match, "\n".join(lines)
        configs = tmp_path / "configs"
        assert sorted(p.name for p in configs.iterdir()) == [
            "kcp.kubeconfig",
            "service.kubeconfig",
            "team-a.kubeconfig",
            "team-b.kubeconfig",
        ]
        server = yaml.safe_load((configs / "service.kubeconfig").read_text())["clusters"][0]["cluster"]["server"]
        assert server == match.group(1)
        namespaces = httpx2.get(f"{server}/api/v1/namespaces", trust_env=False, timeout=10).json()
        assert "default" in {item["metadata"]["name"] for item in namespaces["items"]}
    finally:
        process.send_signal(signal.SIGINT)
        code = process.wait(timeout=10)
        process.stdout.close()
    assert code == 0, "\n".join(lines)
