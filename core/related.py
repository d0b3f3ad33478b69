"""Related Secrets and ConfigMaps of one primary object: where they live and how they sync (SPEC 8).

A related object is named by a path into the primary, evaluated separately on the remote and on
the local primary, so each side finds its own name even when the service rewrote the field. Its
origin decides the direction: `service` objects flow up into the workspace, `platform` objects
flow down. The content (`data`, plus `type` or `binaryData`, plus copyable labels/annotations) is
synced with the same three-way rule as primaries. The sync state always stays on the service
cluster: a workspace copy carries nothing of the servlet.

- service origin: the state lives in the annotation `related_state_annotation(identifier)` on
  the local primary and records where the copy is, whether the servlet created it and the content
  last synced (Secret values left out). Only a copy the servlet created is ever deleted. A
  workspace object already at the name the tenant put into the primary is synced into but marked
  as not created (the tenant chose that name; a copy whose state was lost looks the same). The
  state is written before a create, so a created copy is never mistaken for such an object.
- platform origin: the local copy carries link metadata naming its remote origin object plus its
  own last-known-state; a local object in the way without that link is a conflict.

Deliberately not here: reading any cluster. The caller asks `related_reads` which objects and
namespaces to fetch and passes what it found as a `RelatedSnapshot`; absent from the snapshot
means "does not exist". A path that does not resolve (yet) is not an error: the related object is
simply pending until the field is filled in.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from attrs import field, frozen
from jsonpath_ng.jsonpath import JSONPath
from jsonpath_ng.parser import parse

from servlet.core import metadata, naming, patch, rewrite
from servlet.core.actions import (
    NAMESPACE_TYPE,
    Action,
    Conflict,
    CreateNamespace,
    CreateRelated,
    DeleteRelated,
    Error,
    ObjectRef,
    PatchRelated,
    RecordRelatedState,
    Side,
    related_resource_type,
)
from servlet.core.model import Origin, Problem, RelatedKind, RelatedResource, RemoteKey, ValueReference


@frozen
class Coordinates:
    """Where a related object lives on one side (related objects are always namespaced)."""

    namespace: str
    name: str


@frozen
class Resolved:
    """Both sides' coordinates of one related object; None on a side not resolvable yet."""

    remote: Coordinates | None
    local: Coordinates | None


@frozen
class RelatedKey:
    """One related object the planner may look at: side, kind and coordinates."""

    side: Side
    kind: RelatedKind
    namespace: str
    name: str


def _read_only(value: Mapping[RelatedKey, Mapping[str, Any]]) -> Mapping[RelatedKey, Mapping[str, Any]]:
    return MappingProxyType(dict(value))


@frozen
class RelatedSnapshot:
    """What exists of the related objects and destination namespaces, as the caller read it.

    The remote side is the remote primary's workspace. Anything not listed does not exist.
    """

    objects: Mapping[RelatedKey, Mapping[str, Any]] = field(factory=dict, converter=_read_only)
    namespaces: frozenset[tuple[Side, str]] = frozenset()

    def get(self, side: Side, kind: RelatedKind, coordinates: Coordinates) -> Mapping[str, Any] | None:
        return self.objects.get(RelatedKey(side, kind, coordinates.namespace, coordinates.name))

    def has_namespace(self, side: Side, name: str) -> bool:
        return (side, name) in self.namespaces


@frozen
class RelatedReads:
    """What the caller must fetch to build a complete `RelatedSnapshot` for one primary."""

    objects: tuple[RelatedKey, ...]
    namespaces: tuple[tuple[Side, str], ...]


@frozen
class Primaries:
    """The pair of primary objects the related objects hang off, with what a plan needs of them."""

    servlet_name: str
    remote_key: RemoteKey
    remote: Mapping[str, Any]
    local: Mapping[str, Any]
    local_ref: ObjectRef


@frozen
class ServiceState:
    """The related-state annotation of a service-origin object: where its workspace copy is,
    whether the servlet created it (only then may it delete it) and the content last synced."""

    namespace: str
    name: str
    created: bool
    content: dict[str, Any]

    @property
    def coordinates(self) -> Coordinates:
        return Coordinates(self.namespace, self.name)

    def to_dict(self) -> dict[str, Any]:
        return {"namespace": self.namespace, "name": self.name, "created": self.created, "content": self.content}


