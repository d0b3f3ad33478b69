"""`servlet run` as a real subprocess: start, probe, signal, read its log; and live `servlet plan`.

Each process gets free ports for its probes and metrics, kubeconfigs with its own token (so the
`CallerLog` tells replicas apart) and a log file holding its stdout and stderr.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import attrs
import httpx2

from kcpsim.harness.world import SERVLET_NAMESPACE
from kcpsim.waiting import eventually


class ServletWorld(Protocol):
    """What a servlet process needs of its world: kcpsim's `World`, or the portable e2e lane's."""

    @property
    def directory(self) -> Path: ...

    @property
    def group(self) -> str: ...

    @property
    def export(self) -> str: ...

    def kubeconfigs(self, token: str, *, kcp_server: str = "", kcp_token: str = "") -> tuple[Path, Path]: ...


class ServletDied(AssertionError):
    """The servlet process ended while a test or the demo still needed it."""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def servlet_executable() -> list[str]:
    """The `servlet` console script next to this interpreter (the installed entry point)."""
    script = Path(sys.executable).parent / "servlet"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "import sys; sys.argv[0] = 'servlet'; from servlet.app.cli import main; main()"]


def child_environment() -> dict[str, str]:
    """This environment without proxies or SERVLET_* settings that would change the flags' meaning."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and not k.startswith("SERVLET_")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["PYTHONUNBUFFERED"] = "1"
    return env


@attrs.frozen
class ServletOptions:
    name: str = "tom"
    token: str = "servlet"  # tells this process's requests apart in the CallerLog
    kcp_token: str = ""  # for kcp's kubeconfig, when not `token`
    leader_election: bool = True
    delete_orphans: bool = False
    apiexport: str = ""  # default: the simulated export
    kcp_server: str = ""  # default: the org workspace's URL
    extra: tuple[str, ...] = ()


class ServletProcess:
    """One `servlet run` process, its probe ports and its log file (stdout and stderr together)."""

    def __init__(self, world: ServletWorld, options: ServletOptions, *, label: str) -> None:
        self.world = world
        self.options = options
        self.label = label
        self.health_port = free_port()
        self.metrics_port = free_port()
        self.log_path = world.directory / f"servlet-{label}.log"
        self._process: subprocess.Popen[bytes] | None = None
        self.stopping = False  # set once the test ends it on purpose: its exit is then no failure

    def command(self) -> list[str]:
        service, kcp = self.world.kubeconfigs(
            self.options.token, kcp_server=self.options.kcp_server, kcp_token=self.options.kcp_token
        )
        return [
            *servlet_executable(),
            "run",
            "--kubeconfig",
            str(service),
            "--kcp-kubeconfig",
            str(kcp),
            "--name",
            self.options.name,
            "--api-group",
            self.world.group,
            "--apiexport",
            self.options.apiexport or self.world.export,
            "--namespace",
            SERVLET_NAMESPACE,
            "--leader-election" if self.options.leader_election else "--no-leader-election",
            "--metrics-address",
            f"127.0.0.1:{self.metrics_port}",
            "--health-address",
            f"127.0.0.1:{self.health_port}",
            "--log-format",
            "json",
            *(("--delete-orphans",) if self.options.delete_orphans else ()),
            *self.options.extra,
        ]

    def launch(self) -> ServletProcess:
        """Start the process and return at once."""
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(
                self.command(),
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=child_environment(),
                cwd=self.world.directory,
                start_new_session=True,
            )
        return self

    def wait(self, *, timeout: float) -> int | None:
        """The exit code once the process ends by itself, None if it still runs after `timeout`."""
        assert self._process is not None, "the servlet was never started"
        try:
            return self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def start(self, *, ready_timeout: float = 20.0) -> ServletProcess:
        """Start and wait until `/healthz` answers; a process that exits first fails at once."""
        self.launch()
        eventually(
            lambda: self.probe("/healthz") == 200,
            timeout=ready_timeout,
            interval=0.1,
            what=f"servlet {self.label} to answer /healthz on port {self.health_port}",
            guard=self.check_alive,
        )
        return self

    @property
    def pid(self) -> int:
        assert self._process is not None, "the servlet was never started"
        return self._process.pid

    def exit_code(self) -> int | None:
        return None if self._process is None else self._process.poll()

    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def check_alive(self) -> None:
        code = self.exit_code()
        if code is not None and not self.stopping:
            raise ServletDied(f"servlet run ({self.label}) exited with code {code}: {self.last_words()}")

    def probe(self, path: str, *, port: int | None = None) -> int | None:
        """HTTP status of a probe or metrics path, None while nothing listens."""
        try:
            response = httpx2.get(f"http://127.0.0.1:{port or self.health_port}{path}", timeout=2, trust_env=False)
        except httpx2.HTTPError:
            return None
        return response.status_code

    def metrics(self) -> str:
        return httpx2.get(f"http://127.0.0.1:{self.metrics_port}/metrics", timeout=5, trust_env=False).text

    def metric(self, name: str, **labels: str) -> list[float]:
        """Values of every sample of the metric family `name` (all label sets, or those with `labels`)."""
        values = []
        wanted = [f'{label}="{value}"' for label, value in labels.items()]
        for line in self.metrics().splitlines():
            if line.startswith((f"{name} ", f"{name}{{")) and all(pair in line for pair in wanted):
                values.append(float(line.rsplit(" ", 1)[1]))
        return values

    def terminate(self, *, timeout: float = 10.0) -> int | None:
        """SIGTERM and wait; the exit code, or None if it was still running after `timeout`."""
        self.stopping = True
        if not self.alive():
            return self.exit_code()
        assert self._process is not None
        self._process.send_signal(signal.SIGTERM)
        try:
            return self._process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None

    def kill(self) -> None:
        """SIGKILL: no shutdown at all, as when a node dies."""
        self.stopping = True
        if self.alive():
            assert self._process is not None
            self._process.kill()
            self._process.wait(timeout=10)

    def stop(self) -> None:
        """Teardown: SIGTERM, then SIGKILL if it lingers."""
        if self.terminate(timeout=5) is None:
            self.kill()

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def log_tail(self, lines: int = 40) -> str:
        return "\n".join(self.log_text().splitlines()[-lines:])

    def last_words(self) -> str:
        # Strip the frame typer draws around usage errors; keep the words.
        lines = [text for line in self.log_text().splitlines() if (text := line.strip(" │╭╮╰╯─\t"))]
        return " / ".join(lines[-3:]) if lines else "(no output)"


def run_servlet_plan(
    world: ServletWorld, *, token: str = "plan", name: str = "tom", extra: Sequence[str] = (), timeout: float = 60.0
) -> subprocess.CompletedProcess[str]:
    """`servlet plan` in live mode with the same connection flags as `run`."""
    service, kcp = world.kubeconfigs(token)
    command = [
        *servlet_executable(),
        "plan",
        "--kubeconfig",
        str(service),
        "--kcp-kubeconfig",
        str(kcp),
        "--name",
        name,
        "--api-group",
        world.group,
        "--apiexport",
        world.export,
        *extra,
    ]
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=child_environment(),
        cwd=world.directory,
        stdin=subprocess.DEVNULL,
        check=False,
    )
