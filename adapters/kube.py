"""The lightkube plumbing every adapter shares: clients, generic resources, patches.

Why it exists:

- lightkube has no per-request cluster: one client per base URL (a cluster, a workspace
  `/clusters/<lc>`, the VW wildcard `/clusters/*`). `async_client()`, `http_client()` and
  `ClusterClients` build them from one kubeconfig with the same auth and TLS. lightkube builds a
  new SSL context per client (loading the system CA bundle each time when the kubeconfig has no
  CA: tens of milliseconds); these accept one context built once by `tls_context()`.
- lightkube's generic-resource registry is process-wide and raises when a kind is asked for
  again with another plural; `resource_class()` keeps its own cache and never registers.
- `patch()` defaults to strategic merge, which custom resources reject: `merge_patch()` and
  `json_patch()` are the only patch paths the adapters use.

What it deliberately does not do: decide anything about objects, retry, or log; map failures
(`errors.py`, which every call here goes through).
"""

from __future__ import annotations

import dataclasses
import ssl
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

import httpx2
import msgspec
from lightkube import AsyncClient, KubeConfig
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core import resource as lk_resource
from lightkube.core.generic_client import GenericAsyncClient
from lightkube.generic_resource import (
    GenericGlobalResource,
    GenericGlobalStatus,
    GenericNamespacedResource,
    GenericNamespacedStatus,
)
from lightkube.types import PatchType

from servlet.adapters.errors import api_errors
from servlet.core.errors import Operation

FIELD_MANAGER = "kdp-servlet"
DEFAULT_TIMEOUT = 10.0


# -- clients -----------------------------------------------------------------------------------


def single_config(config: KubeConfig | SingleConfig, *, server: str | None = None) -> SingleConfig:
    """The kubeconfig's current context, pointed at `server` instead of its own URL if given."""
    chosen = config.get() if isinstance(config, KubeConfig) else config
    if chosen is None:
        raise ValueError("the kubeconfig has no current context")
    if server is None:
        return chosen
    return chosen._replace(cluster=msgspec.structs.replace(chosen.cluster, server=server.rstrip("/")))


def cluster_url(base: str, cluster: str) -> str:
    """`<base>/clusters/<cluster>`: one workspace (or `*`, every workspace) under a kcp or VW URL."""
    return f"{base.rstrip('/')}/clusters/{cluster}"


def tls_context(config: SingleConfig, *, trust_env: bool = True) -> ssl.SSLContext:
    """The SSL context lightkube would build for this kubeconfig: its CA (or the system trust store,
    or no verification if it says `insecure-skip-tls-verify`) and its client certificate.

    Building one can cost tens of milliseconds (loading the system CA bundle), so build it once
    per kubeconfig and hand it to every client of that kubeconfig.
    """
    if config.user is None:
        raise ValueError("the kubeconfig's current context has no user")
    return client_adapter.verify_cluster(config.cluster, config.user, config.abs_file, trust_env=trust_env)


class _SharedTlsParams(client_adapter.ConnectionParams):
    """lightkube's connection parameters with an SSL context built beforehand.

    lightkube builds a new SSL context for every client it creates (`httpx_params`); this returns
    the given one instead, with the same auth and the same other parameters. The context is an
    attribute, not a dataclass field, so it never reaches httpx2 as a keyword of its own.
    """

    def __init__(self, *, tls: ssl.SSLContext, **params: Any) -> None:
        super().__init__(**params)
        self.tls = tls

    def httpx_params(self, config: SingleConfig) -> dict[str, Any]:
        if config.user is None:
            raise ValueError("the kubeconfig's current context has no user")
        own = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return dict(base_url=config.cluster.server, verify=self.tls, auth=client_adapter.user_auth(config.user), **own)


class _SharedTlsClient(AsyncClient):
    """A lightkube AsyncClient whose connection parameters (and so SSL context) come from outside.

    lightkube's own constructor always builds fresh parameters; this sets the same two attributes
    it sets (`_timeout`, `_client`), from parameters that carry a shared context.
    """

    def __init__(
        self, config: SingleConfig, *, params: _SharedTlsParams, timeout: httpx2.Timeout, field_manager: str
    ) -> None:
        self._timeout = timeout
        self._client = GenericAsyncClient(params, config, lazy=False, field_manager=field_manager)

    def set_user_agent(self, user_agent: str) -> None:
        # lightkube 1.x keeps its httpx client here and sends that client's default headers.
        generic: Any = self._client
        generic._client.headers["User-Agent"] = user_agent


