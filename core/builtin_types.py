"""Built-in and aggregated types, described as the CRD they would be, from OpenAPI v3 documents.

A PublishedResource may name a type the service cluster serves without a CRD (a Role, a
ConfigMap, an aggregated API's kind). The servlet then builds the CRD such a type would have and
resolves and projects it like any other, so everything downstream is the same. What a CRD says,
an OpenAPI v3 group-version document (`/openapi/v3/apis/<group>/<version>`) says too:

- the object paths name the resource and its scope (`.../namespaces/{namespace}/roles/{name}` is
  the namespaced `roles`), their `get` operation the kind (`x-kubernetes-group-version-kind`);
- a `.../{name}/status` or `.../{name}/scale` path is the subresource of that name: without a
  `status` path, status is part of the object, as for a ConfigMap, and never synced up alone;
- `components.schemas` holds the kind's schema, made structural by `openapi_schema.py`.

The storage version is the one the caller names (the server's preferred version from
discovery), else the first published in Kubernetes' version order.

Deliberately not here: fetching the documents (the service cluster adapter, the CLI's files).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from servlet.core.model import Problem
from servlet.core.openapi_schema import structural_schema
from servlet.core.versions import version_priority_key

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = [
    "BuiltinResource",
    "builtin_crds",
    "is_openapi_document",
    "resources_from_discovery",
    "resources_in_document",
]

# An object path: /api/v1[/namespaces/{namespace}]/plural/{name} or /apis/group/version/...
_OBJECT_PATH = re.compile(
    r"^/(?:api|apis/(?P<group>[^/{}]+))/(?P<version>[^/{}]+)/"
    r"(?P<namespaced>namespaces/\{namespace\}/)?(?P<plural>[^/{}]+)/\{name\}$"
)
_SUBRESOURCES = ("status", "scale")
# Where a CRD's scale subresource reads and writes replicas: the convention built-ins follow.
_SCALE = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}


@frozen
class BuiltinResource:
    """One resource of one group-version, as an OpenAPI document's paths show it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    subresources: tuple[str, ...]
    schema: Mapping[str, Any]  # structural, ready for a CRD version's openAPIV3Schema


def is_openapi_document(content: object) -> bool:
    """Whether a decoded document is an OpenAPI v3 document rather than a Kubernetes object."""
    return (
        isinstance(content, Mapping)
        and isinstance(content.get("openapi"), str)
        and isinstance(content.get("paths"), Mapping)
        and "kind" not in content
    )


def resources_in_document(
    document: Mapping[str, Any], *, source: str = "the OpenAPI document"
) -> tuple[tuple[BuiltinResource, ...], tuple[Problem, ...]]:
    """Every resource whose object path the document lists, with its schema; problems name `source`."""
    paths = _mapping(document.get("paths"))
    definitions = _mapping(_mapping(document.get("components")).get("schemas"))
    found: list[BuiltinResource] = []
    problems: list[Problem] = []
    for path in sorted(str(p) for p in paths):
        match = _OBJECT_PATH.match(path)
        if match is None:
            continue
        gvk = _mapping(_mapping(_mapping(paths[path]).get("get")).get("x-kubernetes-group-version-kind"))
        kind, version = gvk.get("kind"), match["version"]
        if not isinstance(kind, str) or not kind:
            continue  # not a kind's object (no get with a kind): nothing to publish
        group = match["group"] or ""
        definition = _definition_name(definitions, group=group, version=version, kind=kind)
        field = f"{source} paths[{path}]"
        if definition is None:
            problems.append(
                Problem(field=field, message=f"components.schemas has no definition of kind {kind!r} {group}/{version}")
            )
            continue
        resource, schema_problems = _resource(
            definitions,
            definition,
            source=source,
            group=group,
            version=version,
            kind=kind,
            plural=match["plural"],
            namespaced=match["namespaced"] is not None,
            subresources={sub for sub in _SUBRESOURCES if f"{path}/{sub}" in paths},
        )
        problems.extend(schema_problems)
        found.append(resource)
    return tuple(found), tuple(problems)