# --- coordinates -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _compiled(path: str) -> JSONPath:
    return parse(path)


def resolve_value(reference: ValueReference, obj: Mapping[str, Any], *, field_path: str) -> str | None | Problem:
    """The reference's value in `obj`: first match of the path, rewritten by the regex rule.

    None when the path matches nothing or a non-string (not resolvable yet); a Problem only for
    a path or regex that can never work.
    """
    try:
        matches = _compiled(reference.path).find(obj)
    except Exception as error:  # jsonpath_ng raises several unrelated types for bad input
        return Problem(field=f"{field_path}.path", message=f"{reference.path!r} is not a valid JSONPath: {error}")
    if not matches or not isinstance(matches[0].value, str):
        return None
    value: str = matches[0].value
    rule = reference.regex
    if rule is None:
        return value
    if not rule.pattern:
        # The documented way to inject a constant: any resolvable value, an empty pattern.
        return rule.replacement
    # RE2, linear in the value: the pattern is the service owner's, the value the tenant's.
    return rewrite.rewrite(rule, value, field=f"{field_path}.regex")


def _namespace_of(obj: Mapping[str, Any]) -> str:
    value = _metadata(obj).get("namespace")
    return value if isinstance(value, str) else ""


def resolve_side(
    related: RelatedResource, *, index: int, primary: Mapping[str, Any], side: Side
) -> Coordinates | None | Problem:
    """Coordinates of a related object on one side, evaluated on that side's primary."""
    base = f"spec.related[{index}].reference"
    name = resolve_value(related.reference.name, primary, field_path=f"{base}.name")
    if isinstance(name, Problem):
        return name
    namespace: str | None | Problem
    if related.reference.namespace is not None:
        namespace = resolve_value(related.reference.namespace, primary, field_path=f"{base}.namespace")
    else:
        namespace = _namespace_of(primary)
        if not namespace:
            return Problem(
                field=f"{base}.namespace",
                message=f"the {side.value} primary object is cluster-scoped, so the related {related.kind.value} "
                f"{related.identifier!r} needs a namespace reference",
            )
    if isinstance(namespace, Problem):
        return namespace
    if name is None or namespace is None:
        return None
    if not naming.is_dns1123_label(namespace):
        return Problem(field=f"{base}.namespace",
                       message=f"yields {namespace!r} on the {side.value} side, which is not a DNS-1123 label")
    if not naming.is_dns1123_subdomain(name):
        return Problem(field=f"{base}.name",
                       message=f"yields {name!r} on the {side.value} side, which is not a DNS-1123 subdomain")
    return Coordinates(namespace=namespace, name=name)


def resolve(
    related: RelatedResource, *, index: int, remote: Mapping[str, Any], local: Mapping[str, Any] | None
) -> Resolved | Problem:
    """Both sides' coordinates; the local side stays None while there is no local primary."""
    remote_side = resolve_side(related, index=index, primary=remote, side=Side.REMOTE)
    if isinstance(remote_side, Problem):
        return remote_side
    local_side = None if local is None else resolve_side(related, index=index, primary=local, side=Side.LOCAL)
    if isinstance(local_side, Problem):
        return local_side
    return Resolved(remote=remote_side, local=local_side)


# --- content and state -------------------------------------------------------------------------


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def _is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(_metadata(obj).get("deletionTimestamp"))


_SYNCED_FIELDS = {RelatedKind.SECRET: ("data", "type"), RelatedKind.CONFIGMAP: ("data", "binaryData")}


def related_content(obj: Mapping[str, Any], kind: RelatedKind) -> dict[str, Any]:
    """The part of a related object that is synced: its data fields and copyable labels/annotations."""
    content: dict[str, Any] = {key: obj[key] for key in _SYNCED_FIELDS[kind] if obj.get(key) is not None}
    meta = _metadata(obj)
    copied: dict[str, Any] = {}
    for key in ("labels", "annotations"):
        values = metadata.copyable(meta.get(key))
        if values:
            copied[key] = values
    if copied:
        content["metadata"] = copied
    return content


