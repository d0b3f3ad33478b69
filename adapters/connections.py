"""Every connection the daemon holds, built from its two kubeconfigs, and closed in one place.

Three targets: the service cluster (`--kubeconfig`: a path, else `KUBECONFIG`, else the pod's
service account), the org workspace (`--kcp-kubeconfig`, whose server must end in
`/clusters/<workspace path>`), and the APIExport's virtual workspace (VW), whose URLs (one per
kcp shard with a bound workspace) are only known once kcp publishes them
(`set_virtual_workspace_urls`); a workspace's requests go to the URL its objects were read from
(`shards.py`). Each target gets a lightkube client
(field manager `kdp-servlet`) for reads and writes and an httpx2 client for the informers.

Why per-workspace VW clients, created lazily and cached, rather than one client with per-request
URLs: lightkube has no per-request base URL, and rewriting URLs inside a transport would hide
which workspace a request goes to from everyone reading the code. A lightkube client is cheap
when it does not own a connection pool, so all clients of one target share one transport (one
pool of connections to the VW however many workspaces there are); only `aclose()` closes it.

The shared transport also counts every request by target, Kubernetes verb and status code through
the `on_request` callback (the app passes its metrics; adapters never import app code). Requests
that got no response are counted with code None. The environment's `HTTPS_PROXY`, `HTTP_PROXY`
and `NO_PROXY` apply as kubectl applies them (proxies.py).

Deliberately not here: what is read or written (the other adapters) and retries.
"""

from __future__ import annotations

import enum
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urlsplit

import httpx2
from lightkube import AsyncClient, KubeConfig
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.exceptions import ConfigError

from servlet.adapters.kube import (
    DEFAULT_TIMEOUT,
    async_client,
    cluster_url,
    collection_path,
    http_client,
    single_config,
    tls_context,
)
from servlet.adapters.proxies import ProxyRouting, ProxySettings
from servlet.adapters.request_verbs import request_verb
from servlet.adapters.shards import ShardRoutes, WorkspaceShardUnknown
from servlet.adapters.watch import HttpCollection, ReadObserver
from servlet.core.model import ResourceType
from servlet.core.ports import VirtualWorkspaceLocation, WatchSource, WatchSources

KUBECONFIG_FLAG = "--kubeconfig"
KCP_KUBECONFIG_FLAG = "--kcp-kubeconfig"
CONTEXT_FLAG = "--context"
KCP_CONTEXT_FLAG = "--kcp-context"
WILDCARD = "*"


class Target(enum.Enum):
    """Which API server a request went to (same values as the app's metrics label)."""

    SERVICE = "service"
    ORG = "org"
    VIRTUAL_WORKSPACE = "vw"


class RequestObserver(Protocol):
    """Told about every request: `code` None when no HTTP response arrived."""

    def __call__(self, *, target: Target, verb: str, code: int | None) -> None: ...


class ConfigurationError(Exception):
    """A kubeconfig that cannot be used; the message names the flag and what is wrong."""


class VirtualWorkspaceUnknown(Exception):
    """A VW request before the VW URL is known (kcp publishes it with the first binding)."""


# -- kubeconfigs -------------------------------------------------------------------------------


_CLUSTERS_PATH = re.compile(r"^(?P<prefix>.*)/clusters/(?P<workspace>[^/]+)/?$")


def split_workspace_server(server: str) -> tuple[str, str]:
    """`https://host/clusters/root:myorg` -> (`https://host`, `root:myorg`).

    ConfigurationError naming `--kcp-kubeconfig` and the URL when the server does not point into
    one workspace.
    """
    parts = urlsplit(server)
    match = _CLUSTERS_PATH.match(parts.path)
    if not parts.scheme or not parts.netloc or match is None or match["workspace"] == WILDCARD:
        raise ConfigurationError(
            f"{KCP_KUBECONFIG_FLAG} must point into a kcp workspace (a server URL ending in "
            f"/clusters/<workspace path>, e.g. https://kcp.example.com/clusters/root:myorg), "
            f"but its server is {server!r}"
        )
    return f"{parts.scheme}://{parts.netloc}{match['prefix']}", match["workspace"]


def load_service_config(path: str | None, *, context: str | None = None) -> SingleConfig:
    """As kubectl finds its kubeconfig: `--kubeconfig`, else the first file in `KUBECONFIG`, else
    `~/.kube/config` if it exists, else the pod's service account; `--context` picks a context."""
    where = "the in-cluster service account"
    try:
        env = os.environ.get("KUBECONFIG", "")
        home = Path.home() / ".kube" / "config"
        chosen = (
            path
            or next((entry for entry in env.split(os.pathsep) if entry), None)
            or (str(home) if home.is_file() else None)
        )
        if chosen is None:
            if context:
                raise ConfigurationError(
                    f"{CONTEXT_FLAG}: {context!r} cannot be chosen: no kubeconfig was found "
                    f"({KUBECONFIG_FLAG}, KUBECONFIG, ~/.kube/config), so the servlet uses "
                    f"{where}, which has no contexts"
                )
            return _context(KubeConfig.from_service_account(), context=None, flag=KUBECONFIG_FLAG, where=where)
        where = chosen
        return _context(KubeConfig.from_file(chosen), context=context, flag=CONTEXT_FLAG, where=where)
    except (ConfigError, KeyError, OSError, ValueError) as exc:
        raise ConfigurationError(f"{KUBECONFIG_FLAG}: cannot load {where}: {exc}") from exc


