"""The in-memory fakes and the HTTP adapters answer alike: each scenario runs on both, the adapters
talking HTTP to kcpsim, and must end the same way. This is what lets the fast controller tests
trust the fakes for resourceVersions, 404, 409 and preconditions."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

import attrs
import pytest

from kcpsim import KcpSim
from servlet.adapters.connections import Connections
from servlet.adapters.executor import Executor
from servlet.adapters.leases import LeasesAdapter
from servlet.adapters.memory import MemoryClusters
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.core.actions import AddFinalizer, Create, DeleteLocal, ObjectRef, Patch, Side
from servlet.core.errors import AlreadyExists, Conflict, NotFound
from servlet.core.model import ResourceType
from servlet.core.ports import APIEXPORT_TYPE, ActionExecutor, Collection, Leases, OrgWorkspace, WatchSources

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
