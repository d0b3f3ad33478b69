"""Leader election with a `coordination.k8s.io/v1` Lease, so only one replica writes.

The protocol is client-go's:

- a candidate takes the Lease when it does not exist, has no holder, or has expired
  (`renewTime + leaseDurationSeconds` before now); every write carries the resourceVersion it
  read, so of two candidates racing for one Lease exactly one wins (the other gets a 409);
- the leader renews every `retry_period`; when it has not managed to renew for `renew_deadline`
  it steps down at once (before anyone else may take over, as `renew_deadline` <
  `lease_duration`), so a partitioned leader stops writing before a new one starts;
- on shutdown the leader releases the Lease (clears `holderIdentity`) so a follower takes over
  immediately instead of waiting for expiry.

The Lease is read and written through the `Leases` port (`adapters/leases.py`, or the in-memory
fake); the clock and the identity are injected: the daemon passes the real UTC clock and a pod-unique
identity; tests pass a controllable clock. Waiting between attempts uses real (short) sleeps.

Deliberately not here: stopping the controllers. The elector only reports (`is_leader`,
`became_leader`, `on_lost`); the daemon decides what losing the lease stops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from attrs import frozen

from servlet.core.errors import AlreadyExists, ApiFailure, Conflict
from servlet.core.ports import LEASE_TYPE, Leases

_log = logging.getLogger(__name__)


@frozen
class LeaseTiming:
    """Seconds. `lease_duration` is written into the Lease, so it is whole seconds there."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __attrs_post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError(
                "lease timing must satisfy 0 < retry_period < renew_deadline < lease_duration, got "
                f"{self.retry_period} / {self.renew_deadline} / {self.lease_duration}"
            )


