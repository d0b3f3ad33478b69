"""The actions and reports the related planner (`related.py`) builds, spelled once.

Targets on either side, records on the local primary (with the annotation size limit checked
before anything is written), skeletons of new copies, the destination namespace when missing, and
the Errors for objects that could not be read or whose absence is not confirmed: each names the
object, the related entry and what is kept.

Deliberately not here: deciding which of them a plan needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core import metadata, patch
from servlet.core.actions import Action, CreateNamespace, Error, ObjectRef, RecordRelatedState, Side
from servlet.core.keys import guarded
from servlet.core.model import RelatedResource, ResourceType
from servlet.core.related_objects import (
    Coordinates,
    PlatformState,
    Primaries,
    RelatedKey,
    RelatedSnapshot,
    ServiceState,
    metadata_of,
    namespace_of,
)
from servlet.core.targets import NAMESPACE_TYPE


def with_record(
    primaries: Primaries,
    identifier: str,
    actions: list[Action],
    *,
    before: PlatformState | None,
    after: PlatformState | None,
) -> list[Action]:
    """`actions`, then the platform-origin record's change from `before` to `after`, if any."""
    if after == before:
        return actions
    return [*actions, record_state(primaries, identifier, after)]


def record_state(
    primaries: Primaries, identifier: str, state: ServiceState | PlatformState | None
) -> RecordRelatedState | Error:
    key = metadata.related_state_annotation(identifier)
    value = None if state is None else patch.encode_state(state.to_dict())
    if value is not None:
        current = metadata_of(primaries.local).get("annotations")
        after = {**(current if isinstance(current, Mapping) else {}), key: value}
        if patch.annotations_size(after) > patch.ANNOTATIONS_LIMIT:
            return Error(
                target=primaries.local_ref,
                identifier=identifier,
                reason=f"the sync state of related object {identifier!r} would push the annotations of the "
                f"local object past the API limit of {patch.ANNOTATIONS_LIMIT} bytes; the related object is too "
                "large to sync",
            )
    return RecordRelatedState(
        identifier=identifier,
        target=primaries.local_ref,
        patch=guarded({"metadata": {"annotations": {key: value}}}, primaries.local),
    )


def unreadable_error(primaries: Primaries, item: RelatedResource, key: RelatedKey) -> Error:
    where = key_ref(primaries, key)
    hint = (
        f" (has the workspace accepted the permission claim for {where.resource.plural}?)"
        if key.side is Side.REMOTE
        else ""
    )
    return Error(
        target=where,
        identifier=item.identifier,
        reason=f"cannot read {describe_key(primaries, key)} of related object {item.identifier!r}{hint}; "
        "its copies are kept and nothing of it is synced until it can be read",
    )


def unconfirmed_error(primaries: Primaries, item: RelatedResource, origin: RelatedKey, *, copy: RelatedKey) -> Error:
    return Error(
        target=key_ref(primaries, origin),
        identifier=item.identifier,
        reason=f"{describe_key(primaries, origin)}, origin of related object {item.identifier!r}, was not "
        f"found, but its absence is not confirmed yet; its copy {describe_key(primaries, copy)} is kept "
        "until it is",
    )


def ref(primaries: Primaries, side: Side, resource: ResourceType, coordinates: Coordinates) -> ObjectRef:
    return ObjectRef(
        side=side,
        resource=resource,
        namespace=coordinates.namespace,
        name=coordinates.name,
        cluster=primaries.remote_key.cluster if side is Side.REMOTE else "",
    )


def key_ref(primaries: Primaries, key: RelatedKey) -> ObjectRef:
    return ref(primaries, key.side, key.resource, Coordinates(key.namespace, key.name))


def skeleton(
    resource: ResourceType,
    coordinates: Coordinates,
    *,
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": coordinates.name, "namespace": coordinates.namespace}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": resource.api_version, "kind": resource.kind, "metadata": meta}


def ensure_namespace(primaries: Primaries, snapshot: RelatedSnapshot, side: Side, namespace: str) -> list[Action]:
    # The primary's own namespace exists on its side by definition; no read is needed for it.
    primary = primaries.remote if side is Side.REMOTE else primaries.local
    if namespace == namespace_of(primary) or snapshot.has_namespace(side, namespace):
        return []
    cluster = primaries.remote_key.cluster if side is Side.REMOTE else ""
    return [
        CreateNamespace(
            target=ObjectRef(side=side, resource=NAMESPACE_TYPE, namespace="", name=namespace, cluster=cluster)
        )
    ]


def describe(side: Side, resource: ResourceType, coordinates: Coordinates, *, cluster: str = "") -> str:
    where = f"workspace {cluster} " if side is Side.REMOTE and cluster else ""
    return f"{where}{resource.kind} {coordinates.namespace}/{coordinates.name}"


def describe_key(primaries: Primaries, key: RelatedKey) -> str:
    side = "" if key.side is Side.REMOTE else "local "
    return side + describe(
        key.side, key.resource, Coordinates(key.namespace, key.name), cluster=primaries.remote_key.cluster
    )
