"""The daemon's Prometheus metrics, each behind a small typed method.

Every `Metrics` owns its own registry instead of prometheus_client's global one, so tests and two
daemons in one process never see each other's numbers. Callers record what happened through
methods with keyword arguments; label values come from enums or names the caller controls, which
keeps label cardinality bounded (never put an object name or an error message in a label).

Deliberately not here: serving the metrics over HTTP (`probes.py`) and measuring time (callers
pass durations they measured, so this module needs no clock).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

RECONCILES = "servlet_reconciles_total"
RECONCILE_DURATION = "servlet_reconcile_duration_seconds"
WORKQUEUE_DEPTH = "servlet_workqueue_depth"
API_REQUESTS = "servlet_api_requests_total"
WATCH_RESTARTS = "servlet_watch_restarts_total"
WATCH_RELISTS = "servlet_watch_relists_total"
MANAGED_OBJECTS = "servlet_managed_objects"
SYNC_CONFLICTS = "servlet_sync_conflicts_total"
SYNC_FIGHTS = "servlet_sync_fights_total"
ORPHANED_OBJECTS = "servlet_orphaned_objects"
ORPHANS_DELETED = "servlet_orphans_deleted_total"
ERRORS = "servlet_errors_total"
EVENTS = "servlet_events_total"
LEADER = "servlet_leader"
BUILD_INFO = "servlet_build_info"
ASYNCIO_TASKS = "servlet_asyncio_tasks"
CACHED_OBJECTS = "servlet_cached_objects"
LOOP_LAG = "servlet_event_loop_lag_seconds"

# The names as they appear in the exposition (counters with their `_total`), for the docs check.
METRIC_NAMES: tuple[str, ...] = (
    RECONCILES,
    RECONCILE_DURATION,
    WORKQUEUE_DEPTH,
    API_REQUESTS,
    WATCH_RESTARTS,
    WATCH_RELISTS,
    MANAGED_OBJECTS,
    SYNC_CONFLICTS,
    SYNC_FIGHTS,
    ORPHANED_OBJECTS,
    ORPHANS_DELETED,
    ERRORS,
    EVENTS,
    LEADER,
    BUILD_INFO,
    ASYNCIO_TASKS,
    CACHED_OBJECTS,
    LOOP_LAG,
)

# The classic text format (0.0.4): every Prometheus version scrapes it.
CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"

# Reconciles range from a cache lookup (milliseconds) to a slow API server (tens of seconds).
DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class ReconcileResult(enum.Enum):
    SUCCESS = "success"
    # Finished without error but asked to run again later (waiting for something to appear).
    REQUEUE = "requeue"
    ERROR = "error"


class EventResult(enum.Enum):
    """What became of an Event the servlet meant to record."""

    CREATED = "created"
    # Seen again within the deduplication window: the Event's count went up instead.
    COUNTED = "counted"
    RATE_LIMITED = "rate_limited"
    # The recorder's queue was full: a sync never waits for an Event.
    DROPPED = "dropped"
    FAILED = "failed"


class ApiTarget(enum.Enum):
    """Which API server a request went to."""

    SERVICE = "service"
    ORG = "org"
    VIRTUAL_WORKSPACE = "vw"


def _running_tasks() -> float:
    try:
        return float(len(asyncio.all_tasks()))
    except RuntimeError:  # scraped outside the loop (tests, tools): nothing to count
        return 0.0


def _counter_name(name: str) -> str:
    # prometheus_client appends `_total` to counters itself.
    return name.removesuffix("_total")


class Metrics:
    """All servlet metrics in one private registry."""

    def __init__(self, *, version: str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self._hot_series: dict[tuple[object, ...], Any] = {}
        registry = self.registry
        self._reconciles = Counter(
            _counter_name(RECONCILES),
            "Reconciles finished, by controller and result.",
            ["controller", "result"],
            registry=registry,
        )
        self._reconcile_duration = Histogram(
            RECONCILE_DURATION,
            "Time one reconcile took, by controller.",
            ["controller"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self._workqueue_depth = Gauge(
            WORKQUEUE_DEPTH,
            "Keys waiting in a controller's work queue.",
            ["controller"],
            registry=registry,
        )
        self._api_requests = Counter(
            _counter_name(API_REQUESTS),
            "API requests by target (service, org, vw), verb and HTTP status code ('error' when no response).",
            ["target", "verb", "code"],
            registry=registry,
        )
        self._watch_restarts = Counter(
            _counter_name(WATCH_RESTARTS),
            "Watches that ended and were started again, by resource.",
            ["resource"],
            registry=registry,
        )
        self._watch_relists = Counter(
            _counter_name(WATCH_RELISTS),
            "Full relists after an expired or broken watch, by resource.",
            ["resource"],
            registry=registry,
        )
        self._managed_objects = Gauge(
            MANAGED_OBJECTS,
            "Local objects kept in sync, by PublishedResource.",
            ["published_resource"],
            registry=registry,
        )
        self._sync_conflicts = Counter(
            _counter_name(SYNC_CONFLICTS),
            "Local objects in the way that the servlet cannot prove are its own, by PublishedResource.",
            ["published_resource"],
            registry=registry,
        )
        self._sync_fights = Counter(
            _counter_name(SYNC_FIGHTS),
            "Local copies another writer kept changing back, so the servlet backed off, by PublishedResource.",
            ["published_resource"],
            registry=registry,
        )
        self._orphaned_objects = Gauge(
            ORPHANED_OBJECTS,
            "Local copies whose workspace object is gone for good, by PublishedResource.",
            ["published_resource"],
            registry=registry,
        )
        self._orphans_deleted = Counter(
            _counter_name(ORPHANS_DELETED),
            "Orphaned local copies deleted (--delete-orphans), by PublishedResource.",
            ["published_resource"],
            registry=registry,
        )
        self._errors = Counter(
            _counter_name(ERRORS),
            "Errors by controller and kind (a short fixed word such as conflict or transient).",
            ["controller", "kind"],
            registry=registry,
        )
        self._events = Counter(
            _counter_name(EVENTS),
            "Kubernetes Events the servlet meant to record, by what became of them.",
            ["result"],
            registry=registry,
        )
        self._leader = Gauge(LEADER, "1 while this replica holds the leader Lease, else 0.", registry=registry)
        build_info = Gauge(
            BUILD_INFO, "Always 1; the servlet's version is in the label.", ["version"], registry=registry
        )
        build_info.labels(version=version).set(1)
        # Read when scraped: the scrape is served on the daemon's event loop. A count that keeps
        # growing under steady load is a leak (the reliability suite watches it).
        tasks = Gauge(ASYNCIO_TASKS, "asyncio tasks alive in the servlet's event loop.", registry=registry)
        tasks.set_function(_running_tasks)
        self._leader.set(0)
        self._cached_objects = Gauge(
            CACHED_OBJECTS,
            "Objects the sync workers' caches hold, by side: of the virtual workspace (every workspace's "
            "objects) and of the service cluster (the copies, and other objects of the synced kinds); with "
            "--buckets, those of this replica's buckets.",
            ["side"],
            registry=registry,
        )
        self._loop_lag = Histogram(
            LOOP_LAG,
            "How much later than due the event loop ran a timer; seconds here delay Lease renewals, "
            "watches and probes alike.",
            buckets=DURATION_BUCKETS,
            registry=registry,
        )

    def count_cached_objects(self, count: Callable[[bool], int]) -> None:
        """`servlet_cached_objects` is `count(local)` when scraped, for each side."""
        self._cached_objects.labels("virtual_workspace").set_function(lambda: count(False))
        self._cached_objects.labels("service_cluster").set_function(lambda: count(True))

    def _series(self, metric: Any, *values: str) -> Any:
        """`metric.labels(*values)`, looked up once: these run for every request and reconcile.

        Only for metrics whose series are never removed (see forget_published_resource).
        """
        key = (id(metric), *values)
        series = self._hot_series.get(key)
        if series is None:
            series = self._hot_series[key] = metric.labels(*values)
        return series

    def observe_loop_lag(self, seconds: float) -> None:
        self._loop_lag.observe(seconds)

    def observe_reconcile(self, *, controller: str, result: ReconcileResult, seconds: float) -> None:
        self._series(self._reconciles, controller, result.value).inc()
        self._series(self._reconcile_duration, controller).observe(seconds)

    def set_queue_depth(self, *, controller: str, depth: int) -> None:
        self._series(self._workqueue_depth, controller).set(depth)

    def count_api_request(self, *, target: ApiTarget, verb: str, code: int | None) -> None:
        """`code` None: the request got no HTTP response (connection refused, timeout)."""
        label = "error" if code is None else str(code)
        self._series(self._api_requests, target.value, verb.lower(), label).inc()

    def count_watch_restart(self, *, resource: str) -> None:
        self._watch_restarts.labels(resource=resource).inc()

    def count_watch_relist(self, *, resource: str) -> None:
        self._watch_relists.labels(resource=resource).inc()

    def set_managed_objects(self, *, published_resource: str, count: int) -> None:
        self._managed_objects.labels(published_resource=published_resource).set(count)

    def count_sync_conflict(self, *, published_resource: str) -> None:
        self._sync_conflicts.labels(published_resource=published_resource).inc()

    def count_sync_fight(self, *, published_resource: str) -> None:
        self._sync_fights.labels(published_resource=published_resource).inc()

    def set_orphaned_objects(self, *, published_resource: str, count: int) -> None:
        self._orphaned_objects.labels(published_resource=published_resource).set(count)

    def count_orphan_deleted(self, *, published_resource: str) -> None:
        self._orphans_deleted.labels(published_resource=published_resource).inc()

    def count_error(self, *, controller: str, kind: str) -> None:
        self._errors.labels(controller=controller, kind=kind).inc()

    def count_event(self, *, result: EventResult) -> None:
        self._series(self._events, result.value).inc()

    def forget_published_resource(self, name: str) -> None:
        """Drop the series of a PublishedResource that is gone, so its last values do not linger."""
        for metric in (
            self._managed_objects,
            self._sync_conflicts,
            self._sync_fights,
            self._orphaned_objects,
            self._orphans_deleted,
        ):
            with contextlib.suppress(KeyError):  # never recorded for this PublishedResource
                metric.remove(name)

    def set_leader(self, is_leader: bool) -> None:
        self._leader.set(1 if is_leader else 0)

    def render(self) -> bytes:
        """The registry in the Prometheus text exposition format (`CONTENT_TYPE`)."""
        return generate_latest(self.registry)