def format_micro_time(moment: datetime) -> str:
    """A Kubernetes MicroTime: RFC 3339 in UTC with exactly six fractional digits."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


class LeaderElector:
    """Campaigns for the Lease `namespace/name` as `identity` until stopped."""

    def __init__(
        self,
        leases: Leases,
        *,
        name: str,
        namespace: str,
        identity: str,
        clock: Callable[[], datetime],
        timing: LeaseTiming = LeaseTiming(),
        on_lost: Callable[[], None] | None = None,
        annotations: Callable[[], dict[str, str]] | None = None,
    ) -> None:
        self._leases = leases
        # Written on the Lease with every renewal (a replica's news for the others; no extra request).
        self._annotations = annotations
        self.name = name
        self.namespace = namespace
        self.identity = identity
        self._clock = clock
        self._timing = timing
        self._on_lost = on_lost
        self._leader = False
        self._last_renew: datetime | None = None
        #: Set while this replica leads; cleared the moment it stops.
        self.became_leader = asyncio.Event()
        #: Whether the first attempt has completed, so /readyz can tell "follower" from "unknown".
        self.leadership_known = False
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    @property
    def is_leader(self) -> bool:
        return self._leader

    def holds_lease(self) -> bool:
        """Leading, and renewed less than `renew_deadline` ago by the clock: asked before a write,
        so a replica that was paused or cut off writes nothing, even before its loop runs again."""
        return self._leader and not self._renew_deadline_passed()

    # -- running -------------------------------------------------------------------------------

    def start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"leader election {self.name}")
        return self._task

    async def stop(self, *, release: bool = True) -> None:
        """Stop campaigning; a leader stops leading and (by default) hands the Lease back."""
        task, self._task = self._task, None
        self._stopping = True
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if release:
            await self.release()
        else:
            self._step_down("stopped")

    async def run(self) -> None:
        self._stopping = False
        try:
            while not self._stopping:
                await self.attempt()
                await asyncio.sleep(self._timing.retry_period)
        finally:
            # Whoever stops this loop, nobody renews any more: stop leading now, not at expiry.
            self._step_down("election loop stopped")

    async def attempt(self) -> bool:
        """One acquire-or-renew round; returns whether this replica leads afterwards."""
        if self._leader and self._renew_deadline_passed():
            # Paused or cut off for too long: by now another replica may be about to take over.
            self._step_down("could not renew the lease in time")
        # A leader's request may not outlive its renew deadline, so it never leads past it.
        timeout = self._time_to_deadline() if self._leader else self._timing.renew_deadline
        renewed_at: datetime | None = None
        try:
            # asyncio.timeout, not wait_for: on Python 3.11 wait_for can swallow a cancellation
            # that arrives as the request completes, and a stop() would then never end.
            async with asyncio.timeout(timeout):
                renewed_at = await self._try_acquire_or_renew()
        except (ApiFailure, TimeoutError) as exc:
            _log.warning("lease update failed", extra={"lease": self.name, "error": str(exc) or "timed out"})
        except Exception:  # an unexpected failure counts as a failed renew, never as leading on
            _log.exception("lease update failed unexpectedly", extra={"lease": self.name})
        self.leadership_known = True
        if renewed_at is not None:
            self._last_renew = renewed_at
            if not self._leader:
                self._leader = True
                self.became_leader.set()
                _log.info("became leader", extra={"lease": self.name, "identity": self.identity})
        elif self._leader and self._renew_deadline_passed():
            self._step_down("could not renew the lease in time")
        return self._leader

    async def release(self) -> None:
        """Stop leading and clear the holder, so another replica can take over at once."""
        self._step_down("released")
        try:
            lease = await self._get()
            if lease is None or _spec(lease).get("holderIdentity") != self.identity:
                return  # not ours (any more): nothing to hand back
            now = format_micro_time(self._clock())
            spec = _spec(lease)
            spec["holderIdentity"] = None
            spec["leaseDurationSeconds"] = 1
            spec["renewTime"] = now
            spec["acquireTime"] = now
            await self._replace(lease)
        except ApiFailure as exc:
            # The lease expires on its own; releasing only makes the hand-over faster.
            _log.warning("could not release the lease", extra={"lease": self.name, "error": str(exc)})

    # -- internals -----------------------------------------------------------------------------

    async def _try_acquire_or_renew(self) -> datetime | None:
        """The renewTime written if this replica now holds the lease, else None."""
        now = self._clock()
        lease = await self._get()
        if lease is None:
            try:
                await self._create(now)
            except AlreadyExists:
                return None  # another candidate created it first
            return now
        spec = _spec(lease)
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity and not self._expired(spec, now):
            return None
        if holder != self.identity:
            spec["acquireTime"] = format_micro_time(now)
            spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        spec["holderIdentity"] = self.identity
        spec["leaseDurationSeconds"] = self._duration_seconds()
        spec["renewTime"] = format_micro_time(now)
        self._annotate(lease)
        try:
            await self._replace(lease)
        except Conflict:
            return None  # someone wrote the lease since we read it: they won this round
        return now

    def _expired(self, spec: dict[str, Any], now: datetime) -> bool:
        renewed = parse_time(str(spec.get("renewTime") or ""))
        duration = spec.get("leaseDurationSeconds")
        if renewed is None or not isinstance(duration, int):
            return True
        return renewed + timedelta(seconds=duration) < now

    def _time_to_deadline(self) -> float:
        if self._last_renew is None:
            return 0.0
        elapsed = (self._clock() - self._last_renew).total_seconds()
        return max(0.0, self._timing.renew_deadline - elapsed)

    def _renew_deadline_passed(self) -> bool:
        return self._time_to_deadline() <= 0

    def _step_down(self, why: str) -> None:
        if not self._leader:
            return
        self._leader = False
        self.became_leader.clear()
        _log.warning("stopped leading", extra={"lease": self.name, "identity": self.identity, "reason": why})
        if self._on_lost is not None:
            self._on_lost()

    def _duration_seconds(self) -> int:
        return max(1, round(self._timing.lease_duration))

    async def _get(self) -> dict[str, Any] | None:
        return await self._leases.get_lease(namespace=self.namespace, name=self.name)

    async def _create(self, now: datetime) -> None:
        stamp = format_micro_time(now)
        lease = {
            "apiVersion": LEASE_TYPE.api_version,
            "kind": LEASE_TYPE.kind,
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {
                "holderIdentity": self.identity,
                "leaseDurationSeconds": self._duration_seconds(),
                "acquireTime": stamp,
                "renewTime": stamp,
                "leaseTransitions": 0,
            },
        }
        self._annotate(lease)
        await self._leases.create_lease(lease)

    def _annotate(self, lease: dict[str, Any]) -> None:
        if self._annotations is not None:
            metadata = lease.setdefault("metadata", {})
            metadata["annotations"] = {**(metadata.get("annotations") or {}), **self._annotations()}

    async def _replace(self, lease: dict[str, Any]) -> None:
        # The resourceVersion we read travels along: the write fails (Conflict) if anyone wrote since.
        await self._leases.replace_lease(lease)


def _spec(lease: dict[str, Any]) -> dict[str, Any]:
    spec = lease.get("spec")
    if not isinstance(spec, dict):
        spec = {}
        lease["spec"] = spec
    return spec
