"""Metadata-only reads, answered as kube-apiserver answers Kubernetes' metadata client.

A client that sends `Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`
with a list (or `as=PartialObjectMetadata` with a get or a watch) gets every object as a
`PartialObjectMetadata` of `meta.k8s.io/v1`: apiVersion, kind and the full `metadata`, nothing
else; a list is a `PartialObjectMetadataList` of the same group version. Asking for the list
form on a watch or a get, or the single form on a list, is refused with 406 NotAcceptable, as
the apiserver does. Media types this simulator cannot produce (protobuf) are skipped in favour
of the next one in the header.

This module only shapes answers; routing stays in server.py.
"""

from __future__ import annotations

from typing import Any

from kcpsim import errors

API_VERSION = "meta.k8s.io/v1"
PARTIAL = "PartialObjectMetadata"
PARTIAL_LIST = "PartialObjectMetadataList"
_JSON_TYPES = ("application/json", "application/*", "*/*")

Obj = dict[str, Any]


def requested_form(accept: str, *, verb: str) -> str | None:
    """`PARTIAL` or `PARTIAL_LIST` when the client asked for metadata only, None for whole objects.

    StatusError 406 when the form does not fit the verb."""
    for media_range in accept.split(","):
        media_type, *raw_params = (part.strip() for part in media_range.split(";"))
        if media_type.lower() not in _JSON_TYPES:
            continue
        params = dict(param.partition("=")[::2] for param in raw_params if "=" in param)
        form = params.get("as")
        if form is None:
            return None
        if params.get("g") != "meta.k8s.io" or params.get("v") != "v1" or form not in (PARTIAL, PARTIAL_LIST):
            continue
        if (form == PARTIAL_LIST) != (verb == "list"):
            raise errors.StatusError(
                406,
                "NotAcceptable",
                f"only the following media types are accepted: application/json;as={form_for(verb)};"
                "g=meta.k8s.io;v=v1, application/json",
            )
        return form
    return None


def form_for(verb: str) -> str:
    return PARTIAL_LIST if verb == "list" else PARTIAL


def partial(rendered: Obj) -> Obj:
    """An object as a PartialObjectMetadata: its metadata only."""
    return {"apiVersion": API_VERSION, "kind": PARTIAL, "metadata": rendered.get("metadata") or {}}


def partial_list(metadata: Obj, items: list[Obj]) -> Obj:
    return {
        "apiVersion": API_VERSION,
        "kind": PARTIAL_LIST,
        "metadata": metadata,
        "items": [partial(item) for item in items],
    }
