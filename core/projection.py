"""How a local CRD looks in kcp: the APIResourceSchema a PublishedResource projects it to (SPEC 3).

A service owner publishes one or several versions of a CRD (`published_versions.py` picks them,
names them in kcp and chooses the stored one). This module applies the rest of the
PublishedResource's projection (kind, plural, short names, categories, scope) and names the result
after a hash of its spec, so the same inputs give the same schema name on every machine and a
changed CRD gives a new one. A schema of one version has no `conversion`, as before several
versions could be published; one of several has `conversion: {strategy: None}` (kcp requires it
and has no conversion webhooks here), so its versions are views of the same object.

It deliberately does not talk to any cluster, does not decide whether a schema must be created
(an existing schema with the same name is by construction identical), and never touches the
OpenAPI schema itself: projection renames the type, it does not transform its content.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from servlet.core.hashing import canonical_json, sha1_hex
from servlet.core.model import Problem, Projection, PublishedResource, ResourceType, Scope
from servlet.core.published_versions import PublishedVersion, select_versions
from servlet.core.versions import is_kcp_version

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["Projected", "pluralize", "project", "schema_manifest"]

SCHEMA_API_VERSION = "apis.kcp.io/v1alpha1"
SCHEMA_KIND = "APIResourceSchema"

# The version fields that travel to kcp unchanged; everything else about a version is decided here.
_COPIED_VERSION_FIELDS = ("subresources", "additionalPrinterColumns", "deprecated", "deprecationWarning")

# Kubernetes' rule for resource names (plural, singular, short names, categories, lower-cased kinds).
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS1035_MAX = 63
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS1123_SUBDOMAIN_MAX = 253

_CONSONANTS = frozenset("bcdfghjklmnpqrstvwxz")
_SIBILANT_ENDINGS = ("s", "x", "z", "ch", "sh")


def pluralize(word: str) -> str:
    """The English plural of a lower-case kind, by three predictable rules and no exceptions.

    consonant + "y" -> "ies" (policy -> policies); ending in s, x, z, ch or sh -> + "es"
    (class -> classes, box -> boxes, quiz -> quizes: no consonant doubling); else + "s"
    (zertifikat -> zertifikats, key -> keys). Irregular nouns (person, index) are not special:
    a service owner who wants those sets `projection.plural`.
    """
    lowered = word.lower()
    if len(lowered) >= 2 and lowered.endswith("y") and lowered[-2] in _CONSONANTS:
        return word[:-1] + "ies"
    if lowered.endswith(_SIBILANT_ENDINGS):
        return word + "es"
    return word + "s" if word else word


def schema_name(*, spec: Mapping[str, Any]) -> str:
    """`v<first 8 hex of sha1(canonical JSON of spec)>.<plural>.<group>` (group "" is `core`)."""
    digest = sha1_hex(canonical_json(spec))[:8]
    group = spec.get("group") or "core"
    return f"v{digest}.{spec['names']['plural']}.{group}"


@frozen
class Projected:
    """A projected resource: the schema to publish and the types on both sides of the sync.

    `local` and `remote` are in the versions the sync reads and writes: the schema's storage
    version (`remote`) and the CRD version it was published from (`local`)."""

    schema_name: str
    schema_spec: dict[str, Any]
    local: ResourceType
    remote: ResourceType
    has_status_subresource: bool

    @property
    def remote_versions(self) -> tuple[str, ...]:
        """Every version kcp serves the resource in, in Kubernetes' order."""
        return tuple(str(_mapping(v).get("name")) for v in _sequence(self.schema_spec.get("versions")))


def project(*, crd: Mapping[str, Any], published: PublishedResource, api_group: str) -> Projected | tuple[Problem, ...]:
    """Project `crd` as `published` asks, into the servlet's `api_group`; all problems at once."""
    crd_spec = _mapping(crd.get("spec"))
    crd_names = _mapping(crd_spec.get("names"))
    problems = list(_source_mismatch(crd_spec=crd_spec, crd_names=crd_names, published=published))
    selected = select_versions(
        crd_spec=crd_spec, resource=published.spec.resource, projection=published.spec.projection
    )
    selection = None if isinstance(selected, tuple) else selected
    if isinstance(selected, tuple):
        problems.extend(selected)
    names, names_problems = _projected_names(crd_names=crd_names, projection=published.spec.projection)
    problems.extend(names_problems)
    projection = published.spec.projection
    if projection.version is not None and not is_kcp_version(projection.version):
        problems.append(
            Problem(
                field="spec.projection.version",
                message=f"'{projection.version}' is not a Kubernetes version name like v1, v1alpha1 or v2beta3",
            )
        )
    local_scope = _scope(crd_spec.get("scope"))
    if local_scope is None:
        problems.append(
            Problem(
                field="spec.resource.kind",
                message=f"the CRD has no valid scope ('{crd_spec.get('scope')}')",
            )
        )
    if problems or selection is None or local_scope is None:
        return tuple(problems)

    remote_scope = projection.scope or local_scope
    storage = selection.storage
    spec: dict[str, Any] = {
        "group": api_group,
        "names": names,
        "scope": remote_scope.value,
        "versions": [_projected_version(version, storage=version is storage) for version in selection.versions],
    }
    if len(selection.versions) > 1:
        spec["conversion"] = {"strategy": "None"}
    name = schema_name(spec=spec)
    if len(name) > _DNS1123_SUBDOMAIN_MAX or not _DNS1123_SUBDOMAIN.match(name):
        return (
            Problem(
                field="spec.projection.plural",
                message=f"the schema name '{name}' is not a valid DNS-1123 subdomain of at most 253 characters",
            ),
        )
    subresources = _mapping(storage.definition.get("subresources"))
    return Projected(
        schema_name=name,
        schema_spec=spec,
        local=ResourceType(
            group=str(crd_spec.get("group", "")),
            version=storage.local,
            kind=str(crd_names.get("kind", "")),
            plural=str(crd_names.get("plural", "")),
            namespaced=local_scope is Scope.NAMESPACED,
        ),
        remote=ResourceType(
            group=api_group,
            version=storage.remote,
            kind=names["kind"],
            plural=names["plural"],
            namespaced=remote_scope is Scope.NAMESPACED,
        ),
        has_status_subresource="status" in subresources,
    )


