"""Running `servlet run` as a real process against kcpsim, and using kcpsim as a user would.

Shared by the end-to-end suite and the newcomer demo (`python -m tests.kcpsim demo`), so it
imports nothing of pytest. It knows where things are in a simulated world (URLs, kubeconfigs,
which client made which request) and how to start, probe, signal and read a servlet process.
It deliberately knows nothing about what the servlet should do: the tests and the demo say that.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs
import httpx2
import yaml

from tests.kcpsim import KcpSim, SimConfig, Topology

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[3]
PUBLISHED_RESOURCE_CRD = REPO / "charts" / "servlet" / "crds" / "publishedresources.yaml"
EXAMPLES = REPO / "examples" / "certificates"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SERVLET_NAMESPACE = "kdp-system"


class ServletDied(AssertionError):
    """The servlet process ended while a test or the demo still needed it."""


# ---- waiting -------------------------------------------------------------------------------------
def eventually(check: Callable[[], T], *, timeout: float, what: str,
               guard: Callable[[], None] | None = None, interval: float = 0.1) -> T:
    """Poll `check` until it returns a truthy value (returned) or `timeout` seconds pass.

    `check` may raise AssertionError to say "not yet, and here is why"; the last reason is part of
    the failure message. `guard` runs before every attempt and raises when waiting is pointless
    (the servlet died), so a dead daemon fails fast instead of after the timeout.
    """
    deadline = time.monotonic() + timeout
    reason = "the condition was never met"
    while True:
        if guard is not None:
            guard()
        try:
            result = check()
        except AssertionError as exc:
            reason = str(exc) or repr(exc)
        else:
            if result:
                return result
            reason = f"the last check returned {result!r}"
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}: {reason}")
        time.sleep(interval)


def consistently(check: Callable[[], object], *, duration: float, what: str,
                 guard: Callable[[], None] | None = None, interval: float = 0.1) -> None:
    """`check` must hold (not raise, return truthy) on every attempt for `duration` seconds."""
    deadline = time.monotonic() + duration
    while True:
        if guard is not None:
            guard()
        try:
            result = check()
        except AssertionError as exc:
            raise AssertionError(f"{what} stopped holding: {exc}") from exc
        if not result:
            raise AssertionError(f"{what} stopped holding: the check returned {result!r}")
        if time.monotonic() >= deadline:
            return
        time.sleep(interval)


# ---- who called ----------------------------------------------------------------------------------
@attrs.frozen
class Call:
    token: str
    method: str
    path: str
    status: int


class CallerLog:
    """Every request kcpsim answered, with the bearer token of the client that made it.

    kcpsim's own request log does not record who called; each servlet process (and each
    `servlet plan`) gets kubeconfigs with its own token, so this log tells replicas apart.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []

    def install(self, sim: KcpSim) -> None:
        """Wrap kcpsim's request handler; must run before `sim.start()` registers it."""
        inner = sim.server.handle

        async def handle(request: Any) -> Any:
            response = await inner(request)
            token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            with self._lock:
                self._calls.append(Call(token=token, method=request.method, path=request.path,
                                        status=response.status))
            return response

        sim.server.handle = handle  # type: ignore[method-assign]

    def calls(self, *, token: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if token is None or c.token == token]

    def writes(self, *, token: str | None = None, ignore: Iterable[str] = ()) -> list[Call]:
        """Write requests (POST, PUT, PATCH, DELETE), leaving out paths containing any of `ignore`."""
        skipped = tuple(ignore)
        return [c for c in self.calls(token=token)
                if c.method in WRITE_METHODS and not any(part in c.path for part in skipped)]


# ---- talking to kcpsim ---------------------------------------------------------------------------
class ApiCallFailed(AssertionError):
    """A request of the test itself (not of the servlet) was refused by kcpsim."""


