"""Which Events a tenant sees on their object and an owner on a PublishedResource (core.events)."""

from __future__ import annotations

from pathlib import Path

import pytest

from servlet.core.actions import (
    AddFinalizer,
    Conflict,
    Create,
    CreateNamespace,
    Error,
    ObjectRef,
    Patch,
    PatchRemoteStatus,
    Side,
)
from servlet.core.conditions import Condition, ConditionType, synced_condition
from servlet.core.events import OBJECT_REASONS, EventSpec, condition_events, object_event
from servlet.core.model import ResourceType
from servlet.core.ports import EventType
from servlet.core.targets import SECRET_TYPE

CERTIFICATES = ResourceType(
    group="cert-manager.io", version="v1", kind="Certificate", plural="certificates", namespaced=True
)
ZERTIFIKATE = ResourceType(
    group="certificates.example.corp", version="v1beta1", kind="Zertifikat", plural="zertifikate", namespaced=True
)
REMOTE = ObjectRef(side=Side.REMOTE, resource=ZERTIFIKATE, namespace="default", name="web", cluster="team-a")
LOCAL = ObjectRef(side=Side.LOCAL, resource=CERTIFICATES, namespace="team-a", name="web")
SECRET = ObjectRef(side=Side.LOCAL, resource=SECRET_TYPE, namespace="team-a", name="web-tls")


def _event(action: object) -> EventSpec | None:
    return object_event(action, primary_kind="Certificate")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (AddFinalizer(target=REMOTE, finalizers=("syncer.kdp.k8c.io/cleanup",)), "Accepted"),
        (Create(target=LOCAL, object={}), "Synced"),
        (Patch(target=LOCAL, patch={"spec": {"x": 1}}), "Synced"),
    ],
)
def test_progress_is_a_normal_event(action: object, reason: str) -> None:
    event = _event(action)
    assert event is not None and event.type is EventType.NORMAL and event.reason == reason


@pytest.mark.parametrize(
    "action",
    [
        CreateNamespace(target=ObjectRef(side=Side.LOCAL, resource=SECRET_TYPE, namespace="", name="team-a")),
        PatchRemoteStatus(target=REMOTE, status={}, patch={}),
    ],
)
def test_housekeeping_records_nothing(action: object) -> None:
    assert _event(action) is None


@pytest.mark.parametrize(
    ("action", "reason"),
    [
        (
            Conflict(target=LOCAL, reason="the local name team-a/web is taken by an object not made by this servlet"),
            "NameConflict",
        ),
        (
            Conflict(target=SECRET, reason="the Secret team-a/web-tls is someone else's", identifier="tls"),
            "RelatedObjectConflict",
        ),
        (
            Error(target=REMOTE, field="spec.naming.name", reason="the computed name 'A_B' is not a valid name"),
            "InvalidName",
        ),
        (
            Error(
                target=LOCAL, field="metadata.annotations", reason="the object is too large for its last-known-state"
            ),
            "TooLarge",
        ),
        (
            Error(target=SECRET, identifier="tls", reason="cannot read Secret default/web-tls of related object 'tls'"),
            "RelatedObjectMissing",
        ),
        (
            Error(
                target=LOCAL,
                field="spec.mutation.spec[1].cel.expression",
                reason='spec.mutation.spec[1].cel.expression: Key not found in map : "issuer"',
            ),
            "MutationFailed",
        ),
        (Error(target=REMOTE, reason="2 local objects carry the link labels of this remote object"), "SyncFailed"),
    ],
)
def test_a_refusal_is_a_warning_with_its_reason_and_the_planner_sentence(action: Conflict | Error, reason: str) -> None:
    event = _event(action)
    assert event is not None and event.type is EventType.WARNING and event.reason == reason
    assert event.message.lower() == action.reason.lower()


VALID = Condition.true(ConditionType.VALID, reason="Valid")
PUBLISHED = Condition.true(ConditionType.SCHEMA_PUBLISHED, reason="Published", message="v1 exists")
EXPORTED = Condition.true(ConditionType.EXPORTED, reason="Exported")
NOT_EXPORTED = Condition.false(ConditionType.EXPORTED, reason="ExportNotFound", message="the APIExport is gone")


def _by_type(*conditions: Condition) -> dict[ConditionType, Condition]:
    return {condition.type: condition for condition in conditions}


def test_a_fresh_publishedresource_announces_its_schema_and_its_export() -> None:
    events = condition_events(before={}, after=_by_type(VALID, PUBLISHED, EXPORTED))
    assert [(e.type, e.reason) for e in events] == [
        (EventType.NORMAL, "SchemaPublished"),
        (EventType.NORMAL, "Exported"),
    ]


def test_a_settled_publishedresource_records_nothing() -> None:
    settled = _by_type(VALID, PUBLISHED, EXPORTED)
    assert condition_events(before=settled, after=settled) == []


def test_a_condition_turning_false_is_a_warning_with_its_reason_once() -> None:
    before = _by_type(VALID, PUBLISHED, EXPORTED)
    (event,) = condition_events(before=before, after=_by_type(VALID, PUBLISHED, NOT_EXPORTED))
    assert event == EventSpec.warning("ExportNotFound", "Exported: the APIExport is gone")
    still = _by_type(
        VALID,
        PUBLISHED,
        Condition.false(ConditionType.EXPORTED, reason="ExportNotFound", message="the APIExport is still gone"),
    )
    assert condition_events(before=_by_type(VALID, PUBLISHED, NOT_EXPORTED), after=still) == []


def test_objects_failing_and_recovering_are_told_once_each() -> None:
    failing = synced_condition(total=10, failures=[("team-a/default/web", "taken")])
    worse = synced_condition(total=10, failures=[("team-a/default/web", "taken"), ("team-a/default/db", "taken")])
    fixed = synced_condition(total=10, failures=[])

    (warning,) = condition_events(before=_by_type(fixed), after=_by_type(failing))
    assert warning.type is EventType.WARNING and warning.reason == "ObjectsFailing"
    assert condition_events(before=_by_type(failing), after=_by_type(worse)) == []
    (normal,) = condition_events(before=_by_type(worse), after=_by_type(fixed))
    assert (normal.type, normal.reason) == (EventType.NORMAL, "Synced")
    # A worker (re)starting is no news: it counts from nothing, or from Unknown.
    assert condition_events(before={}, after=_by_type(fixed)) == []
    restarted = Condition.unknown(ConditionType.SYNCED, reason="NotSyncing")
    assert condition_events(before=_by_type(restarted), after=_by_type(fixed)) == []


def test_every_reason_on_users_objects_is_in_the_operations_guide() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    table = guide.split("## Events", 1)[1].split("\n## ", 1)[0]
    missing = [reason for reason in OBJECT_REASONS if f"| `{reason}` |" not in table]
    assert missing == [], f"docs/operations.md#events does not list {missing}"
