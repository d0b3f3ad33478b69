"""Size limits as kube-apiserver and etcd enforce them.

- A request body over 3 MiB (kube-apiserver's `--max-request-bytes` default) is refused before
  it is read: 413 `RequestEntityTooLarge`, "Request entity too large: limit is 3145728".
- The annotations of an object may hold 256 KiB in all (keys and values): 422 Invalid,
  `metadata.annotations: Too long: may not be more than 262144 bytes`, for every resource.
- An object larger than 1.5 MiB once encoded (etcd's `--max-request-bytes` default) cannot be
  stored: etcd's "etcdserver: request is too large", which kube-apiserver passes on as a 500.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import msgspec
from aiohttp import web

from kcpsim import errors
from kcpsim.world import World, WriteContext

MAX_REQUEST_BODY_BYTES = 3 * 1024 * 1024
MAX_OBJECT_BYTES = 3 * 1024 * 1024 // 2
TOTAL_ANNOTATION_BYTES = 256 * 1024


def install(world: World) -> None:
    """Check every write's annotations and stored size (an admission step run after the others)."""
    world.mutators.append(check_write)


def check_write(ctx: WriteContext) -> None:
    metadata = ctx.new.get("metadata") or {}
    annotations = metadata.get("annotations") or {}
    if annotations and sum(len(k.encode()) + len(str(v).encode()) for k, v in annotations.items()) > (
        TOTAL_ANNOTATION_BYTES
    ):
        raise errors.invalid(
            group=ctx.rdef.group,
            kind=ctx.rdef.kind,
            name=metadata.get("name", ""),
            causes=[("metadata.annotations", f"Too long: may not be more than {TOTAL_ANNOTATION_BYTES} bytes")],
        )
    if len(msgspec.json.encode(ctx.new)) > MAX_OBJECT_BYTES:
        raise errors.StatusError(500, "", "etcdserver: request is too large")


def request_too_large() -> web.Response:
    message = f"Request entity too large: limit is {MAX_REQUEST_BODY_BYTES}"
    body = errors.StatusError(413, "RequestEntityTooLarge", message).body()
    return web.Response(body=msgspec.json.encode(body), status=413, content_type="application/json")


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@web.middleware
async def body_limit(request: web.Request, handler: Handler) -> web.StreamResponse:
    """413 for a declared body over the limit, and for one that turns out larger while read."""
    if request.content_length is not None and request.content_length > MAX_REQUEST_BODY_BYTES:
        return request_too_large()
    try:
        return await handler(request)
    except web.HTTPRequestEntityTooLarge:
        return request_too_large()