def read_service_state(local: Mapping[str, Any], identifier: str) -> ServiceState | None:
    """The related-state annotation on the local primary, or None when absent or unreadable."""
    annotations = _metadata(local).get("annotations")
    text = annotations.get(metadata.related_state_annotation(identifier)) if isinstance(annotations, Mapping) else None
    decoded = patch.decode_state(text if isinstance(text, str) else None)
    if decoded is None:
        return None
    namespace, name, created, content = (decoded.get(key) for key in ("namespace", "name", "created", "content"))
    if not (isinstance(namespace, str) and isinstance(name, str) and isinstance(created, bool)
            and isinstance(content, dict)):
        return None
    return ServiceState(namespace=namespace, name=name, created=created, content=content)


def state_content(content: Mapping[str, Any], kind: RelatedKind) -> dict[str, Any]:
    """The content as remembered in the related-state annotation on the local primary.

    The three-way rule reads only the keys of the remembered content (a key the servlet wrote
    and the origin dropped is removed), never its values. So Secret values are left out: the
    primary is readable by far more people than the Secret, and must not leak it.
    """
    remembered = dict(content)
    data = content.get("data")
    if kind is RelatedKind.SECRET and isinstance(data, Mapping):
        remembered["data"] = {key: "" for key in data}
    return remembered


def _record_state(
    primaries: Primaries, identifier: str, state: ServiceState | None
) -> RecordRelatedState | Error:
    key = metadata.related_state_annotation(identifier)
    value = None if state is None else patch.encode_state(state.to_dict())
    if value is not None:
        current = _metadata(primaries.local).get("annotations")
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
        identifier=identifier, target=primaries.local_ref, patch={"metadata": {"annotations": {key: value}}}
    )


def _ref(primaries: Primaries, side: Side, kind: RelatedKind, coordinates: Coordinates) -> ObjectRef:
    return ObjectRef(
        side=side,
        resource=related_resource_type(kind),
        namespace=coordinates.namespace,
        name=coordinates.name,
        cluster=primaries.remote_key.cluster if side is Side.REMOTE else "",
    )


