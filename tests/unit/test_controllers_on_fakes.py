"""The runtime loops and the controllers on the in-memory fakes: the same code as the daemon runs,
with every port filled by `servlet.adapters.memory`, in milliseconds. The simulator-based
integration tests cover the HTTP adapters; these cover what the controllers decide."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from kcpsim.waiting import eventually_async
from servlet.adapters.memory import MemoryClusters, MemoryOrgWorkspace
from servlet.app.controllers.caches import InformerPool
from servlet.app.controllers.catalog import Catalog
from servlet.app.controllers.leading import LeadingControllers, Shared, SharedCaches
from servlet.app.controllers.queues import QueueDepths
from servlet.app.observability.logs import get_logger
from servlet.app.observability.metrics import Metrics
from servlet.app.runtime.informer import Informer
from servlet.app.runtime.leader import LeaderElector, LeaseTiming
from servlet.app.runtime.workqueue import Backoff
from servlet.core.errors import NotFound, Operation, Transient
from servlet.core.model import ResourceType, ServletIdentity
from servlet.core.ports import (
    APIEXPORT_TYPE,
    CRD_TYPE,
    ENDPOINT_SLICE_TYPE,
    PUBLISHED_RESOURCE_TYPE,
    SCHEMA_TYPE,
    Collection,
    WatchSource,
)
from servlet.core.targets import NAMESPACE_TYPE

T = TypeVar("T")
FAST = Backoff(base=0.001, cap=0.01)
CONFIGMAPS = ResourceType(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
GROUP = "certificates.example.corp"
WIDGETS = ResourceType(group="example.com", version="v1", kind="Widget", plural="widgets", namespaced=True)
REMOTE_WIDGETS = ResourceType(group=GROUP, version="v1", kind="Widget", plural="widgets", namespaced=True)


def configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


# -- the informer ----------------------------------------------------------------------------------


async def test_the_informer_relists_after_410_and_reports_the_deletion_it_missed() -> None:
    clusters = MemoryClusters()
    clusters.create_local(CONFIGMAPS, configmap("old"))
    calls: list[str] = []
    seen: list[tuple[str, str]] = []

    async def main() -> int:
        informer = Informer(
            clusters.sources.service_source(CONFIGMAPS),
            backoff=FAST,
            on_restart=lambda: calls.append("restart"),
            on_relist=lambda: calls.append("relist"),
        )
        informer.add_handler(lambda event: seen.append((event.type.value, event.key.name)))
        informer.start()
        await informer.wait_synced()
        await asyncio.sleep(0)  # let the watch open
        # While no watch can see it: the object goes, the history is compacted, the watch ends.
        clusters.delete_local(CONFIGMAPS, name="old", namespace="default")
        clusters.server.compact()
        clusters.server.end_watches()
        await eventually_async(lambda: ("DELETED", "old") in seen, what="the deletion reported by the relist")
        await informer.stop()
        return len(informer)

    assert await main() == 0
    assert seen == [("ADDED", "old"), ("DELETED", "old")]
    assert calls == ["restart", "restart", "relist"], "the clean end and the 410 each ended a watch"


async def test_a_failing_first_list_is_retried_and_the_cache_syncs_once_the_server_answers() -> None:
    clusters = MemoryClusters()
    clusters.create_local(CONFIGMAPS, configmap("a"))
    outage = Transient(operation=Operation(verb="list", resource="configmaps"), code=503, message="unavailable")
    clusters.server.faults.extend([outage, outage])

    async def main() -> tuple[list[str], int, bool]:
        source: WatchSource[Collection] = clusters.sources.service_source(CONFIGMAPS)
        informer = Informer(source, backoff=FAST)
        informer.start()
        await informer.wait_synced()
        await informer.stop()
        return [key.name for key in informer.keys()], informer.relists, informer.last_error is None

    assert await main() == (["a"], 0, True)


async def test_a_resource_not_served_yet_is_listed_the_moment_the_pool_is_told_its_crd_appeared() -> None:
    clusters = MemoryClusters()
    clusters.create_local(CONFIGMAPS, configmap("a"))
    not_served = NotFound(
        operation=Operation(verb="list", resource="configmaps"),
        code=404,
        message="the server could not find the requested resource",
    )
    clusters.server.faults.append(not_served)
    slow = Backoff(base=60.0, cap=60.0)  # a pause far longer than the test waits for the cache

    async def main() -> list[str]:
        pool = InformerPool(
            lambda source, selector, compact, keep: Informer(
                source, label_selector=selector, backoff=slow, compact=compact, keep=keep
            )
        )
        cache = pool.acquire(clusters.sources.service_source(CONFIGMAPS))
        await eventually_async(lambda: isinstance(cache.informer.last_error, NotFound), what="the first list refused")
        pool.retry_failing("service/other")
        await asyncio.sleep(0.01)
        assert not cache.synced, "only the informer of the named resource is woken"
        pool.retry_failing(cache.name)
        await asyncio.wait_for(cache.wait_synced(), timeout=5)
        await pool.stop_all()
        return [key.name for key in cache.keys()]

    assert await main() == ["a"]


# -- leader election -------------------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 21, 9, 0, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def candidates(clusters: MemoryClusters, clock: Clock, *names: str) -> list[LeaderElector]:
    timing = LeaseTiming(lease_duration=15, renew_deadline=10, retry_period=2)
    return [
        LeaderElector(clusters.leases, name="tom", namespace="default", identity=name, clock=clock, timing=timing)
        for name in names
    ]


async def test_of_two_candidates_one_leads_and_the_other_takes_over_only_once_the_lease_expired() -> None:
    clusters = MemoryClusters()
    clock = Clock()
    a, b = candidates(clusters, clock, "a", "b")

    async def main() -> list[tuple[bool, bool]]:
        rounds = [(await a.attempt(), await b.attempt())]
        clock.now += timedelta(seconds=14)  # a stopped renewing, but its lease still runs
        rounds.append((a.is_leader, await b.attempt()))
        clock.now += timedelta(seconds=2)
        taken = await b.attempt()
        rounds.append((await a.attempt(), taken))  # a, back from its pause, finds b holding it
        return rounds

    assert await main() == [(True, False), (True, False), (False, True)]


async def test_a_released_lease_is_taken_over_at_once() -> None:
    clusters = MemoryClusters()
    clock = Clock()
    a, b = candidates(clusters, clock, "a", "b")

    async def main() -> tuple[bool, bool, str]:
        await a.attempt()
        await a.release()
        taken = await b.attempt()
        lease = await clusters.leases.get_lease(namespace="default", name="tom")
        return a.is_leader, taken, str((lease or {})["spec"]["holderIdentity"])

    assert await main() == (False, True, "b")


async def test_running_electors_hand_over_when_the_leader_stops() -> None:
    clusters = MemoryClusters()
    clock = Clock()
    timing = LeaseTiming(lease_duration=15, renew_deadline=10, retry_period=0.005)
    lost: list[str] = []
    a, b = (
        LeaderElector(
            clusters.leases,
            name="tom",
            namespace="default",
            identity=name,
            clock=clock,
            timing=timing,
            on_lost=lambda name=name: lost.append(name),
        )
        for name in ("a", "b")
    )

    async def main() -> tuple[bool, bool, list[str]]:
        a.start()
        await a.became_leader.wait()
        b.start()
        await asyncio.sleep(0.02)  # b campaigns a few rounds and stays a follower
        follower = b.is_leader
        await a.stop(release=True)
        await asyncio.wait_for(b.became_leader.wait(), timeout=1)
        await b.stop(release=True)
        return follower, a.is_leader, lost

    assert await main() == (False, False, ["a", "b"])


# -- the controllers -------------------------------------------------------------------------------


def widget_crd() -> dict[str, Any]:
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}},
        }
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": schema, "subresources": {"status": {}}}
            ],
        },
    }


def published_widgets() -> dict[str, Any]:
    return {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": "widgets", "creationTimestamp": "2026-11-21T09:00:00Z"},
        "spec": {"resource": {"apiGroup": "example.com", "kind": "Widget"}},
    }


def export() -> dict[str, Any]:
    return {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": GROUP}, "spec": {}}


def exported_widgets() -> MemoryClusters:
    """The export with its virtual workspace published, and the Widget CRD on the service cluster."""
    clusters = MemoryClusters()
    clusters.create_in("org", APIEXPORT_TYPE, export())
    clusters.create_in(
        "org",
        ENDPOINT_SLICE_TYPE,
        {
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIExportEndpointSlice",
            "metadata": {"name": GROUP},
            "status": {"endpoints": [{"url": "memory://virtual-workspace"}]},
        },
    )
    clusters.create_local(CRD_TYPE, widget_crd())
    return clusters


@asynccontextmanager
async def leading(clusters: MemoryClusters) -> AsyncIterator[LeadingControllers]:
    """The daemon's shared caches and one term of leadership, every port an in-memory fake."""
    pool = InformerPool(
        lambda source, selector, compact, keep: Informer(
            source, label_selector=selector, backoff=FAST, compact=compact, keep=keep
        )
    )
    org, sources = clusters.org.identity.name, clusters.sources
    caches = SharedCaches(
        published=pool.acquire(sources.service_source(PUBLISHED_RESOURCE_TYPE)),
        crds=pool.acquire(sources.service_source(CRD_TYPE)),
        schemas=pool.acquire(sources.org_source(SCHEMA_TYPE), cluster=org),
        exports=pool.acquire(sources.org_source(APIEXPORT_TYPE), cluster=org),
        slices=pool.acquire(sources.org_source(ENDPOINT_SLICE_TYPE), cluster=org),
        local_namespaces=pool.acquire(sources.service_source(NAMESPACE_TYPE)),
    )
    metrics = Metrics(version="test")
    shared = Shared(
        servlet_name="tom",
        export_name=GROUP,
        catalog=Catalog(
            published=caches.published, crds=caches.crds, servlet=ServletIdentity(name="tom", api_group=GROUP)
        ),
        caches=caches,
        pool=pool,
        sources=sources,
        location=sources,
        org=clusters.org,
        service=clusters.service,
        vw=clusters.vw,
        executor=clusters.executor,
        metrics=metrics,
        depths=QueueDepths(metrics),
        log=get_logger("controllers"),
        now=lambda: "2026-11-21T09:00:00Z",
    )
    await asyncio.gather(*(cache.wait_synced() for cache in caches.all()))
    controllers = LeadingControllers(shared)
    controllers.start()
    try:
        yield controllers
    finally:
        await controllers.stop(timeout=1)
        await pool.stop_all()


