"""Which Kubernetes Events the servlet records for what happened: a table, nothing sent.

Two audiences read them with `kubectl describe`:

- a tenant, on their object in their workspace: it was accepted, it was synced, or (a Warning)
  why it cannot be synced: a name conflict, a name the naming rules cannot compute, an object too
  large for its state, a related object missing or in conflict;
- an owner, on a PublishedResource in the service cluster: the schema was published, it was
  exported, and every condition that turns False (with the condition's reason), including the
  `Synced` condition when objects fail.

Events about a PublishedResource come from condition transitions, not from every reconcile, so a
resync of a settled resource records nothing. Events about objects come from the actions of a
plan; the recorder (app) deduplicates repeats and limits the rate.

Deliberately not here: writing, deduplicating and rate-limiting Events (the app's recorder and
the adapter), and deciding the conditions themselves (`conditions.py`).
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from servlet.core.actions import Action, AddFinalizer, Adopt, Conflict, Create, Error, Patch
from servlet.core.conditions import Condition, ConditionStatus, ConditionType
from servlet.core.ports import EventType

# Reasons on users' objects (CamelCase words, stable: people filter on them).
ACCEPTED = "Accepted"
SYNCED = "Synced"
NAME_CONFLICT = "NameConflict"
RELATED_CONFLICT = "RelatedObjectConflict"
INVALID_NAME = "InvalidName"
TOO_LARGE = "TooLarge"
RELATED_MISSING = "RelatedObjectMissing"
MUTATION_FAILED = "MutationFailed"
SYNC_FAILED = "SyncFailed"

OBJECT_REASONS: tuple[str, ...] = (
    ACCEPTED,
    SYNCED,
    NAME_CONFLICT,
    RELATED_CONFLICT,
    INVALID_NAME,
    TOO_LARGE,
    RELATED_MISSING,
    MUTATION_FAILED,
    SYNC_FAILED,
)

# Conditions whose turning True is news to an owner (Valid and Syncing True are the normal state).
_ANNOUNCED = (ConditionType.SCHEMA_PUBLISHED, ConditionType.EXPORTED, ConditionType.SYNCED)
_ANNOUNCEMENTS = {
    ConditionType.SCHEMA_PUBLISHED: "the APIResourceSchema is published in the kcp workspace",
    ConditionType.EXPORTED: "the schema is in the APIExport: workspaces that bind it can use the resource",
    ConditionType.SYNCED: "every object syncs again",
}


@frozen
class EventSpec:
    """What one Event says: `reason` a CamelCase word, `message` a sentence for people."""

    type: EventType
    reason: str
    message: str

    @classmethod
    def normal(cls, reason: str, message: str) -> EventSpec:
        return cls(type=EventType.NORMAL, reason=reason, message=message)

    @classmethod
    def warning(cls, reason: str, message: str) -> EventSpec:
        return cls(type=EventType.WARNING, reason=reason, message=message)


def object_event(action: Action, *, primary_kind: str) -> EventSpec | None:
    """The Event a tenant sees on their object for one action of its plan; None for quiet ones.

    `primary_kind` is the kind of the local copy: a conflict over it is a name conflict, a
    conflict over anything else is about a related object.
    """
    if isinstance(action, AddFinalizer):
        return EventSpec.normal(ACCEPTED, "the servlet accepted the object and copies it to the service cluster")
    if isinstance(action, Create):
        return EventSpec.normal(SYNCED, "the object was copied to the service cluster")
    if isinstance(action, Patch | Adopt):
        return EventSpec.normal(SYNCED, "changes of the object were copied to the service cluster")
    if isinstance(action, Conflict):
        related = action.identifier or action.target.resource.kind != primary_kind
        return EventSpec.warning(RELATED_CONFLICT if related else NAME_CONFLICT, _sentence(action.reason))
    if isinstance(action, Error):
        return EventSpec.warning(error_reason(action), _sentence(action.reason))
    return None


def error_reason(error: Error) -> str:
    """The Event reason for an Error of a plan, from what the planner says is at fault."""
    if error.field.startswith("spec.naming"):
        return INVALID_NAME
    if error.field.startswith("spec.mutation"):
        return MUTATION_FAILED
    if error.field == "metadata.annotations" or "too large" in error.reason:
        return TOO_LARGE
    if error.identifier:
        return RELATED_MISSING if ("not found" in error.reason or "cannot read" in error.reason) else SYNC_FAILED
    return SYNC_FAILED


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] if text else text


def condition_events(
    *, before: Mapping[ConditionType, Condition], after: Mapping[ConditionType, Condition]
) -> list[EventSpec]:
    """The Events on a PublishedResource for its conditions going from `before` to `after`.

    A condition that turns False, or changes its reason while False, is a Warning with that
    reason; `SchemaPublished` or `Exported` turning True (from anything else), and `Synced` turning
    True from False, is a Normal event named after it. `Ready` only summarises the others, so it
    records nothing of its own.
    """
    found: list[EventSpec] = []
    for type_, condition in after.items():
        if type_ is ConditionType.READY:
            continue
        previous = before.get(type_)
        if condition.status is ConditionStatus.FALSE:
            if previous is None or previous.status is not ConditionStatus.FALSE or previous.reason != condition.reason:
                message = condition.message or type_.value
                found.append(EventSpec.warning(condition.reason, f"{type_.value}: {message}"))
        elif condition.status is ConditionStatus.TRUE and type_ in _ANNOUNCED:
            if type_ is ConditionType.SYNCED:
                # Only a recovery is news: a worker (re)starting counts from Unknown.
                if previous is not None and previous.status is ConditionStatus.FALSE:
                    found.append(EventSpec.normal(type_.value, _ANNOUNCEMENTS[type_]))
            elif previous is None or previous.status is not ConditionStatus.TRUE:
                found.append(EventSpec.normal(type_.value, _ANNOUNCEMENTS[type_]))
    return found
