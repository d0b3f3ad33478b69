"""Turning a PublishedResource manifest into the values of `model.py`, or into every problem at once.

A PublishedResource is user input: the parser never raises, whatever the YAML held, and it
reports all problems in one go, each under the manifest's own field path
(`spec.related[1].kind: must be Secret or ConfigMap, not "Deployment"`), so one status condition
tells the author everything to fix.

Deliberately not here: checks that need the CRD or a concrete object (is the version served,
does a naming pattern yield a DNS name for this object; see `projection.py` and `naming.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from servlet.core.fields import (
    as_mapping,
    check_dns1035,
    describe,
    is_dns1035,
    read_enum,
    read_string,
    read_string_list,
    report_unknown,
)
from servlet.core.filtering import parse_label_selector
from servlet.core.model import (
    Naming,
    Problem,
    Projection,
    PublishedResource,
    PublishedResourceSpec,
    ResourceFilter,
    Scope,
    SourceResource,
)
from servlet.core.mutation_parsing import parse_mutation
from servlet.core.namespace_safety import namespace_pattern_problems
from servlet.core.naming import is_dns1123_label, is_dns1123_subdomain, pattern_problems
from servlet.core.parsing_related import parse_related_list
from servlet.core.parsing_switches import parse_synchronization, read_flag
from servlet.core.parsing_versions import parse_projected_versions, parse_source_versions

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["ParseResult", "parse_published_resource"]

API_VERSION = "services.kdp.k8c.io/v1alpha1"
KIND = "PublishedResource"

_SPEC_FIELDS = (
    "resource",
    "filter",
    "projection",
    "naming",
    "related",
    "synchronization",
    "enableWorkspacePaths",
    "mutation",
)
# Kubernetes requires resource names, versions, short names and categories to be DNS-1035
# labels; checking here gives a clear message instead of a rejected APIResourceSchema later.


@frozen
class ParseResult:
    """The parsed PublishedResource, or None together with at least one problem."""

    value: PublishedResource | None
    problems: tuple[Problem, ...]


def parse_published_resource(manifest: Mapping[str, Any]) -> ParseResult:
    if not isinstance(manifest, Mapping):
        message = f"a PublishedResource must be a map, not {describe(manifest)}"
        return ParseResult(value=None, problems=(Problem(field="manifest", message=message),))
    problems: list[Problem] = []
    _check_type_meta(manifest, problems=problems)
    name, uid, generation = _parse_metadata(manifest.get("metadata"), problems=problems)
    spec = _parse_spec(manifest.get("spec"), problems=problems)
    if problems or spec is None:
        # Every path that loses the spec reports why, so `problems` is never empty here.
        return ParseResult(value=None, problems=tuple(problems))
    value = PublishedResource(name=name, spec=spec, uid=uid, generation=generation)
    return ParseResult(value=value, problems=())


def _check_type_meta(data: Mapping[str, Any], *, problems: list[Problem]) -> None:
    # Absent type meta is fine (a bare dict from a test or a file); a different one is not.
    for key, expected in (("apiVersion", API_VERSION), ("kind", KIND)):
        value = data.get(key)
        if value is not None and value != expected:
            problems.append(Problem(field=key, message=f"must be {expected}, not {describe(value)}"))


def _parse_metadata(data: object, *, problems: list[Problem]) -> tuple[str, str, int]:
    if data is None:
        return "", "", 0
    metadata = as_mapping(data, path="metadata", problems=problems)
    if metadata is None:
        return "", "", 0
    name = read_string(metadata, "name", path="metadata", problems=problems) or ""
    uid = read_string(metadata, "uid", path="metadata", problems=problems) or ""
    generation = metadata.get("generation")
    if generation is None:
        return name, uid, 0
    if isinstance(generation, bool) or not isinstance(generation, int) or generation < 0:
        message = f"must be a whole number, not {describe(generation)}"
        problems.append(Problem(field="metadata.generation", message=message))
        return name, uid, 0
    return name, uid, generation


def _parse_spec(data: object, *, problems: list[Problem]) -> PublishedResourceSpec | None:
    if data is None:
        problems.append(Problem(field="spec", message="is required"))
        return None
    spec = as_mapping(data, path="spec", problems=problems)
    if spec is None:
        return None
    report_unknown(spec, path="spec", known=_SPEC_FIELDS, problems=problems)
    resource = _parse_resource(spec.get("resource"), problems=problems)
    resource_filter = _parse_filter(spec.get("filter"), problems=problems)
    projection = _parse_projection(spec.get("projection"), problems=problems)
    workspace_paths = read_flag(spec, "enableWorkspacePaths", path="spec", problems=problems, default=False)
    naming = _parse_naming(spec.get("naming"), workspace_paths=workspace_paths, problems=problems)
    related = parse_related_list(spec.get("related"), naming=naming, problems=problems)
    mutation = parse_mutation(spec.get("mutation"), path="spec.mutation", problems=problems)
    synchronization = parse_synchronization(spec.get("synchronization"), problems=problems)
    if resource is None:
        return None
    return PublishedResourceSpec(
        resource=resource,
        filter=resource_filter,
        projection=projection,
        naming=naming,
        related=related,
        mutation=mutation,
        synchronization=synchronization,
        workspace_paths=workspace_paths,
    )


def _parse_resource(data: object, *, problems: list[Problem]) -> SourceResource | None:
    path = "spec.resource"
    if data is None:
        problems.append(Problem(field=path, message="is required (apiGroup and kind of the CRD to publish)"))
        return None
    resource = as_mapping(data, path=path, problems=problems)
    if resource is None:
        return None
    report_unknown(resource, path=path, known=("apiGroup", "kind", "version", "versions"), problems=problems)
    # "" names the core group (ConfigMap, Secret): present but empty, unlike a missing apiGroup.
    core_group = resource.get("apiGroup") == ""
    api_group = "" if core_group else read_string(resource, "apiGroup", path=path, problems=problems, required=True)
    if api_group and not is_dns1123_subdomain(api_group):
        message = (
            f'must be a DNS subdomain such as cert-manager.io (or "" for the core group), not {describe(api_group)}'
        )
        problems.append(Problem(field=f"{path}.apiGroup", message=message))
    kind = read_string(resource, "kind", path=path, problems=problems, required=True)
    if kind is not None:
        _check_kind(kind, field=f"{path}.kind", problems=problems)
    version, versions = parse_source_versions(resource, path=path, problems=problems)
    if api_group is None or kind is None:
        return None
    return SourceResource(api_group=api_group, kind=kind, version=version, versions=versions)


def _parse_filter(data: object, *, problems: list[Problem]) -> ResourceFilter:
    path = "spec.filter"
    resource_filter = None if data is None else as_mapping(data, path=path, problems=problems)
    if resource_filter is None:
        return ResourceFilter()
    report_unknown(resource_filter, path=path, known=("namespace", "resource"), problems=problems)
    namespace = read_string(resource_filter, "namespace", path=path, problems=problems)
    if namespace is not None and not is_dns1123_label(namespace):
        message = f"must be a namespace name (a DNS-1123 label), not {describe(namespace)}"
        problems.append(Problem(field=f"{path}.namespace", message=message))
    selector, selector_problems = parse_label_selector(resource_filter.get("resource"), path=f"{path}.resource")
    problems.extend(selector_problems)
    return ResourceFilter(namespace=namespace, labels=selector)


def _parse_projection(data: object, *, problems: list[Problem]) -> Projection:
    path = "spec.projection"
    projection = None if data is None else as_mapping(data, path=path, problems=problems)
    if projection is None:
        return Projection()
    report_unknown(
        projection,
        path=path,
        known=("version", "versions", "kind", "plural", "shortNames", "categories", "scope"),
        problems=problems,
    )
    version, versions = parse_projected_versions(projection, path=path, problems=problems)
    kind = read_string(projection, "kind", path=path, problems=problems)
    if kind is not None:
        _check_kind(kind, field=f"{path}.kind", problems=problems)
    plural = read_string(projection, "plural", path=path, problems=problems)
    if plural is not None:
        check_dns1035(plural, field=f"{path}.plural", problems=problems)
    short_names = read_string_list(projection, "shortNames", path=path, problems=problems)
    categories = read_string_list(projection, "categories", path=path, problems=problems)
    for key, names in (("shortNames", short_names), ("categories", categories)):
        for index, name in enumerate(names or ()):
            check_dns1035(name, field=f"{path}.{key}[{index}]", problems=problems)
    scope = read_enum(projection, "scope", Scope, path=path, problems=problems)
    return Projection(
        version=version,
        versions=versions,
        kind=kind,
        plural=plural,
        short_names=short_names,
        categories=categories,
        scope=scope,
    )


def _parse_naming(data: object, *, workspace_paths: bool, problems: list[Problem]) -> Naming:
    path = "spec.naming"
    naming = None if data is None else as_mapping(data, path=path, problems=problems)
    if naming is None:
        return Naming()
    report_unknown(naming, path=path, known=("namespace", "name", "allowSharedNamespaces"), problems=problems)
    patterns = {key: read_string(naming, key, path=path, problems=problems) for key in ("namespace", "name")}
    for key, pattern in patterns.items():
        if pattern:
            problems.extend(
                pattern_problems(
                    pattern, field=f"{path}.{key}", namespace=key == "namespace", workspace_paths=workspace_paths
                )
            )
    shared = naming.get("allowSharedNamespaces", False)
    if not isinstance(shared, bool):
        message = f"must be true or false, not {describe(shared)}"
        problems.append(Problem(field=f"{path}.allowSharedNamespaces", message=message))
        shared = False
    parsed = Naming(namespace=patterns["namespace"], name=patterns["name"], allow_shared_namespaces=shared)
    problems.extend(namespace_pattern_problems(parsed))
    return parsed


def _check_kind(kind: str, *, field: str, problems: list[Problem]) -> None:
    # The lower-case kind is the singular resource name, which must be a DNS-1035 label.
    if not is_dns1035(kind.lower()):
        problems.append(
            Problem(
                field=field,
                message=f"must be a kind name such as Certificate (letters, digits and '-', starting with a letter), "
                f"not {describe(kind)}",
            )
        )
