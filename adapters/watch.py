"""The `Collection` port over HTTP: list pages and watch streams of one resource at one base URL.

Why not lightkube's `watch()`: it cannot ask for bookmarks and, on 410, silently restarts
without a resourceVersion, so deletions in the gap are never seen. Here the requests are made
directly over an httpx2 client built from the same kubeconfig (`kube.http_client`):

- a list page asks for `limit` objects and follows the server's `continue` token;
- a watch asks for `allowWatchBookmarks=true` and a server-side `timeoutSeconds`, and reads the
  stream line by line; an ERROR event is raised as the failure its Status describes (a 410 as
  `Gone`), exactly like an error response;
- `metadata_only` sends the `Accept` header of Kubernetes' metadata client, so the server answers
  with `PartialObjectMetadata`.

Every failure leaves as one of `core/errors.py`'s classes. Deliberately not here: what to do
about a failure (relist, back off) and keeping a cache: that is the informer's (`app/runtime`).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable, Mapping
from typing import TYPE_CHECKING, Any

import httpx2

from servlet.adapters.errors import api_errors, failure_from_response, failure_from_status
from servlet.core import jsontext
from servlet.core.errors import ApiFailure, Operation, Unreadable
from servlet.core.ports import Collection, ListPage, WatchEvent

# What Kubernetes' metadata client asks for: lists as PartialObjectMetadataList, watch events
# as PartialObjectMetadata (the server answers 406 to the other combination).
METADATA_LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
METADATA_WATCH_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
_EVENT_TYPES = ("ADDED", "MODIFIED", "DELETED", "BOOKMARK")
# How long connecting may take; reading a watch waits as long as the caller says.
_CONNECT_TIMEOUT = 10.0

ReadObserver = Callable[[Mapping[str, Any]], None]


class HttpCollection:
    """`servlet.core.ports.Collection` for `path` (e.g. `apis/g/v/plural`) under `http`'s base URL."""

    def __init__(self, http: httpx2.AsyncClient, *, path: str, on_read: ReadObserver | None = None) -> None:
        self.http = http
        self.path = path.lstrip("/")
        # Told of every object listed or watched: the connections learn from it which VW URL
        # (kcp shard) serves the object's workspace.
        self._on_read = on_read

    @property
    def location(self) -> str:
        return f"{str(self.http.base_url).rstrip('/')}/{self.path}"

    async def list_page(
        self, *, limit: int, continue_token: str = "", label_selector: str | None = None, metadata_only: bool = False
    ) -> ListPage:
        params = {"limit": str(limit)}
        if continue_token:
            params["continue"] = continue_token
        if label_selector:
            params["labelSelector"] = label_selector
        operation = self._operation("list")
        with api_errors(operation):
            response = await self.http.get(
                self.path, params=params, headers=_accept(METADATA_LIST_ACCEPT, metadata_only)
            )
        if response.status_code != 200:
            raise _failure(operation, response)
        try:
            page = jsontext.decode(response.content)
            metadata = page.get("metadata") or {}
            items = list(page.get("items") or [])
        except (ValueError, AttributeError, TypeError) as exc:
            raise Unreadable(operation=operation, code=200, message=f"not a list: {response.content[:200]!r}") from exc
        if self._on_read is not None:
            for item in items:
                self._on_read(item)
        return ListPage(
            items=items,
            resource_version=str(metadata.get("resourceVersion") or ""),
            continue_token=str(metadata.get("continue") or ""),
        )

    async def watch(
        self,
        *,
        resource_version: str,
        timeout_seconds: int,
        read_timeout: float,
        label_selector: str | None = None,
        metadata_only: bool = False,
    ) -> AsyncGenerator[WatchEvent, None]:
        params = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
            "resourceVersion": resource_version,
        }
        if label_selector:
            params["labelSelector"] = label_selector
        operation = self._operation("watch")
        timeout = httpx2.Timeout(_CONNECT_TIMEOUT, read=read_timeout)
        headers = _accept(METADATA_WATCH_ACCEPT, metadata_only)
        with api_errors(operation):
            async with self.http.stream("GET", self.path, params=params, timeout=timeout, headers=headers) as response:
                if response.status_code != 200:
                    await response.aread()
                    raise _failure(operation, response)
                # Lines split from the raw bytes and decoded as bytes: httpx's text lines cost as
                # much again as decoding the events themselves.
                pending = bytearray()
                async for chunk in response.aiter_bytes():
                    start = 0
                    while (end := chunk.find(b"\n", start)) >= 0:
                        pending += chunk[start:end]
                        start = end + 1
                        if pending.strip():
                            yield self._read(_event(bytes(pending), operation))
                        pending.clear()
                    pending += chunk[start:]
                if pending.strip():  # a last event without its newline
                    yield self._read(_event(bytes(pending), operation))

    def _read(self, event: WatchEvent) -> WatchEvent:
        if self._on_read is not None and event.type != "BOOKMARK":
            self._on_read(event.object)
        return event

    def _operation(self, verb: str) -> Operation:
        return Operation(verb=verb, resource=self.path, where=str(self.http.base_url))


def _event(line: bytes, operation: Operation) -> WatchEvent:
    try:
        event = jsontext.decode(line)
        kind, obj = event["type"], event["object"]
    except (ValueError, KeyError, TypeError) as exc:
        raise Unreadable(operation=operation, code=200, message=f"unreadable watch event: {line[:200]!r}") from exc
    if kind == "ERROR":
        raise failure_from_status(obj if isinstance(obj, dict) else {}, operation=operation)
    if kind not in _EVENT_TYPES or not isinstance(obj, dict):
        raise Unreadable(operation=operation, code=200, message=f"unknown watch event type {kind!r}")
    return WatchEvent(type=kind, object=obj)


def _accept(metadata_accept: str, metadata_only: bool) -> dict[str, str] | None:
    return {"Accept": metadata_accept} if metadata_only else None


def _failure(operation: Operation, response: httpx2.Response) -> ApiFailure:
    return failure_from_response(
        operation=operation, code=response.status_code, headers=response.headers, body=response.content
    )


if TYPE_CHECKING:  # mypy proves the adapter fills its port

    def _fills_port(adapter: HttpCollection) -> Collection:
        return adapter
