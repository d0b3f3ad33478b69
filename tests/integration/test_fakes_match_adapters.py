"""The in-memory fakes and the HTTP adapters answer alike: each scenario runs on both, the adapters
talking HTTP to kcpsim, and must end the same way. This is what lets the fast controller tests
trust the fakes for resourceVersions, 404, 409 and preconditions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest

from kcpsim import KcpSim, Topology
from kcpsim.topology import WorkspaceSpec
from servlet.adapters.connections import Connections
from servlet.adapters.executor import Executor
from servlet.adapters.leases import LeasesAdapter
from servlet.adapters.memory import MemoryClusters
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.adapters.virtual_workspace import VirtualWorkspaceAdapter
from servlet.core.actions import AddFinalizer, Create, DeleteLocal, ObjectRef, Patch, Side
from servlet.core.errors import AlreadyExists, Conflict, Forbidden, NotFound
from servlet.core.keys import CLUSTER_ANNOTATION
from servlet.core.model import ResourceType
from servlet.core.ports import (
    APIEXPORT_TYPE,
    ActionExecutor,
    Collection,
    Leases,
    OrgWorkspace,
    VirtualWorkspace,
    VirtualWorkspaceLocation,
    WatchSources,
)
from servlet.core.targets import NAMESPACE_TYPE, SECRET_TYPE

CONFIGMAPS = ResourceType(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
EXPORT = "certificates.example.corp"


@attrs.frozen
class Ports:
    executor: ActionExecutor
    org: OrgWorkspace
    leases: Leases
    sources: WatchSources[Collection]


@asynccontextmanager
async def memory_ports() -> AsyncIterator[Ports]:
    clusters = MemoryClusters()
    # What kcpsim seeds: the export in the org workspace.
    clusters.create_in(
        clusters.org.identity.name,
        APIEXPORT_TYPE,
        {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": EXPORT}, "spec": {}},
    )
    yield Ports(executor=clusters.executor, org=clusters.org, leases=clusters.leases, sources=clusters.sources)


@asynccontextmanager
async def http_ports(sim: KcpSim) -> AsyncIterator[Ports]:
    connections = Connections(service_config=sim.service_config(), kcp_config=sim.kcp_config(), trust_env=False)
    try:
        yield Ports(
            executor=Executor(connections, can_write=lambda: True),
            org=OrgWorkspaceAdapter(connections.org),
            leases=LeasesAdapter(connections.service),
            sources=connections,
        )
    finally:
        await connections.aclose()


@pytest.fixture(params=["memory", "http"])
async def ports(request: pytest.FixtureRequest) -> AsyncIterator[Ports]:
    """The same ports twice: the in-memory fakes, then the HTTP adapters talking to kcpsim."""
    if request.param == "memory":
        async with memory_ports() as found:
            yield found
    else:
        async with http_ports(request.getfixturevalue("kcpsim")) as found:
            yield found


def ref(name: str) -> ObjectRef:
    return ObjectRef(side=Side.LOCAL, resource=CONFIGMAPS, namespace="default", name=name)


def configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"a": "1"},
    }


async def outcome(call: Awaitable[Any]) -> str:
    try:
        await call
    except (AlreadyExists, Conflict, NotFound) as failure:
        return type(failure).__name__
    return "ok"


async def test_creates_deletes_and_their_preconditions(ports: Ports) -> None:
    async def body(ports: Ports) -> list[str]:
        created = await ports.executor.execute(Create(target=ref("c"), object=configmap("c")))
        uid = created["metadata"]["uid"]
        return [
            await outcome(ports.executor.execute(Create(target=ref("c"), object=configmap("c")))),
            await outcome(ports.executor.execute(DeleteLocal(target=ref("c"), uid="not-" + uid))),
            await outcome(
                ports.executor.execute(AddFinalizer(target=ref("c"), finalizers=("x/y",), resource_version="1"))
            ),
            await outcome(ports.executor.execute(DeleteLocal(target=ref("c"), uid=uid))),
            await outcome(ports.executor.execute(DeleteLocal(target=ref("c"), uid=uid))),
            await outcome(ports.executor.execute(AddFinalizer(target=ref("c"), finalizers=("x/y",)))),
        ]

    assert await body(ports) == ["AlreadyExists", "Conflict", "Conflict", "ok", "ok", "NotFound"]


async def test_leases_and_the_export_refuse_writes_from_a_stale_read(ports: Ports) -> None:
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "contract", "namespace": "default"},
        "spec": {"holderIdentity": "a"},
    }

    async def body(ports: Ports) -> list[str]:
        read = await ports.leases.create_lease(lease)
        export = await ports.org.get_export(EXPORT)
        assert export is not None
        stale = export["metadata"]["resourceVersion"]
        return [
            await outcome(ports.leases.create_lease(lease)),
            await outcome(ports.leases.replace_lease({**read, "spec": {"holderIdentity": "b"}})),
            await outcome(ports.leases.replace_lease({**read, "spec": {"holderIdentity": "c"}})),
            await outcome(
                ports.org.patch_export(EXPORT, {"metadata": {"labels": {"touched": "yes"}}}, resource_version=stale)
            ),
            await outcome(
                ports.org.patch_export(EXPORT, {"spec": {"latestResourceSchemas": []}}, resource_version=stale)
            ),
        ]

    assert await body(ports) == ["AlreadyExists", "ok", "Conflict", "ok", "Conflict"]


async def test_a_watch_from_a_list_reports_the_changes_after_it_in_order(ports: Ports) -> None:
    async def body(ports: Ports) -> list[tuple[str, str]]:
        collection = ports.sources.service_source(CONFIGMAPS).collection
        listed = await collection.list_page(limit=100)
        created = await ports.executor.execute(Create(target=ref("w"), object=configmap("w")))
        await ports.executor.execute(Patch(target=ref("w"), patch={"data": {"a": "2"}}))
        await ports.executor.execute(DeleteLocal(target=ref("w"), uid=created["metadata"]["uid"]))
        seen: list[tuple[str, str]] = []
        async for event in collection.watch(
            resource_version=listed.resource_version, timeout_seconds=1, read_timeout=5
        ):
            if event.type != "BOOKMARK":
                seen.append((event.type, event.object["metadata"]["name"]))
        return seen

    assert await body(ports) == [("ADDED", "w"), ("MODIFIED", "w"), ("DELETED", "w")]


async def test_a_write_that_changes_nothing_keeps_the_resource_version(ports: Ports) -> None:
    async def body(ports: Ports) -> tuple[bool, bool]:
        created = await ports.executor.execute(Create(target=ref("same"), object=configmap("same")))
        unchanged = await ports.executor.execute(Patch(target=ref("same"), patch={"data": {"a": "1"}}))
        changed = await ports.executor.execute(Patch(target=ref("same"), patch={"data": {"a": "2"}}))
        version = created["metadata"]["resourceVersion"]
        return (unchanged["metadata"]["resourceVersion"] == version, changed["metadata"]["resourceVersion"] == version)

    assert await body(ports) == (True, False)


# -- shards -------------------------------------------------------------------------------------

TEAM_A, TEAM_B = "k7v2m9x4q1w8z3r5", "p4n8c2l6t0y9h1j3"
TWO_SHARDS = Topology(workspaces=(WorkspaceSpec("team-a", shard=0), WorkspaceSpec("team-b", shard=1)))


@attrs.frozen
class ShardedPorts:
    executor: ActionExecutor
    sources: WatchSources[Collection]
    location: VirtualWorkspaceLocation
    vw: VirtualWorkspace
    urls: tuple[str, ...]  # the VW URLs of the root shard, then of shard-1 (team-b's)


@asynccontextmanager
async def memory_sharded_ports() -> AsyncIterator[ShardedPorts]:
    clusters = MemoryClusters()
    for cluster in (TEAM_A, TEAM_B):  # what kcpsim seeds in each workspace
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}
        clusters.create_in(cluster, NAMESPACE_TYPE, namespace)
    urls = ("memory://root", "memory://shard-1")
    clusters.sources.shard_of[TEAM_B] = urls[1]
    yield ShardedPorts(
        executor=clusters.executor, sources=clusters.sources, location=clusters.sources, vw=clusters.vw, urls=urls
    )


@asynccontextmanager
async def http_sharded_ports(sim: KcpSim) -> AsyncIterator[ShardedPorts]:
    connections = Connections(service_config=sim.service_config(), kcp_config=sim.kcp_config(), trust_env=False)
    try:
        yield ShardedPorts(
            executor=Executor(connections, can_write=lambda: True),
            sources=connections,
            location=connections,
            vw=VirtualWorkspaceAdapter(connections),
            urls=(sim.vw_url(shard=0), sim.vw_url(shard=1)),
        )
    finally:
        await connections.aclose()


@pytest.fixture(params=["memory", "http"])
async def sharded_ports(request: pytest.FixtureRequest) -> AsyncIterator[ShardedPorts]:
    """Two workspaces on two kcp shards: in memory, then kcpsim with two shards."""
    if request.param == "memory":
        async with memory_sharded_ports() as found:
            yield found
    else:
        sim = request.getfixturevalue("kcpsim_factory")(topology=TWO_SHARDS, shards=2)
        async with http_sharded_ports(sim) as found:
            yield found


async def _clusters_per_source(ports: ShardedPorts, resource: ResourceType) -> list[list[str]]:
    found = []
    for source in ports.sources.virtual_workspace_sources(resource):
        page = await source.collection.list_page(limit=100)
        found.append(sorted({item["metadata"]["annotations"][CLUSTER_ANNOTATION] for item in page.items}))
    return found


async def test_each_shard_shows_its_own_workspaces_and_a_write_lands_on_its_workspace(
    sharded_ports: ShardedPorts,
) -> None:
    ports = sharded_ports
    ports.location.set_virtual_workspace_urls(ports.urls)
    assert await _clusters_per_source(ports, NAMESPACE_TYPE) == [[TEAM_A], [TEAM_B]]

    target = ObjectRef(side=Side.REMOTE, resource=SECRET_TYPE, namespace="default", name="s", cluster=TEAM_B)
    body = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}}
    await ports.executor.execute(Create(target=target, object=body))
    assert await _clusters_per_source(ports, SECRET_TYPE) == [[], [TEAM_B]]

    # Shard-1 leaves the slice: its workspace is reported as unreadable, and no source shows it.
    assert await ports.vw.get(SECRET_TYPE, cluster=TEAM_B, namespace="default", name="s") is not None
    assert ports.location.set_virtual_workspace_urls(ports.urls[:1]) == {TEAM_B}
    assert await _clusters_per_source(ports, NAMESPACE_TYPE) == [[TEAM_A]]
    with pytest.raises(Forbidden):
        await ports.vw.get(SECRET_TYPE, cluster=TEAM_B, namespace="default", name="s")
