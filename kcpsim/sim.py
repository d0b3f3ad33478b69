"""`KcpSim`: one running simulator (server, world, kcp layer, faults, request log) and its handles.

Runs either in a background thread with its own event loop (`start()`/`stop()`, for pytest and
benchmarks) or in the caller's loop (`serve_forever()`, for the standalone CLI). Everything that
touches the store runs on the server's loop; `call()` hops there from other threads. It hands
out kubeconfigs and lightkube configs for the service cluster, any workspace and the virtual
workspace.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs
import yaml
from aiohttp import web
from lightkube import Client
from lightkube.config.kubeconfig import KubeConfig

from kcpsim import crds, limits, namespaces, rbac_aggregation, tables, tls
from kcpsim.access import Access
from kcpsim.auth import Authenticator, Identity
from kcpsim.faults import FaultPlan, Faults
from kcpsim.gc import GarbageCollector
from kcpsim.kcp import Kcp, vw_url
from kcpsim.requestlog import RequestLog
from kcpsim.server import Server
from kcpsim.topology import Topology, bind, seed, seed_service_cluster
from kcpsim.world import World

T = TypeVar("T")


@attrs.frozen
class SimConfig:
    host: str = "127.0.0.1"
    port: int = 0  # 0: a free port
    tls: bool = False
    history_size: int = 10_000  # watch events kept for resuming; lower it to force 410 Gone
    bookmark_interval: float = 1.0  # seconds between BOOKMARK events when a watch asks for them
    watch_gone_as_status: bool = False  # 410 as an HTTP status instead of an ERROR event in the stream
    deprecated_vw_urls: bool = False  # also fill APIExport.status.virtualWorkspaces (kcp <= 0.27)
    shards: int = 1  # kcp shards, each with its own VW URL (kcpsim/shards.py)
    seed: int = 0  # uids, generated names and identity keys
    # Seconds between rounds of kcp/k8s controller work after the seeded start (0: instant).
    # With 0.1, a new APIBinding is Bound ~0.2 s after it is created, as in a slow kcp.
    controller_delay: float = 0.0
    faults: FaultPlan = FaultPlan()
    topology: Topology | None = Topology()  # None: only the service cluster and an empty root workspace
    # "lenient": unknown or missing credentials act as the admin; "token": 401 for them (auth.py).
    authn: str = "lenient"
    # "always-allow", or "rbac": non-admin identities are held to stored RBAC (access.py); implies authn "token".
    authz: str = "always-allow"


class KcpSim:
    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig()
        self.world = World(history_size=self.config.history_size, seed=self.config.seed)
        crds.install(self.world)
        GarbageCollector(self.world)
        self.kcp = Kcp(
            self.world,
            deprecated_vw_urls=self.config.deprecated_vw_urls,
            identity_seed=self.config.seed,
            shards=self.config.shards,
        )
        namespaces.install(self.world)
        rbac_aggregation.install(self.world)
        limits.install(self.world)  # after every other admission step
        authn = "token" if self.config.authz == "rbac" else self.config.authn
        self.auth = Authenticator(mode=authn)
        self.access = Access(self.world, self.auth, mode=self.config.authz)
        self.faults = Faults(self.config.faults)
        self.requests = RequestLog()
        self.server = Server(self)
        self.tls = tls.generate() if self.config.tls else None
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self._site: web.TCPSite | None = None
        self._stopped: asyncio.Event | None = None
        self._restart: asyncio.TimerHandle | None = None

    # ---- lifecycle -----------------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        scheme = "https" if self.tls else "http"
        return f"{scheme}://{self.config.host}:{self.port}"

    async def _start_async(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stopped = asyncio.Event()
        app = web.Application(
            client_max_size=limits.MAX_REQUEST_BODY_BYTES, middlewares=[limits.body_limit, tables.middleware(self)]
        )
        app.router.add_route("*", "/{tail:.*}", self.server.handle)
        self._runner = web.AppRunner(
            app, access_log=None, handle_signals=False, shutdown_timeout=0.5, handler_cancellation=True
        )  # notice watchers that hang up
        await self._runner.setup()
        await self._bind(self.config.port)
        self.kcp.base_url = self.base_url
        seed_service_cluster(self.kcp)
        if self.config.topology is not None:
            seed(self.kcp, self.config.topology)
        elif self.world.resolve("root") is None:
            from kcpsim.topology import add_workspace_cluster

            add_workspace_cluster(self.kcp, path="root", parent=None, name="root", workspace_type="root:root")
        loop = asyncio.get_running_loop()
        self.world.schedule = loop.call_later
        self.world.controller_delay = self.config.controller_delay  # the seeded topology is already settled

    async def _bind(self, port: int) -> None:
        assert self._runner is not None
        self._site = web.TCPSite(
            self._runner, self.config.host, port, ssl_context=self.tls.context if self.tls else None, reuse_address=True
        )
        await self._site.start()
        server = self._site._server
        assert server is not None
        sockets = getattr(server, "sockets", None) or []
        self.port = sockets[0].getsockname()[1]

    async def _stop_async(self) -> None:
        self.server.close_all()
        if self._restart is not None:
            self._restart.cancel()
        if self._runner is not None:
            await self._runner.cleanup()

    def start(self) -> KcpSim:
        """Run in a background thread; returns once the server listens and the topology is seeded."""
        ready: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            try:
                loop.run_until_complete(self._start_async())
            except BaseException as exc:  # hand start-up failures to the caller
                ready.set_exception(exc)
                loop.close()
                return
            ready.set_result(None)
            assert self._stopped is not None
            loop.run_until_complete(self._stopped.wait())
            loop.run_until_complete(self._stop_async())
            loop.close()

        self._thread = threading.Thread(target=run, name="kcpsim", daemon=True)
        self._thread.start()
        ready.result(timeout=30)
        return self

    def stop(self) -> None:
        if self._loop is not None and self._stopped is not None and self._thread is not None:
            self._loop.call_soon_threadsafe(self._stopped.set)
            self._thread.join(timeout=10)
            self._thread = None

    async def serve_forever(self) -> None:
        """Run in the current event loop until cancelled (the standalone mode)."""
        await self._start_async()
        assert self._stopped is not None
        try:
            await self._stopped.wait()
        finally:
            await self._stop_async()

    def __enter__(self) -> KcpSim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run `fn` on the server's loop (where the store lives) and return its result."""
        if self._loop is None or self._thread is None or threading.current_thread() is self._thread:
            return fn(*args, **kwargs)  # not started, standalone mode, or already on the loop

        async def wrapper() -> T:
            return fn(*args, **kwargs)

        return asyncio.run_coroutine_threadsafe(wrapper(), self._loop).result(timeout=30)

    # ---- faults --------------------------------------------------------------------------------
    def set_faults(self, plan: FaultPlan) -> None:
        self.faults.set_plan(plan)

    def clear_faults(self) -> None:
        self.faults.clear()

    def cut_watches(self, *, abort: bool = False) -> int:
        """End every open watch stream now (abort: drop the connection mid-stream)."""
        return self.call(self.server.cut_watches, abort=abort)

    def refusing(self) -> bool:
        return time.monotonic() < self.faults.refuse_until

    def refuse_connections(self, seconds: float) -> None:
        """Close the listening socket for `seconds` (new connections are refused) and drop open ones.

        Returns once the socket is closed."""
        assert self._loop is not None
        asyncio.run_coroutine_threadsafe(self.refuse(seconds), self._loop).result(timeout=10)

    async def refuse(self, seconds: float) -> None:
        assert self._loop is not None
        self.faults.refuse_until = time.monotonic() + seconds
        if self._restart is not None:
            self._restart.cancel()
        self._restart = self._loop.call_later(seconds, lambda: asyncio.ensure_future(self._bind(self.port)))
        self.server.cut_watches(abort=True)
        if self._site is not None:
            site, self._site = self._site, None
            await site.stop()

    def set_controller_delay(self, seconds: float) -> None:
        """Make kcp's controllers act in rounds `seconds` apart from now on (0: instant)."""

        def apply() -> None:
            self.world.controller_delay = seconds

        self.call(apply)

    def set_history_size(self, size: int) -> None:
        self.call(self.world.store.set_history_size, size)

    # ---- topology helpers ----------------------------------------------------------------------
    @property
    def topology(self) -> Topology:
        return self.config.topology or Topology(workspaces=())

    def cluster_of(self, path_or_name: str) -> str:
        found = self.call(self.world.resolve, path_or_name)
        if found is None:
            raise KeyError(f"no workspace {path_or_name!r}")
        return found

    def add_workspace(
        self, name: str, *, bind_export: bool = True, accept_claims: bool = True, shard: int | None = None
    ) -> str:
        """A new consumer workspace under the org (optionally bound, on `shard` or the one its
        cluster name hashes to); returns its cluster name."""
        topo = self.topology

        def run() -> str:
            from kcpsim.topology import WorkspaceSpec, _workspace_object, add_workspace_cluster

            ws = WorkspaceSpec(name)
            path, org = topo.workspace_path(ws), topo.org_cluster_name()
            if shard is not None:
                self.kcp.shards.assign(topo.workspace_cluster(ws), shard)
            cluster = add_workspace_cluster(self.kcp, path=path, parent=org)
            _workspace_object(self.kcp, org, name, cluster, path, ("root", "universal"))
            if bind_export:
                bind(self.kcp, cluster=cluster, org=topo.org, export=topo.export, accept_claims=accept_claims)
            return cluster

        return self.call(run)

    # ---- identities ----------------------------------------------------------------------------
    def add_user(self, token: str, user: str, groups: tuple[str, ...] = ()) -> str:
        """Register `token` for an ordinary user (held to RBAC under `authz="rbac"`)."""
        return self.call(self.auth.add_user, token, user, groups)

    def add_identity(self, token: str, identity: Identity) -> str:
        return self.call(self.auth.add_token, token, identity)

    def service_account_token(self, namespace: str, name: str, *, cluster: str = "", token: str | None = None) -> str:
        """A token for the stored ServiceAccount `namespace/name` (service cluster, or a workspace's cluster)."""
        return self.call(
            lambda: self.auth.mint_service_account_token(
                self.world.store, cluster=cluster, namespace=namespace, name=name, token=token
            )
        )

    # ---- URLs and configs ----------------------------------------------------------------------
    def workspace_url(self, path_or_name: str) -> str:
        return f"{self.base_url}/clusters/{path_or_name}"

    def vw_url(self, *, org: str | None = None, export: str | None = None, shard: int = 0) -> str:
        """The export's VW URL on `shard` (0, the root shard, serves every workspace when unsharded)."""
        topo = self.topology
        org_cluster = self.cluster_of(org) if org else topo.org_cluster_name()
        return vw_url(self.kcp.shards.base_url(self.base_url, shard), org_cluster, export or topo.export)

    def remove_shard(self, shard: int) -> None:
        """Take shard `shard` out of kcp (not the root shard): its VW URL leaves every endpoint slice
        and answers 404; its workspaces and their objects stay, unreachable through the VW."""
        from kcpsim.shards import reconcile_slices

        def run() -> None:
            self.kcp.shards.remove(shard)
            reconcile_slices(self.kcp)

        self.call(run)

    def shard_of(self, path_or_name: str) -> int:
        """The shard serving a workspace (path or logical cluster name)."""
        return self.kcp.shards.shard_of(self.cluster_of(path_or_name))

    def kubeconfig_dict(
        self, server: str, *, name: str = "kcpsim", certificate: tuple[str, tuple[str, ...]] | None = None
    ) -> dict[str, Any]:
        """A kubeconfig for `server` with the admin's token, or (TLS only) a client certificate
        for `certificate=(user, groups)` instead."""
        cluster: dict[str, Any] = {"server": server}
        user: dict[str, Any] = {"token": self.auth.admin_token}
        if self.tls:
            cluster["certificate-authority-data"] = base64.b64encode(self.tls.ca_pem).decode()
            if certificate is not None:
                cert, key = self.tls.client_certificate(*certificate)
                user = {
                    "client-certificate-data": base64.b64encode(cert).decode(),
                    "client-key-data": base64.b64encode(key).decode(),
                }
        elif certificate is not None:
            raise ValueError("client certificates need TLS (SimConfig(tls=True), serve --tls)")
        return {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": name,
            "clusters": [{"name": name, "cluster": cluster}],
            "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
        }

    def config_for(self, server: str) -> KubeConfig:
        config = self.kubeconfig_dict(server)
        if not self.tls:
            # Plain HTTP: nothing to verify, and skipping it spares every client ~80 ms of loading
            # the system CA bundle. (Written kubeconfig files do not carry this.)
            config["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
        return KubeConfig.from_dict(config)

    def service_config(self) -> KubeConfig:
        return self.config_for(self.base_url)

    def kcp_config(self, path: str | None = None) -> KubeConfig:
        """The org workspace (or any workspace path/name)."""
        return self.config_for(self.workspace_url(path or self.topology.org))

    def workspace_config(self, path_or_name: str) -> KubeConfig:
        if ":" not in path_or_name and self.call(self.world.resolve, path_or_name) is None:
            path_or_name = f"{self.topology.org}:{path_or_name}"  # a short workspace name like "team-a"
        return self.config_for(self.workspace_url(path_or_name))

    def vw_config(self, cluster: str = "*") -> KubeConfig:
        return self.config_for(f"{self.vw_url()}/clusters/{cluster}")

    def client(self, config: KubeConfig, **kwargs: Any) -> Client:
        """A lightkube client that ignores proxy settings from the environment."""
        return Client(config=config, trust_env=False, **{"field_manager": "kcpsim-test", **kwargs})

    def write_kubeconfigs(self, directory: Path) -> dict[str, Path]:
        """service.kubeconfig, kcp.kubeconfig (org workspace) and one per consumer workspace."""
        directory.mkdir(parents=True, exist_ok=True)
        files = {
            "service": (self.base_url, "service.kubeconfig"),
            "kcp": (self.workspace_url(self.topology.org), "kcp.kubeconfig"),
        }
        for ws in self.topology.workspaces:
            files[ws.name] = (self.workspace_url(self.topology.workspace_path(ws)), f"{ws.name}.kubeconfig")
        written = {}
        for key, (server, filename) in files.items():
            path = directory / filename
            path.write_text(yaml.safe_dump(self.kubeconfig_dict(server), sort_keys=False))
            written[key] = path
        return written

    def describe(self) -> dict[str, Any]:
        topo = self.topology
        return {
            "serviceCluster": self.base_url,
            "org": {"path": topo.org, "cluster": topo.org_cluster_name(), "url": self.workspace_url(topo.org)},
            "virtualWorkspace": vw_url(self.base_url, topo.org_cluster_name(), topo.export),
            "workspaces": [
                {
                    "name": ws.name,
                    "path": topo.workspace_path(ws),
                    "cluster": topo.workspace_cluster(ws),
                    "url": self.workspace_url(topo.workspace_path(ws)),
                    "shard": self.kcp.shards.name(self.kcp.shards.shard_of(topo.workspace_cluster(ws))),
                }
                for ws in topo.workspaces
            ],
        }
