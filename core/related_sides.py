"""Which type a related entry has on each side, and the content its destination gets (SPEC 8).

A related object is born on its origin side (`origin`: the service cluster or the workspace) in
the entry's type, and copied to the other side in the type `projection` names, the origin type
where it names nothing. Between a ConfigMap and a Secret the data is carried over as such a
type holds it: a ConfigMap's text becomes base64 in a Secret, a Secret's values become text in a
ConfigMap (or `binaryData` where they are not UTF-8). Other types are copied field by field.

Deliberately not here: resolving types (`related_types.py`), planning (`related.py`).
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from typing import Any

from servlet.core import patch
from servlet.core.actions import ObjectRef, PatchRemoteStatus, Side
from servlet.core.model import Origin, Problem, RelatedResource, ResourceType
from servlet.core.related_objects import related_content
from servlet.core.targets import CONFIGMAP_TYPE, SECRET_TYPE, related_type


def origin_side(item: RelatedResource) -> Side:
    return Side.LOCAL if item.origin is Origin.SERVICE else Side.REMOTE


def type_on(item: RelatedResource, side: Side) -> ResourceType:
    """The resolved type of a related entry on one side; callers plan only resolved entries."""
    resource = related_type(item)
    if side is not origin_side(item) and item.projection is not None:
        resource = item.resolved_projection
    if resource is None:
        raise ValueError(f"related entry {item.identifier!r} has no resolved type")
    return resource


def type_problem(item: RelatedResource, *, index: int) -> Problem | None:
    """Why objects of a related entry cannot be synced, None when its types can be.

    Types are resolved against the service cluster (`resolution.py`); one not served there (yet)
    is reported for each primary and synced as soon as it is. Related objects are namespaced.
    """
    checks = [("resource", related_type(item), item.api)]
    if item.projection is not None:
        checks.append(("projection", item.resolved_projection, item.projection))
    for field, resource, api in checks:
        if resource is None:
            where = "" if api is None else f"{api.resource} in group {api.group!r}, version {api.version!r}, "
            return Problem(
                field=f"spec.related[{index}].{field}",
                message=f"{where}is not served on the service cluster; related object {item.identifier!r} is not synced",
            )
        if not resource.namespaced:
            return Problem(
                field=f"spec.related[{index}].{field}",
                message=f"{resource.plural} are cluster-scoped; related objects must be namespaced",
            )
    return None


def desired_content(item: RelatedResource, source: Mapping[str, Any]) -> dict[str, Any]:
    """What the destination copy of `source` (the origin object) must contain."""
    origin = type_on(item, origin_side(item))
    destination = type_on(item, Side.REMOTE if origin_side(item) is Side.LOCAL else Side.LOCAL)
    content = related_content(source, origin)
    # Origin platform: the status goes the other way (`related_platform.py`), never into the copy's content.
    from_origin = item.sync_status and item.origin is Origin.SERVICE
    if from_origin and not item.status_subresource and source.get("status") is not None:
        content["status"] = source["status"]  # an ordinary field of a type without status subresource
    if (origin, destination) == (CONFIGMAP_TYPE, SECRET_TYPE):
        return _configmap_to_secret(content)
    if (origin, destination) == (SECRET_TYPE, CONFIGMAP_TYPE):
        return _secret_to_configmap(content)
    return content


def _configmap_to_secret(content: Mapping[str, Any]) -> dict[str, Any]:
    data: dict[str, str] = {}
    for key, value in _strings(content.get("data")).items():
        data[key] = base64.b64encode(value.encode()).decode()
    data.update(_strings(content.get("binaryData")))  # base64 already
    return _with_metadata(content, {"data": data} if data else {})


def _secret_to_configmap(content: Mapping[str, Any]) -> dict[str, Any]:
    text: dict[str, str] = {}
    binary: dict[str, str] = {}
    for key, value in _strings(content.get("data")).items():
        try:
            text[key] = base64.b64decode(value, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            binary[key] = value
    converted: dict[str, Any] = {}
    if text:
        converted["data"] = text
    if binary:
        converted["binaryData"] = binary
    return _with_metadata(content, converted)


def _strings(value: object) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(key): item for key, item in value.items() if isinstance(item, str)}


def _with_metadata(content: Mapping[str, Any], converted: dict[str, Any]) -> dict[str, Any]:
    if "metadata" in content:
        converted["metadata"] = content["metadata"]
    return converted


def watched_types(item: RelatedResource) -> list[tuple[Side, ResourceType]]:
    """The (side, type) pairs whose objects a related entry reads; none while a type is unresolved."""
    if type_problem(item, index=0) is not None:
        return []
    return [(side, type_on(item, side)) for side in (Side.LOCAL, Side.REMOTE)]


def status_update(
    item: RelatedResource, *, source: Mapping[str, Any], live: Mapping[str, Any], target: ObjectRef
) -> PatchRemoteStatus | None:
    """The workspace copy's status made equal to its origin's (`syncStatus`), through the status
    subresource; None when not asked for, not needed, or written with the content instead."""
    if not item.sync_status or not item.status_subresource:
        return None
    wanted, current = source.get("status"), live.get("status")
    if wanted is None or not patch.statuses_differ(wanted, current):
        return None
    if isinstance(wanted, Mapping) and isinstance(current, Mapping):
        # As for primaries: fields only the copy has are removed, so the copy equals its origin.
        status_patch: dict[str, Any] = {
            "status": patch.three_way_patch(last_known=current, desired=wanted, live=current)
        }
    else:
        status_patch = {"status": wanted}
    return PatchRemoteStatus(target=target, status=wanted, patch=status_patch)
