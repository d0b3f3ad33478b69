"""Reading the version fields of a PublishedResource: `resource.version(s)`, `projection.version(s)`.

Called from `parsing.py`, with its conventions: never raise, report every problem under the
manifest's field path. Each field is checked on its own (types, name syntax, duplicates, the
one-version form and the list form not both set); whether the CRD has these versions and whether
the renamed versions stay unique among all published ones needs the CRD (`published_versions.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core.fields import check_dns1035, describe, is_dns1035, read_string, read_string_list
from servlet.core.model import Problem
from servlet.core.versions import is_kcp_version


def parse_source_versions(
    resource: Mapping[str, Any], *, path: str, problems: list[Problem]
) -> tuple[str | None, tuple[str, ...] | None]:
    """`version` and `versions` of `spec.resource`; at most one of them is returned set."""
    version = read_string(resource, "version", path=path, problems=problems)
    if version is not None:
        check_dns1035(version, field=f"{path}.version", problems=problems)
    versions = read_string_list(resource, "versions", path=path, problems=problems)
    if versions is not None:
        for index, name in enumerate(versions):
            check_dns1035(name, field=f"{path}.versions[{index}]", problems=problems)
        problems.extend(_duplicates(versions, field=f"{path}.versions"))
        if version is not None:
            problems.append(
                Problem(
                    field=f"{path}.versions",
                    message=f"set either version or versions, not both (version is {describe(version)})",
                )
            )
            return version, None
    return version, versions


def parse_projected_versions(
    projection: Mapping[str, Any], *, path: str, problems: list[Problem]
) -> tuple[str | None, dict[str, str]]:
    """`version` and the `versions` renaming map of `spec.projection`."""
    version = read_string(projection, "version", path=path, problems=problems)
    if version is not None:
        check_dns1035(version, field=f"{path}.version", problems=problems)
    data = projection.get("versions")
    field = f"{path}.versions"
    if data is None:
        return version, {}
    if not isinstance(data, Mapping):
        problems.append(
            Problem(field=field, message=f"must be a map from a CRD version to its name in kcp, not {describe(data)}")
        )
        return version, {}
    renames: dict[str, str] = {}
    first_source: dict[str, str] = {}
    for source, target in data.items():
        entry = f"{field}.{source}"
        if not isinstance(source, str) or not is_dns1035(source):
            problems.append(
                Problem(
                    field=entry,
                    message=f"the key {describe(source)} is not a CRD version name: "
                    "use a lower-case DNS-1035 label such as v1",
                )
            )
            continue
        if not isinstance(target, str) or not is_kcp_version(target):
            problems.append(
                Problem(
                    field=entry,
                    message=f"{describe(target)} is not a Kubernetes version name like v1, v1alpha1 or v2beta3",
                )
            )
            continue
        if target in first_source:
            problems.append(
                Problem(
                    field=entry,
                    message=f"{describe(target)} is already the name of "
                    f"{first_source[target]}; versions in kcp must be unique",
                )
            )
            continue
        first_source[target] = source
        renames[source] = target
    if version is not None and data:
        problems.append(
            Problem(field=field, message=f"set either version or versions, not both (version is {describe(version)})")
        )
    return version, renames


def _duplicates(names: tuple[str, ...], *, field: str) -> list[Problem]:
    seen: dict[str, int] = {}
    problems: list[Problem] = []
    for index, name in enumerate(names):
        if name in seen:
            problems.append(
                Problem(field=f"{field}[{index}]", message=f"{describe(name)} is listed twice (also at [{seen[name]}])")
            )
        else:
            seen[name] = index
    return problems
