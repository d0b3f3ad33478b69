"""Reading built-in types from the service cluster: discovery and OpenAPI v3, as CRDs.

For the (group, kind)s PublishedResources name without a CRD, this asks the service cluster
what a CRD would have said: group discovery for the served versions and the preferred one (the
storage version), each version's resource list for plural, scope and subresources, and the
OpenAPI v3 document of each group-version (`/openapi/v3` lists their URLs) for the schema. The
core turns the answers into CRD manifests (`core/builtin_types.py`). GET requests only.

Deliberately not here: deciding which types need describing and when (`app/controllers/builtins.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import httpx2

from servlet.adapters.errors import api_errors
from servlet.core.builtin_types import BuiltinResource, builtin_crds, resources_from_discovery
from servlet.core.errors import NotFound, Operation
from servlet.core.model import Problem

__all__ = ["describe_builtin_types"]


async def describe_builtin_types(
    http: httpx2.AsyncClient, wanted: Iterable[tuple[str, str]]
) -> tuple[tuple[dict[str, Any], ...], tuple[Problem, ...]]:
    """CRD manifests for the (group, kind)s in `wanted` the service cluster serves, and problems.

    A group or kind the server does not serve is left out without a problem: the PublishedResource
    naming it then reports that nothing by that name exists. Failing requests raise `ApiFailure`.
    """
    kinds_by_group: dict[str, set[str]] = {}
    for group, kind in wanted:
        kinds_by_group.setdefault(group, set()).add(kind)
    # Read only once some group is served: a PublishedResource whose CRD is not installed yet
    # asks about a group nobody serves, and costs one discovery request.
    listing: Mapping[str, Any] | None = None
    resources: list[BuiltinResource] = []
    problems: list[Problem] = []
    storage: dict[tuple[str, str], str] = {}
    for group, kinds in sorted(kinds_by_group.items()):
        versions, preferred = await _group_versions(http, group)
        for version in versions:
            key = f"api/{version}" if not group else f"apis/{group}/{version}"
            resource_list = await _get(http, key, what=f"discovery of {group or 'core'}/{version}")
            if listing is None:
                listing = _mapping((await _get(http, "openapi/v3", what="OpenAPI v3 discovery")).get("paths"))
            url = _mapping(listing.get(key)).get("serverRelativeURL")
            if not isinstance(url, str) or not url:
                problems.append(Problem(field=f"/openapi/v3 paths[{key}]", message="is missing on the service cluster"))
                continue
            document = await _get(http, url.lstrip("/"), what=f"the OpenAPI v3 document of {key}")
            found, found_problems = resources_from_discovery(
                resource_list, document, kinds=kinds, source=f"the service cluster's /openapi/v3/{key}"
            )
            resources.extend(found)
            problems.extend(found_problems)
        for kind in kinds:
            if preferred:
                storage[(group, kind)] = preferred
    return builtin_crds(resources, storage_versions=storage), tuple(problems)


async def _group_versions(http: httpx2.AsyncClient, group: str) -> tuple[list[str], str]:
    """The versions a group serves and the one the server prefers; none when it is not served."""
    if not group:
        versions = [str(v) for v in _list(_mapping(await _get(http, "api", what="core discovery")).get("versions"))]
        return versions, versions[0] if versions else ""
    try:
        answer = await _get(http, f"apis/{group}", what=f"discovery of group {group}")
    except NotFound:
        return [], ""
    versions = [str(_mapping(v).get("version") or "") for v in _list(answer.get("versions"))]
    preferred = str(_mapping(answer.get("preferredVersion")).get("version") or "")
    return [v for v in versions if v], preferred


async def _get(http: httpx2.AsyncClient, path: str, *, what: str) -> Mapping[str, Any]:
    async with api_errors(Operation(verb="get", resource=what)):
        response = await http.get(path, headers={"Accept": "application/json"})
        response.raise_for_status()
    body = response.json()
    return body if isinstance(body, Mapping) else {}


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []
