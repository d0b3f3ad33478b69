"""The informer against kcpsim over HTTP: list, watch, bookmarks, and never missing a change.

Faults come from kcpsim's public API: `cut_watches` (clean end or dropped connection),
`set_history_size` (compaction, so a resumed watch gets 410), latency rules (to hold a request
back while the test changes objects in the gap) and `refuse_connections`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs

import pytest
from lightkube import AsyncClient

from kcpsim import FaultPlan, KcpSim, LatencyRule
from kcpsim.faults import ErrorRule
from kcpsim.waiting import eventually_async
from servlet.adapters.kube import (
    async_client,
    collection_path,
    http_client,
    merge_patch,
    resource_class,
    wrap,
)
from servlet.adapters.watch import HttpCollection
from servlet.app.runtime.informer import Informer
from servlet.app.runtime.informer_events import Event, Handler, ObjectKey
from servlet.app.runtime.workqueue import Backoff
from servlet.core.errors import NotFound, Transient
from servlet.core.model import ResourceType
from servlet.core.ports import WatchSource

CONFIGMAPS = ResourceType(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
SECRETS = ResourceType(group="", version="v1", kind="Secret", plural="secrets", namespaced=True)
CERTIFICATES = ResourceType(
    group="certificates.example.corp", version="v1alpha1", kind="Certificate", plural="certificates", namespaced=True
)
LABEL = "suite=informer"
FAST = Backoff(base=0.05, cap=0.2)


async def cut_open_watch(sim: KcpSim, *, abort: bool = False) -> None:
    """End the informer's watch; `has_synced` comes before the watch request reaches the server."""
    await eventually_async(lambda: sim.cut_watches(abort=abort), what="an open watch to cut", timeout=5)


class Recorder:
    def __init__(self) -> None:
        self.events: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.events.append(event)

    def seen(self) -> list[tuple[str, str]]:
        return [(e.type.value, e.key.name) for e in self.events]


def configmap(name: str, *, value: str = "1", labelled: bool = True) -> dict[str, Any]:
    labels = {"suite": "informer"} if labelled else {"suite": "other"}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "data": {"value": value},
    }


async def create(client: AsyncClient, obj: dict[str, Any], resource: ResourceType = CONFIGMAPS) -> dict[str, Any]:
    created = await client.create(wrap(resource_class(resource), obj))
    return dict(created)


async def delete(client: AsyncClient, name: str, resource: ResourceType = CONFIGMAPS) -> None:
    await client.delete(resource_class(resource), name, namespace="default")


class Harness:
    """An informer on the service cluster's ConfigMaps labelled `suite=informer`, plus a writer."""

    def __init__(
        self,
        sim: KcpSim,
        *,
        server: str | None = None,
        resource: ResourceType = CONFIGMAPS,
        label_selector: str | None = LABEL,
        handlers: tuple[Handler, ...] = (),
        metadata_only: bool = False,
        **options: Any,
    ) -> None:
        self.sim = sim
        self.http = http_client(sim.service_config(), server=server, trust_env=False)
        self.writer = async_client(sim.service_config(), trust_env=False)
        source = WatchSource(
            collection=HttpCollection(self.http, path=collection_path(resource)),
            name=resource.plural,
            metadata_only=metadata_only,
        )
        self.informer = Informer(source, label_selector=label_selector, backoff=FAST, **options)
        self.recorder = Recorder()
        for handler in (*handlers, self.recorder):
            self.informer.add_handler(handler)

    async def __aenter__(self) -> Harness:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.informer.stop()
        await self.http.aclose()
        await self.writer.close()

    async def synced(self) -> None:
        self.informer.start()
        await asyncio.wait_for(self.informer.wait_synced(), timeout=5)

    def names(self) -> list[str]:
        return sorted(key.name for key in self.informer.keys())

    def watch_queries(self) -> list[dict[str, list[str]]]:
        return [parse_qs(r.query) for r in self.sim.requests.matching(verb="watch", resource="configmaps")]


