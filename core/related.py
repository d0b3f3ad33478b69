"""Related Secrets and ConfigMaps of one primary object: what to write so they sync (SPEC 8).

An entry whose name path runs through a list stands for one related object per item, each
planned here as an entry of its own (`related_lists.py`). Its origin decides the direction:
`service` objects flow up into the workspace, `platform` objects flow down (`related_platform.py`).
The content (`data`, plus `type` or `binaryData`, plus copyable labels/annotations) is synced
with the same three-way rule as primaries. The sync state always
stays on the service cluster, in records on the local primary (`related_objects.py`): a workspace
copy carries nothing of the servlet.

Deleting is where a mistake costs a tenant data, so only a copy the servlet provably owns is ever
deleted, and only when it is provably no longer needed:

- Owned. A service-origin copy is recorded as created only after its create succeeded: the
  create comes first in the plan, the record after it, and the executor stops at the first
  failure. A create that loses a race against the tenant's own Secret of that name fails with
  AlreadyExists and records nothing; the next plan finds the tenant's object there and records
  it as not created. The price: a crash between create and record leaves a copy that looks like
  the tenant's and is kept for good. A leaked copy costs little; a tenant's Secret deleted costs
  a great deal, and nothing on a workspace copy can prove it ours (it carries no servlet
  metadata). A platform-origin copy is owned when it carries the servlet's link to its origin.
- No longer needed. The origin is gone, the primary is being deleted, or the primary no longer
  names the copy (the tenant renamed or removed the reference): each live plan compares the
  recorded copy with the one named now and deletes the old one.
- Provably. A copy is only deleted for its origin's absence when that absence is confirmed. The
  caller marks in the snapshot what it could not read (`unreadable`) and what it only found
  missing in a cache (`unconfirmed`); losing sight of an origin (a permission claim rejected, a
  read that failed) is not its deletion. The plan then keeps the copy and reports an Error naming
  the object; `absences_to_confirm` tells the caller which objects to read directly first.

Deliberately not here: reading any cluster. The caller asks `related_reads` which objects and
namespaces to fetch and passes what it found as a `RelatedSnapshot`. A path that does not
resolve (yet) is not an error: the related object is simply pending until the field is filled in.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from servlet.core import metadata, patch
from servlet.core.actions import Action, CreateRelated, DeleteRelated, Error, PatchRelated, Side
from servlet.core.keys import guarded, uid_of
from servlet.core.model import Origin, Problem, RelatedResource, RemoteKey
from servlet.core.related_actions import (
    ensure_namespace,
    record_state,
    ref,
    skeleton,
    unconfirmed_error,
    unreadable_error,
)
from servlet.core.related_lists import base_identifier, related_objects
from servlet.core.related_mutation import destination_identity, mutated_origin

# Re-exported (listed in __all__): callers import the vocabulary of related objects from here.
from servlet.core.related_objects import (
    Coordinates,
    Presence,
    Primaries,
    RelatedKey,
    RelatedReads,
    RelatedSnapshot,
    Resolved,
    ServiceState,
    is_deleting,
    read_platform_state,
    read_service_state,
    resolve,
    state_content,
)
from servlet.core.related_platform import delete_linked_copy, plan_platform_origin
from servlet.core.related_reads import keys_of, related_reads
from servlet.core.related_selector import expand
from servlet.core.related_sides import desired_content, status_update, type_on, type_problem

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = [
    "Primaries",
    "RelatedKey",
    "RelatedReads",
    "RelatedSnapshot",
    "Resolved",
    "absences_to_confirm",
    "plan_related",
    "plan_related_cleanup",
    "related_reads",
    "resolve",
]


# --- the public entry points -------------------------------------------------------------------


def plan_related(
    *, primaries: Primaries, related: Iterable[RelatedResource], snapshot: RelatedSnapshot
) -> tuple[Action, ...]:
    """The actions that bring every related object of a live primary pair in sync, in order."""
    expansion = expand(list(related), remote=primaries.remote, local=primaries.local, snapshot=snapshot)
    refused = [Error.of(problem, identifier=item.identifier) for item, problem in expansion.errors]
    planned = _plan(primaries, expansion.related, expansion.snapshot, held_back=set())
    return _kept_where_asked(list(expansion.related), [*refused, *planned])


def absences_to_confirm(
    *, primaries: Primaries, related: Iterable[RelatedResource], snapshot: RelatedSnapshot
) -> frozenset[RelatedKey]:
    """The keys of `snapshot.unconfirmed` whose absence holds back a deletion in `plan_related`.

    Read each directly, then plan again with the answers: found ones in `objects`, confirmed
    ones out of `unconfirmed`, failed ones in `unreadable`. Empty when no deletion waits on a read.
    """
    held_back: set[RelatedKey] = set()
    expansion = expand(list(related), remote=primaries.remote, local=primaries.local, snapshot=snapshot)
    _plan(primaries, expansion.related, expansion.snapshot, held_back=held_back)
    return frozenset(held_back)


def plan_related_cleanup(
    *, primaries: Primaries, related: Iterable[RelatedResource], snapshot: RelatedSnapshot
) -> tuple[Action, ...]:
    """Deletion of every destination copy the servlet owns, for a primary being deleted.

    Service-origin copies are known from their record (only created ones are deleted);
    platform-origin local copies, named now or recorded, must carry the link to their origin.
    Copies already being deleted are left to finish; a copy that cannot be read is reported.
    """
    related = list(
        expand(
            list(related), remote=primaries.remote, local=primaries.local, snapshot=snapshot, recorded_only=True
        ).related
    )
    actions: list[Action] = []
    for entry in related_objects(related, remote=primaries.remote, local=primaries.local, every_recorded=True):
        index, item = entry.index, entry.item
        unusable = entry.problem or type_problem(item, index=index)
        if unusable is not None:
            # What the type cannot be read of cannot be proven ours: kept, and said so.
            actions.append(Error.of(unusable, target=primaries.local_ref, identifier=item.identifier))
            continue
        owned: dict[Coordinates, Coordinates] = {}  # copy -> its origin (platform origin)
        if item.origin is Origin.SERVICE:
            state = read_service_state(primaries.local, item.identifier)
            if state is None or not state.created:
                continue
            unread = RelatedKey.at(Side.REMOTE, type_on(item, Side.REMOTE), state.coordinates)
            if snapshot.presence(unread) is Presence.UNREADABLE:
                actions.append(unreadable_error(primaries, item, unread))
            else:
                actions.extend(_delete_recorded_copy(primaries, item, state, snapshot))
            continue
        resolved = resolve(item, index=index, remote=primaries.remote, local=primaries.local)
        if not isinstance(resolved, Problem) and resolved.remote is not None and resolved.local is not None:
            owned[resolved.local] = resolved.remote
        recorded = read_platform_state(primaries.local, item.identifier)
        if recorded is not None:
            owned.setdefault(recorded.copy, recorded.origin)
        for copy, origin in owned.items():
            key = RelatedKey.at(Side.LOCAL, type_on(item, Side.LOCAL), copy)
            if snapshot.presence(key) is Presence.UNREADABLE:
                actions.append(unreadable_error(primaries, item, key))
            else:
                actions.extend(delete_linked_copy(primaries, item, copy=copy, origin=origin, snapshot=snapshot))
    return _kept_where_asked(related, actions)


def _kept_where_asked(related: list[RelatedResource], actions: Iterable[Action]) -> tuple[Action, ...]:
    """`actions` without the deletions of entries with `cleanup: false`, whose copies always stay."""
    keep = {item.identifier for item in related if not item.cleanup}
    return tuple(
        action
        for action in actions
        if not (isinstance(action, DeleteRelated) and base_identifier(action.identifier) in keep)
    )


# --- planning ----------------------------------------------------------------------------------


def _plan(
    primaries: Primaries, related: Iterable[RelatedResource], snapshot: RelatedSnapshot, *, held_back: set[RelatedKey]
) -> list[Action]:
    actions: list[Action] = []
    for entry in related_objects(related, remote=primaries.remote, local=primaries.local):
        index, item = entry.index, entry.item
        if entry.problem is not None:
            actions.append(Error.of(entry.problem, target=primaries.local_ref, identifier=item.identifier))
            continue
        if entry.dropped:
            actions.extend(_forget_dropped(primaries, item, snapshot))
            continue
        resolved = type_problem(item, index=index) or resolve(
            item, index=index, remote=primaries.remote, local=primaries.local
        )
        if isinstance(resolved, Problem):
            actions.append(Error.of(resolved, identifier=item.identifier))
            continue
        # Whatever cannot be read may exist: nothing of this entry is written, nothing deleted.
        unread = (
            next(
                (
                    key
                    for key in keys_of(item, resolved, primaries.local)
                    if snapshot.presence(key) is Presence.UNREADABLE
                ),
                None,
            )
            if snapshot.unreadable
            else None
        )
        if unread is not None:
            actions.append(unreadable_error(primaries, item, unread))
            continue
        # An absence is confirmed only to allow a deletion; an entry that never deletes takes it as is.
        seen = snapshot if item.cleanup or not snapshot.unconfirmed else attrs.evolve(snapshot, unconfirmed=frozenset())
        if item.origin is Origin.SERVICE:
            actions.extend(_plan_service_origin(primaries, item, resolved, seen, held_back, index=index))
        else:
            actions.extend(plan_platform_origin(primaries, item, resolved, seen, held_back, index=index))
    return actions


def _forget_dropped(primaries: Primaries, item: RelatedResource, snapshot: RelatedSnapshot) -> list[Action]:
    """A list position no longer named (`related_lists.py`): its copy goes if ours, then its record."""
    deletions = list(plan_related_cleanup(primaries=primaries, related=[item], snapshot=snapshot))
    if any(isinstance(action, Error) for action in deletions):
        return deletions  # what cannot be read is kept, and so is the record that finds it
    return [*deletions, record_state(primaries, item.identifier, None)]


def _plan_service_origin(
    primaries: Primaries,
    item: RelatedResource,
    resolved: Resolved,
    snapshot: RelatedSnapshot,
    held_back: set[RelatedKey],
    *,
    index: int,
) -> list[Action]:
    state = read_service_state(primaries.local, item.identifier)
    if resolved.local is None:
        return []
    source_key = RelatedKey.at(Side.LOCAL, type_on(item, Side.LOCAL), resolved.local)
    source = snapshot.objects.get(source_key)
    if source is not None and resolved.remote is not None and _copy_of(source, primaries, resolved.remote):
        # The servlet's own local copy of the very workspace object this entry writes (another
        # entry copies it down) is not the service's: copied back up, the two would feed each other.
        source = None
    if source is None:
        if state is None:
            return []  # never born
        # The origin disappeared (its record proves it existed): its copy goes, once that is certain.
        if snapshot.presence(source_key) is Presence.UNCONFIRMED:
            held_back.add(source_key)
            return [
                unconfirmed_error(
                    primaries,
                    item,
                    source_key,
                    copy=RelatedKey.at(Side.REMOTE, type_on(item, Side.REMOTE), state.coordinates),
                )
            ]
        return [
            *_delete_recorded_copy(primaries, item, state, snapshot),
            record_state(primaries, item.identifier, None),
        ]
    if resolved.remote is None:
        if state is None:
            return []
        # The workspace primary names no copy any more: the recorded one is no longer needed.
        return [
            *_delete_recorded_copy(primaries, item, state, snapshot),
            record_state(primaries, item.identifier, None),
        ]
    destination = resolved.remote
    found_origin = resolved.local if item.reference.fixed is not None else None
    same_place = state is not None and state.coordinates == destination
    actions: list[Action] = []
    if state is not None and not same_place:
        # The workspace primary now names another object: the old copy, if ours, goes away.
        actions.extend(_delete_recorded_copy(primaries, item, state, snapshot))

    target = ref(primaries, Side.REMOTE, type_on(item, Side.REMOTE), destination)
    mutated = mutated_origin(
        item,
        index=index,
        source=source,
        destination=destination_identity(target.resource, namespace=destination.namespace, name=destination.name),
    )
    if isinstance(mutated, Problem):
        return [Error.of(mutated, target=target, identifier=item.identifier)]  # a failed step writes nothing
    desired = desired_content(item, mutated)
    live = snapshot.get(Side.REMOTE, type_on(item, Side.REMOTE), destination)
    if live is None:
        created_record = record_state(
            primaries,
            item.identifier,
            ServiceState(
                destination.namespace,
                destination.name,
                created=True,
                content=state_content(desired, type_on(item, Side.REMOTE)),
                origin=found_origin,
            ),
        )
        if isinstance(created_record, Error):
            return [created_record]  # a copy that could not be recorded could never be cleaned up
        # Recorded as created only after the create: see the module docstring.
        return [
            *actions,
            *ensure_namespace(primaries, snapshot, Side.REMOTE, destination.namespace),
            CreateRelated(
                identifier=item.identifier,
                target=target,
                object=patch.apply_merge_patch(skeleton(type_on(item, Side.REMOTE), destination), desired),
            ),
            created_record,
        ]

    # A workspace object at the name the tenant chose is synced into (the tenant asked for it
    # there), but remembered as not created by us, so it is never deleted.
    last_known = state.content if same_place and state is not None else None
    created = state.created if same_place and state is not None else False
    new_state = ServiceState(
        destination.namespace,
        destination.name,
        created=created,
        content=state_content(desired, type_on(item, Side.REMOTE)),
        origin=found_origin,
    )
    record = record_state(primaries, item.identifier, new_state) if new_state != state else None
    if isinstance(record, Error):
        return [record]
    content_change = patch.three_way_patch(last_known=last_known, desired=desired, live=live)
    if content_change:
        actions.append(PatchRelated(identifier=item.identifier, target=target, patch=guarded(content_change, live)))
    status = status_update(item, source=mutated, live=live, target=target)
    if status is not None:
        actions.append(status)
    # State after the write: a lost state write only repeats a harmless patch, while a state
    # written ahead of a failed patch would forget which keys still need removing.
    if record is not None:
        actions.append(record)
    return actions


def _copy_of(obj: Mapping[str, Any], primaries: Primaries, remote: Coordinates) -> bool:
    where = RemoteKey(cluster=primaries.remote_key.cluster, namespace=remote.namespace, name=remote.name)
    return metadata.links_to(obj, servlet_name=primaries.servlet_name, remote=where)


def _delete_recorded_copy(
    primaries: Primaries, item: RelatedResource, state: ServiceState, snapshot: RelatedSnapshot
) -> list[Action]:
    copy = snapshot.get(Side.REMOTE, type_on(item, Side.REMOTE), state.coordinates)
    if not state.created or copy is None or is_deleting(copy):
        return []
    return [
        DeleteRelated(
            identifier=item.identifier,
            target=ref(primaries, Side.REMOTE, type_on(item, Side.REMOTE), state.coordinates),
            uid=uid_of(copy),
        )
    ]
