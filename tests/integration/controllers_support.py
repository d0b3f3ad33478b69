"""Support for the controller integration tests: the daemon in the test's event loop against kcpsim.

Each test gets a fresh kcpsim world (the e2e suite's `start_world`: default topology, the export
without a schema, the PublishedResource CRD installed) and runs `Daemon` as a task in its own
event loop over real HTTP, with kubeconfigs whose token tells the servlet's requests apart from the
test's. `requests()` lists the servlet's requests in a compact, readable form so tests can assert
the exact API calls a reconcile makes.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import attrs

from kcpsim import Topology
from kcpsim.harness.world import SERVLET_NAMESPACE, World, start_world
from kcpsim.waiting import eventually_async
from servlet.adapters.connections import Connections, RequestObserver
from servlet.app.controllers.leading import LeadingControllers
from servlet.app.controllers.sync import SyncWorker
from servlet.app.daemon import Daemon
from servlet.app.daemon_config import DaemonConfig
from servlet.app.observability.probes import Address
from servlet.app.runtime.leader import LeaseTiming
from servlet.core.model import ServletIdentity

T = TypeVar("T")
TOKEN = "servlet-under-test"
TEAM_A = "k7v2m9x4q1w8z3r5"
TEAM_B = "p4n8c2l6t0y9h1j3"
ORG = "abc123xyz"
WIDGETS = "/apis/example.com/v1"
REMOTE_WIDGETS = "/apis/certificates.example.corp/v1"
# Never due during a test; without a period `queue.resync()` would queue nothing.
RESYNC_PERIOD = 3600.0


def _work_calls(world: World, token: str) -> int:
    return sum(1 for call in world.callers.calls(token=token) if "/leases" not in call.path)


async def settle(world: World, *, quiet: float = 0.3, timeout: float = 10.0, token: str = TOKEN) -> None:
    """Wait until the servlet (the client with `token`) has sent no request for `quiet` seconds
    (lease renewals do not count)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    count = _work_calls(world, token)
    last_change = loop.time()
    while loop.time() - last_change < quiet:
        await asyncio.sleep(0.02)
        now = _work_calls(world, token)
        if now != count:
            count, last_change = now, loop.time()
        if loop.time() > deadline:
            raise AssertionError("the servlet never went quiet")


# -- readable request lists -------------------------------------------------------------------------

_VW = re.compile(r"^/services/apiexport/[^/]+/[^/]+/clusters/(?P<cluster>[^/]+)(?P<rest>/.*)$")
_WORKSPACE = re.compile(r"^/clusters/(?P<cluster>[^/]+)(?P<rest>/.*)$")
_API = re.compile(
    r"^/(?:api/[^/]+|apis/[^/]+/[^/]+)(?:/namespaces/(?P<ns>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?"
    r"(?P<sub>/status)?$"
)


def describe(method: str, path: str) -> str:
    """`PATCH vw:k7v2m9x4q1w8z3r5 widgets default/w1` / `POST service namespaces k7v...` / `GET org ...`."""
    where = "service"
    match = _VW.match(path)
    if match:
        where, path = f"vw:{match['cluster']}", match["rest"]
    elif (match := _WORKSPACE.match(path)) is not None:
        where, path = ("org" if match["cluster"] in ("root:myorg", ORG) else f"ws:{match['cluster']}"), match["rest"]
    api = _API.match(path)
    if api is None:
        return f"{method} {where} {path}"
    if api["ns"] == None and api["name"] is None and api["plural"] == "namespaces":  # noqa: E711
        target = ""
    elif api["name"] is None:
        target = api["ns"] or ""
    else:
        target = f"{api['ns']}/{api['name']}" if api["ns"] else api["name"]
    plural = api["plural"] + ("/status" if api["sub"] else "")
    return " ".join(part for part in (method, where, plural, target) if part)


