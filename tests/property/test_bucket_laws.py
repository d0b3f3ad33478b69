"""Laws of dividing workspaces among replicas (`core/buckets.py`)."""

from __future__ import annotations

import subprocess
import sys
from collections import Counter

from hypothesis import given, settings, strategies as st

from servlet.core.buckets import assign, bucket_of, owned_by

BUCKET_COUNTS = st.integers(min_value=1, max_value=64)
# Logical cluster names are short lowercase base-36 strings; any text must work all the same.
CLUSTERS = st.text(min_size=1, max_size=20)
MEMBERS = st.lists(
    st.text(alphabet="abcdefghij-0123456789", min_size=1, max_size=12), min_size=1, max_size=9, unique=True
)


@given(cluster=CLUSTERS, buckets=BUCKET_COUNTS)
def test_a_workspace_is_in_one_bucket_within_range(cluster: str, buckets: int) -> None:
    assert 0 <= bucket_of(cluster, buckets) < buckets
    assert bucket_of(cluster, buckets) == bucket_of(cluster, buckets)


def test_every_process_puts_a_workspace_in_the_same_bucket() -> None:
    """Replicas are separate processes; Python salts its own str hash per process."""
    names = [f"2x{index}abc" for index in range(50)]
    script = f"from servlet.core.buckets import bucket_of; print([bucket_of(n, 16) for n in {names!r}])"
    seen = {
        subprocess.run(
            [sys.executable, "-c", script], env={"PYTHONHASHSEED": seed}, capture_output=True, text=True, check=True
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert seen == {f"{[bucket_of(name, 16) for name in names]}\n"}


def test_workspaces_spread_evenly_over_the_buckets() -> None:
    counts = Counter(bucket_of(f"cluster-{index:05d}", 16) for index in range(16_000))
    assert set(counts) == set(range(16))
    # 1,000 expected per bucket; a fair hash stays far inside +-15 % (about 5 standard deviations).
    assert all(850 <= count <= 1150 for count in counts.values()), counts


@given(buckets=BUCKET_COUNTS, members=MEMBERS)
def test_every_bucket_has_exactly_one_live_owner_and_the_load_is_balanced(buckets: int, members: list[str]) -> None:
    owners = assign(buckets, members)
    assert set(owners) == set(range(buckets))
    assert set(owners.values()) <= set(members)
    loads = [len(owned_by(owners, member)) for member in members]
    assert max(loads) - min(loads) <= 1, loads


@given(buckets=BUCKET_COUNTS, members=MEMBERS, data=st.data())
def test_the_assignment_depends_on_who_is_alive_not_on_the_order(
    buckets: int, members: list[str], data: st.DataObject
) -> None:
    shuffled = data.draw(st.permutations(members))
    assert assign(buckets, shuffled) == assign(buckets, members)


@settings(max_examples=200)
@given(buckets=BUCKET_COUNTS, members=MEMBERS, newcomer=st.text(alphabet="klmnop", min_size=1, max_size=6))
def test_a_join_moves_only_buckets_to_the_newcomer_and_only_its_share(
    buckets: int, members: list[str], newcomer: str
) -> None:
    before = assign(buckets, members)
    after = assign(buckets, [*members, newcomer], current=before)
    moved = {bucket for bucket in before if before[bucket] != after[bucket]}
    assert all(after[bucket] == newcomer for bucket in moved)
    # Its share: what balance over one more member requires, no more.
    assert len(moved) == len(owned_by(after, newcomer)) <= -(-buckets // (len(members) + 1))


@settings(max_examples=200)
@given(buckets=BUCKET_COUNTS, members=MEMBERS.filter(lambda names: len(names) > 1), data=st.data())
def test_a_leave_moves_only_the_leavers_buckets(buckets: int, members: list[str], data: st.DataObject) -> None:
    leaver = data.draw(st.sampled_from(members))
    before = assign(buckets, members)
    after = assign(buckets, [member for member in members if member != leaver], current=before)
    moved = {bucket for bucket in before if before[bucket] != after[bucket]}
    assert moved == owned_by(before, leaver)


@given(buckets=BUCKET_COUNTS, members=MEMBERS, data=st.data())
def test_holders_that_are_gone_or_over_their_share_never_keep_the_balance_from_holding(
    buckets: int, members: list[str], data: st.DataObject
) -> None:
    """Whatever the Leases say now (stale holders, one replica holding everything), the intent is balanced."""
    holders = st.sampled_from([*members, "gone-replica"])
    current = data.draw(st.dictionaries(st.integers(min_value=0, max_value=buckets - 1), holders))
    owners = assign(buckets, members, current=current)
    assert set(owners) == set(range(buckets))
    loads = [len(owned_by(owners, member)) for member in members]
    assert max(loads) - min(loads) <= 1, loads
