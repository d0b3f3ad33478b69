"""Replicas dividing the workspaces among themselves through Leases: membership, buckets, fencing.

Every replica holds one membership Lease, `<prefix>-member-<hash of its identity>`, renewed like
the leader's; the live members are the holders of unexpired membership Leases. Each bucket
(`core.buckets`) has a Lease `<prefix>-bucket-<n>`. Every `retry_period` a replica lists the
Leases, computes with `core.buckets.assign` which buckets it should own (keeping live holders
where balance allows), and then:

- campaigns for an intended bucket with a `LeaderElector`, which takes the Lease only when it is
  free or expired, so a bucket changes hands only after its holder released it or stopped
  renewing;
- for a bucket it holds but should no longer own: stops writing to it at once (`may_write` says
  no), waits until its writes in flight are done, and only then releases the Lease, so the next
  owner starts after the last write of this one.

Writes to a workspace go through `writing(cluster)`, which refuses (`BucketNotHeld`) unless the
bucket's Lease is held and was renewed less than `renew_deadline` ago: a replica paused past its
deadline, or cut off from the API server, writes nothing more before anyone else may take over.
Membership Leases of replicas gone for `STALE_MEMBER_DURATIONS` lease durations are deleted by
whichever replica sees them first, so replaced pods leave nothing behind.

Deliberately not here: which buckets a workspace is in and who should own them (`core.buckets`),
and what runs for an owned bucket (the callers, told through `on_owned`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import Counter
from collections.abc import AsyncIterator, Callable
from datetime import datetime, timedelta
from typing import Any

from servlet.app.runtime.leader import LeaderElector, LeaseTiming, parse_time
from servlet.core.buckets import assign, bucket_of, owned_by
from servlet.core.errors import ApiFailure, NotFound
from servlet.core.hashing import sha1_hex
from servlet.core.ports import Leases

_log = logging.getLogger(__name__)

# A membership Lease unrenewed for this many lease durations belongs to a replica that is gone.
STALE_MEMBER_DURATIONS = 10


class BucketNotHeld(Exception):
    """A write to a workspace whose bucket this replica does not hold (any more)."""

    def __init__(self, cluster: str, bucket: int) -> None:
        super().__init__(f"workspace {cluster} is in bucket {bucket}, which this replica does not hold")
        self.cluster = cluster
        self.bucket = bucket


class BucketCoordinator:
    """Keeps this replica's share of `buckets` buckets, as `identity`, until stopped."""

    def __init__(
        self,
        leases: Leases,
        *,
        prefix: str,
        namespace: str,
        identity: str,
        buckets: int,
        clock: Callable[[], datetime],
        timing: LeaseTiming = LeaseTiming(),
        on_owned: Callable[[frozenset[int]], None] | None = None,
        member_annotations: Callable[[], dict[str, str]] | None = None,
        on_members: Callable[[dict[str, dict[str, str]]], None] | None = None,
    ) -> None:
        if buckets < 1:
            raise ValueError(f"--buckets must be at least 1, got {buckets}")
        self._leases = leases
        self.prefix = prefix
        self.namespace = namespace
        self.identity = identity
        self.buckets = buckets
        self._clock = clock
        self._timing = timing
        self._on_owned = on_owned
        # What this replica tells the others (written with each renewal of its membership Lease),
        # and who hears what the other live members tell (identity: annotations), when it changes.
        self._on_members = on_members
        self._heard: dict[str, dict[str, str]] = {}
        self.membership = self._elector(f"{prefix}-member-{sha1_hex(identity)[:12]}", annotations=member_annotations)
        self._electors: dict[int, LeaderElector] = {}
        self._draining: dict[int, asyncio.Task[None]] = {}
        self._in_flight: Counter[int] = Counter()
        self._idle: dict[int, asyncio.Event] = {}
        self._owned: frozenset[int] = frozenset()
        self._task: asyncio.Task[None] | None = None

    # -- what callers ask ----------------------------------------------------------------------

    def bucket_of(self, cluster: str) -> int:
        return bucket_of(cluster, self.buckets)

    def owned(self) -> frozenset[int]:
        """The buckets this replica may write to now."""
        return frozenset(
            bucket
            for bucket, elector in self._electors.items()
            if bucket not in self._draining and elector.holds_lease()
        )

    def shares(self, cluster: str) -> bool:
        """Whether workspace `cluster` is in the buckets last told to `on_owned` (what the caches
        keep; writes ask `may_write`, which also looks at the clock)."""
        return self.bucket_of(cluster) in self._owned

    def may_write(self, cluster: str) -> bool:
        bucket = self.bucket_of(cluster)
        elector = self._electors.get(bucket)
        return elector is not None and bucket not in self._draining and elector.holds_lease()

    @contextlib.asynccontextmanager
    async def writing(self, cluster: str) -> AsyncIterator[None]:
        """Around one write to workspace `cluster`: refuses unless its bucket is held; a bucket
        being handed over waits for the writes inside before its Lease is released."""
        bucket = self.bucket_of(cluster)
        if not self.may_write(cluster):
            raise BucketNotHeld(cluster, bucket)
        self._in_flight[bucket] += 1
        self._idle.setdefault(bucket, asyncio.Event()).clear()
        try:
            yield
        finally:
            self._in_flight[bucket] -= 1
            if self._in_flight[bucket] <= 0:
                del self._in_flight[bucket]
                self._idle[bucket].set()

    # -- running -------------------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"buckets {self.prefix}")
        return self._task

    async def run(self) -> None:
        self.membership.start()
        while True:
            try:
                await self.rebalance()
            except ApiFailure as exc:
                _log.warning("could not read the bucket leases", extra={"error": str(exc)})
            except Exception:  # the next round tries again; the bucket electors run on regardless
                _log.exception("rebalancing the buckets failed unexpectedly")
            self._report_owned()
            await asyncio.sleep(self._timing.retry_period)

    async def stop(self, *, release: bool = True) -> None:
        """Stop writing to every bucket, let writes in flight finish, then (by default) release the
        bucket Leases and the membership Lease so the others take over at once."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        for bucket in list(self._electors):
            self._drain(bucket, release=release)
        await asyncio.gather(*self._draining.values(), return_exceptions=True)
        await self.membership.stop(release=release)
        self._report_owned()

    async def rebalance(self) -> None:
        """One round: read the Leases, start campaigning for intended buckets, hand back the others."""
        now = self._clock()
        leases = await self._leases.list_leases(namespace=self.namespace)
        members, holders = self._read(leases, now)
        self._hear(leases, members)
        await self._forget_stale_members(leases, now)
        # Its own membership by its own renewals: a replica that cannot stay a member hands back all.
        members.discard(self.identity)
        if self.membership.holds_lease():
            members.add(self.identity)
        intended = owned_by(assign(self.buckets, members, current=holders), self.identity) if members else frozenset()
        for bucket in sorted(intended - set(self._electors)):
            elector = self._elector(self._bucket_lease(bucket), on_lost=functools.partial(self._lost, bucket))
            self._electors[bucket] = elector
            elector.start()
        for bucket in sorted(set(self._electors) - intended):
            self._drain(bucket, release=True)

    # -- internals -----------------------------------------------------------------------------

    def _read(self, leases: list[dict[str, Any]], now: datetime) -> tuple[set[str], dict[int, str]]:
        members: set[str] = set()
        holders: dict[int, str] = {}
        buckets_by_name = {self._bucket_lease(bucket): bucket for bucket in range(self.buckets)}
        for lease in leases:
            name = str((lease.get("metadata") or {}).get("name") or "")
            spec = lease.get("spec") or {}
            holder = str(spec.get("holderIdentity") or "")
            if not holder or _expired_for(spec, now) > 0:
                continue
            if name.startswith(f"{self.prefix}-member-"):
                members.add(holder)
            elif name in buckets_by_name:
                holders[buckets_by_name[name]] = holder
        return members, holders

    def _hear(self, leases: list[dict[str, Any]], members: set[str]) -> None:
        """Tell `on_members` what the other live members' membership Leases carry, if it changed."""
        if self._on_members is None:
            return
        heard = {
            holder: dict((lease.get("metadata") or {}).get("annotations") or {})
            for lease in leases
            if str((lease.get("metadata") or {}).get("name") or "").startswith(f"{self.prefix}-member-")
            and (holder := str((lease.get("spec") or {}).get("holderIdentity") or "")) in members
            and holder != self.identity
        }
        if heard != self._heard:
            self._heard = heard
            self._on_members(heard)

    async def _forget_stale_members(self, leases: list[dict[str, Any]], now: datetime) -> None:
        stale_after = STALE_MEMBER_DURATIONS * self._timing.lease_duration
        for lease in leases:
            metadata = lease.get("metadata") or {}
            name = str(metadata.get("name") or "")
            if not name.startswith(f"{self.prefix}-member-") or name == self.membership.name:
                continue
            if _expired_for(lease.get("spec") or {}, now) > stale_after:
                with contextlib.suppress(NotFound, ApiFailure):
                    # With its uid, so a member that came back and made a new one keeps it.
                    await self._leases.delete_lease(
                        namespace=self.namespace, name=name, uid=str(metadata.get("uid") or "")
                    )

    def _drain(self, bucket: int, *, release: bool) -> None:
        if bucket in self._draining:
            return
        self._draining[bucket] = asyncio.create_task(self._hand_back(bucket, release=release))
        self._report_owned()

    async def _hand_back(self, bucket: int, *, release: bool) -> None:
        try:
            idle = self._idle.get(bucket)
            if idle is not None and self._in_flight[bucket]:
                await idle.wait()  # `may_write` already says no: only writes already begun remain
            elector = self._electors[bucket]
            await elector.stop(release=release)
        finally:
            self._electors.pop(bucket, None)
            self._draining.pop(bucket, None)
            self._report_owned()

    def _lost(self, bucket: int) -> None:
        if bucket not in self._draining:  # a hand-back steps down too, and is no loss
            _log.warning("lost a bucket lease", extra={"bucket": bucket, "identity": self.identity})
        self._report_owned()

    def _report_owned(self) -> None:
        owned = self.owned()
        if owned != self._owned:
            self._owned = owned
            _log.info("owned buckets changed", extra={"buckets": sorted(owned), "identity": self.identity})
            if self._on_owned is not None:
                self._on_owned(owned)

    def _bucket_lease(self, bucket: int) -> str:
        return f"{self.prefix}-bucket-{bucket}"

    def _elector(
        self,
        name: str,
        on_lost: Callable[[], None] | None = None,
        annotations: Callable[[], dict[str, str]] | None = None,
    ) -> LeaderElector:
        return LeaderElector(
            self._leases,
            name=name,
            namespace=self.namespace,
            identity=self.identity,
            clock=self._clock,
            timing=self._timing,
            on_lost=on_lost,
            annotations=annotations,
        )


def _expired_for(spec: dict[str, Any], now: datetime) -> float:
    """Seconds since the Lease expired (negative while it runs); a Lease without times is long expired."""
    renewed = parse_time(str(spec.get("renewTime") or ""))
    duration = spec.get("leaseDurationSeconds")
    if renewed is None or not isinstance(duration, int):
        return float("inf")
    return (now - (renewed + timedelta(seconds=duration))).total_seconds()
