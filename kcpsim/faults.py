"""Fault injection: error rates, latency, cut watch streams and refused connections.

A `FaultPlan` is plain data (settable at start, replaceable while running through the fixture
API or `PUT /_kcpsim/faults`). Decisions use one seeded `random.Random`, and every rule can be
bounded by `limit` (how many times it may fire), so a test gets the same faults on every run.
This module decides *whether* a fault happens; the server carries it out.
"""

from __future__ import annotations

import random
import threading
from typing import Any

import attrs

VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


def _matches(pattern: str, value: str) -> bool:
    return pattern in ("*", "") or pattern == value


@attrs.frozen
class ErrorRule:
    """Answer matching requests with `status` (500, 429 with Retry-After, 409, ...) at `rate`."""

    status: int
    rate: float = 1.0
    verb: str = "*"
    resource: str = "*"  # plural, e.g. "secrets"
    cluster: str = "*"  # logical cluster name, "*" wildcard requests included
    limit: int | None = None  # fire at most this many times
    retry_after: int = 1  # seconds, for 429
    target: str = "*"  # "service" (cluster at /), "workspace" (/clusters/...), "vw" (virtual workspace) or "*"
    # The message quotes the request body, as an admission webhook explaining its denial may.
    quote_body: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ErrorRule:
        return cls(**{k: v for k, v in data.items() if k in attrs.fields_dict(cls)})


@attrs.frozen
class LatencyRule:
    """Delay matching requests by `seconds` plus up to `jitter` more."""

    seconds: float
    jitter: float = 0.0
    verb: str = "*"
    resource: str = "*"
    cluster: str = "*"
    limit: int | None = None
    target: str = "*"

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> LatencyRule:
        return cls(**{k: v for k, v in data.items() if k in attrs.fields_dict(cls)})


@attrs.frozen
class FaultPlan:
    errors: tuple[ErrorRule, ...] = ()
    latency: tuple[LatencyRule, ...] = ()
    # Every watch stream is cut after this many seconds (None: never); `watch_cut_abort` drops
    # the connection mid-stream instead of ending the chunked response cleanly.
    watch_max_seconds: float | None = None
    watch_cut_abort: bool = False
    seed: int = 0

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FaultPlan:
        return cls(
            errors=tuple(ErrorRule.from_dict(e) for e in data.get("errors") or ()),
            latency=tuple(LatencyRule.from_dict(e) for e in data.get("latency") or ()),
            watch_max_seconds=data.get("watch_max_seconds"),
            watch_cut_abort=bool(data.get("watch_cut_abort", False)),
            seed=int(data.get("seed", 0)),
        )

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Decision:
    delay: float = 0.0
    error: ErrorRule | None = None


class Faults:
    """The live fault state of one server."""

    def __init__(self, plan: FaultPlan | None = None) -> None:
        self._lock = threading.Lock()
        self.plan = plan or FaultPlan()
        self._rng = random.Random(self.plan.seed)
        self._fired: dict[int, int] = {}
        self.refuse_until = 0.0  # monotonic time until which connections are refused

    def set_plan(self, plan: FaultPlan) -> None:
        with self._lock:
            self.plan = plan
            self._rng = random.Random(plan.seed)
            self._fired = {}

    def clear(self) -> None:
        self.set_plan(FaultPlan())

    def fired(self) -> int:
        with self._lock:
            return sum(self._fired.values())

    def _may_fire(self, index: int, limit: int | None) -> bool:
        return limit is None or self._fired.get(index, 0) < limit

    def decide(self, *, verb: str, resource: str, cluster: str, target: str = "*") -> Decision:
        """`target` is where the request landed: "service", "workspace" or "vw"."""
        with self._lock:
            delay = 0.0
            for index, lat in enumerate(self.plan.latency):
                key = 10_000 + index
                if (
                    _matches(lat.verb, verb)
                    and _matches(lat.resource, resource)
                    and _matches(lat.cluster, cluster)
                    and _matches(lat.target, target)
                    and self._may_fire(key, lat.limit)
                ):
                    self._fired[key] = self._fired.get(key, 0) + 1
                    delay += lat.seconds + (self._rng.random() * lat.jitter if lat.jitter else 0.0)
            for index, rule in enumerate(self.plan.errors):
                if (
                    _matches(rule.verb, verb)
                    and _matches(rule.resource, resource)
                    and _matches(rule.cluster, cluster)
                    and _matches(rule.target, target)
                    and self._may_fire(index, rule.limit)
                    and self._rng.random() < rule.rate
                ):
                    self._fired[index] = self._fired.get(index, 0) + 1
                    return Decision(delay=delay, error=rule)
            return Decision(delay=delay)
