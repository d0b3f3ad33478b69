"""Which versions of a CRD a PublishedResource publishes, under which names, and which one is stored.

`resource.version` publishes one version, `resource.versions` a list of them (`[]`: every served
one), neither the CRD's storage version. `projection.version` renames the one published version,
`projection.versions` any of several. The published versions are listed in Kubernetes' version
order of their names in kcp (`versions.py`), so the same selection written in any order gives
the same schema. The schema's storage version is the CRD's storage version when it is published,
else the first published one in that order; both sides of the sync read and write in it (its CRD
name on the service cluster, its kcp name in the workspaces).

Deliberately not here: the rest of the schema (`projection.py`) and the syntax of the fields,
checked when parsing (`parsing_versions.py`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from servlet.core.model import Problem, Projection, SourceResource
from servlet.core.versions import is_kcp_version, version_priority_key

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["PublishedVersion", "VersionSelection", "select_versions"]

_SINGLE_FIELD = "spec.resource.version"
_LIST_FIELD = "spec.resource.versions"
_RENAMES_FIELD = "spec.projection.versions"


@frozen
class PublishedVersion:
    """One published version: its name in the CRD, its name in kcp, and the CRD's entry for it."""

    local: str
    remote: str
    definition: Mapping[str, Any]


@frozen
class VersionSelection:
    """The published versions in Kubernetes' order of their kcp names, and the stored one among them."""

    versions: tuple[PublishedVersion, ...]
    storage: PublishedVersion


def select_versions(
    *, crd_spec: Mapping[str, Any], resource: SourceResource, projection: Projection
) -> VersionSelection | tuple[Problem, ...]:
    """The versions `resource` and `projection` ask for, or every problem with them."""
    crd_versions = [_mapping(v) for v in _sequence(crd_spec.get("versions"))]
    if resource.versions is None:
        chosen = _single(crd_versions, requested=resource.version)
        if isinstance(chosen, Problem):
            return (chosen,)
        selected = [chosen]
    else:
        listed = _listed(crd_versions, requested=resource.versions)
        if isinstance(listed, tuple):
            return listed
        selected = listed
    return _renamed(selected, crd_versions=crd_versions, projection=projection)


def _single(versions: Sequence[Mapping[str, Any]], *, requested: str | None) -> Mapping[str, Any] | Problem:
    """The one-version form: the requested version, else the storage version; it must be served."""
    if requested is not None:
        chosen = next((v for v in versions if v.get("name") == requested), None)
        if chosen is None:
            return Problem(
                field=_SINGLE_FIELD, message=f"the CRD has no version '{requested}' (it has: {_names(versions)})"
            )
    else:
        chosen = next((v for v in versions if v.get("storage") is True), None)
        if chosen is None:
            return Problem(field=_SINGLE_FIELD, message="not set, and the CRD marks no version as its storage version")
    return _usable_problem(chosen, field=_SINGLE_FIELD) or chosen


def _listed(
    versions: Sequence[Mapping[str, Any]], *, requested: tuple[str, ...]
) -> list[Mapping[str, Any]] | tuple[Problem, ...]:
    """The list form: the listed versions, or (empty list) every served one."""
    if not requested:
        served = [v for v in versions if v.get("served") is True]
        if not served:
            return (
                Problem(
                    field=_LIST_FIELD,
                    message="is empty, which publishes every served version, "
                    f"but the CRD serves none (it has: {_names(versions)})",
                ),
            )
        problems = [p for v in served if (p := _usable_problem(v, field=_LIST_FIELD)) is not None]
        return tuple(problems) if problems else served
    chosen: list[Mapping[str, Any]] = []
    problems = []
    for index, name in enumerate(requested):
        field = f"{_LIST_FIELD}[{index}]"
        found = next((v for v in versions if v.get("name") == name), None)
        if found is None:
            problems.append(
                Problem(field=field, message=f"the CRD has no version '{name}' (it has: {_names(versions)})")
            )
        elif (problem := _usable_problem(found, field=field)) is not None:
            problems.append(problem)
        else:
            chosen.append(found)
    return tuple(problems) if problems else chosen


def _usable_problem(version: Mapping[str, Any], *, field: str) -> Problem | None:
    name = version.get("name")
    if version.get("served") is not True:
        return Problem(field=field, message=f"the CRD does not serve version '{name}'")
    if not isinstance(_mapping(version.get("schema")).get("openAPIV3Schema"), Mapping):
        return Problem(field=field, message=f"the CRD's version '{name}' has no schema.openAPIV3Schema to publish")
    return None


def _renamed(
    selected: Sequence[Mapping[str, Any]], *, crd_versions: Sequence[Mapping[str, Any]], projection: Projection
) -> VersionSelection | tuple[Problem, ...]:
    local_names = [str(v.get("name")) for v in selected]
    renames = dict(projection.versions)
    problems: list[Problem] = []
    if projection.version is not None:
        if len(selected) > 1:
            problems.append(
                Problem(
                    field="spec.projection.version",
                    message=f"renames one version, but {len(selected)} are published ({', '.join(local_names)}); "
                    "rename them with spec.projection.versions",
                )
            )
        else:
            renames = {local_names[0]: projection.version}
    problems.extend(
        Problem(
            field=f"{_RENAMES_FIELD}.{name}",
            message=f"the CRD version '{name}' is not published (published: {', '.join(local_names)})",
        )
        for name in sorted(renames)
        if name not in local_names
    )
    published: list[PublishedVersion] = []
    owner: dict[str, str] = {}
    for definition, local in zip(selected, local_names):
        remote = renames.get(local, local)
        if local not in renames and not is_kcp_version(local):
            problems.append(
                Problem(
                    field=_RENAMES_FIELD,
                    message=f"the CRD's version '{local}' is not a version "
                    "name kcp accepts (like v1, v1alpha1 or v2beta3); rename it here",
                )
            )
        if remote in owner:
            problems.append(
                Problem(
                    field=_RENAMES_FIELD,
                    message=f"'{remote}' would name both the CRD's "
                    f"'{owner[remote]}' and '{local}' in kcp; versions in kcp must be unique",
                )
            )
        owner[remote] = local
        published.append(PublishedVersion(local=local, remote=remote, definition=definition))
    if problems:
        return tuple(problems)
    ordered = tuple(sorted(published, key=lambda version: version_priority_key(version.remote)))
    crd_storage = next((str(v.get("name")) for v in crd_versions if v.get("storage") is True), None)
    storage = next((version for version in ordered if version.local == crd_storage), ordered[0])
    return VersionSelection(versions=ordered, storage=storage)


def _names(versions: Sequence[Mapping[str, Any]]) -> str:
    return ", ".join(str(v.get("name")) for v in versions) or "none"


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()