async def test_the_first_list_follows_continue_and_reports_every_object_as_added(kcpsim: KcpSim) -> None:
    async with Harness(kcpsim, page_size=2) as h:
        for name in ["a", "b", "c", "d", "e"]:
            await create(h.writer, configmap(name))
        await create(h.writer, configmap("unlabelled", labelled=False))
        kcpsim.requests.clear()
        assert not h.informer.has_synced
        await h.synced()
        pages = kcpsim.requests.count(verb="list", resource="configmaps")
        seen, names = h.recorder.seen(), h.names()

    assert sorted(seen) == [("ADDED", n) for n in "abcde"]
    assert names == list("abcde")
    assert pages == 3


async def test_a_long_list_lets_other_tasks_run_while_its_events_are_delivered(kcpsim: KcpSim) -> None:
    """Delivering 100,000 listed objects takes seconds: a Lease renewal waiting on the same loop
    must get its turn in between, or it misses its deadline."""
    ticks = 0
    ticks_at_events: list[int] = []

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    async with Harness(kcpsim, page_size=1000, handlers=(lambda _: ticks_at_events.append(ticks),)) as h:
        await asyncio.gather(*(create(h.writer, configmap(f"cm-{index}")) for index in range(450)))
        ticking = asyncio.create_task(ticker())
        try:
            await h.synced()
        finally:
            ticking.cancel()
        assert kcpsim.requests.count(verb="list", resource="configmaps") == 1  # one page: no I/O in between

    assert len(ticks_at_events) == 450
    assert ticks_at_events[-1] > ticks_at_events[0], "no other task ran while the list's events were delivered"


async def test_changes_after_the_list_arrive_in_order_from_a_watch_with_bookmarks(kcpsim: KcpSim) -> None:
    async with Harness(kcpsim, timeout_seconds=30) as h:
        await h.synced()
        listed_at = h.informer.resource_version
        await create(h.writer, configmap("x"))
        await merge_patch(h.writer, resource_class(CONFIGMAPS), "x", {"data": {"value": "2"}}, namespace="default")
        await eventually_async(lambda: len(h.recorder.events) == 2, what="len(h.recorder.events) == 2")
        current = h.informer.get(ObjectKey(cluster="", namespace="default", name="x"))
        await delete(h.writer, "x")
        await eventually_async(lambda: len(h.recorder.events) == 3, what="len(h.recorder.events) == 3")
        modified = h.recorder.events[1]
        assert modified.old is not None and modified.old["data"] == {"value": "1"}
        await h.informer.stop()
        await eventually_async(
            lambda: len(h.watch_queries()) == 1, what="len(h.watch_queries()) == 1"
        )  # logged when the stream ends
        seen, query = h.recorder.seen(), h.watch_queries()[0]

    assert seen == [("ADDED", "x"), ("MODIFIED", "x"), ("DELETED", "x")]
    assert current is not None and current["data"] == {"value": "2"}
    assert query["resourceVersion"] == [listed_at]
    assert query["allowWatchBookmarks"] == ["true"]
    assert query["timeoutSeconds"] == ["30"]
    assert query["labelSelector"] == [LABEL]


async def test_bookmarks_move_the_resume_version_and_a_clean_end_resumes_from_it(
    kcpsim_factory: Callable[..., KcpSim],
) -> None:
    sim = kcpsim_factory(bookmark_interval=0.05)

    async with Harness(sim) as h:
        await h.synced()
        # A write to another resource moves the shared resourceVersion; only a bookmark tells us.
        other = await create(
            h.writer,
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "elsewhere", "namespace": "default"}},
            SECRETS,
        )
        bumped = other["metadata"]["resourceVersion"]
        await eventually_async(
            lambda: int(h.informer.resource_version) >= int(bumped),
            what="int(h.informer.resource_version) >= int(bumped)",
        )
        await cut_open_watch(sim)
        await eventually_async(lambda: h.informer.restarts == 1, what="h.informer.restarts == 1")
        await h.informer.stop()
        await eventually_async(lambda: len(h.watch_queries()) == 2, what="len(h.watch_queries()) == 2")
        queries, restarts, relists, events = (
            h.watch_queries(),
            h.informer.restarts,
            h.informer.relists,
            h.recorder.events,
        )

    assert events == []
    assert int(queries[0]["resourceVersion"][0]) < int(bumped) <= int(queries[1]["resourceVersion"][0])
    assert (restarts, relists) == (1, 0)