def async_client(
    config: KubeConfig | SingleConfig,
    *,
    server: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    transport: httpx2.AsyncBaseTransport | None = None,
    trust_env: bool = True,
    tls: ssl.SSLContext | None = None,
    user_agent: str | None = None,
) -> AsyncClient:
    """A lightkube client for one base URL, writing as field manager `kdp-servlet`.

    `trust_env=False` ignores proxy and CA settings from the environment. `tls`: an SSL context
    from `tls_context()` of the same kubeconfig, shared with other clients instead of building one.
    `user_agent` replaces httpx's, so a server's audit log can tell replicas apart.
    """
    chosen = single_config(config, server=server)
    if tls is None:
        tls = tls_context(chosen, trust_env=trust_env)
    timeouts = httpx2.Timeout(timeout)
    params = _SharedTlsParams(tls=tls, timeout=timeouts, trust_env=trust_env, transport=transport)
    client = _SharedTlsClient(chosen, params=params, timeout=timeouts, field_manager=FIELD_MANAGER)
    if user_agent:
        client.set_user_agent(user_agent)
    return client


def http_client(
    config: KubeConfig | SingleConfig,
    *,
    server: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    trust_env: bool = True,
    transport: httpx2.AsyncBaseTransport | None = None,
    tls: ssl.SSLContext | None = None,
) -> httpx2.AsyncClient:
    """A plain httpx2 client with the kubeconfig's auth and TLS, for requests lightkube cannot make
    (watches with bookmarks). Its base URL is the cluster's server; use paths without a leading `/`.
    """
    chosen = single_config(config, server=server)
    if tls is None:
        tls = tls_context(chosen, trust_env=trust_env)
    params = _SharedTlsParams(
        tls=tls,
        timeout=httpx2.Timeout(timeout),
        trust_env=trust_env,
        transport=cast(Any, transport),  # lightkube annotates the sync transport type here
    )
    return client_adapter.AsyncClient(chosen, params)