def conditions(clusters: MemoryClusters) -> dict[str, str]:
    published = clusters.local(PUBLISHED_RESOURCE_TYPE, name="widgets") or {}
    return {c["type"]: c["status"] for c in (published.get("status") or {}).get("conditions") or []}


async def test_a_published_resource_gets_its_schema_into_the_export_and_says_so_in_its_status() -> None:
    clusters = MemoryClusters()
    foreign = f"v0a1b2c3d.gizmos.{GROUP}"  # put there by someone else: the servlet never removes it
    clusters.create_in("org", APIEXPORT_TYPE, {**export(), "spec": {"latestResourceSchemas": [foreign]}})
    clusters.create_local(CRD_TYPE, widget_crd())
    clusters.create_local(PUBLISHED_RESOURCE_TYPE, published_widgets())

    async def main() -> tuple[list[str], list[str], dict[str, str]]:
        async with leading(clusters):
            await eventually_async(lambda: conditions(clusters).get("Exported") == "True", what="Exported=True")
        schemas = [obj["metadata"]["name"] for obj in clusters.server.objects(clusters.org.place(SCHEMA_TYPE))]
        exported = (clusters.remote("org", APIEXPORT_TYPE, name=GROUP) or {})["spec"]["latestResourceSchemas"]
        return schemas, exported, conditions(clusters)

    schemas, exported, status = await main()
    assert len(schemas) == 1 and schemas[0].endswith(f".widgets.{GROUP}")
    assert sorted(exported) == sorted([foreign, *schemas])
    assert status["Valid"] == status["SchemaPublished"] == "True"


