"""PublishedResource status conditions: merging reports, transition times, Ready, no-op writes."""

from __future__ import annotations

from typing import Any

import pytest

from servlet.core.conditions import (
    MESSAGE_LIMIT,
    Condition,
    ConditionStatus,
    ConditionType,
    parse_conditions,
    ready_condition,
    status_patch,
    synced_condition,
)

T0 = "2026-11-21T09:00:00Z"
T1 = "2026-11-21T09:05:00Z"
VALID = Condition.true(ConditionType.VALID, reason="Valid", message="the spec is valid")
PUBLISHED = Condition.true(ConditionType.SCHEMA_PUBLISHED, reason="Published", message="schema v1 exists")
EXPORTED = Condition.true(ConditionType.EXPORTED, reason="Exported", message="in the export")
SYNCING = Condition.true(ConditionType.SYNCING, reason="Syncing", message="watching")
ALL_TRUE = (VALID, PUBLISHED, EXPORTED, SYNCING)


def _written(
    reported: Any,
    *,
    current: dict[str, Any] | None = None,
    generation: int = 1,
    now: str = T0,
    schema: str | None = None,
) -> dict[str, Any]:
    patch = status_patch(
        current=current, reported=reported, generation=generation, now=now, resource_schema_name=schema
    )
    assert patch is not None, "expected a status change"
    return {**(current or {}), **patch["status"]}


def _by_type(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["type"]: entry for entry in status["conditions"]}


def test_a_first_report_writes_every_condition_in_order_with_generation_and_time() -> None:
    status = _written(ALL_TRUE, generation=3, schema="v1234abcd.widgets.example.corp")
    assert [entry["type"] for entry in status["conditions"]] == [
        "Valid",
        "SchemaPublished",
        "Exported",
        "Syncing",
        "Ready",
    ]
    for entry in status["conditions"]:
        assert entry["status"] == "True"
        assert entry["observedGeneration"] == 3
        assert entry["lastTransitionTime"] == T0
        assert entry["reason"]
    assert status["resourceSchemaName"] == "v1234abcd.widgets.example.corp"


def test_reporting_the_same_again_writes_nothing() -> None:
    status = _written(ALL_TRUE, schema="v1.widgets.example.corp")
    assert (
        status_patch(
            current=status, reported=ALL_TRUE, generation=1, now=T1, resource_schema_name="v1.widgets.example.corp"
        )
        is None
    )


@pytest.mark.parametrize(
    "change, transition_moves",
    [
        (Condition.true(ConditionType.SYNCING, reason="Syncing", message="watching 3 workspaces"), False),
        (Condition.true(ConditionType.SYNCING, reason="Resumed", message="watching"), False),
        (Condition.false(ConditionType.SYNCING, reason="WaitingForVirtualWorkspace", message="no URL yet"), True),
    ],
    ids=["message-only", "reason-only", "status-flip"],
)
def test_the_transition_time_moves_only_when_the_status_changes(change: Condition, transition_moves: bool) -> None:
    before = _written(ALL_TRUE)
    after = _written((VALID, PUBLISHED, EXPORTED, change), current=before, now=T1)
    syncing = _by_type(after)["Syncing"]
    assert syncing["reason"] == change.reason and syncing["message"] == change.message
    assert syncing["lastTransitionTime"] == (T1 if transition_moves else T0)
    assert _by_type(after)["Valid"]["lastTransitionTime"] == T0


@pytest.mark.parametrize(
    "reported, ready_status, reason",
    [
        (ALL_TRUE, "True", "Ready"),
        (
            (
                Condition.false(
                    ConditionType.VALID, reason="InvalidSpec", message="spec.naming.name: unknown placeholder"
                ),
                Condition.false(ConditionType.SCHEMA_PUBLISHED, reason="InvalidSpec"),
            ),
            "False",
            "InvalidSpec",
        ),
        (
            (VALID, PUBLISHED, Condition.false(ConditionType.EXPORTED, reason="ExportNotFound", message="gone")),
            "False",
            "ExportNotFound",
        ),
        (
            (
                VALID,
                PUBLISHED,
                EXPORTED,
                Condition.false(ConditionType.SYNCING, reason="WaitingForVirtualWorkspace", message="no URL"),
            ),
            "False",
            "WaitingForVirtualWorkspace",
        ),
        ((VALID, PUBLISHED), "Unknown", "Pending"),
    ],
    ids=["all-true", "invalid", "not-exported", "waiting-for-vw", "not-all-reported"],
)
def test_ready_summarises_the_other_conditions(reported: tuple[Condition, ...], ready_status: str, reason: str) -> None:
    ready = _by_type(_written(reported))["Ready"]
    assert (ready["status"], ready["reason"]) == (ready_status, reason)


def test_ready_names_the_condition_at_fault_and_its_message() -> None:
    ready = ready_condition(
        {
            ConditionType.VALID: Condition.false(
                ConditionType.VALID, reason="InvalidSpec", message="spec.naming.name: unknown placeholder $remoteNme"
            ),
        }
    )
    assert ready.status is ConditionStatus.FALSE
    assert ready.message == "Valid: spec.naming.name: unknown placeholder $remoteNme"


def test_a_false_condition_wins_over_an_earlier_unknown_one() -> None:
    ready = ready_condition({ConditionType.SYNCING: Condition.false(ConditionType.SYNCING, reason="Stopped")})
    assert (ready.status, ready.reason) == (ConditionStatus.FALSE, "Stopped")