async def test_a_watch_ended_cleanly_resumes_and_still_reports_what_changed_in_between(kcpsim: KcpSim) -> None:
    async with Harness(kcpsim) as h:
        await create(h.writer, configmap("keep"))
        await create(h.writer, configmap("gone"))
        await h.synced()
        kcpsim.set_faults(FaultPlan(latency=(LatencyRule(seconds=0.4, verb="watch", resource="configmaps", limit=1),)))
        await cut_open_watch(kcpsim)
        await delete(h.writer, "gone")  # while the next watch request is held back
        await eventually_async(
            lambda: ("DELETED", "gone") in h.recorder.seen(), what="('DELETED', 'gone') in h.recorder.seen()"
        )
        seen, relists = h.recorder.seen(), h.informer.relists

    assert sorted(seen) == [("ADDED", "gone"), ("ADDED", "keep"), ("DELETED", "gone")]
    assert relists == 0


async def test_a_broken_stream_relists_and_emits_every_difference_including_deletions(kcpsim: KcpSim) -> None:
    async with Harness(kcpsim) as h:
        for name in ["stays", "changes", "vanishes"]:
            await create(h.writer, configmap(name))
        await h.synced()
        h.recorder.events.clear()
        kcpsim.set_faults(FaultPlan(latency=(LatencyRule(seconds=0.5, verb="list", resource="configmaps", limit=1),)))
        await cut_open_watch(kcpsim, abort=True)
        await eventually_async(
            lambda: kcpsim.requests.count(verb="watch", resource="configmaps") == 1,
            what="kcpsim.requests.count(verb='watch', resource='configmaps') == 1",
        )
        # The watch is gone and the relist is held back: these changes reach no watch.
        await delete(h.writer, "vanishes")
        await merge_patch(
            h.writer, resource_class(CONFIGMAPS), "changes", {"data": {"value": "2"}}, namespace="default"
        )
        await create(h.writer, configmap("appears"))
        await eventually_async(lambda: len(h.recorder.events) == 3, what="len(h.recorder.events) == 3")
        await asyncio.sleep(0.1)
        seen, names, relists, changed = (
            h.recorder.seen(),
            h.names(),
            h.informer.relists,
            h.informer.get(ObjectKey(cluster="", namespace="default", name="changes")),
        )

    assert sorted(seen) == [("ADDED", "appears"), ("DELETED", "vanishes"), ("MODIFIED", "changes")]
    assert names == ["appears", "changes", "stays"]
    assert relists == 1
    assert changed["data"] == {"value": "2"}


@pytest.mark.parametrize("gone_as_status", [False, True], ids=["error-event", "http-status"])
async def test_410_gone_relists_and_reports_deletions_from_the_gap(
    kcpsim_factory: Callable[..., KcpSim], gone_as_status: bool
) -> None:
    sim = kcpsim_factory(watch_gone_as_status=gone_as_status)

    calls: list[str] = []

    async with Harness(sim, on_restart=lambda: calls.append("restart"), on_relist=lambda: calls.append("relist")) as h:
        await create(h.writer, configmap("old"))
        await h.synced()
        h.recorder.events.clear()
        sim.set_faults(FaultPlan(latency=(LatencyRule(seconds=0.4, verb="watch", resource="configmaps", limit=1),)))
        await cut_open_watch(sim)
        await delete(h.writer, "old")
        sim.set_history_size(0)  # compacted: resuming from the old version is impossible
        await eventually_async(
            lambda: h.recorder.seen() == [("DELETED", "old")], what="h.recorder.seen() == [('DELETED', 'old')]"
        )
        await asyncio.sleep(0.1)
        gone = sim.requests.count(verb="watch", resource="configmaps", status=410)
        seen, relists = h.recorder.seen(), h.informer.relists

    assert seen == [("DELETED", "old")]
    assert relists == 1
    assert gone == 1
    # The cut and the 410 each ended a watch; one relist followed.
    assert sorted(calls) == ["relist", "restart", "restart"]


