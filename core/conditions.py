"""PublishedResource status conditions (SPEC 2): what each says, and when it last changed.

Several controllers know one part each of a PublishedResource's state: the schema controller
knows whether the spec is valid and the schema published, the export controller whether the
schema is in the APIExport, the sync manager whether objects are being synced, and each sync
worker how many of its objects fail (`Synced`). They report `Condition`s; `status_patch` merges
those reports into the status the object already has and derives `Ready` from the others, so the
status is written by one writer as one merge patch.

The rules a reader of the status can rely on:

- a reported condition carries the `metadata.generation` it was computed from
  (`observedGeneration`);
- `lastTransitionTime` changes only when a condition's `status` changes (not its reason or
  message), so it says how long the resource has been (not) ready;
- a condition nobody has reported since the servlet started keeps the value the object already
  has, so a restart does not make `Ready` flap;
- conditions of other types (written by someone else) are kept as they are;
- nothing changed, no patch: a resync of a settled PublishedResource writes nothing.

Deliberately not here: reading the clock (the caller passes `now` as an RFC 3339 string),
deciding what a controller reports, and writing the status.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

# The CRD limits a message to 32768 characters; long problem lists are cut well before that.
MESSAGE_LIMIT = 4096


class ConditionType(enum.Enum):
    VALID = "Valid"
    SCHEMA_PUBLISHED = "SchemaPublished"
    EXPORTED = "Exported"
    SYNCING = "Syncing"
    SYNCED = "Synced"
    READY = "Ready"


# The order conditions are written in; `Ready` summarises the ones before it.
CONDITION_ORDER: tuple[ConditionType, ...] = tuple(ConditionType)
REPORTED: tuple[ConditionType, ...] = CONDITION_ORDER[:-1]
# What `Ready` waits for. `Synced` only counts when no object syncs at all (see ready_condition).
PREREQUISITES: tuple[ConditionType, ...] = (
    ConditionType.VALID,
    ConditionType.SCHEMA_PUBLISHED,
    ConditionType.EXPORTED,
    ConditionType.SYNCING,
)


class ConditionStatus(enum.Enum):
    TRUE = "True"
    FALSE = "False"
    UNKNOWN = "Unknown"


@frozen
class Condition:
    """One reported fact: `reason` is a CamelCase word for machines, `message` a sentence for people."""

    type: ConditionType
    status: ConditionStatus
    reason: str
    message: str = ""

    @classmethod
    def true(cls, type_: ConditionType, *, reason: str, message: str = "") -> Condition:
        return cls(type=type_, status=ConditionStatus.TRUE, reason=reason, message=message)

    @classmethod
    def false(cls, type_: ConditionType, *, reason: str, message: str = "") -> Condition:
        return cls(type=type_, status=ConditionStatus.FALSE, reason=reason, message=message)

    @classmethod
    def unknown(cls, type_: ConditionType, *, reason: str, message: str = "") -> Condition:
        return cls(type=type_, status=ConditionStatus.UNKNOWN, reason=reason, message=message)


READY_REASON = "Ready"
PENDING_REASON = "Pending"
ALL_SYNCED_REASON = "AllObjectsSynced"
SOME_FAIL_REASON = "ObjectsFailing"
NONE_SYNC_REASON = "NoObjectSyncs"
NOT_SYNCING_REASON = "NotSyncing"
# Failures a Synced message names; the counts say how many more there are.
NAMED_FAILURES = 3


def synced_condition(*, total: int, failures: Sequence[tuple[str, str]], failing: int = 0) -> Condition:
    """`Synced` from how many objects there are and which fail, as (object, reason) in a stable order.

    True when none fails; False with the counts and the first few failures named otherwise,
    `NONE_SYNC_REASON` when every object fails (then `Ready` is False too). `failing`: how many
    fail when that is more than `failures` names (replicas tell each other only a few).
    """
    count = max(failing, len(failures))
    if not count:
        return Condition.true(
            ConditionType.SYNCED,
            reason=ALL_SYNCED_REASON,
            message=f"all {total} object(s) are in sync" if total else "no objects to sync yet",
        )
    total = max(total, count)
    shown = failures[:NAMED_FAILURES]
    named = "; ".join(f"{where}: {reason}" for where, reason in shown)
    more = f"; and {count - len(shown)} more" if count > len(shown) else ""
    return Condition.false(
        ConditionType.SYNCED,
        reason=NONE_SYNC_REASON if count == total else SOME_FAIL_REASON,
        message=f"{count} of {total} object(s) fail to sync: {named}{more}",
    )


def ready_condition(conditions: Mapping[ConditionType, Condition]) -> Condition:
    """`Ready` from the other conditions: True when the four prerequisites are True, else why not.

    The first False one (in `PREREQUISITES` order) explains a False; without any False, the first
    one that is Unknown or not reported yet makes Ready Unknown. Some objects failing leaves Ready
    True (`Synced` says so): one tenant's broken object does not make the resource unusable for
    the others. When every object fails, nothing is actually syncing and Ready is False.
    """
    synced = conditions.get(ConditionType.SYNCED)
    none_sync = synced is not None and synced.status is ConditionStatus.FALSE and synced.reason == NONE_SYNC_REASON
    for type_ in (*PREREQUISITES, *((ConditionType.SYNCED,) if none_sync else ())):
        condition = conditions.get(type_)
        if condition is not None and condition.status is ConditionStatus.FALSE:
            return Condition.false(
                ConditionType.READY,
                reason=condition.reason,
                message=f"{type_.value}: {condition.message}" if condition.message else type_.value,
            )
    for type_ in PREREQUISITES:
        condition = conditions.get(type_)
        if condition is None or condition.status is not ConditionStatus.TRUE:
            detail = f": {condition.message}" if condition is not None and condition.message else ""
            return Condition.unknown(
                ConditionType.READY, reason=PENDING_REASON, message=f"waiting for {type_.value}{detail}"
            )
    return Condition.true(
        ConditionType.READY,
        reason=READY_REASON,
        message="the resource is published in the APIExport and its objects are being synced",
    )


def _type_of(value: object) -> ConditionType | None:
    return next((type_ for type_ in ConditionType if type_.value == value), None)


def _status_of(value: object) -> ConditionStatus | None:
    return next((status for status in ConditionStatus if status.value == value), None)


def parse_conditions(status: Mapping[str, Any] | None) -> dict[ConditionType, Condition]:
    """Our conditions as they stand in a status (unreadable entries are ignored)."""
    found: dict[ConditionType, Condition] = {}
    for entry in _conditions_list(status):
        type_, status_value = _type_of(entry.get("type")), _status_of(entry.get("status"))
        if type_ is not None and status_value is not None:
            found[type_] = Condition(
                type=type_,
                status=status_value,
                reason=str(entry.get("reason") or ""),
                message=str(entry.get("message") or ""),
            )
    return found


def _conditions_list(status: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    value = status.get("conditions") if isinstance(status, Mapping) else None
    return [entry for entry in value if isinstance(entry, Mapping)] if isinstance(value, list) else []


def _entry(condition: Condition, *, generation: int, previous: Mapping[str, Any] | None, now: str) -> dict[str, Any]:
    unchanged = previous is not None and previous.get("status") == condition.status.value
    transition = previous.get("lastTransitionTime") if unchanged and previous is not None else None
    message = condition.message
    if len(message) > MESSAGE_LIMIT:
        message = message[: MESSAGE_LIMIT - 3] + "..."
    return {
        "type": condition.type.value,
        "status": condition.status.value,
        "reason": condition.reason,
        "message": message,
        "observedGeneration": generation,
        "lastTransitionTime": transition if isinstance(transition, str) and transition else now,
    }


def _not_syncing(conditions: Mapping[ConditionType, Condition]) -> bool:
    syncing = conditions.get(ConditionType.SYNCING)
    return syncing is not None and syncing.status is ConditionStatus.FALSE


def desired_conditions(
    *, current: Mapping[str, Any] | None, reported: Mapping[ConditionType, Condition], generation: int, now: str
) -> list[dict[str, Any]]:
    """The complete `status.conditions` list after merging `reported` into `current` (see module doc)."""
    existing = {str(entry.get("type")): entry for entry in _conditions_list(current)}
    kept = parse_conditions(current)
    effective: dict[ConditionType, Condition] = {}
    result: list[dict[str, Any]] = []
    for type_ in REPORTED:
        condition = reported.get(type_)
        if type_ is ConditionType.SYNCED and _not_syncing(effective):
            # No worker counts the objects now: the last count would be stale.
            condition = Condition.unknown(
                ConditionType.SYNCED, reason=NOT_SYNCING_REASON, message="no objects are synced now (see Syncing)"
            )
        if condition is not None:
            effective[type_] = condition
            result.append(_entry(condition, generation=generation, previous=existing.get(type_.value), now=now))
        elif type_.value in existing:
            # Not reported since this servlet started: keep what the object says, untouched.
            if type_ in kept:
                effective[type_] = kept[type_]
            result.append(dict(existing[type_.value]))
    ready = ready_condition(effective)
    result.append(_entry(ready, generation=generation, previous=existing.get(ConditionType.READY.value), now=now))
    ours = {type_.value for type_ in CONDITION_ORDER}
    result.extend(dict(entry) for name, entry in existing.items() if name not in ours)
    return result


def status_patch(
    *,
    current: Mapping[str, Any] | None,
    reported: Mapping[ConditionType, Condition] | Iterable[Condition],
    generation: int,
    now: str,
    resource_schema_name: str | None = None,
) -> dict[str, Any] | None:
    """The merge patch (`{"status": {...}}`) that brings `current` up to date; None when it already is.

    `resource_schema_name` None leaves `status.resourceSchemaName` as it is.
    """
    by_type = dict(reported) if isinstance(reported, Mapping) else {c.type: c for c in reported}
    conditions = desired_conditions(current=current, reported=by_type, generation=generation, now=now)
    change: dict[str, Any] = {}
    if conditions != _conditions_list(current):
        change["conditions"] = conditions
    current_name = current.get("resourceSchemaName") if isinstance(current, Mapping) else None
    if resource_schema_name is not None and resource_schema_name != current_name:
        change["resourceSchemaName"] = resource_schema_name
    return {"status": change} if change else None


def condition_problems(problems: Sequence[object]) -> str:
    """Problems (anything printable, e.g. `model.Problem`) as one message: `a; b; c`."""
    return "; ".join(str(problem) for problem in problems)
