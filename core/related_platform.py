"""Related objects of origin `platform`: the workspace's object flows down to a linked local copy (SPEC 8).

With `syncStatus`, the copy's status flows up to the workspace object, through its status
subresource: the service works on the copy, and the tenant sees the result on its own object.

A local copy is owned when it carries the servlet's link labels to its origin; only such a copy
is ever patched or deleted. The record of which copy a primary made lives on the local primary
(`related_objects.py`); `related.py` decides when this plan runs and when a copy is no longer needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core import metadata, patch
from servlet.core.actions import (
    Action,
    Conflict,
    CreateRelated,
    DeleteRelated,
    Error,
    PatchRelated,
    PatchRemoteStatus,
    Side,
)
from servlet.core.keys import guarded, uid_of
from servlet.core.model import Problem, RelatedResource, RemoteKey
from servlet.core.related_actions import describe, ensure_namespace, ref, skeleton, unconfirmed_error, with_record
from servlet.core.related_mutation import destination_identity, mutated_origin, mutated_status, mutation_field
from servlet.core.related_objects import (
    Coordinates,
    PlatformState,
    Presence,
    Primaries,
    RelatedKey,
    RelatedSnapshot,
    Resolved,
    is_deleting,
    read_platform_state,
)
from servlet.core.related_sides import desired_content, status_update, type_on


def plan_platform_origin(
    primaries: Primaries,
    item: RelatedResource,
    resolved: Resolved,
    snapshot: RelatedSnapshot,
    held_back: set[RelatedKey],
    *,
    index: int,
) -> list[Action]:
    """Create, patch or delete the local copy of the workspace object `item` names, and record it."""
    state = read_platform_state(primaries.local, item.identifier)
    wanted = (
        PlatformState(copy=resolved.local, origin=resolved.remote)
        if resolved.remote is not None and resolved.local is not None
        else None
    )
    actions: list[Action] = []
    kept = state
    if state is not None and state != wanted:
        # The tenant renamed or removed the reference: the recorded copy is no longer named.
        actions.extend(delete_linked_copy(primaries, item, copy=state.copy, origin=state.origin, snapshot=snapshot))
        kept = None
        if wanted is None or (actions and state.copy == wanted.copy):
            # Nothing is named, or the old copy is in the new one's place: it goes first.
            return with_record(primaries, item.identifier, actions, before=state, after=None)
    if wanted is None:
        return actions

    origin_key = RemoteKey(
        cluster=primaries.remote_key.cluster, namespace=wanted.origin.namespace, name=wanted.origin.name
    )
    source_key = RelatedKey.at(Side.REMOTE, type_on(item, Side.REMOTE), wanted.origin)
    source = snapshot.objects.get(source_key)
    live = snapshot.get(Side.LOCAL, type_on(item, Side.LOCAL), wanted.copy)
    target = ref(primaries, Side.LOCAL, type_on(item, Side.LOCAL), wanted.copy)
    linked = live is not None and metadata.links_to(live, servlet_name=primaries.servlet_name, remote=origin_key)

    if source is None:
        if live is not None and linked and not is_deleting(live):
            if snapshot.presence(source_key) is Presence.UNCONFIRMED:
                held_back.add(source_key)
                actions.append(
                    unconfirmed_error(
                        primaries,
                        item,
                        source_key,
                        copy=RelatedKey.at(Side.LOCAL, type_on(item, Side.LOCAL), wanted.copy),
                    )
                )
                return with_record(primaries, item.identifier, actions, before=state, after=kept)
            actions.append(DeleteRelated(identifier=item.identifier, target=target, uid=uid_of(live)))
        return with_record(primaries, item.identifier, actions, before=state, after=None)

    copy_identity = destination_identity(target.resource, namespace=wanted.copy.namespace, name=wanted.copy.name)
    mutated = mutated_origin(item, index=index, source=source, destination=copy_identity)
    if isinstance(mutated, Problem):
        return [Error.of(mutated, target=target, identifier=item.identifier)]  # a failed step writes nothing
    desired = desired_content(item, mutated)
    if live is None:
        bare = skeleton(
            type_on(item, Side.LOCAL),
            wanted.copy,
            labels=metadata.link_labels(servlet_name=primaries.servlet_name, remote=origin_key),
            annotations=metadata.link_annotations(remote=origin_key),
        )
        created = patch.created_object(skeleton=bare, desired=desired)
        if isinstance(created, Problem):
            return [*actions, Error.of(created, target=target, identifier=item.identifier)]
        actions.extend(ensure_namespace(primaries, snapshot, Side.LOCAL, wanted.copy.namespace))
        actions.append(CreateRelated(identifier=item.identifier, target=target, object=created))
        # Recorded after the create, which stops the plan if it fails: the record names only copies that exist.
        return with_record(primaries, item.identifier, actions, before=state, after=wanted)
    if not linked:
        origin = describe(Side.REMOTE, type_on(item, Side.REMOTE), wanted.origin, cluster=origin_key.cluster)
        actions.append(
            Conflict(
                target=target,
                identifier=item.identifier,
                reason=f"local {describe(Side.LOCAL, type_on(item, Side.LOCAL), wanted.copy)} already exists and does not carry "
                f"this servlet's link to {origin}; it is never overwritten",
            )
        )
        return with_record(primaries, item.identifier, actions, before=state, after=None)
    status = status_up(primaries, item, index=index, copy=live, origin=source, at=wanted.origin)
    if isinstance(status, Error) and status.field.startswith(mutation_field(index)):
        return [status]  # a failed step writes nothing
    change = patch.content_patch(desired=desired, live=live)
    if isinstance(change, Problem):
        return [*actions, Error.of(change, target=target, identifier=item.identifier)]
    if change.patch:
        actions.append(PatchRelated(identifier=item.identifier, target=target, patch=guarded(change.patch, live)))
    if status is not None:
        actions.append(status)
    # A linked copy not recorded yet (made before records existed, or its record was lost) is recorded now.
    return with_record(primaries, item.identifier, actions, before=state, after=wanted)


def status_up(
    primaries: Primaries,
    item: RelatedResource,
    *,
    index: int,
    copy: Mapping[str, Any],
    origin: Mapping[str, Any],
    at: Coordinates,
) -> PatchRemoteStatus | Error | None:
    """The workspace origin's status made equal to its local copy's (`syncStatus`), through its status
    subresource: the service works on the copy and writes its status there. None when nothing is due."""
    if not item.sync_status:
        return None
    origin_type = type_on(item, Side.REMOTE)
    target = ref(primaries, Side.REMOTE, origin_type, at)
    if not item.status_subresource:
        # Written as content, the status would change the tenant's own object: never.
        return Error(
            target=target,
            identifier=item.identifier,
            field=f"spec.related[{index}].syncStatus",
            reason=f"{origin_type.plural} have no status subresource, so the status of the local copy of related "
            f"object {item.identifier!r} cannot be written to its workspace origin; the content still syncs",
        )
    identity = destination_identity(origin_type, namespace=at.namespace, name=at.name)
    status_source = mutated_status(item, index=index, obj=copy, other=identity)
    if isinstance(status_source, Problem):
        return Error.of(status_source, target=target, identifier=item.identifier)
    return status_update(item, source=status_source, live=origin, target=target)


def delete_linked_copy(
    primaries: Primaries, item: RelatedResource, *, copy: Coordinates, origin: Coordinates, snapshot: RelatedSnapshot
) -> list[Action]:
    """Delete the local copy at `copy` if it carries this servlet's link to `origin` and is not going already."""
    live = snapshot.get(Side.LOCAL, type_on(item, Side.LOCAL), copy)
    origin_key = RemoteKey(cluster=primaries.remote_key.cluster, namespace=origin.namespace, name=origin.name)
    if (
        live is None
        or is_deleting(live)
        or not metadata.links_to(live, servlet_name=primaries.servlet_name, remote=origin_key)
    ):
        return []
    return [
        DeleteRelated(
            identifier=item.identifier,
            target=ref(primaries, Side.LOCAL, type_on(item, Side.LOCAL), copy),
            uid=uid_of(live),
        )
    ]