@attrs.define
class Harness:
    world: World
    daemon: Daemon
    token: str = TOKEN
    stop: asyncio.Event = attrs.field(factory=asyncio.Event)
    mark: int = 0

    @property
    def rest(self) -> Any:
        return self.world.rest

    def requests(
        self,
        *,
        since_mark: bool = True,
        writes_only: bool = False,
        with_status: bool = False,
        ignore: tuple[str, ...] = ("leases", "events"),
    ) -> list[str]:
        """The servlet's requests (since `mark()`), described; lease and event traffic left out."""
        calls = self.world.callers.calls(token=self.token)[self.mark if since_mark else 0 :]
        described = [describe(call.method, call.path) + (f" -> {call.status}" if with_status else "") for call in calls]
        described = [text for text in described if not any(f" {word}" in text for word in ignore)]
        if writes_only:
            described = [text for text in described if not text.startswith("GET ")]
        return described

    def set_mark(self) -> None:
        self.mark = len(self.world.callers.calls(token=self.token))

    @property
    def controllers(self) -> LeadingControllers:
        assert self.daemon.controllers is not None, "the controllers are not running"
        return self.daemon.controllers

    def worker(self, name: str) -> SyncWorker:
        worker = self.controllers.manager.workers.get(name)
        assert worker is not None, f"no sync worker for {name}"
        return worker

    def data(self, path: str) -> dict[str, str]:
        """The `data` of the object at `path`, empty when there is none."""
        return dict((self.rest.get(path) or {}).get("data") or {})

    def sync_reconciles(self) -> float:
        """How many reconciles the sync controllers have made, from the daemon's metrics."""
        return sum(
            float(line.rsplit(" ", 1)[1])
            for line in self.daemon.metrics.render().decode().splitlines()
            if line.startswith("servlet_reconciles_total{") and 'controller="sync' in line
        )

    async def writes_of_a_resync(self, published_resource: str) -> list[str]:
        """The writes a resync of every object of `published_resource` sends, once the servlet is
        quiet before and after (the daemon needs a resync period, `RESYNC_PERIOD`)."""
        await settle(self.world)
        self.set_mark()
        self.worker(published_resource).queue.resync()
        await settle(self.world, quiet=1.0)
        return self.requests(writes_only=True)

    def condition(self, published_resource: str, type_: str) -> dict[str, Any] | None:
        found = self.rest.get(f"/apis/services.kdp.k8c.io/v1alpha1/publishedresources/{published_resource}") or {}
        for condition in (found.get("status") or {}).get("conditions") or []:
            if condition.get("type") == type_:
                return dict(condition)
        return None

    async def wait_condition(self, published_resource: str, type_: str, status: str = "True") -> dict[str, Any]:
        def check() -> dict[str, Any]:
            condition = self.condition(published_resource, type_)
            assert condition is not None and condition["status"] == status, f"{type_} is {condition}"
            return condition

        return await eventually_async(check, what=f"{published_resource} {type_}={status}")


def config_for(world: World, directory: Path, *, token: str = TOKEN, **overrides: Any) -> DaemonConfig:
    service, kcp = world.kubeconfigs(token)
    options: dict[str, Any] = {
        "kcp_kubeconfig": str(kcp),
        "kubeconfig": str(service),
        "servlet": ServletIdentity(name="tom", api_group=world.group),
        "apiexport": world.export,
        "namespace": SERVLET_NAMESPACE,
        "leader_election": False,
        "metrics_address": Address(host="127.0.0.1", port=0),
        "health_address": Address(host="127.0.0.1", port=0),
        "resync_period": None,
        "lease": LeaseTiming(lease_duration=3, renew_deadline=2, retry_period=0.2),
    }
    options.update(overrides)
    return DaemonConfig(**options)


def _connect(config: DaemonConfig, observer: RequestObserver) -> Connections:
    # Environment proxy settings must not route the test's requests anywhere else.
    from servlet.adapters.connections import load_kcp_config, load_service_config

    return Connections(
        service_config=load_service_config(config.kubeconfig),
        kcp_config=load_kcp_config(config.kcp_kubeconfig),
        on_request=observer,
        trust_env=False,
    )


@asynccontextmanager
async def daemon_running(
    world: World, directory: Path, *, token: str = TOKEN, wait_for_controllers: bool = True, **overrides: Any
) -> AsyncIterator[Harness]:
    """The daemon as a task of the running loop; stopped (and checked for exit code 0) afterwards."""
    daemon = Daemon(
        config_for(world, directory, token=token, **overrides), connect=_connect, identity=f"{token}-replica"
    )
    stop = asyncio.Event()
    task = asyncio.create_task(daemon.run(stop), name=f"daemon {token}")
    harness = Harness(world=world, daemon=daemon, token=token, stop=stop)
    try:
        if wait_for_controllers:
            await eventually_async(
                lambda: daemon.controllers is not None or task.done(), what="the controllers to start"
            )
            if task.done():
                raise AssertionError(f"the daemon ended at start with {task.result()}")
        yield harness
    finally:
        stop.set()
        code = await asyncio.wait_for(task, timeout=15)
        assert code == 0, f"the daemon exited with {code}"


@asynccontextmanager
async def world_and_daemon(
    tmp_path: Path,
    *,
    topology: Topology | None = None,
    documents: tuple[dict[str, Any], ...] = (),
    prepare: Callable[[World], None] | None = None,
    shards: int = 1,
    **overrides: Any,
) -> AsyncIterator[Harness]:
    """A fresh world (over `shards` kcp shards) with `documents` applied to the service cluster (then
    `prepare(world)`), and the daemon running on it."""
    world = start_world(tmp_path / "world", topology=topology, shards=shards)
    try:
        for document in documents:
            world.apply(document)
        if prepare is not None:
            prepare(world)
        async with daemon_running(world, tmp_path, **overrides) as harness:
            yield harness
    finally:
        world.stop()
