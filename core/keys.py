"""Reading an object's coordinates and metadata defensively: the few helpers every planner shares.

Objects are plain JSON maps that a tenant or another writer may have shaped oddly; these helpers
never raise, and give "" or {} where a field is missing or of the wrong type.

Deliberately not here: any decision about what the values mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core.json_values import is_mapping
from servlet.core.model import LocalKey, RemoteKey

# Where kcp names the logical cluster (workspace) an object lives in; defined here only.
CLUSTER_ANNOTATION = "kcp.io/cluster"


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if is_mapping(value) else {}


def string(value: object) -> str:
    return value if isinstance(value, str) else ""


def string_map(value: object) -> dict[str, str]:
    if not is_mapping(value):
        return {}
    return {key: item for key, item in value.items() if isinstance(key, str) and isinstance(item, str)}


def remote_key_of(remote: Mapping[str, Any]) -> RemoteKey:
    """Where a remote object lives; the cluster is "" when kcp's cluster annotation is missing."""
    return remote_key_of_metadata(metadata_of(remote))


def remote_key_of_metadata(meta: Mapping[str, Any]) -> RemoteKey:
    annotations = meta.get("annotations")
    cluster = string(annotations.get(CLUSTER_ANNOTATION) if is_mapping(annotations) else None)
    namespace, name = string(meta.get("namespace")), string(meta.get("name"))
    return RemoteKey(cluster, namespace, name)  # positional: a class called with keywords costs a dict per call


def local_key_of(local: Mapping[str, Any]) -> LocalKey:
    meta = metadata_of(local)
    return LocalKey(namespace=string(meta.get("namespace")), name=string(meta.get("name")))


def finalizers_of(meta: Mapping[str, Any]) -> tuple[str, ...]:
    value = meta.get("finalizers")
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(metadata_of(obj).get("deletionTimestamp"))


def uid_of(obj: Mapping[str, Any] | None) -> str:
    return "" if obj is None else string(metadata_of(obj).get("uid"))


def guarded(patch: dict[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """`patch` with the uid of the object it was planned against: a precondition.

    A merge patch carrying `metadata.uid` fails (409) on an object with another uid, so a plan
    made from a stale cache never writes into an object that replaced the one it read, such as
    a foreign object created at the name of a copy that was just deleted. Unchanged when the
    object read has no uid (offline inputs).
    """
    uid = metadata_of(live).get("uid")
    if not isinstance(uid, str) or not uid:
        return patch
    meta = patch.get("metadata")
    return {**patch, "metadata": {**(meta if is_mapping(meta) else {}), "uid": uid}}
