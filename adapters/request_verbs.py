"""The Kubernetes verb of an HTTP request, for counting requests by verb.

Deliberately not here: the counting itself (the connections' shared transport).
"""

from __future__ import annotations

from urllib.parse import parse_qs


def request_verb(method: str, path: str, query: str) -> str:
    """The Kubernetes verb of a request (get, list, watch, create, update, patch, delete,
    deletecollection), or `discovery` for API discovery paths."""
    method = method.upper()
    if method == "GET" and parse_qs(query).get("watch", [""])[0] in ("true", "1"):
        return "watch"
    rest = _after_group_version(path)
    if rest is None:
        return "discovery" if method == "GET" else method.lower()
    collection = len(rest) <= 1
    if method == "GET":
        return "list" if collection else "get"
    if method == "DELETE":
        return "deletecollection" if collection else "delete"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def _after_group_version(path: str) -> list[str] | None:
    """The segments after `api/v1` or `apis/<g>/<v>`, namespace prefix removed; None for discovery.

    Whatever comes before the API path is skipped: a proxy prefix, the VW's
    `services/apiexport/<lc>/<export>` and `clusters/<name>`."""
    segments = [segment for segment in path.split("/") if segment]
    index = 0
    while index < len(segments) and segments[index] not in ("api", "apis"):
        if segments[index] == "services" and segments[index + 1 : index + 2] == ["apiexport"]:
            index += 4
        elif segments[index] == "clusters":
            index += 2
        else:
            index += 1
    segments = segments[index:]
    if len(segments) > 2 and segments[0] == "api":
        rest = segments[2:]
    elif len(segments) > 3 and segments[0] == "apis":
        rest = segments[3:]
    else:
        return None
    if rest[0] == "namespaces" and len(rest) >= 3:
        rest = rest[2:]
    return rest
