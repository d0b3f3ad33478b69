"""The lightkube plumbing every adapter shares: clients, generic resources, patches, error mapping.

Why it exists:

- lightkube reports a failed request three different ways depending on the response's
  Content-Type (`ApiError` only for exactly `application/json`, a bare `httpx2.HTTPStatusError`
  with `; charset=utf-8`, a `KeyError` without the header) plus transport errors. `api_errors()`
  turns all of them into the classes of `errors.py`, so no caller depends on those quirks.
- lightkube has no per-request cluster: one client per base URL (a cluster, a workspace
  `/clusters/<lc>`, the VW wildcard `/clusters/*`). `async_client()`, `http_client()` and
  `ClusterClients` build them from one kubeconfig with the same auth and TLS. lightkube builds a
  new SSL context per client (loading the system CA bundle each time when the kubeconfig has no
  CA: tens of milliseconds); these accept one context built once by `tls_context()`.
- lightkube's generic-resource registry is process-wide and raises when a kind is asked for
  again with another plural; `resource_class()` keeps its own cache and never registers.
- `patch()` defaults to strategic merge, which custom resources reject: `merge_patch()` and
  `json_patch()` are the only patch paths the adapters use.

What it deliberately does not do: decide anything about objects, retry, or log.
"""

from __future__ import annotations

import dataclasses
import json
import ssl
import types
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

import httpx2
import msgspec
from lightkube import AsyncClient, KubeConfig
from lightkube.config import client_adapter
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core import resource as lk_resource
from lightkube.core.generic_client import GenericAsyncClient
from lightkube.core.exceptions import ApiError
from lightkube.generic_resource import (
    GenericGlobalResource,
    GenericGlobalStatus,
    GenericNamespacedResource,
    GenericNamespacedStatus,
)
from lightkube.types import PatchType

from servlet.adapters.errors import (
    AlreadyExists,
    ApiFailure,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Operation,
    Transient,
)

FIELD_MANAGER = "kdp-servlet"
DEFAULT_TIMEOUT = 10.0
# Long enough to identify a server's error page, short enough to keep log lines readable.
_MAX_BODY_IN_MESSAGE = 300


# -- error mapping ---------------------------------------------------------------------------


def failure_for(
    *,
    operation: Operation,
    code: int,
    message: str,
    reason: str = "",
    retry_after: float | None = None,
) -> ApiFailure:
    """The failure class for an HTTP status code (and, for 409, the Status reason)."""
    if code == 404:
        return NotFound(operation=operation, code=code, message=message, reason=reason)
    if code == 409:
        # Without a readable Status body a 409 on a create can only mean the name is taken.
        if reason == "AlreadyExists" or (not reason and operation.verb == "create"):
            return AlreadyExists(operation=operation, code=code, message=message, reason=reason)
        return Conflict(operation=operation, code=code, message=message, reason=reason)
    if code == 410:
        return Gone(operation=operation, code=code, message=message, reason=reason)
    if code in (401, 403):
        return Forbidden(operation=operation, code=code, message=message, reason=reason)
    if code in (400, 413, 415, 422):
        return Invalid(operation=operation, code=code, message=message, reason=reason)
    if code in (408, 429) or code >= 500:
        return Transient(operation=operation, code=code, message=message, reason=reason, retry_after=retry_after)
    return ApiFailure(operation=operation, code=code, message=message, reason=reason)


def failure_from_status(status: Mapping[str, Any], *, operation: Operation) -> ApiFailure:
    """The failure a `metav1.Status` describes (an error response body or a watch ERROR event)."""
    details = status.get("details")
    retry_after = details.get("retryAfterSeconds") if isinstance(details, Mapping) else None
    code = status.get("code")
    return failure_for(
        operation=operation,
        code=code if isinstance(code, int) else 500,
        message=str(status.get("message") or status.get("reason") or "no message"),
        reason=str(status.get("reason") or ""),
        retry_after=float(retry_after) if isinstance(retry_after, (int, float)) and retry_after > 0 else None,
    )


def failure_from_response(
    *, operation: Operation, code: int, headers: Mapping[str, str], body: bytes
) -> ApiFailure:
    """The failure for an error response, whatever its Content-Type says."""
    status = _status_body(body)
    header_retry = _retry_after_seconds(headers.get("retry-after"))
    if status is not None:
        failure = failure_from_status({**status, "code": code}, operation=operation)
        if isinstance(failure, Transient) and header_retry is not None:
            failure.retry_after = header_retry
        return failure
    text = body.decode("utf-8", errors="replace").strip()[:_MAX_BODY_IN_MESSAGE] or f"HTTP {code} with an empty body"
    return failure_for(operation=operation, code=code, message=text, retry_after=header_retry)


def failure_from_exception(exc: BaseException, *, operation: Operation) -> ApiFailure | None:
    """Our failure for an exception lightkube or httpx2 raised; None if it is not an API failure."""
    if isinstance(exc, ApiFailure):
        return exc
    if isinstance(exc, ApiError) and exc.response is None:
        # Built from a watch ERROR event: there is no response, only the decoded Status.
        return failure_from_status(msgspec.to_builtins(exc.status), operation=operation)
    if isinstance(exc, httpx2.HTTPStatusError):
        return _from_response(exc.response, operation=operation)
    if isinstance(exc, _DECODING_ERRORS):
        # lightkube inspects an error response while handling it: a missing Content-Type header
        # surfaces as KeyError, a non-JSON or non-Status body labelled `application/json` as a
        # decoding error; the real error is in their context chain.
        original = _status_error_behind(exc)
        if original is not None:
            return _from_response(original.response, operation=operation)
    if isinstance(exc, httpx2.TimeoutException):
        return Transient(operation=operation, code=0, message=f"timed out ({type(exc).__name__}): {exc}")
    if isinstance(exc, httpx2.TransportError):
        return Transient(operation=operation, code=0, message=f"connection failed ({type(exc).__name__}): {exc}")
    return None


_DECODING_ERRORS = (KeyError, ValueError, TypeError, msgspec.MsgspecError)


class _ApiErrors:
    def __init__(self, operation: Operation) -> None:
        self.operation = operation

    def __enter__(self) -> _ApiErrors:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: types.TracebackType | None
    ) -> None:
        # Never swallows: either re-raises as our failure or lets the exception pass unchanged.
        if exc is None:
            return
        failure = failure_from_exception(exc, operation=self.operation)
        if failure is not None and failure is not exc:
            raise failure from exc

    async def __aenter__(self) -> _ApiErrors:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: types.TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)


def api_errors(operation: Operation) -> _ApiErrors:
    """Around every API call: `with api_errors(op): await client.get(...)` (or `async with`).

    lightkube and httpx2 failures leave the block as the matching `ApiFailure`; any other
    exception passes through unchanged.
    """
    return _ApiErrors(operation)


def _status_error_behind(exc: BaseException) -> httpx2.HTTPStatusError | None:
    context = exc.__context__
    for _ in range(5):  # a decoder may add a level or two of its own between us and the error
        if context is None:
            return None
        if isinstance(context, httpx2.HTTPStatusError):
            return context
        context = context.__context__
    return None


def _from_response(response: httpx2.Response, *, operation: Operation) -> ApiFailure:
    try:
        body = response.content
    except httpx2.ResponseNotRead:  # a streamed (watch) response whose body was never read
        body = b""
    return failure_from_response(operation=operation, code=response.status_code, headers=response.headers, body=body)


def _status_body(body: bytes) -> dict[str, Any] | None:
    try:
        decoded = json.loads(body)
    except ValueError:
        return None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return decoded
    return None


def _retry_after_seconds(value: str | None) -> float | None:
    # Only the delta-seconds form: an HTTP date would need a clock, and API servers send seconds.
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


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


def async_client(
    config: KubeConfig | SingleConfig,
    *,
    server: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    transport: httpx2.AsyncBaseTransport | None = None,
    trust_env: bool = True,
    tls: ssl.SSLContext | None = None,
) -> AsyncClient:
    """A lightkube client for one base URL, writing as field manager `kdp-servlet`.

    `trust_env=False` ignores proxy and CA settings from the environment. `tls`: an SSL context
    from `tls_context()` of the same kubeconfig, shared with other clients instead of building one.
    """
    chosen = single_config(config, server=server)
    if tls is None:
        tls = tls_context(chosen, trust_env=trust_env)
    timeouts = httpx2.Timeout(timeout)
    params = _SharedTlsParams(tls=tls, timeout=timeouts, trust_env=trust_env, transport=transport)
    return _SharedTlsClient(chosen, params=params, timeout=timeouts, field_manager=FIELD_MANAGER)


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
    all with one SSL context."""

    def __init__(
        self,
        config: KubeConfig | SingleConfig,
        *,
        base_url: str,
        timeout: float = DEFAULT_TIMEOUT,
        trust_env: bool = True,
    ) -> None:
        self._config = single_config(config)
        self.base_url = base_url.rstrip("/")
        self._timeout = timeout
        self._trust_env = trust_env
        self._tls = tls_context(self._config, trust_env=trust_env)
        self._clients: dict[str, AsyncClient] = {}

    def get(self, cluster: str) -> AsyncClient:
        client = self._clients.get(cluster)
        if client is None:
            server = cluster_url(self.base_url, cluster)
            client = async_client(
                self._config, server=server, timeout=self._timeout, trust_env=self._trust_env, tls=self._tls
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
    operation = Operation(verb=verb, resource=resource_label(resource), namespace=namespace or "", name=name, where=where)
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