def _skeleton(kind: RelatedKind, coordinates: Coordinates, *, labels: Mapping[str, str] | None = None,
              annotations: Mapping[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": coordinates.name, "namespace": coordinates.namespace}
    if labels:
        meta["labels"] = dict(labels)
    if annotations:
        meta["annotations"] = dict(annotations)
    return {"apiVersion": "v1", "kind": kind.value, "metadata": meta}


def _ensure_namespace(primaries: Primaries, snapshot: RelatedSnapshot, side: Side, namespace: str) -> list[Action]:
    # The primary's own namespace exists on its side by definition; no read is needed for it.
    primary = primaries.remote if side is Side.REMOTE else primaries.local
    if namespace == _namespace_of(primary) or snapshot.has_namespace(side, namespace):
        return []
    cluster = primaries.remote_key.cluster if side is Side.REMOTE else ""
    return [CreateNamespace(target=ObjectRef(side=side, resource=NAMESPACE_TYPE, namespace="", name=namespace,
                                             cluster=cluster))]


def _describe(side: Side, kind: RelatedKind, coordinates: Coordinates, *, cluster: str = "") -> str:
    where = f"workspace {cluster} " if side is Side.REMOTE and cluster else ""
    return f"{where}{kind.value} {coordinates.namespace}/{coordinates.name}"


# --- planning ----------------------------------------------------------------------------------


def plan_related(
    *, primaries: Primaries, related: Iterable[RelatedResource], snapshot: RelatedSnapshot
) -> tuple[Action, ...]:
    """The actions that bring every related object of a live primary pair in sync, in order."""
    actions: list[Action] = []
    for index, item in enumerate(related):
        resolved = resolve(item, index=index, remote=primaries.remote, local=primaries.local)
        if isinstance(resolved, Problem):
            actions.append(Error.of(resolved, identifier=item.identifier))
        elif item.origin is Origin.SERVICE:
            actions.extend(_plan_service_origin(primaries, item, resolved, snapshot))
        else:
            actions.extend(_plan_platform_origin(primaries, item, resolved, snapshot))
    return tuple(actions)


def _plan_service_origin(
    primaries: Primaries, item: RelatedResource, resolved: Resolved, snapshot: RelatedSnapshot
) -> list[Action]:
    state = read_service_state(primaries.local, item.identifier)
    if resolved.local is None:
        return []
    source = snapshot.get(Side.LOCAL, item.kind, resolved.local)
    actions: list[Action] = []

    if source is None:
        # The origin disappeared (state proves it existed) or was never born (no state).
        if state is not None:
            actions.extend(_delete_recorded_copy(primaries, item, state, snapshot))
            actions.append(_record_state(primaries, item.identifier, None))
        return actions

    if resolved.remote is None:
        return []
    destination = resolved.remote
    same_place = state is not None and state.coordinates == destination
    if state is not None and not same_place:
        # The workspace primary now names another object: the old copy, if ours, goes away.
        actions.extend(_delete_recorded_copy(primaries, item, state, snapshot))

    desired = related_content(source, item.kind)
    live = snapshot.get(Side.REMOTE, item.kind, destination)
    target = _ref(primaries, Side.REMOTE, item.kind, destination)
    if live is None:
        first_state = _record_state(
            primaries, item.identifier,
            ServiceState(destination.namespace, destination.name, created=True,
                         content=state_content(desired, item.kind)),
        )
        if isinstance(first_state, Error):
            return [first_state]
        # State first: should the create succeed but the state write fail, the copy would
        # otherwise look adopted and never be cleaned up.
        actions.extend(_ensure_namespace(primaries, snapshot, Side.REMOTE, destination.namespace))
        actions.append(first_state)
        actions.append(CreateRelated(identifier=item.identifier, target=target,
                                     object=patch.apply_merge_patch(_skeleton(item.kind, destination), desired)))
        return actions

    # A workspace object at the name the tenant chose is synced into (the tenant asked for it
    # there), but remembered as not created by us, so it is never deleted.
    last_known = state.content if same_place and state is not None else None
    created = state.created if same_place and state is not None else False
    new_state = ServiceState(destination.namespace, destination.name, created=created,
                             content=state_content(desired, item.kind))
    record: RecordRelatedState | Error | None = None
    if new_state != state:
        record = _record_state(primaries, item.identifier, new_state)
    if isinstance(record, Error):
        return [record]
    content_change = patch.three_way_patch(last_known=last_known, desired=desired, live=live)
    if content_change:
        actions.append(PatchRelated(identifier=item.identifier, target=target, patch=content_change))
    # State after the write: a lost state write only repeats a harmless patch, while a state
    # written ahead of a failed patch would forget which keys still need removing.
    if record is not None:
        actions.append(record)
    return actions


def _delete_recorded_copy(
    primaries: Primaries, item: RelatedResource, state: ServiceState, snapshot: RelatedSnapshot
) -> list[Action]:
    copy = snapshot.get(Side.REMOTE, item.kind, state.coordinates)
    if not state.created or copy is None or _is_deleting(copy):
        return []
    target = _ref(primaries, Side.REMOTE, item.kind, state.coordinates)
    return [DeleteRelated(identifier=item.identifier, target=target)]


def _plan_platform_origin(
    primaries: Primaries, item: RelatedResource, resolved: Resolved, snapshot: RelatedSnapshot
) -> list[Action]:
    if resolved.remote is None or resolved.local is None:
        return []
    origin_key = RemoteKey(cluster=primaries.remote_key.cluster, namespace=resolved.remote.namespace,
                           name=resolved.remote.name)
    source = snapshot.get(Side.REMOTE, item.kind, resolved.remote)
    live = snapshot.get(Side.LOCAL, item.kind, resolved.local)
    target = _ref(primaries, Side.LOCAL, item.kind, resolved.local)
    linked = live is not None and metadata.links_to(live, servlet_name=primaries.servlet_name, remote=origin_key)

    if source is None:
        if live is not None and linked and not _is_deleting(live):
            return [DeleteRelated(identifier=item.identifier, target=target)]
        return []

    desired = related_content(source, item.kind)
    if live is None:
        skeleton = _skeleton(
            item.kind, resolved.local,
            labels=metadata.link_labels(servlet_name=primaries.servlet_name, remote=origin_key),
            annotations=metadata.link_annotations(remote=origin_key),
        )
        created = patch.created_object(skeleton=skeleton, desired=desired)
        if isinstance(created, Problem):
            return [Error.of(created, target=target, identifier=item.identifier)]
        return [
            *_ensure_namespace(primaries, snapshot, Side.LOCAL, resolved.local.namespace),
            CreateRelated(identifier=item.identifier, target=target, object=created),
        ]
    if not linked:
        origin = _describe(Side.REMOTE, item.kind, resolved.remote, cluster=origin_key.cluster)
        return [Conflict(
            target=target, identifier=item.identifier,
            reason=f"local {_describe(Side.LOCAL, item.kind, resolved.local)} already exists and does not carry "
            f"this servlet's link to {origin}; it is never overwritten",
        )]
    change = patch.content_patch(desired=desired, live=live)
    if isinstance(change, Problem):
        return [Error.of(change, target=target, identifier=item.identifier)]
    if not change.patch:
        return []
    return [PatchRelated(identifier=item.identifier, target=target, patch=change.patch)]


def plan_related_cleanup(
    *, primaries: Primaries, related: Iterable[RelatedResource], snapshot: RelatedSnapshot
) -> tuple[Action, ...]:
    """Deletion of every destination copy the servlet created, for a primary being deleted.

    Service-origin copies are known from the related-state annotation (only created ones are
    deleted); platform-origin local copies must carry the link to their origin. Copies already
    being deleted are left to finish.
    """
    actions: list[Action] = []
    for index, item in enumerate(related):
        if item.origin is Origin.SERVICE:
            state = read_service_state(primaries.local, item.identifier)
            if state is not None:
                actions.extend(_delete_recorded_copy(primaries, item, state, snapshot))
            continue
        resolved = resolve(item, index=index, remote=primaries.remote, local=primaries.local)
        if isinstance(resolved, Problem) or resolved.remote is None or resolved.local is None:
            continue
        origin_key = RemoteKey(cluster=primaries.remote_key.cluster, namespace=resolved.remote.namespace,
                               name=resolved.remote.name)
        live = snapshot.get(Side.LOCAL, item.kind, resolved.local)
        if live is not None and not _is_deleting(live) and metadata.links_to(
            live, servlet_name=primaries.servlet_name, remote=origin_key
        ):
            actions.append(DeleteRelated(identifier=item.identifier,
                                         target=_ref(primaries, Side.LOCAL, item.kind, resolved.local)))
    return tuple(actions)


def related_reads(
    *, related: Iterable[RelatedResource], remote: Mapping[str, Any], local: Mapping[str, Any] | None
) -> RelatedReads:
    """Which related objects and namespaces the planner may look at for this primary pair.

    Unresolvable coordinates are skipped (nothing to read yet); so are the primaries' own
    namespaces, which exist by definition.
    """
    objects: dict[RelatedKey, None] = {}
    namespaces: dict[tuple[Side, str], None] = {}
    for index, item in enumerate(related):
        resolved = resolve(item, index=index, remote=remote, local=local)
        if isinstance(resolved, Problem):
            continue
        for side, coordinates, primary in ((Side.REMOTE, resolved.remote, remote), (Side.LOCAL, resolved.local, local)):
            if coordinates is None or primary is None:
                continue
            objects[RelatedKey(side, item.kind, coordinates.namespace, coordinates.name)] = None
            if coordinates.namespace != _namespace_of(primary):
                namespaces[(side, coordinates.namespace)] = None
        if local is not None and item.origin is Origin.SERVICE:
            # A copy recorded at older coordinates may be due for deletion.
            state = read_service_state(local, item.identifier)
            if state is not None:
                objects[RelatedKey(Side.REMOTE, item.kind, state.namespace, state.name)] = None
    return RelatedReads(objects=tuple(objects), namespaces=tuple(namespaces))