def load_kcp_config(path: str, *, context: str | None = None) -> SingleConfig:
    try:
        config = KubeConfig.from_file(path)
    except (ConfigError, OSError, ValueError) as exc:
        raise ConfigurationError(f"{KCP_KUBECONFIG_FLAG}: cannot load {path}: {exc}") from exc
    chosen = _context(config, context=context, flag=KCP_CONTEXT_FLAG, where=path)
    split_workspace_server(chosen.cluster.server)
    return chosen


def _context(config: KubeConfig, *, context: str | None, flag: str, where: str) -> SingleConfig:
    """The named context of `config`, else its current one; a missing one names the flag and the choices."""
    if context and context not in config.contexts:
        choices = ", ".join(sorted(config.contexts)) or "none"
        raise ConfigurationError(f"{flag}: {where} has no context {context!r} (it has: {choices})")
    named = config.get(context_name=context) if context else None
    return _current(named or config, flag=flag)


def _current(config: KubeConfig | SingleConfig, *, flag: str) -> SingleConfig:
    try:
        chosen: SingleConfig = single_config(config)
    except (ConfigError, ValueError) as exc:
        raise ConfigurationError(f"{flag}: {exc}") from exc
    return chosen


# -- request counting --------------------------------------------------------------------------


class _CountingTransport(httpx2.AsyncBaseTransport):
    """One target's connection pool, shared by its clients; counts each request once."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, *, target: Target, observer: RequestObserver | None) -> None:
        self._inner = inner
        self._target = target
        self._observer = observer

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        verb = request_verb(request.method, request.url.path, request.url.query.decode("ascii", "replace"))
        try:
            response = await self._inner.handle_async_request(request)
        except Exception:  # no response arrived (a cancelled request is not a failed one)
            self._observe(verb, None)
            raise
        self._observe(verb, response.status_code)
        return response

    def _observe(self, verb: str, code: int | None) -> None:
        if self._observer is not None:
            self._observer(target=self._target, verb=verb, code=code)

    async def aclose(self) -> None:
        # Clients sharing this pool close it through `close_pool`, never one by one.
        return None

    async def close_pool(self) -> None:
        await self._inner.aclose()


class _Target:
    """The clients of one target: lightkube and httpx2 clients per base URL over one pool, with one
    SSL context (built once: with no CA in the kubeconfig that is loading the system CA bundle)."""

    def __init__(
        self,
        config: SingleConfig,
        *,
        target: Target,
        observer: RequestObserver | None,
        timeout: float,
        trust_env: bool,
    ) -> None:
        self._config = config
        self._timeout = timeout
        self._trust_env = trust_env
        self._tls = tls_context(config, trust_env=trust_env)
        # A transport passed to httpx2 replaces the client's own, TLS and proxy settings included,
        # so the kubeconfig's CA and client certificate go here too, and the environment's proxies.
        proxies = ProxySettings.from_environment(os.environ) if trust_env else ProxySettings()
        tls = self._tls
        pool = ProxyRouting(
            proxies, pool=lambda proxy: httpx2.AsyncHTTPTransport(verify=tls, trust_env=trust_env, proxy=proxy)
        )
        self.transport = _CountingTransport(pool, target=target, observer=observer)
        self._clients: dict[str, AsyncClient] = {}
        self._https: dict[str, httpx2.AsyncClient] = {}

    def client(self, server: str) -> AsyncClient:
        client = self._clients.get(server)
        if client is None:
            client = async_client(
                self._config,
                server=server,
                timeout=self._timeout,
                transport=self.transport,
                trust_env=self._trust_env,
                tls=self._tls,
            )
            self._clients[server] = client
        return client

    def http(self, server: str) -> httpx2.AsyncClient:
        client = self._https.get(server)
        if client is None:
            client = http_client(
                self._config,
                server=server,
                timeout=self._timeout,
                trust_env=self._trust_env,
                transport=self.transport,
                tls=self._tls,
            )
            self._https[server] = client
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        https, self._https = list(self._https.values()), {}
        for client in clients:
            await client.close()
        for http in https:
            await http.aclose()
        await self.transport.close_pool()


class Connections:
    """The service cluster, the org workspace and the VW: clients and informer sources."""

    def __init__(
        self,
        *,
        service_config: KubeConfig | SingleConfig,
        kcp_config: KubeConfig | SingleConfig,
        on_request: RequestObserver | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        trust_env: bool = True,
    ) -> None:
        service = _current(service_config, flag=KUBECONFIG_FLAG)
        kcp = _current(kcp_config, flag=KCP_KUBECONFIG_FLAG)
        self.kcp_base_url, self.workspace_path = split_workspace_server(kcp.cluster.server)
        self.service_url = service.cluster.server.rstrip("/")
        self.org_url = kcp.cluster.server.rstrip("/")
        self._kcp_config = kcp
        options: dict[str, Any] = {"observer": on_request, "timeout": timeout, "trust_env": trust_env}
        self._service = _Target(service, target=Target.SERVICE, **options)
        self._org = _Target(kcp, target=Target.ORG, **options)
        self._vw = _Target(kcp, target=Target.VIRTUAL_WORKSPACE, **options)
        #: The VW URLs (one per kcp shard) and which workspace each serves.
        self.shards = ShardRoutes()

    @classmethod
    def from_kubeconfigs(
        cls,
        *,
        kubeconfig: str | None,
        kcp_kubeconfig: str,
        context: str | None = None,
        kcp_context: str | None = None,
        on_request: RequestObserver | None = None,
    ) -> Connections:
        """From the `--kubeconfig`, `--kcp-kubeconfig`, `--context` and `--kcp-context` flags
        (ConfigurationError when unusable)."""
        return cls(
            service_config=load_service_config(kubeconfig, context=context),
            kcp_config=load_kcp_config(kcp_kubeconfig, context=kcp_context),
            on_request=on_request,
        )

    # -- clients -------------------------------------------------------------------------------

    @property
    def service(self) -> AsyncClient:
        return self._service.client(self.service_url)

    @property
    def service_http(self) -> httpx2.AsyncClient:
        """The service cluster's plain HTTP client, for reads lightkube has no type for (OpenAPI)."""
        return self._service.http(self.service_url)

    @property
    def org(self) -> AsyncClient:
        return self._org.client(self.org_url)

    @property
    def virtual_workspace_urls(self) -> tuple[str, ...]:
        return self.shards.urls

    def set_virtual_workspace_urls(self, urls: Sequence[str]) -> frozenset[str]:
        """Where the VW is (from the endpoint slice: one URL per shard); clients for other URLs
        are no longer used. Returns the workspaces last read from a URL no longer listed."""
        return self.shards.set_urls(urls)

    def set_virtual_workspace_url(self, url: str) -> None:
        """An unsharded kcp's one VW URL."""
        self.set_virtual_workspace_urls([url])

    def virtual_workspace(self, cluster: str) -> AsyncClient:
        """A client for one workspace of the VW, at the URL of its shard (`*`: every workspace of
        the only shard, for lists)."""
        urls = self._require_vw_urls()
        url = urls[0] if cluster == WILDCARD and len(urls) == 1 else self.shards.url_for(cluster)
        if url is None:
            raise WorkspaceShardUnknown(cluster, urls=len(urls))
        return self._vw.client(cluster_url(url, cluster))

    def virtual_workspace_at(self, url: str, cluster: str) -> AsyncClient:
        """A client for workspace `cluster` (or `*`) at one VW URL (one shard)."""
        return self._vw.client(cluster_url(url, cluster))

    def _require_vw_urls(self) -> tuple[str, ...]:
        if not self.shards.urls:
            raise VirtualWorkspaceUnknown(
                "the virtual workspace URL is not known yet (kcp publishes it in the APIExportEndpointSlice "
                "once a workspace binds the export)"
            )
        return self.shards.urls

    # -- informer sources ----------------------------------------------------------------------

    def service_source(self, resource: ResourceType) -> WatchSource[HttpCollection]:
        collection = HttpCollection(self._service.http(self.service_url), path=collection_path(resource))
        return WatchSource(collection=collection, name=f"service/{_label(resource)}")

    def org_source(self, resource: ResourceType, *, workspace: str = "") -> WatchSource[HttpCollection]:
        """A resource in the org workspace, or in `workspace` (a path) with the same credentials."""
        server = cluster_url(self.kcp_base_url, workspace) if workspace else self.org_url
        collection = HttpCollection(self._org.http(server), path=collection_path(resource))
        return WatchSource(collection=collection, name=f"org/{_label(resource)}")

    def workspace(self, path: str) -> AsyncClient:
        """A client for another kcp workspace (by path), with the kcp kubeconfig's credentials."""
        return self._org.client(cluster_url(self.kcp_base_url, path))

    def virtual_workspace_sources(self, resource: ResourceType) -> tuple[WatchSource[HttpCollection], ...]:
        sources = []
        for url in self._require_vw_urls():
            collection = HttpCollection(
                self._vw.http(cluster_url(url, WILDCARD)), path=collection_path(resource), on_read=self._learn(url)
            )
            sources.append(WatchSource(collection=collection, name=f"vw/{_label(resource)}"))
        return tuple(sources)

    def _learn(self, url: str) -> ReadObserver:
        return lambda obj: self.shards.learn(url, obj)

    async def aclose(self) -> None:
        for target in (self._service, self._org, self._vw):
            await target.aclose()


def _label(resource: ResourceType) -> str:
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


if TYPE_CHECKING:  # mypy proves the adapter fills its port

    def _fills_port(adapter: Connections) -> WatchSources[HttpCollection]:
        return adapter

    def _fills_location(adapter: Connections) -> VirtualWorkspaceLocation:
        return adapter
