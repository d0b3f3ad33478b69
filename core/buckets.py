"""How replicas divide the workspaces: a fixed number of buckets, and which live replica owns which.

A workspace belongs to the bucket a stable hash of its logical cluster name picks (`bucket_of`):
the same on every replica, in every process and release, so two replicas never disagree about
which bucket a workspace is in. The number of buckets is fixed by the operator (`--buckets`);
changing it moves workspaces between buckets, so every replica must run with the same number.

`assign` gives every bucket exactly one intended owner among the live members. It is rendezvous
(highest random weight) hashing with a cap per member: every (bucket, member) pair has a score
from a hash, and pairs are taken from the highest score down, a bucket going to the first member
that still has room. The caps keep the members within one bucket of each other; the scores make
the outcome independent of the order members are listed in. A live member keeps the buckets it
holds while it has room, so a join moves only what the newcomer's share needs and a leave only
the leaver's buckets. Every replica computes the same answer from the same Leases, with no
coordination beyond them.

Deliberately not here: the Leases that make the intent true (`app/runtime/buckets.py`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

DEFAULT_BUCKETS = 16


def _score(text: str) -> int:
    # SHA-256, not hash(): Python salts str hashes per process, and replicas must agree.
    return int.from_bytes(hashlib.sha256(text.encode("utf-8")).digest()[:8], "big")


def bucket_of(cluster: str, buckets: int) -> int:
    """The bucket (0 to `buckets` - 1) of the workspace whose logical cluster name is `cluster`."""
    if buckets < 1:
        raise ValueError(f"the number of buckets must be at least 1, got {buckets}")
    return _score(cluster) % buckets


def assign(buckets: int, members: Iterable[str], current: Mapping[int, str] | None = None) -> dict[int, str]:
    """Every bucket's intended owner among `members`; empty when there are none.

    `current` is who holds each bucket now (read from the bucket Leases): a live holder keeps a
    bucket while it has room, so a join or a leave moves only the buckets balance requires.
    Balanced: the members' counts differ by at most one. Deterministic in its inputs.
    """
    if buckets < 1:
        raise ValueError(f"the number of buckets must be at least 1, got {buckets}")
    live = sorted(set(members))
    if not live:
        return {}
    pairs = sorted(
        ((_score(f"{member}/{bucket}"), bucket, member) for bucket in range(buckets) for member in live),
        reverse=True,
    )
    held = current or {}
    room = _Room(buckets, live)
    owners: dict[int, str] = {}
    # First the holders keep what they have room for (their best-scored buckets first), then the
    # rest go by score: with no holders this is plain capped rendezvous hashing.
    for keeping in (True, False):
        for _, bucket, member in pairs:
            if bucket in owners or (keeping and held.get(bucket) != member):
                continue
            if room.take(member):
                owners[bucket] = member
    return owners


class _Room:
    """Caps that keep members within one bucket of each other: `base` each, and `extra` of them
    (the first to get there) one more."""

    def __init__(self, buckets: int, members: list[str]) -> None:
        self._base, self._extra = divmod(buckets, len(members))
        self._counts = dict.fromkeys(members, 0)
        self._above_base = 0

    def take(self, member: str) -> bool:
        count = self._counts[member]
        if count < self._base:
            self._counts[member] = count + 1
            return True
        if count == self._base and self._above_base < self._extra:
            self._counts[member] = count + 1
            self._above_base += 1
            return True
        return False


def owned_by(owners: Mapping[int, str], member: str) -> frozenset[int]:
    """The buckets `owners` gives `member`."""
    return frozenset(bucket for bucket, owner in owners.items() if owner == member)
