"""Two `servlet run --buckets 4` replicas sharing the workspaces, proven from kcpsim's request log.

Each replica has its own token, so the log says who wrote what, and when (arrival and answer).
Short Lease timings (4 s duration) keep the test quick; the laws are the same at 15 s.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from kcpsim import Topology
from kcpsim.harness.process import ServletProcess
from kcpsim.harness.world import SERVLET_NAMESPACE, Call
from kcpsim.harness.writers import NOT_WORK, overlapping, writes_by_workspace
from servlet.core.metadata import REMOTE_CLUSTER_LABEL
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    GROUP,
    REMOTE_WIDGET,
    SERVLET,
    WIDGET,
    default_local_name,
    published_resource,
    remote_object,
    widget_crd,
)

BUCKETS = 4
LEASE_DURATION = 4.0
TIMING = ("--lease-duration", "4", "--lease-renew-deadline", "3", "--lease-retry-period", "0.5")
# Their logical clusters fall into buckets 1, 2 and 3 of 4, so every replica holding two buckets
# has at least one of them to sync.
WORKSPACES = tuple(f"team-{index}" for index in range(1, 7))
REPLICAS = ("replica-1", "replica-2")
LEADER_ONLY = ("apiresourceschema", "apiexport", "status")
LEASES = f"/apis/coordination.k8s.io/v1/namespaces/{SERVLET_NAMESPACE}/leases"


def _bucket_holders(e2e: E2E) -> dict[str, str]:
    """The holder of each bucket Lease with one, from the Leases themselves."""
    listed: dict[str, Any] = e2e.rest.get(LEASES) or {}
    prefix = f"{SERVLET}.{GROUP}-bucket-"
    return {
        item["metadata"]["name"]: str(item["spec"].get("holderIdentity") or "")
        for item in listed.get("items", [])
        if item["metadata"]["name"].startswith(prefix) and (item.get("spec") or {}).get("holderIdentity")
    }


def _balanced(e2e: E2E) -> dict[str, str] | None:
    holders = _bucket_holders(e2e)
    counts = sorted(list(holders.values()).count(holder) for holder in set(holders.values()))
    return holders if len(holders) == BUCKETS and counts == [BUCKETS // 2, BUCKETS // 2] else None


def _writes_by_workspace(e2e: E2E) -> dict[str, list[Call]]:
    """Every write of the replicas for a workspace: to it (its path names its logical cluster) or to
    the local copies that came from it (in the namespace named after it)."""
    clusters = {e2e.world.cluster(workspace): workspace for workspace in WORKSPACES}
    calls = [call for replica in REPLICAS for call in e2e.simulated.callers.writes(token=replica, ignore=NOT_WORK)]
    return writes_by_workspace(calls, clusters)


def _assert_one_writer_at_a_time(e2e: E2E) -> None:
    for workspace, calls in _writes_by_workspace(e2e).items():
        pairs = overlapping(calls)
        assert not pairs, f"{workspace}: " + "; ".join(
            f"{first.token} {first.method} {first.path} and {second.token} {second.method} {second.path} overlap"
            for first, second in pairs
        )


def _leader_reconciles(servlet: ServletProcess) -> list[str]:
    """The samples of `servlet_reconciles_total` of the controllers only the leader runs."""
    return [
        line
        for line in servlet.metrics().splitlines()
        if line.startswith("servlet_reconciles_total{")
        and any(f'controller="{controller}"' in line for controller in LEADER_ONLY)
    ]


def _two_replicas(e2e: E2E, **spec: Any) -> dict[str, ServletProcess]:
    """Widgets published (`spec`: more of the PublishedResource's spec), two replicas started and
    holding two buckets each, every workspace served."""
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget", **spec))
    flags = (*TIMING, "--buckets", str(BUCKETS))
    servlets = {replica: e2e.servlet(token=replica, extra=flags) for replica in REPLICAS}
    e2e.eventually(lambda: _balanced(e2e), what="two replicas holding two buckets each")
    for workspace in WORKSPACES:
        e2e.wait_served(workspace, REMOTE_WIDGET)
    return servlets


def _writers_since(e2e: E2E, since: float) -> dict[str, set[str]]:
    """The replicas that wrote for each workspace since `since`."""
    return {
        workspace: {call.token for call in calls if call.started >= since}
        for workspace, calls in _writes_by_workspace(e2e).items()
    }


def _cached(servlets: dict[str, ServletProcess]) -> dict[str, tuple[int, int]]:
    """`servlet_cached_objects` of each replica: the Widgets its caches of the virtual workspace hold,
    and the copies its caches of the service cluster hold."""
    return {
        replica: (
            int(sum(servlet.metric("servlet_cached_objects", side="virtual_workspace"))),
            int(sum(servlet.metric("servlet_cached_objects", side="service_cluster"))),
        )
        for replica, servlet in servlets.items()
    }


def _owned_widgets(writers: dict[str, set[str]], replica: str) -> int:
    """The Widgets (two per workspace) of the workspaces `replica` wrote for."""
    return 2 * sum(1 for tokens in writers.values() if tokens == {replica})


def _create_and_wait(e2e: E2E, workspace: str, name: str, *, timeout: float = 30.0) -> None:
    e2e.create_remote(workspace, REMOTE_WIDGET, remote_object("Widget", name, namespace="default", size=1))
    e2e.wait_local(
        WIDGET,
        namespace=e2e.world.cluster(workspace),
        name=default_local_name(namespace="default", name=name),
        timeout=timeout,
    )


@pytest.mark.kcpsim_only("tells replicas apart in kcpsim's request log")
@pytest.mark.parametrize("e2e", [Topology.with_workspaces(len(WORKSPACES), with_schema=False)], indirect=True)
def test_two_replicas_share_the_workspaces_and_one_takes_over_a_killed_ones(e2e: E2E) -> None:
    servlets = _two_replicas(e2e)
    shared_since = time.monotonic()
    for workspace in WORKSPACES:
        for name in ("one", "two"):
            _create_and_wait(e2e, workspace, name)

    # Every workspace is written by exactly one replica, and both replicas do work.
    writers = _writers_since(e2e, shared_since)
    assert all(len(tokens) == 1 for tokens in writers.values()), f"writers per workspace: {writers}"
    assert set().union(*writers.values()) == set(REPLICAS), f"writers per workspace: {writers}"
    _assert_one_writer_at_a_time(e2e)
    # Each replica caches the Widgets of its own workspaces and their copies only: together, each once.
    owned = _owned_widgets(writers, "replica-1")
    e2e.eventually(
        lambda: _cached(servlets) == {"replica-1": (owned, owned), "replica-2": (12 - owned, 12 - owned)},
        what="each replica caching the Widgets of its workspaces and their copies",
    )
    # Schemas, the APIExport and the PublishedResources' status: the leader's controllers alone.
    follower = next(servlet for servlet in servlets.values() if servlet.metric("servlet_leader") == [0.0])
    assert _leader_reconciles(follower) == [], "a follower reconciled the leader's controllers"
    assert any(_leader_reconciles(servlet) for servlet in servlets.values()), "the leader reconciled nothing"

    # The second replica dies without handing anything back: the first takes over its workspaces.
    victims = [workspace for workspace, tokens in writers.items() if tokens == {"replica-2"}]
    servlets["replica-2"].kill()
    killed = time.monotonic()
    for workspace in victims:
        _create_and_wait(e2e, workspace, "after-kill", timeout=LEASE_DURATION + 20)
    took = time.monotonic() - killed
    print(f"workspaces of a killed replica synced again after {took:.1f} s")
    assert took <= LEASE_DURATION + 5, f"took {took:.1f} s over lease duration {LEASE_DURATION} s"
    for workspace in victims:
        after = [call.token for call in _writes_by_workspace(e2e)[workspace] if call.started >= killed]
        assert after and set(after) == {"replica-1"}, f"{workspace} written after the kill by {after}"
    _assert_one_writer_at_a_time(e2e)
    # The survivor listed the workspaces it took over: it caches every Widget and copy now.
    everything = 12 + len(victims)
    e2e.eventually(
        lambda: _cached({"replica-1": servlets["replica-1"]}) == {"replica-1": (everything, everything)},
        what="the survivor caching every Widget and copy",
    )
    assert servlets["replica-1"].alive()


@pytest.mark.kcpsim_only("tells replicas apart in kcpsim's request log")
@pytest.mark.parametrize("e2e", [Topology.with_workspaces(len(WORKSPACES), with_schema=False)], indirect=True)
def test_the_synced_condition_counts_the_objects_and_failures_of_every_replicas_share(e2e: E2E) -> None:
    """Only the leader writes the status, but its `Synced` adds what the other replica's
    membership Lease says of its share: every object counted, every failure."""
    _two_replicas(e2e)
    shared_since = time.monotonic()
    for workspace in WORKSPACES:
        _create_and_wait(e2e, workspace, "fine")
    writers = _writers_since(e2e, shared_since)
    # One workspace of each replica gets an object whose local name is taken by a foreign object.
    clashing = [next(ws for ws, tokens in writers.items() if tokens == {replica}) for replica in REPLICAS]
    name = default_local_name(namespace="default", name="clash")
    for workspace in clashing:
        cluster = e2e.world.cluster(workspace)
        e2e.rest.create(
            WIDGET.path(namespace=cluster),
            {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name, "namespace": cluster}},
        )
        e2e.create_remote(workspace, REMOTE_WIDGET, remote_object("Widget", "clash", namespace="default", size=1))

    total = len(WORKSPACES) + len(clashing)
    synced = e2e.eventually(
        lambda: (
            (condition := e2e.condition("widgets", "Synced"))
            and condition["message"].startswith(f"{len(clashing)} of {total} object(s) fail to sync")
            and condition
        ),
        what=f"Synced counting {len(clashing)} failures of {total} objects over both replicas",
        timeout=30,
    )
    assert synced["status"] == "False"
    for workspace in clashing:
        assert f"{e2e.world.cluster(workspace)}/default/clash" in synced["message"]


@pytest.mark.kcpsim_only("tells replicas apart in kcpsim's request log")
@pytest.mark.parametrize("e2e", [Topology.with_workspaces(len(WORKSPACES), with_schema=False)], indirect=True)
def test_a_deleted_published_resource_is_released_in_the_buckets_of_a_replica_that_died_meanwhile(
    e2e: E2E,
) -> None:
    """Each replica releases the finalizers of its own share; the share of a replica killed as the
    PublishedResource goes is released by the one that takes its buckets over."""
    servlets = _two_replicas(e2e)
    shared_since = time.monotonic()
    for workspace in WORKSPACES:
        _create_and_wait(e2e, workspace, "kept")
    writers = _writers_since(e2e, shared_since)
    victims = [workspace for workspace, tokens in writers.items() if tokens == {"replica-2"}]
    assert victims, f"writers per workspace: {writers}"

    servlets["replica-2"].kill()
    killed = time.monotonic()
    e2e.rest.delete("/apis/services.kdp.k8c.io/v1alpha1/publishedresources/widgets")
    for workspace in WORKSPACES:
        e2e.eventually(
            lambda ws=workspace: not e2e.has_finalizer(ws, REMOTE_WIDGET, namespace="default", name="kept"),
            what=f"the finalizer to leave {workspace}'s Widget",
            timeout=LEASE_DURATION + 20,
        )
    print(f"every finalizer released {time.monotonic() - killed:.1f} s after the kill")
    for workspace in victims:
        after = {call.token for call in _writes_by_workspace(e2e)[workspace] if call.started >= killed}
        assert after == {"replica-1"}, f"{workspace} released by {after}"
    assert servlets["replica-1"].alive()


@pytest.mark.kcpsim_only("tells replicas apart in kcpsim's request log")
@pytest.mark.parametrize("e2e", [Topology.with_workspaces(len(WORKSPACES), with_schema=False)], indirect=True)
def test_a_name_held_by_a_copy_from_the_other_replicas_share_is_a_conflict_not_a_retry_loop(e2e: E2E) -> None:
    """A replica caches only the copies of its own workspaces. When objects of two workspaces of
    different replicas want one local name, the first copy holds it; the other replica learns so
    from its create's AlreadyExists (one read), reports the conflict, takes its finalizer off, and
    stops trying until the name is free; then its copy is made."""
    servlets = _two_replicas(e2e, naming={"namespace": "shared", "name": "$remoteName"})
    shared_since = time.monotonic()
    for index, workspace in enumerate(WORKSPACES):
        e2e.create_remote(workspace, REMOTE_WIDGET, remote_object("Widget", f"probe-{index}", namespace="default"))
        e2e.wait_local(WIDGET, namespace="shared", name=f"probe-{index}")
    writers = _writers_since(e2e, shared_since)
    first, second = (next(ws for ws, tokens in writers.items() if tokens == {replica}) for replica in REPLICAS)
    e2e.create_remote(first, REMOTE_WIDGET, remote_object("Widget", "same", namespace="default"))
    e2e.wait_local(WIDGET, namespace="shared", name="same")
    before = len(_creates_in_shared(e2e))
    e2e.create_remote(second, REMOTE_WIDGET, remote_object("Widget", "same", namespace="default"))

    e2e.eventually(
        lambda: (
            (condition := e2e.condition("widgets", "Synced")) is not None
            and f"{e2e.world.cluster(second)}/default/same" in condition["message"]
        ),
        what="Synced naming the object whose name is taken",
        timeout=30,
    )
    e2e.eventually(
        lambda: not e2e.has_finalizer(second, REMOTE_WIDGET, namespace="default", name="same"),
        what="the finalizer off the object in conflict",
    )
    time.sleep(5)  # what a retry loop would fill with creates
    creates = _creates_in_shared(e2e)[before:]
    assert creates == [409], f"the answers to the creates of the second copy of shared/same: {creates}"

    # The first workspace's object goes, and with it its copy: the name is free, the second gets it.
    e2e.rest.delete(e2e.remote_path(first, REMOTE_WIDGET, namespace="default", name="same"))
    e2e.eventually(
        lambda: (
            (copy := e2e.local(WIDGET, namespace="shared", name="same")) is not None
            and copy["metadata"]["labels"].get(REMOTE_CLUSTER_LABEL) == e2e.world.cluster(second)
        ),
        what="the copy of the second workspace's object at the freed name",
    )
    assert all(servlet.alive() for servlet in servlets.values())


def _creates_in_shared(e2e: E2E) -> list[int]:
    """The answers to the replicas' creates of copies in the namespace `shared`, in order."""
    calls = [
        call
        for replica in REPLICAS
        for call in e2e.simulated.callers.writes(token=replica, ignore=NOT_WORK)
        if call.method == "POST" and call.path.endswith("/namespaces/shared/widgets")
    ]
    return [call.status for call in sorted(calls, key=lambda call: call.started)]