class Rest:
    """Plain JSON over HTTP to kcpsim, as `kubectl` would do it for a user; dicts in and out."""

    def __init__(self, base_url: str) -> None:
        self._client = httpx2.Client(base_url=base_url, trust_env=False, timeout=10,
                                     headers={"Authorization": "Bearer e2e-test"})

    def close(self) -> None:
        self._client.close()

    def _send(self, method: str, path: str, body: Any = None, *,
              content_type: str = "application/json", allow: Sequence[int] = ()) -> httpx2.Response:
        content = json.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if content is not None else {}
        response = self._client.request(method, path, content=content, headers=headers)
        if response.status_code >= 400 and response.status_code not in allow:
            raise ApiCallFailed(f"{method} {path} answered {response.status_code}: {response.text[:500]}")
        return response

    def get(self, path: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist (or the resource is not served yet)."""
        response = self._send("GET", path, allow=(403, 404))
        return None if response.status_code in (403, 404) else dict(response.json())

    def list(self, path: str) -> list[dict[str, Any]]:
        response = self._send("GET", path, allow=(403, 404))
        return [] if response.status_code in (403, 404) else list(response.json().get("items") or [])

    def served(self, path: str) -> bool:
        return self._send("GET", path, allow=(403, 404)).status_code == 200

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self._send("POST", path, body).json())

    def merge_patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self._send("PATCH", path, body, content_type="application/merge-patch+json").json())

    def delete(self, path: str) -> None:
        self._send("DELETE", path, allow=(404,))


def resource_path(*, group: str, version: str, plural: str, namespace: str = "", name: str = "") -> str:
    """`/api/v1/...` or `/apis/<group>/<version>/...`, namespaced when `namespace` is given."""
    path = f"/api/{version}" if group == "" else f"/apis/{group}/{version}"
    if namespace:
        path += f"/namespaces/{namespace}"
    path += f"/{plural}"
    return f"{path}/{name}" if name else path


_PLURALS = {("v1", "Namespace"): "namespaces", ("v1", "Secret"): "secrets", ("v1", "ConfigMap"): "configmaps",
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): "customresourcedefinitions",
            ("services.kdp.k8c.io/v1alpha1", "PublishedResource"): "publishedresources"}


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


@attrs.define
class World:
    """A running kcpsim with the servlet's prerequisites, and where everything in it lives."""

    sim: KcpSim
    directory: Path
    callers: CallerLog
    rest: Rest

    @property
    def org(self) -> str:
        return self.sim.topology.org

    @property
    def group(self) -> str:
        return self.sim.topology.group

    @property
    def export(self) -> str:
        return self.sim.topology.export

    def cluster(self, workspace: str) -> str:
        """Logical cluster name of a consumer workspace given by short name (`team-a`)."""
        return self.sim.cluster_of(f"{self.org}:{workspace}")

    def in_workspace(self, workspace: str, path: str) -> str:
        return f"/clusters/{self.org}:{workspace}{path}"

    def in_org(self, path: str) -> str:
        return f"/clusters/{self.org}{path}"

    def apply(self, document: dict[str, Any]) -> dict[str, Any]:
        """Create a service-cluster object (CRD, PublishedResource, Namespace, Secret, ...)."""
        key = (document["apiVersion"], document["kind"])
        group, _, version = document["apiVersion"].rpartition("/")
        path = resource_path(group=group, version=version, plural=_PLURALS[key],
                             namespace=document["metadata"].get("namespace", ""))
        return self.rest.create(path, document)

    def ensure_namespace(self, name: str, *, workspace: str | None = None) -> None:
        path = "/api/v1/namespaces" if workspace is None else self.in_workspace(workspace, "/api/v1/namespaces")
        if self.rest.get(f"{path}/{name}") is None:
            self.rest.create(path, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def kubeconfigs(self, token: str, *, kcp_server: str = "") -> tuple[Path, Path]:
        """service and kcp (org workspace, unless `kcp_server`) kubeconfigs whose requests carry `token`."""
        paths = []
        for label, server in (("service", self.sim.base_url), ("kcp", kcp_server or self.sim.workspace_url(self.org))):
            config = self.sim.kubeconfig_dict(server)
            config["users"][0]["user"]["token"] = token
            path = self.directory / f"{label}-{token}.kubeconfig"
            path.write_text(yaml.safe_dump(config, sort_keys=False))
            paths.append(path)
        return paths[0], paths[1]

    def stop(self) -> None:
        self.rest.close()
        self.sim.stop()


def start_world(directory: Path, *, topology: Topology | None = None) -> World:
    """kcpsim with the default topology but no schema in the export yet (the servlet adds it),
    the PublishedResource CRD installed and the servlet's namespace created."""
    directory.mkdir(parents=True, exist_ok=True)
    sim = KcpSim(SimConfig(topology=topology or Topology(with_schema=False)))
    callers = CallerLog()
    callers.install(sim)
    sim.start()
    world = World(sim=sim, directory=directory, callers=callers, rest=Rest(sim.base_url))
    try:
        sim.write_kubeconfigs(directory)
        for document in load_yaml(PUBLISHED_RESOURCE_CRD):
            world.apply(document)
        world.ensure_namespace(SERVLET_NAMESPACE)
    except BaseException:
        world.stop()
        raise
    return world


# ---- the servlet process -------------------------------------------------------------------------
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
    env = {k: v for k, v in os.environ.items()
           if not k.lower().endswith("_proxy") and not k.startswith("SERVLET_")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    env["PYTHONUNBUFFERED"] = "1"
    return env


@attrs.frozen
class ServletOptions:
    name: str = "tom"
    token: str = "servlet"  # tells this process's requests apart in the CallerLog
    leader_election: bool = True
    delete_orphans: bool = False
    apiexport: str = ""  # default: the simulated export
    kcp_server: str = ""  # default: the org workspace's URL
    extra: tuple[str, ...] = ()


class ServletProcess:
    """One `servlet run` process, its probe ports and its log file (stdout and stderr together)."""

    def __init__(self, world: World, options: ServletOptions, *, label: str) -> None:
        self.world = world
        self.options = options
        self.label = label
        self.health_port = free_port()
        self.metrics_port = free_port()
        self.log_path = world.directory / f"servlet-{label}.log"
        self._process: subprocess.Popen[bytes] | None = None
        self.stopping = False  # set once the test ends it on purpose: its exit is then no failure

    def command(self) -> list[str]:
        service, kcp = self.world.kubeconfigs(self.options.token, kcp_server=self.options.kcp_server)
        return [
            *servlet_executable(), "run",
            "--kubeconfig", str(service), "--kcp-kubeconfig", str(kcp),
            "--name", self.options.name, "--api-group", self.world.group,
            "--apiexport", self.options.apiexport or self.world.export,
            "--namespace", SERVLET_NAMESPACE,
            "--leader-election" if self.options.leader_election else "--no-leader-election",
            "--metrics-address", f"127.0.0.1:{self.metrics_port}",
            "--health-address", f"127.0.0.1:{self.health_port}",
            "--log-format", "json",
            *(("--delete-orphans",) if self.options.delete_orphans else ()),
            *self.options.extra,
        ]

    def launch(self) -> ServletProcess:
        """Start the process and return at once."""
        with self.log_path.open("ab") as log:
            self._process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, env=child_environment(),
                                             cwd=self.world.directory, start_new_session=True)
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
        eventually(lambda: self.probe("/healthz") == 200, timeout=ready_timeout, interval=0.1,
                   what=f"servlet {self.label} to answer /healthz on port {self.health_port}", guard=self.check_alive)
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

    def metric(self, name: str) -> list[float]:
        """Values of every sample of the metric family `name` (all label sets)."""
        values = []
        for line in self.metrics().splitlines():
            if line.startswith((f"{name} ", f"{name}{{")):
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


def run_servlet_plan(world: World, *, token: str = "plan", name: str = "tom",
                     extra: Sequence[str] = (), timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
    """`servlet plan` in live mode with the same connection flags as `run`."""
    service, kcp = world.kubeconfigs(token)
    command = [*servlet_executable(), "plan", "--kubeconfig", str(service), "--kcp-kubeconfig", str(kcp),
               "--name", name, "--api-group", world.group, "--apiexport", world.export, *extra]
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=child_environment(),
                          cwd=world.directory, stdin=subprocess.DEVNULL, check=False)


__all__ = [
    "ApiCallFailed", "Call", "CallerLog", "EXAMPLES", "Rest", "ServletDied", "ServletOptions",
    "ServletProcess", "World", "consistently", "eventually", "load_yaml", "resource_path", "run_servlet_plan", "start_world",
]