def resources_from_discovery(
    resource_list: Mapping[str, Any], document: Mapping[str, Any], *, kinds: Iterable[str], source: str
) -> tuple[tuple[BuiltinResource, ...], tuple[Problem, ...]]:
    """The resources of `kinds` as the server's discovery lists them, with their schemas from `document`.

    `resource_list` is a group-version's APIResourceList (`/apis/<group>/<version>`): it names the
    plural, the scope and the subresources (`roles/status`) where the document's paths only hint
    at them. A kind discovery lists that the document does not define is a problem naming it.
    """
    group, _, version = str(resource_list.get("groupVersion") or "").rpartition("/")
    wanted = set(kinds)
    entries = [_mapping(entry) for entry in _sequence(resource_list.get("resources"))]
    subresources: dict[str, set[str]] = {}
    for entry in entries:
        parent, _, sub = str(entry.get("name") or "").partition("/")
        if sub:
            subresources.setdefault(parent, set()).add(sub)
    definitions = _mapping(_mapping(document.get("components")).get("schemas"))
    found: list[BuiltinResource] = []
    problems: list[Problem] = []
    for entry in entries:
        plural, kind = str(entry.get("name") or ""), entry.get("kind")
        if "/" in plural or kind not in wanted or not isinstance(kind, str):
            continue
        definition = _definition_name(definitions, group=group, version=version, kind=kind)
        if definition is None:
            problems.append(
                Problem(
                    field=f"{source} components.schemas",
                    message=f"has no definition of kind {kind!r} {group}/{version}, which discovery lists",
                )
            )
            continue
        resource, schema_problems = _resource(
            definitions,
            definition,
            source=source,
            group=group,
            version=version,
            kind=kind,
            plural=plural,
            namespaced=entry.get("namespaced") is True,
            subresources=subresources.get(plural, set()),
        )
        problems.extend(schema_problems)
        found.append(resource)
    return tuple(found), tuple(problems)


def builtin_crds(
    resources: Iterable[BuiltinResource], *, storage_versions: Mapping[tuple[str, str], str] | None = None
) -> tuple[dict[str, Any], ...]:
    """One CRD manifest per (group, kind) among `resources`, with a version per group-version.

    `storage_versions` maps (group, kind) to the server's preferred version; a kind without one
    stores the first of its versions in Kubernetes' version order.
    """
    by_type: dict[tuple[str, str], dict[str, BuiltinResource]] = {}
    for resource in resources:
        by_type.setdefault((resource.group, resource.kind), {})[resource.version] = resource
    preferred = storage_versions or {}
    return tuple(
        _crd(list(versions.values()), storage=preferred.get(identity)) for identity, versions in sorted(by_type.items())
    )


def _crd(versions: Sequence[BuiltinResource], *, storage: str | None) -> dict[str, Any]:
    ordered = sorted(versions, key=lambda resource: version_priority_key(resource.version))
    names = [resource.version for resource in ordered]
    stored = storage if storage in names else names[0]
    first = ordered[0]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{first.plural}.{first.group or 'core'}"},
        "spec": {
            "group": first.group,
            "names": {
                "kind": first.kind,
                "listKind": f"{first.kind}List",
                "plural": first.plural,
                "singular": first.kind.lower(),
            },
            "scope": "Namespaced" if first.namespaced else "Cluster",
            "versions": [_version(resource, storage=resource.version == stored) for resource in ordered],
        },
    }


def _version(resource: BuiltinResource, *, storage: bool) -> dict[str, Any]:
    version: dict[str, Any] = {
        "name": resource.version,
        "served": True,
        "storage": storage,
        "schema": {"openAPIV3Schema": dict(resource.schema)},
    }
    subresources: dict[str, Any] = {}
    if "status" in resource.subresources:
        subresources["status"] = {}
    if "scale" in resource.subresources:
        subresources["scale"] = dict(_SCALE)
    if subresources:
        version["subresources"] = subresources
    return version


def _resource(
    definitions: Mapping[str, Any],
    definition: str,
    *,
    source: str,
    group: str,
    version: str,
    kind: str,
    plural: str,
    namespaced: bool,
    subresources: Iterable[str],
) -> tuple[BuiltinResource, tuple[Problem, ...]]:
    """The resource, its schema `definition` made structural, with the problems found doing so."""
    schema, problems = structural_schema(definitions, definition, field=f"{source} components.schemas")
    served = set(subresources)
    resource = BuiltinResource(
        group=group,
        version=version,
        kind=kind,
        plural=plural,
        namespaced=namespaced,
        subresources=tuple(sub for sub in _SUBRESOURCES if sub in served),
        schema=schema,
    )
    return resource, problems


def _definition_name(definitions: Mapping[str, Any], *, group: str, version: str, kind: str) -> str | None:
    wanted = {"group": group, "version": version, "kind": kind}
    for name, definition in definitions.items():
        for gvk in _sequence(_mapping(definition).get("x-kubernetes-group-version-kind")):
            gvk_map = _mapping(gvk)
            if {key: gvk_map.get(key) for key in wanted} == wanted:
                return str(name)
    return None


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()