async def test_a_published_resource_whose_crd_is_missing_is_reported_and_publishes_nothing() -> None:
    clusters = MemoryClusters()
    clusters.create_in("org", APIEXPORT_TYPE, export())
    clusters.create_local(PUBLISHED_RESOURCE_TYPE, published_widgets())

    async def main() -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any]]:
        async with leading(clusters):
            await eventually_async(lambda: conditions(clusters).get("Valid") == "False", what="Valid=False")
        published = clusters.local(PUBLISHED_RESOURCE_TYPE, name="widgets") or {}
        valid = next(c for c in published["status"]["conditions"] if c["type"] == "Valid")
        schemas = clusters.server.objects(clusters.org.place(SCHEMA_TYPE))
        return valid, schemas, clusters.remote("org", APIEXPORT_TYPE, name=GROUP) or {}

    valid, schemas, exported = await main()
    assert valid["reason"] == "CRDNotFound" and "'Widget'" in valid["message"]
    assert schemas == []
    assert exported["spec"] == {}, "nothing to export, so the export is not written"


async def test_a_tenants_object_is_copied_to_the_service_cluster_and_its_status_flows_back() -> None:
    clusters = exported_widgets()
    clusters.create_local(PUBLISHED_RESOURCE_TYPE, published_widgets())
    clusters.create_in(
        "team-a",
        REMOTE_WIDGETS,
        {
            "apiVersion": f"{GROUP}/v1",
            "kind": "Widget",
            "metadata": {"name": "w", "namespace": "default"},
            "spec": {"size": 3},
        },
    )

    def copies() -> list[dict[str, Any]]:
        return clusters.list_local(WIDGETS)

    async def main() -> tuple[list[dict[str, Any]], dict[str, Any]]:
        async with leading(clusters):
            await eventually_async(lambda: copies(), what="the local copy")
            (local,) = copies()
            # The service's own controller reports on the copy.
            clusters.patch_local(
                WIDGETS,
                {"status": {"phase": "Ready"}},
                name=local["metadata"]["name"],
                namespace=local["metadata"]["namespace"],
            )
            await eventually_async(
                lambda: (clusters.remote("team-a", REMOTE_WIDGETS, name="w", namespace="default") or {}).get("status"),
                what="the status copied back",
            )
        return copies(), clusters.remote("team-a", REMOTE_WIDGETS, name="w", namespace="default") or {}

    local, remote = await main()
    assert [obj["spec"] for obj in local] == [{"size": 3}]
    assert remote["status"] == {"phase": "Ready"}