async def test_the_vw_wildcard_view_keys_objects_by_logical_cluster(kcpsim: KcpSim) -> None:
    team_a, team_b = kcpsim.cluster_of("root:myorg:team-a"), kcpsim.cluster_of("root:myorg:team-b")

    writers = [async_client(kcpsim.workspace_config(ws), trust_env=False) for ws in ("team-a", "team-b")]
    try:
        for writer in writers:
            await create(
                writer,
                {
                    "apiVersion": "certificates.example.corp/v1alpha1",
                    "kind": "Certificate",
                    "metadata": {"name": "web", "namespace": "default"},
                    "spec": {"commonName": "web.example"},
                },
                CERTIFICATES,
            )
    finally:
        for writer in writers:
            await writer.close()
    async with Harness(kcpsim, server=kcpsim.vw_url() + "/clusters/*", resource=CERTIFICATES, label_selector=None) as h:
        await h.synced()
        key = ObjectKey(cluster=team_b, namespace="default", name="web")
        obj = h.informer.get(key)
        assert obj is not None
        keys, common_name = sorted(h.informer.keys(), key=lambda k: k.cluster), obj["spec"]["commonName"]

    assert keys == sorted(
        [ObjectKey(team_a, "default", "web"), ObjectKey(team_b, "default", "web")], key=lambda k: k.cluster
    )
    assert common_name == "web.example"


async def test_an_unreachable_server_keeps_the_loop_alive_and_it_syncs_once_back(kcpsim: KcpSim) -> None:
    ticks = iter(range(1_000_000))

    async with Harness(kcpsim, clock=lambda: float(next(ticks))) as h:
        kcpsim.refuse_connections(0.6)
        h.informer.start()
        await eventually_async(lambda: h.informer.last_error is not None, what="h.informer.last_error is not None")
        synced_while_down = h.informer.has_synced
        transient = isinstance(h.informer.last_error, Transient)
        first = h.informer.last_alive
        await eventually_async(lambda: h.informer.last_alive > first + 1, what="h.informer.last_alive > first + 1")
        await asyncio.wait_for(h.informer.wait_synced(), timeout=5)
        relists, progressed, healthy = h.informer.relists, h.informer.last_alive - first, h.informer.last_error is None

    assert not synced_while_down
    assert transient
    assert relists == 0, "retrying the first list is not a relist"
    assert progressed > 1
    assert healthy


async def test_liveness_reflects_the_loop_not_the_objects(kcpsim: KcpSim) -> None:
    now = [0.0]

    async with Harness(kcpsim, clock=lambda: now[0], timeout_seconds=60) as h:
        await h.synced()
        alive_after_sync = h.informer.is_alive()
        now[0] += h.informer.max_quiet_seconds + 1  # nothing happened for too long
        stale = h.informer.is_alive()
        await cut_open_watch(kcpsim)  # the loop re-opens its watch: a sign of life
        await eventually_async(h.informer.is_alive, what="h.informer.is_alive")
        result = alive_after_sync, stale, h.informer.is_alive()

    assert result == (True, False, True)


async def test_a_resource_that_is_not_served_is_reported_and_never_synced(kcpsim: KcpSim) -> None:
    missing = ResourceType(group="nothing.example", version="v1", kind="Nothing", plural="nothings", namespaced=True)

    async with Harness(kcpsim, resource=missing) as h:
        h.informer.start()
        await eventually_async(lambda: h.informer.last_error is not None, what="h.informer.last_error is not None")
        await asyncio.sleep(0.1)
        error, synced = h.informer.last_error, h.informer.has_synced

    assert isinstance(error, NotFound)
    assert not synced


