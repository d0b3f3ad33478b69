"""What a replica tells the others of its share's `Synced` state, and the condition for all shares.

With `--buckets`, each replica syncs the workspaces of its buckets, but only the leader writes a
PublishedResource's status. So that its `Synced` condition counts every object, each replica
writes a summary per PublishedResource (objects, failing objects, the first few failures) into an
annotation of its membership Lease, and the leader adds the live replicas' summaries to its own.

The annotation is read from Leases anyone with Lease rights may write, so reading it never fails:
what cannot be read as a summary is left out (and the counts are then those of the others).

Deliberately not here: the Leases (`app/runtime/buckets.py`) and when the condition is reported
(`app/controllers/sync_tally.py`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from attrs import frozen

from servlet.core.conditions import NAMED_FAILURES, Condition, synced_condition
from servlet.core.metadata import PREFIX

# On a replica's membership Lease: {PublishedResource name: [objects, failing, [[object, reason], ...]]}.
SHARES_ANNOTATION = f"{PREFIX}synced-shares"


@frozen
class ShareSummary:
    """One replica's objects of one PublishedResource: how many, how many fail, the first failures."""

    total: int
    failing: int
    failures: tuple[tuple[str, str], ...] = ()


def encode_shares(summaries: Mapping[str, ShareSummary]) -> str:
    """The annotation's value: compact JSON, in name order, each with at most `NAMED_FAILURES` failures."""
    return json.dumps(
        {
            name: [summary.total, summary.failing, [list(failure) for failure in summary.failures[:NAMED_FAILURES]]]
            for name, summary in sorted(summaries.items())
        },
        separators=(",", ":"),
    )


def decode_shares(text: str) -> dict[str, ShareSummary]:
    """The summaries in an annotation's value; what is not a summary is left out."""
    try:
        data = json.loads(text)
    except ValueError:
        return {}
    if not isinstance(data, dict):
        return {}
    summaries: dict[str, ShareSummary] = {}
    for name, value in data.items():
        summary = _summary(value)
        if summary is not None:
            summaries[name] = summary
    return summaries


def _summary(value: object) -> ShareSummary | None:
    if not (isinstance(value, list) and len(value) == 3):
        return None
    total, failing, failures = value
    if not (_count(total) and _count(failing) and isinstance(failures, list)):
        return None
    named = tuple(
        (where, reason)
        for where, reason in (pair for pair in failures if isinstance(pair, list) and len(pair) == 2)
        if isinstance(where, str) and isinstance(reason, str)
    )
    return ShareSummary(total=total, failing=failing, failures=named[:NAMED_FAILURES])


def _count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def synced_of_shares(own: ShareSummary, others: Iterable[ShareSummary]) -> Condition:
    """`Synced` over this replica's share and the others': counts added, failures named in order."""
    shares = [own, *others]
    failures = sorted(failure for share in shares for failure in share.failures)
    return synced_condition(
        total=sum(share.total for share in shares),
        failures=failures,
        failing=sum(share.failing for share in shares),
    )