def test_conditions_not_reported_since_a_restart_keep_their_value_and_time() -> None:
    before = _written(ALL_TRUE)
    # A restarted servlet has only heard from the schema controller so far.
    assert status_patch(current=before, reported=(VALID, PUBLISHED), generation=1, now=T1) is None
    after = _written(
        (VALID, PUBLISHED, EXPORTED, Condition.false(ConditionType.SYNCING, reason="CachesNotSynced")),
        current=before,
        now=T1,
    )
    assert _by_type(after)["Ready"]["lastTransitionTime"] == T1
    assert _by_type(after)["Exported"]["lastTransitionTime"] == T0


def test_a_new_generation_is_recorded_even_when_nothing_else_changes() -> None:
    before = _written(ALL_TRUE, generation=1)
    after = _written(ALL_TRUE, current=before, generation=2, now=T1)
    assert {entry["observedGeneration"] for entry in after["conditions"]} == {2}
    assert {entry["lastTransitionTime"] for entry in after["conditions"]} == {T0}


def test_conditions_of_other_writers_are_kept() -> None:
    foreign = {
        "type": "example.com/Audited",
        "status": "True",
        "reason": "Checked",
        "message": "",
        "lastTransitionTime": T0,
    }
    after = _written(ALL_TRUE, current={"conditions": [foreign]})
    assert after["conditions"][-1] == foreign


def test_an_unchanged_schema_name_is_not_rewritten_and_none_leaves_it_alone() -> None:
    before = _written(ALL_TRUE, schema="v1.widgets.example.corp")
    assert status_patch(current=before, reported=ALL_TRUE, generation=1, now=T1, resource_schema_name=None) is None
    patch = status_patch(
        current=before, reported=ALL_TRUE, generation=1, now=T1, resource_schema_name="v2.widgets.example.corp"
    )
    assert patch == {"status": {"resourceSchemaName": "v2.widgets.example.corp"}}


def test_very_long_messages_are_cut_to_fit_the_crd() -> None:
    long = Condition.false(ConditionType.VALID, reason="InvalidSpec", message="x" * (MESSAGE_LIMIT * 3))
    valid = _by_type(_written((long,)))["Valid"]
    assert len(valid["message"]) == MESSAGE_LIMIT and valid["message"].endswith("...")


def test_parse_conditions_reads_ours_and_ignores_garbage() -> None:
    status = {
        "conditions": [
            {"type": "Valid", "status": "False", "reason": "InvalidSpec", "message": "bad"},
            {"type": "Ready", "status": "Maybe"},
            "junk",
            {"type": "Other", "status": "True"},
        ]
    }
    assert parse_conditions(status) == {
        ConditionType.VALID: Condition.false(ConditionType.VALID, reason="InvalidSpec", message="bad")
    }


# -- Synced: the objects' truth ----------------------------------------------------------------

FAILURES = [
    ("team-a/default/web", "the local name default/web is taken"),
    ("team-a/default/db", "too large"),
    ("team-b/prod/api", "invalid name"),
    ("team-b/prod/old", "cannot read Secret x"),
]


def test_synced_counts_the_failing_objects_and_names_the_first_few() -> None:
    synced = synced_condition(total=120, failures=FAILURES)

    assert synced.status is ConditionStatus.FALSE and synced.reason == "ObjectsFailing"
    assert synced.message.startswith("4 of 120 object(s) fail to sync: team-a/default/web: the local name")
    assert "team-b/prod/api: invalid name; and 1 more" in synced.message
    assert "team-b/prod/old" not in synced.message


def test_synced_is_true_when_no_object_fails() -> None:
    synced = synced_condition(total=120, failures=[])
    assert synced.status is ConditionStatus.TRUE and synced.message == "all 120 object(s) are in sync"


def test_some_objects_failing_leaves_ready_true_and_says_so_in_synced() -> None:
    synced = synced_condition(total=120, failures=FAILURES[:1])
    status = _written((*ALL_TRUE, synced))

    assert [entry["type"] for entry in status["conditions"]] == [
        "Valid",
        "SchemaPublished",
        "Exported",
        "Syncing",
        "Synced",
        "Ready",
    ]
    assert _by_type(status)["Ready"]["status"] == "True"
    assert _by_type(status)["Synced"]["message"].startswith("1 of 120 object(s) fail to sync")


def test_every_object_failing_makes_ready_false() -> None:
    synced = synced_condition(total=2, failures=FAILURES[:2])
    ready = ready_condition({c.type: c for c in (*ALL_TRUE, synced)})

    assert synced.reason == "NoObjectSyncs"
    assert ready.status is ConditionStatus.FALSE and ready.reason == "NoObjectSyncs"
    assert ready.message.startswith("Synced: 2 of 2 object(s) fail to sync")


def test_a_missing_synced_condition_does_not_hold_ready_back() -> None:
    # A worker reports Synced once its caches are synced; Ready does not wait for it.
    assert ready_condition({c.type: c for c in ALL_TRUE}).status is ConditionStatus.TRUE


def test_while_nothing_syncs_the_last_count_is_not_shown_as_current() -> None:
    counted = _written((*ALL_TRUE, synced_condition(total=5, failures=[])))
    stopped = Condition.false(ConditionType.SYNCING, reason="CRDNotFound", message="the CRD is gone")

    after = _by_type(
        _written((VALID, PUBLISHED, EXPORTED, stopped, synced_condition(total=5, failures=[])), current=counted, now=T1)
    )

    assert (after["Synced"]["status"], after["Synced"]["reason"]) == ("Unknown", "NotSyncing")
    assert after["Ready"]["reason"] == "CRDNotFound"