class ClusterClients:
    """One lightkube client per logical cluster under a base URL (kcp host or VW), made on demand,
    all with one SSL context; with `transport`, all over that one connection pool (without it,
    each client has its own: thousands of workspaces would open thousands of connections)."""

    def __init__(
        self,
        config: KubeConfig | SingleConfig,
        *,
        base_url: str,
        timeout: float = DEFAULT_TIMEOUT,
        trust_env: bool = True,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self._config = single_config(config)
        self.base_url = base_url.rstrip("/")
        self._timeout = timeout
        self._trust_env = trust_env
        self._transport = transport
        self._tls = tls_context(self._config, trust_env=trust_env)
        self._clients: dict[str, AsyncClient] = {}

    def get(self, cluster: str) -> AsyncClient:
        client = self._clients.get(cluster)
        if client is None:
            server = cluster_url(self.base_url, cluster)
            client = async_client(
                self._config,
                server=server,
                timeout=self._timeout,
                transport=self._transport,
                trust_env=self._trust_env,
                tls=self._tls,
            )
            self._clients[cluster] = client
        return client

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()


# -- generic resources -----------------------------------------------------------------------


class ResourceTypeLike(Protocol):
    """Anything naming one served resource, e.g. `servlet.core.model.ResourceType`."""

    @property
    def group(self) -> str: ...
    @property
    def version(self) -> str: ...
    @property
    def kind(self) -> str: ...
    @property
    def plural(self) -> str: ...
    @property
    def namespaced(self) -> bool: ...


GenericResourceClass = type[GenericNamespacedResource] | type[GenericGlobalResource]

_VERBS = ["delete", "deletecollection", "get", "global_list", "global_watch", "list", "patch", "post", "put", "watch"]
_generic_classes: dict[tuple[str, str, str, str, bool], GenericResourceClass] = {}


def resource_class(resource: ResourceTypeLike) -> GenericResourceClass:
    """The lightkube class for a resource, with a `.Status` subresource class.

    Cached per (group, version, kind, plural, scope) and kept out of lightkube's process-wide
    registry, so the same kind with another plural (a projection, another cluster) never clashes.
    """
    key = (resource.group, resource.version, resource.kind, resource.plural, resource.namespaced)
    cached = _generic_classes.get(key)
    if cached is not None:
        return cached
    definition = lk_resource.ResourceDef(resource.group, resource.version, resource.kind)
    info = lk_resource.ApiInfo(resource=definition, plural=resource.plural, verbs=list(_VERBS))
    status_info = lk_resource.ApiInfo(
        resource=definition, parent=definition, plural=resource.plural, verbs=["get", "patch", "put"], action="status"
    )
    main_base: type = GenericNamespacedResource if resource.namespaced else GenericGlobalResource
    status_base: type = GenericNamespacedStatus if resource.namespaced else GenericGlobalStatus
    status_cls = type(f"{resource.kind}Status", (status_base,), {"_api_info": status_info})
    cls = cast(GenericResourceClass, type(resource.kind, (main_base,), {"_api_info": info, "Status": status_cls}))
    _generic_classes[key] = cls
    return cls


def wrap(resource: GenericResourceClass, obj: Mapping[str, Any]) -> Any:
    """A plain dict as an instance of a generic resource class, for lightkube's create/replace."""
    constructor: Any = resource
    return constructor(dict(obj))


def collection_path(resource: ResourceTypeLike) -> str:
    """The all-namespaces collection path of a resource, relative to a base URL (no leading `/`)."""
    prefix = f"apis/{resource.group}/{resource.version}" if resource.group else f"api/{resource.version}"
    return f"{prefix}/{resource.plural}"


def resource_label(resource: type[Any]) -> str:
    """`<plural>.<group>` (or `<plural>` for the core group), as the API server names resources."""
    info = lk_resource.api_info(resource)
    plural = info.plural
    group = (info.parent or info.resource).group
    return f"{plural}.{group}" if group else plural


# -- patches -----------------------------------------------------------------------------------


async def merge_patch(
    client: AsyncClient,
    resource: type[Any],
    name: str,
    patch: Mapping[str, Any],
    *,
    namespace: str | None = None,
    status: bool = False,
    where: str = "",
) -> dict[str, Any]:
    """Apply a JSON merge patch (RFC 7386) to one object, or its `status` subresource.

    Returns the object the server answered with, as a plain dict.
    """
    return await _patch(
        client, resource, name, dict(patch), patch_type=PatchType.MERGE, namespace=namespace, status=status, where=where
    )


async def json_patch(
    client: AsyncClient,
    resource: type[Any],
    name: str,
    operations: Sequence[Mapping[str, Any]],
    *,
    namespace: str | None = None,
    status: bool = False,
    where: str = "",
) -> dict[str, Any]:
    """Apply a JSON patch (RFC 6902), e.g. with a `test` operation as a precondition."""
    return await _patch(
        client,
        resource,
        name,
        [dict(op) for op in operations],
        patch_type=PatchType.JSON,
        namespace=namespace,
        status=status,
        where=where,
    )


async def _patch(
    client: AsyncClient,
    resource: type[Any],
    name: str,
    body: dict[str, Any] | list[dict[str, Any]],
    *,
    patch_type: PatchType,
    namespace: str | None,
    status: bool,
    where: str,
) -> dict[str, Any]:
    target = resource.Status if status else resource
    verb = "patch status" if status else "patch"
    operation = Operation(
        verb=verb, resource=resource_label(resource), namespace=namespace or "", name=name, where=where
    )
    with api_errors(operation):
        result = await client.patch(target, name, body, namespace=namespace, patch_type=patch_type)
    return as_dict(result)


def as_dict(obj: Any) -> dict[str, Any]:
    """A lightkube object (generic dict subclass or typed model) as a plain JSON-like dict.

    A generic object is the decoded response under a dict subclass: everything inside it is
    already plain and nobody else holds it, so only the outer dict is converted.
    """
    if isinstance(obj, dict):
        return dict(obj)
    return cast(dict[str, Any], obj.to_dict())
