"""Sorting a heap of manifests into what the servlet reads.

`servlet plan` accepts any mix of CRDs, PublishedResources, an APIExport, schemas and objects of
both sides, and OpenAPI v3 group-version documents, which describe built-in types as CRDs
(`builtin_types.py`); the live mode gathers the same things from the clusters. Both end up as an
`Inventory`, so one planner serves both. An object carrying `kcp.io/cluster` lives in a kcp
workspace (remote); anything else lives on the service cluster (local).

Reading files or clusters is not done here: callers hand over already-decoded documents.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen

from servlet.core.builtin_types import BuiltinResource, builtin_crds, is_openapi_document, resources_in_document
from servlet.core.keys import CLUSTER_ANNOTATION
from servlet.core.model import Problem

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["Document", "Inventory", "build_inventory"]

_CRD = ("apiextensions.k8s.io", "CustomResourceDefinition")
_PUBLISHED_RESOURCE = ("services.kdp.k8c.io", "PublishedResource")
_API_EXPORT = ("apis.kcp.io", "APIExport")
_SCHEMA = ("apis.kcp.io", "APIResourceSchema")
_ENDPOINT_SLICE = ("apis.kcp.io", "APIExportEndpointSlice")

Manifest = Mapping[str, Any]


@frozen
class Document:
    """One decoded document and where it came from (`file.yaml#2`), for error messages."""

    source: str
    content: object


@frozen
class Inventory:
    crds: tuple[Manifest, ...] = ()
    published_resources: tuple[Manifest, ...] = ()
    api_exports: tuple[Manifest, ...] = ()
    schemas: tuple[Manifest, ...] = ()
    endpoint_slices: tuple[Manifest, ...] = ()
    remote_objects: tuple[Manifest, ...] = ()
    local_objects: tuple[Manifest, ...] = ()
    problems: tuple[Problem, ...] = ()
    # Workspace objects a read was refused for, as (apiVersion, kind, cluster, namespace, name):
    # planned as the daemon plans them, unreadable, never as gone.
    unreadable_remote: tuple[tuple[str, str, str, str, str], ...] = ()


def group_of(obj: Manifest) -> str:
    api_version = obj.get("apiVersion")
    if not isinstance(api_version, str) or "/" not in api_version:
        return ""
    return api_version.split("/", 1)[0]


def cluster_of(obj: Manifest) -> str | None:
    """The logical cluster an object lives in, or None for a service-cluster object."""
    metadata = obj.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    value = annotations.get(CLUSTER_ANNOTATION) if isinstance(annotations, Mapping) else None
    return value if isinstance(value, str) and value else None


def _problem_with(document: object) -> str | None:
    if not isinstance(document, Mapping):
        return f"is a {type(document).__name__}, not a Kubernetes object"
    for key in ("apiVersion", "kind"):
        if not isinstance(document.get(key), str) or not document[key]:
            return f"has no {key}"
    metadata = document.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        return "has no metadata.name"
    return None


def expand_lists(documents: Iterable[Document]) -> Iterable[Document]:
    """`kubectl get -o yaml` prints `kind: List` (or `FooList`) documents: use their items."""
    for document in documents:
        content = document.content
        if (
            isinstance(content, Mapping)
            and isinstance(content.get("kind"), str)
            and content["kind"].endswith("List")
            and isinstance(content.get("items"), list)
        ):
            for index, item in enumerate(content["items"]):
                yield Document(source=f"{document.source} items[{index}]", content=item)
        elif content is not None:  # an empty YAML document ("---" at the end) is not an error
            yield document


def build_inventory(documents: Iterable[Document]) -> Inventory:
    by_kind: dict[tuple[str, str], list[Manifest]] = {
        key: [] for key in (_CRD, _PUBLISHED_RESOURCE, _API_EXPORT, _SCHEMA, _ENDPOINT_SLICE)
    }
    remote: list[Manifest] = []
    local: list[Manifest] = []
    problems: list[Problem] = []
    builtins: list[BuiltinResource] = []
    for document in expand_lists(documents):
        content = document.content
        if is_openapi_document(content) and isinstance(content, Mapping):
            found, document_problems = resources_in_document(content, source=document.source)
            builtins.extend(found)
            problems.extend(document_problems)
            continue
        problem = _problem_with(content)
        if problem is not None or not isinstance(content, Mapping):
            problems.append(Problem(field=document.source, message=f"the document {problem}"))
            continue
        bucket = by_kind.get((group_of(content), content["kind"]))
        if bucket is not None:
            bucket.append(content)
        elif cluster_of(content) is not None:
            remote.append(content)
        else:
            local.append(content)
    # A type with a CRD of its own is described by it, not by an OpenAPI document.
    with_crd = {
        (str(_spec(crd).get("group") or ""), str(_mapping(_spec(crd).get("names")).get("kind")))
        for crd in by_kind[_CRD]
    }
    described = [
        crd for crd in builtin_crds(builtins) if (crd["spec"]["group"], crd["spec"]["names"]["kind"]) not in with_crd
    ]
    return Inventory(
        crds=(*by_kind[_CRD], *described),
        published_resources=tuple(by_kind[_PUBLISHED_RESOURCE]),
        api_exports=tuple(by_kind[_API_EXPORT]),
        schemas=tuple(by_kind[_SCHEMA]),
        endpoint_slices=tuple(by_kind[_ENDPOINT_SLICE]),
        remote_objects=tuple(remote),
        local_objects=tuple(local),
        problems=tuple(problems),
    )


def _spec(manifest: Manifest) -> Mapping[str, Any]:
    return _mapping(manifest.get("spec"))


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}