def schema_manifest(projected: Projected) -> dict[str, Any]:
    """The full APIResourceSchema object to create in the org workspace."""
    return {
        "apiVersion": SCHEMA_API_VERSION,
        "kind": SCHEMA_KIND,
        "metadata": {"name": projected.schema_name},
        "spec": copy.deepcopy(projected.schema_spec),
    }


def _source_mismatch(
    *, crd_spec: Mapping[str, Any], crd_names: Mapping[str, Any], published: PublishedResource
) -> tuple[Problem, ...]:
    source = published.spec.resource
    problems: list[Problem] = []
    if crd_spec.get("group") != source.api_group:
        problems.append(
            Problem(
                field="spec.resource.apiGroup",
                message=f"'{source.api_group}' does not match the CRD's group '{crd_spec.get('group')}'",
            )
        )
    if crd_names.get("kind") != source.kind:
        problems.append(
            Problem(
                field="spec.resource.kind",
                message=f"'{source.kind}' does not match the CRD's kind '{crd_names.get('kind')}'",
            )
        )
    return tuple(problems)


def _projected_names(
    *, crd_names: Mapping[str, Any], projection: Projection
) -> tuple[dict[str, Any], tuple[Problem, ...]]:
    """`spec.names` of the schema (SPEC 3): a projected kind renames everything derived from it."""
    problems: list[Problem] = []
    if projection.kind is not None:
        kind = projection.kind
        if not _is_dns1035_label(kind.lower()):
            problems.append(
                Problem(
                    field="spec.projection.kind",
                    message=f"'{kind}' is not a valid kind: lower-cased it must be a DNS-1035 label "
                    "(letters, digits and '-', starting with a letter, at most 63 characters)",
                )
            )
        list_kind = kind + "List"
        singular = kind.lower()
        plural = projection.plural or pluralize(singular)
    else:
        kind = str(crd_names.get("kind", ""))
        # A CRD read from a file may leave these to the API server's defaulting; an ARS may not.
        list_kind = str(crd_names.get("listKind") or kind + "List")
        singular = str(crd_names.get("singular") or kind.lower())
        plural = projection.plural or str(crd_names.get("plural", ""))
    if projection.plural is not None:
        problems.extend(_label_problems("spec.projection.plural", [projection.plural], indexed=False))
    elif projection.kind is not None and _is_dns1035_label(singular) and not _is_dns1035_label(plural):
        problems.append(
            Problem(
                field="spec.projection.plural",
                message=f"the plural '{plural}' derived from the kind is too long; set spec.projection.plural",
            )
        )
    short_names = _names_list(projection.short_names, crd_names.get("shortNames"))
    categories = _names_list(projection.categories, crd_names.get("categories"))
    if projection.short_names is not None:
        problems.extend(_label_problems("spec.projection.shortNames", projection.short_names))
    if projection.categories is not None:
        problems.extend(_label_problems("spec.projection.categories", projection.categories))

    names: dict[str, Any] = {"kind": kind, "listKind": list_kind, "plural": plural, "singular": singular}
    # Empty lists are left out so "no short names" hashes the same however it was written.
    if short_names:
        names["shortNames"] = short_names
    if categories:
        names["categories"] = categories
    return names, tuple(problems)


def _projected_version(version: PublishedVersion, *, storage: bool) -> dict[str, Any]:
    definition = version.definition
    projected: dict[str, Any] = {
        "name": version.remote,
        "served": True,
        "storage": storage,
        "schema": copy.deepcopy(definition["schema"]["openAPIV3Schema"]),
    }
    for key in _COPIED_VERSION_FIELDS:
        if key in definition:
            projected[key] = copy.deepcopy(definition[key])
    return projected


def _names_list(projected: tuple[str, ...] | None, original: object) -> list[str]:
    """The projection's list when set (an empty one clears), else the CRD's."""
    if projected is not None:
        return list(projected)
    return [str(item) for item in _sequence(original)]


def _label_problems(field_path: str, values: Sequence[str], *, indexed: bool = True) -> tuple[Problem, ...]:
    return tuple(
        Problem(
            field=f"{field_path}[{index}]" if indexed else field_path,
            message=f"'{value}' is not a valid resource name: use lower-case letters, digits and '-', "
            "starting with a letter, at most 63 characters",
        )
        for index, value in enumerate(values)
        if not _is_dns1035_label(value)
    )


def _is_dns1035_label(value: str) -> bool:
    return len(value) <= _DNS1035_MAX and bool(_DNS1035_LABEL.match(value))


def _scope(value: object) -> Scope | None:
    return next((scope for scope in Scope if scope.value == value), None)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()