async def test_server_errors_on_the_watch_lead_to_a_relist_not_a_dead_cache(kcpsim: KcpSim) -> None:
    async with Harness(kcpsim) as h:
        await h.synced()
        kcpsim.set_faults(FaultPlan(errors=(ErrorRule(status=500, verb="watch", resource="configmaps", limit=2),)))
        await cut_open_watch(kcpsim)
        await eventually_async(
            lambda: kcpsim.requests.count(verb="watch", status=500) == 2,
            what="kcpsim.requests.count(verb='watch', status=500) == 2",
        )
        await create(h.writer, configmap("after"))
        await eventually_async(
            lambda: ("ADDED", "after") in h.recorder.seen(), what="('ADDED', 'after') in h.recorder.seen()"
        )
        seen, relists = h.recorder.seen(), h.informer.relists

    assert seen == [("ADDED", "after")]
    assert relists >= 1


async def test_a_failing_handler_does_not_stop_other_handlers_or_the_cache(kcpsim: KcpSim) -> None:
    def broken(event: Event) -> None:
        raise RuntimeError("handler bug")

    async with Harness(kcpsim, handlers=(broken,)) as h:
        await h.synced()
        await create(h.writer, configmap("one"))
        await create(h.writer, configmap("two"))
        await eventually_async(lambda: len(h.recorder.events) == 2, what="len(h.recorder.events) == 2")
        seen, names = h.recorder.seen(), h.names()

    assert seen == [("ADDED", "one"), ("ADDED", "two")]
    assert names == ["one", "two"]


async def test_the_watch_uses_the_kubeconfigs_tls_settings(kcpsim_factory: Callable[..., KcpSim]) -> None:
    sim = kcpsim_factory(tls=True)

    async with Harness(sim) as h:
        await h.synced()
        await create(h.writer, configmap("secure"))
        await eventually_async(lambda: len(h.recorder.events) == 1, what="len(h.recorder.events) == 1")
        base, seen = str(h.http.base_url), h.recorder.seen()

    assert base.startswith("https://")
    assert seen == [("ADDED", "secure")]


async def test_a_metadata_only_informer_keeps_identity_and_version_never_content(kcpsim: KcpSim) -> None:
    team_a = kcpsim.cluster_of("root:myorg:team-a")
    big = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": "big",
            "namespace": "default",
            "labels": {"tenant": "x" * 60},
            "annotations": {"note": "y" * 5000},
        },
        "data": {"blob": "QUFB" * 5000},
    }

    async def main() -> tuple[dict[str, Any] | None, list[tuple[str, str]], str, str]:
        writer = async_client(kcpsim.workspace_config("team-a"), trust_env=False)
        try:
            await create(writer, big, SECRETS)
            async with Harness(
                kcpsim,
                server=kcpsim.vw_url() + "/clusters/*",
                resource=SECRETS,
                label_selector=None,
                metadata_only=True,
            ) as h:
                await h.synced()
                key = ObjectKey(cluster=team_a, namespace="default", name="big")
                listed = h.informer.get(key)
                before = str((listed or {}).get("metadata", {}).get("resourceVersion"))
                await merge_patch(
                    writer, resource_class(SECRETS), "big", {"data": {"more": "QQ=="}}, namespace="default"
                )
                await eventually_async(
                    lambda: ("MODIFIED", "big") in h.recorder.seen(), what="('MODIFIED', 'big') in h.recorder.seen()"
                )
                after = str((h.informer.get(key) or {}).get("metadata", {}).get("resourceVersion"))
                return listed, h.recorder.seen(), before, after
        finally:
            await writer.close()

    listed, seen, before, after = await main()
    assert listed is not None
    assert listed == {
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": {
            "name": "big",
            "namespace": "default",
            "uid": listed["metadata"]["uid"],
            "resourceVersion": before,
            "annotations": {"kcp.io/cluster": team_a},
        },
    }
    assert seen == [("ADDED", "big"), ("MODIFIED", "big")]
    assert before != after
