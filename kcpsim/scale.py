"""The scale subresource of custom resources whose CRD version declares `subresources.scale`.

`GET .../widgets/NAME/scale` answers an `autoscaling/v1` Scale read from the object through the
CRD's `specReplicasPath`, `statusReplicasPath` and `labelSelectorPath`, as apiextensions-apiserver
builds it; `PUT` (a Scale) and `PATCH` (merge, JSON or strategic patch of the Scale) write
`spec.replicas` back to `specReplicasPath` of the object, an update of the object recorded under
the subresource `scale`. A Scale's `resourceVersion` is its object's, so a stale one conflicts.
"""

from __future__ import annotations

from typing import Any

from kcpsim import errors
from kcpsim.patching import clone, json_patch, merge_patch
from kcpsim.resources import ResourceDef
from kcpsim.store import Obj
from kcpsim.strategic import strategic_merge_patch
from kcpsim.world import World

__all__ = ["answer"]


def _path(jsonpath: str) -> list[str]:
    return [part for part in str(jsonpath or "").strip().lstrip(".").split(".") if part]


def _read(obj: Any, jsonpath: str) -> Any:
    for part in _path(jsonpath):
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _write(obj: Obj, jsonpath: str, value: Any) -> None:
    *parents, last = _path(jsonpath)
    for part in parents:
        child = obj.get(part)
        if not isinstance(child, dict):
            child = obj[part] = {}
        obj = child
    obj[last] = value


def scale_of(obj: Obj, scale: dict[str, Any]) -> Obj:
    """The Scale apiextensions-apiserver makes of `obj`: replicas missing read as 0."""
    meta = obj.get("metadata") or {}
    spec_replicas = _read(obj, scale.get("specReplicasPath", ""))
    status_replicas = _read(obj, scale.get("statusReplicasPath", ""))
    status: dict[str, Any] = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
    selector = _read(obj, scale["labelSelectorPath"]) if scale.get("labelSelectorPath") else None
    if isinstance(selector, str) and selector:
        status["selector"] = selector
    replicas = spec_replicas if isinstance(spec_replicas, int) else 0
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            key: meta[key]
            for key in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if meta.get(key) is not None
        },
        "spec": {"replicas": replicas} if replicas else {},  # `replicas` is omitted when 0, as Go's omitempty does
        "status": status,
    }


def answer(
    world: World,
    rdef: ResourceDef,
    cluster: str,
    namespace: str,
    name: str,
    *,
    version: str,
    verb: str,
    body: Any,
    patch_type: str | None,
    manager: str,
    dry_run: bool,
) -> Obj:
    """The Scale a get, update or patch of the scale subresource answers."""
    scale = rdef.scale_for(version)
    if not isinstance(scale, dict):
        raise errors.resource_not_served()
    current = world.render(rdef, world.get(rdef, cluster, namespace, name), version)
    if verb == "get":
        return scale_of(current, scale)
    if verb == "patch":
        body = _patched(scale_of(current, scale), body, patch_type)
    elif verb != "update":
        raise errors.method_not_allowed()
    replicas = _replicas(body, name)
    updated = clone(current)
    _write(updated, scale.get("specReplicasPath", ".spec.replicas"), replicas)
    wanted = (body.get("metadata") or {}).get("resourceVersion")
    if wanted:
        updated["metadata"]["resourceVersion"] = wanted
    stored = world.update(
        rdef, cluster, namespace, name, updated, version=version, manager=manager, subresource="scale", dry_run=dry_run
    )
    return scale_of(world.render(rdef, stored, version), scale)


def _patched(scale: Obj, patch: Any, patch_type: str | None) -> Any:
    if patch_type == "merge":
        return merge_patch(scale, patch)
    if patch_type == "json":
        return json_patch(scale, patch)
    if patch_type == "strategic":  # Scale has no lists: a strategic merge is a merge here
        return strategic_merge_patch(scale, patch, group="autoscaling", kind="Scale")
    raise errors.unsupported_media_type(str(patch_type))


def _replicas(body: Any, name: str) -> int:
    if not isinstance(body, dict):
        raise errors.bad_request("the body of the request must be a JSON object")
    replicas = (body.get("spec") or {}).get("replicas", 0)
    if isinstance(replicas, bool) or not isinstance(replicas, int):
        raise errors.bad_request(
            f'Scale in version "v1" cannot be handled as a Scale: spec.replicas must be an integer, not {replicas!r}'
        )
    if replicas < 0:
        raise errors.invalid(
            group="autoscaling",
            kind="Scale",
            name=name,
            causes=[("spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0")],
        )
    return replicas
