"""What replicas tell each other of their shares' `Synced` state, and the condition over all shares."""

from __future__ import annotations

import pytest
from hypothesis import given, strategies as st

from servlet.core.conditions import NAMED_FAILURES, ConditionStatus
from servlet.core.sync_shares import ShareSummary, decode_shares, encode_shares, synced_of_shares

failures = st.lists(st.tuples(st.text(max_size=20), st.text(max_size=40)), max_size=NAMED_FAILURES)
summaries = st.builds(
    ShareSummary,
    total=st.integers(min_value=0, max_value=10**9),
    failing=st.integers(min_value=0, max_value=10**9),
    failures=failures.map(tuple),
)


@given(st.dictionaries(st.text(min_size=1, max_size=30), summaries, max_size=5))
def test_what_a_replica_writes_is_what_the_others_read(shares: dict[str, ShareSummary]) -> None:
    assert decode_shares(encode_shares(shares)) == shares


def test_only_the_first_failures_travel() -> None:
    many = ShareSummary(total=9, failing=5, failures=tuple((f"ws/default/w{i}", "taken") for i in range(5)))

    assert decode_shares(encode_shares({"widgets": many}))["widgets"].failures == many.failures[:NAMED_FAILURES]


@pytest.mark.parametrize(
    "text",
    [
        "",
        "not json",
        "[]",
        '{"widgets": [1, 2]}',
        '{"widgets": [-1, 0, []]}',
        '{"widgets": [true, 0, []]}',
        '{"widgets": ["3", 0, []]}',
        '{"widgets": [3, 0, {}]}',
    ],
)
def test_an_annotation_that_is_no_summary_is_left_out(text: str) -> None:
    assert decode_shares(text) == {}


def test_a_malformed_failure_is_left_out_and_the_rest_kept() -> None:
    text = '{"widgets": [4, 2, [["ws/default/a", "taken"], ["half"], [1, 2]]], "bad": 7}'

    assert decode_shares(text) == {"widgets": ShareSummary(total=4, failing=2, failures=(("ws/default/a", "taken"),))}


def test_the_condition_adds_the_counts_and_names_the_first_failures_of_all_shares() -> None:
    own = ShareSummary(total=10, failing=1, failures=(("b/default/w", "taken"),))
    other = ShareSummary(total=5, failing=4, failures=(("a/default/x", "taken"), ("a/default/y", "taken")))

    synced = synced_of_shares(own, [other])

    assert synced.status is ConditionStatus.FALSE
    assert synced.message == (
        "5 of 15 object(s) fail to sync: a/default/x: taken; a/default/y: taken; b/default/w: taken; and 2 more"
    )


def test_shares_without_failures_are_in_sync_together() -> None:
    synced = synced_of_shares(ShareSummary(total=3, failing=0), [ShareSummary(total=4, failing=0)])

    assert (synced.status, synced.message) == (ConditionStatus.TRUE, "all 7 object(s) are in sync")