async def test_synced_counts_only_the_objects_the_filter_admits() -> None:
    clusters = exported_widgets()
    filtered = published_widgets()
    filtered["spec"]["filter"] = {"resource": {"matchLabels": {"sync": "yes"}}}
    clusters.create_local(PUBLISHED_RESOURCE_TYPE, filtered)
    for name, labels in (("synced", {"sync": "yes"}), ("left-out", {})):
        clusters.create_in(
            "team-a",
            REMOTE_WIDGETS,
            {
                "apiVersion": f"{GROUP}/v1",
                "kind": "Widget",
                "metadata": {"name": name, "namespace": "default", "labels": labels},
                "spec": {"size": 1},
            },
        )

    def synced_message() -> str:
        published = clusters.local(PUBLISHED_RESOURCE_TYPE, name="widgets") or {}
        found = [c for c in (published.get("status") or {}).get("conditions") or [] if c["type"] == "Synced"]
        return str(found[0].get("message") or "") if found and found[0]["status"] == "True" else ""

    async with leading(clusters):
        message = await eventually_async(synced_message, what="Synced=True")

    assert message == "all 1 object(s) are in sync", "an object the filter leaves out is not counted"


class RacedOrg(MemoryOrgWorkspace):
    """The org workspace where someone else changes the export just before the servlet's first patch."""

    def __init__(self, clusters: MemoryClusters, *, foreign: str) -> None:
        super().__init__(clusters.server, identity=clusters.org.identity)
        self._foreign = foreign
        self.refused: list[str] = []

    async def patch_export(self, name: str, patch: Any, *, resource_version: str) -> dict[str, Any]:
        if not self.refused:
            current = await self.get_export(name) or {}
            listed = current["spec"].get("latestResourceSchemas") or []
            await super().patch_export(
                name, {"spec": {"latestResourceSchemas": [*listed, self._foreign]}}, resource_version=""
            )
        try:
            return await super().patch_export(name, patch, resource_version=resource_version)
        except Exception as failure:
            self.refused.append(type(failure).__name__)
            raise


async def test_an_export_changed_meanwhile_is_patched_again_from_the_fresher_copy_and_keeps_both() -> None:
    clusters = MemoryClusters()
    foreign = f"v0a1b2c3d.gizmos.{GROUP}"
    raced = RacedOrg(clusters, foreign=foreign)
    clusters.org = raced
    clusters.create_in("org", APIEXPORT_TYPE, export())
    clusters.create_local(CRD_TYPE, widget_crd())
    clusters.create_local(PUBLISHED_RESOURCE_TYPE, published_widgets())

    async def main() -> list[str]:
        async with leading(clusters):
            await eventually_async(lambda: conditions(clusters).get("Exported") == "True", what="Exported=True")
        return list((clusters.remote("org", APIEXPORT_TYPE, name=GROUP) or {})["spec"]["latestResourceSchemas"])

    exported = await main()
    assert raced.refused == ["Conflict"], "the first patch was planned from a copy that had gone stale"
    assert foreign in exported and len(exported) == 2
