"""Serving `/openapi/v3`, `/openapi/v3/<api/v1 | apis/<group>/<version>>` and `/openapi/v2`.

Answers as kube-openapi's handlers do: every document carries its hash as a quoted `ETag`, a
matching `If-None-Match` gets 304; the discovery document points at each group-version document
by `serverRelativeURL` with `?hash=`, a request with the current hash is cacheable for good
(`Cache-Control: public, immutable`), one with an outdated hash is redirected (301) to the current
one. v3 documents are JSON; `/openapi/v2` is JSON or, as client-go asks for it, protobuf
(openapi_proto.py); anything else gets 406. Documents are built once per set of served resources and kept while it lasts.
"""

from __future__ import annotations

import datetime
import hashlib
from collections import OrderedDict
from typing import Any

import attrs
import msgspec
from aiohttp import web

from kcpsim import errors, openapi_docs, openapi_proto
from kcpsim.resources import ResourceDef

_CACHED_SETS = 64


@attrs.define
class Documents:
    served: list[ResourceDef]  # kept so the schema ids in the cache key stay unique while cached
    verbs_for: openapi_docs.VerbsFor
    by_key: dict[str, tuple[bytes, str]] = attrs.field(factory=dict)
    discovery: tuple[bytes, str] | None = None
    v2: tuple[bytes, str] | None = None
    v2_proto: tuple[bytes, str] | None = None

    def group_versions(self) -> dict[str, tuple[bytes, str]]:
        if self.discovery is None:
            for key, published in openapi_docs.group_versions(self.served).items():
                self.by_key[key] = openapi_docs.encode(openapi_docs.v3_document(published, self.verbs_for))
            listing = {
                key: {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
                for key, (_, digest) in sorted(self.by_key.items())
            }
            self.discovery = openapi_docs.encode({"paths": listing})
        return self.by_key

    def swagger(self) -> tuple[bytes, str]:
        if self.v2 is None:
            self.v2 = openapi_docs.encode(openapi_docs.v2_document(self.served, self.verbs_for))
        return self.v2

    def swagger_proto(self) -> tuple[bytes, str]:
        if self.v2_proto is None:
            data = openapi_proto.document(msgspec.json.decode(self.swagger()[0]))
            self.v2_proto = data, hashlib.sha512(data).hexdigest().upper()
        return self.v2_proto


_cache: OrderedDict[tuple[Any, ...], Documents] = OrderedDict()


def _fingerprint(rdef: ResourceDef) -> tuple[Any, ...]:
    # The virtual workspace rebuilds its ResourceDefs per request, around the same stored schema
    # objects: those are named by identity (kept alive by the cache entry, so never reused).
    schemas = tuple(id(schema) for _, schema in rdef.schemas)
    return (rdef.group, rdef.plural, rdef.kind, rdef.versions, rdef.namespaced, rdef.status, rdef.verbs, schemas)


def documents(served: list[ResourceDef], verbs_for: openapi_docs.VerbsFor | None, *, scope: str) -> Documents:
    key = (scope, *(_fingerprint(rdef) for rdef in served))
    found = _cache.get(key)
    if found is None:
        found = _cache[key] = Documents(served=list(served), verbs_for=verbs_for or openapi_docs.default_verbs)
        while len(_cache) > _CACHED_SETS:
            _cache.popitem(last=False)
    _cache.move_to_end(key)
    return found


_JSON = "application/json"


def _negotiate(accept: str, offers: tuple[str, ...]) -> str | None:
    """The first offered media type the Accept header names, in its order (none: the first offer)."""
    if not accept.strip():
        return offers[0]
    for media_range in accept.split(","):
        media_type = media_range.split(";")[0].strip().lower()
        if media_type in ("*/*", "application/*"):
            return offers[0]
        if media_type in offers:
            return media_type
    return None


def _serve(
    request: web.Request, data: bytes, digest: str, *, immutable: bool = False, media_type: str = _JSON
) -> web.Response:
    headers = {"ETag": f'"{digest}"', "Content-Type": media_type, "Vary": "Accept"}
    if immutable:
        expires = datetime.datetime.now(datetime.UTC) + datetime.timedelta(days=3650)
        headers |= {"Cache-Control": "public, immutable", "Expires": expires.strftime("%a, %d %b %Y %H:%M:%S GMT")}
    else:
        headers["Cache-Control"] = "no-cache, private"
    if request.headers.get("If-None-Match", "") in (f'"{digest}"', "*"):
        return web.Response(status=304, headers={k: v for k, v in headers.items() if k != "Content-Type"})
    return web.Response(body=data, status=200, headers=headers)


def _not_acceptable(offers: tuple[str, ...]) -> web.Response:
    return web.Response(status=406, text=f"406 Not Acceptable: served as {', '.join(offers)}\n")


def respond(request: web.Request, rest: list[str], docs: Documents) -> web.Response:
    """Answer a GET under `/openapi` (`rest` is the path after the cluster's prefix)."""
    if request.method != "GET":
        raise errors.method_not_allowed()
    accept = request.headers.get("Accept", "")
    if rest == ["openapi", "v2"]:
        offers = (_JSON, *openapi_proto.MEDIA_TYPES)
        chosen = _negotiate(accept, offers)
        if chosen is None:
            return _not_acceptable(offers)
        if chosen == _JSON:
            return _serve(request, *docs.swagger())
        # Either protobuf media type is answered with the one Go's MIME parser accepts (no "@").
        return _serve(request, *docs.swagger_proto(), media_type=openapi_proto.MEDIA_TYPES[1])
    if rest == ["openapi", "v3"]:
        docs.group_versions()
        assert docs.discovery is not None
        return _serve(request, *docs.discovery)
    key = "/".join(rest[2:])
    found = docs.group_versions().get(key) if rest[:2] == ["openapi", "v3"] else None
    if found is None:
        return web.Response(status=404, text="404 page not found\n")
    asked = request.query.get("hash", "")
    if asked and asked != found[1]:
        return web.Response(status=301, headers={"Location": f"{request.path}?hash={found[1]}"})
    if _negotiate(accept, (_JSON,)) is None:
        return _not_acceptable((_JSON,))
    return _serve(request, *found, immutable=bool(asked))
