"""Reading the type of a `spec.related` entry: `group`/`version`/`resource` and `projection`.

Called from `parsing_related.py`, with its conventions: never raise, report every problem under
the manifest's field path.
"""

from __future__ import annotations

from collections.abc import Mapping

from servlet.core.fields import as_mapping, describe, read_string, report_unknown
from servlet.core.model import Problem, RelatedAPI, RelatedKind
from servlet.core.naming import is_dns1123_subdomain

__all__ = ["API_FIELDS", "parse_api", "parse_projection", "projected_api"]

API_FIELDS = ("group", "version", "resource")


def parse_projection(data: object, *, path: str, problems: list[Problem]) -> dict[str, str] | None:
    """`projection`: the group, version or resource the destination side has instead (empty: as the origin)."""
    if data is None:
        return None
    projection = as_mapping(data, path=path, problems=problems)
    if projection is None:
        return None
    report_unknown(projection, path=path, known=API_FIELDS, problems=problems)
    before = len(problems)
    texts = {key: read_string(projection, key, path=path, problems=problems) or "" for key in API_FIELDS}
    for key in ("group", "resource"):
        if texts[key] and not is_dns1123_subdomain(texts[key]):
            problems.append(Problem(field=f"{path}.{key}", message=f"{describe(texts[key])} is not a valid {key} name"))
    if len(problems) > before:
        return None
    if not any(texts.values()):
        problems.append(Problem(field=path, message="sets none of group, version and resource"))
        return None
    return texts


def projected_api(*, kind: RelatedKind | None, api: RelatedAPI | None, projection: dict[str, str]) -> RelatedAPI:
    """The destination type: the projection's fields over the origin type's."""
    origin = api or RelatedAPI(
        group="", version="v1", resource="secrets" if kind is RelatedKind.SECRET else "configmaps"
    )
    return RelatedAPI(
        group=projection.get("group") or origin.group,
        version=projection.get("version") or origin.version,
        resource=projection.get("resource") or origin.resource,
        identity_hash=origin.identity_hash,
    )


def parse_api(related: Mapping[str, object], *, path: str, problems: list[Problem]) -> RelatedAPI | None:
    """`group`/`version`/`resource` (with `identityHash`): the type of any group; None when not used.

    They go together (a version is required: the type must be the same on both sides, so it is
    never left to each side's preferred version), and exclude the `kind` shorthand.
    """
    given = [key for key in (*API_FIELDS, "identityHash") if related.get(key) is not None]
    if not given:
        return None
    before = len(problems)
    texts = {key: read_string(related, key, path=path, problems=problems) for key in given}
    if len(problems) > before:
        return None
    if related.get("kind") is not None:
        problems.append(
            Problem(
                field=f"{path}.kind",
                message=f"cannot be combined with {', '.join(given)}; kind is the shorthand for the core Secret or "
                "ConfigMap, group/version/resource name any type",
            )
        )
        return None
    for key in ("version", "resource"):
        if not texts.get(key):
            problems.append(
                Problem(
                    field=f"{path}.{key}",
                    message="is required with " + ", ".join(given) + " (group, version and resource name the type)",
                )
            )
    for key in ("group", "resource"):
        value = texts.get(key) or ""
        if value and not is_dns1123_subdomain(value):
            problems.append(Problem(field=f"{path}.{key}", message=f"{describe(value)} is not a valid {key} name"))
    if len(problems) > before:
        return None
    return RelatedAPI(
        group=texts.get("group") or "",
        version=texts["version"] or "",
        resource=texts["resource"] or "",
        identity_hash=texts.get("identityHash") or "",
    )
