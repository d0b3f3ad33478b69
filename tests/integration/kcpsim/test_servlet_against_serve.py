"""docs/try-it-locally.md section 6, run as written: `serve`, `servlet run`, publish, create, see.

Only what a test must change is changed: free ports instead of 6443/8080/8081, a temporary
folder instead of /tmp/kcpsim, and this interpreter's bin folder instead of `.venv/bin/`.
"""

from __future__ import annotations

import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kcpsim.waiting import eventually

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "try-it-locally.md"
BIN = str(Path(sys.executable).parent)


def section_blocks() -> tuple[list[str], list[str]]:
    text = DOC.read_text()
    section = text[text.index("## 6. Run the servlet against it") :]
    section = section[: section.index("\n## ", 1)]
    return (
        re.findall(r"```bash\n(.*?)```", section, flags=re.S),
        re.findall(r"```text\n(.*?)```", section, flags=re.S),
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def localise(command: str, *, directory: Path, replacements: dict[str, str]) -> str:
    command = command.replace("/tmp/kcpsim", str(directory)).replace(".venv/bin", BIN)
    for old, new in replacements.items():
        command = command.replace(old, new)
    return command


@contextmanager
def background(command: str, *, stop: signal.Signals) -> Iterator[subprocess.Popen[str]]:
    process = subprocess.Popen(
        ["bash", "-c", f"exec {command}"], cwd=REPO, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT
    )
    try:
        yield process
    finally:
        process.send_signal(stop)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        assert process.stdout is not None
        process.stdout.close()


def until_success(script: str, *, within: float) -> str:
    def attempt() -> subprocess.CompletedProcess[str]:
        result = subprocess.run(
            ["bash", "-c", f"set -eo pipefail\n{script}"],
            cwd=REPO,
            text=True,
            capture_output=True,
            timeout=30,
            check=False,
        )
        assert result.returncode == 0, f"exit code {result.returncode}:\n{result.stdout}{result.stderr}"
        return result

    return eventually(attempt, what=f"the guide's command to succeed:\n{script}\n", timeout=within, interval=0.3).stdout


def test_the_servlet_runs_against_serve_as_the_guide_shows(tmp_path: Path) -> None:
    (serve, run, publish, create, check), (expected,) = section_blocks()
    ports = {"127.0.0.1:8080": f"127.0.0.1:{free_port()}", "127.0.0.1:8081": f"127.0.0.1:{free_port()}"}
    with background(
        localise(serve.strip(), directory=tmp_path, replacements={}) + " --port 0", stop=signal.SIGINT
    ) as simulator:
        assert simulator.stdout is not None
        banner = "".join(simulator.stdout.readline() for _ in range(2))
        url = re.search(r"serving on (http://\S+)", banner)
        assert url, banner
        ports["http://127.0.0.1:6443"] = url.group(1)
        daemon_command = localise(run.replace("\\\n", " ").strip(), directory=tmp_path, replacements=ports)
        with background(daemon_command, stop=signal.SIGTERM) as daemon:
            setup = localise(publish, directory=tmp_path, replacements=ports)
            until_success(setup, within=0)  # creates are not idempotent: exactly one attempt
            until_success(setup.split("for crd")[0] + create, within=20)  # served once the export has the schema
            output = until_success(setup.split("for crd")[0] + check, within=20)
            assert daemon.poll() is None, "servlet run stopped"
        assert daemon.returncode == 0
    assert output.split() == expected.split()
