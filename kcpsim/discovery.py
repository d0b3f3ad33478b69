"""Legacy discovery documents (`/api`, `/api/v1`, `/apis`, `/apis/<g>`, `/apis/<g>/<v>`).

Built from a list of served `ResourceDef`s; aggregated discovery is not offered, so clients fall
back to these (kcp's virtual workspace behaves the same way as far as we know).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kcpsim.resources import ResourceDef

_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]


def api_versions() -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "apiVersion": "v1",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}],
    }


def _group_entry(group: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{group}/{v}", "version": v} for v in versions]
    return {"name": group, "versions": listed, "preferredVersion": listed[0]}


def _versions_by_group(served: Iterable[ResourceDef]) -> dict[str, list[str]]:
    groups: dict[str, list[str]] = {}
    for rdef in served:
        if rdef.group == "":
            continue
        known = groups.setdefault(rdef.group, [])
        for version in rdef.versions:
            if version not in known:
                known.append(version)
    for versions in groups.values():
        versions.sort(key=_version_priority)
    return groups


def _version_priority(version: str) -> tuple[int, int, int]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first."""
    import re

    match = re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", version)
    if not match:
        return (3, 0, 0)
    major, stage, minor = int(match[1]), match[2], int(match[3] or 0)
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -major, -minor)


def api_group_list(served: Iterable[ResourceDef]) -> dict[str, Any]:
    groups = _versions_by_group(served)
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_entry(g, vs) for g, vs in sorted(groups.items())],
    }


def api_group(served: Iterable[ResourceDef], group: str) -> dict[str, Any] | None:
    versions = _versions_by_group(served).get(group)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(group, versions)}


def resource_list(
    served: Iterable[ResourceDef], group: str, version: str, *, verbs_for: Any = None
) -> dict[str, Any] | None:
    resources: list[dict[str, Any]] = []
    for rdef in served:
        if rdef.group != group or version not in rdef.versions:
            continue
        verbs = list(rdef.verbs) if rdef.verbs else verbs_for(rdef) if verbs_for else _VERBS
        entry: dict[str, Any] = {
            "name": rdef.plural,
            "singularName": rdef.singular,
            "namespaced": rdef.namespaced,
            "kind": rdef.kind,
            "verbs": verbs,
        }
        if rdef.short_names:
            entry["shortNames"] = list(rdef.short_names)
        if rdef.categories:
            entry["categories"] = list(rdef.categories)
        resources.append(entry)
        if rdef.status:
            resources.append(
                {
                    "name": f"{rdef.plural}/status",
                    "singularName": "",
                    "namespaced": rdef.namespaced,
                    "kind": rdef.kind,
                    "verbs": ["get", "patch", "update"],
                }
            )
        if rdef.scale_for(version) is not None:
            resources.append(
                {
                    "name": f"{rdef.plural}/scale",
                    "singularName": "",
                    "namespaced": rdef.namespaced,
                    "group": "autoscaling",
                    "version": "v1",
                    "kind": "Scale",
                    "verbs": ["get", "patch", "update"],
                }
            )
    if not resources:
        return None
    group_version = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}
