"""The in-memory fakes answer like the API servers wherever a controller can tell the difference."""

from __future__ import annotations

from typing import Any

import pytest

from servlet.adapters.memory import MemoryClusters
from servlet.core.actions import CreateNamespace, DeleteLocal, ObjectRef, RemoveFinalizer, Side
from servlet.core.errors import AlreadyExists, Conflict, Forbidden, Gone, NotFound
from servlet.core.model import ResourceType
from servlet.core.ports import APIEXPORT_TYPE, LEASE_TYPE, PUBLISHED_RESOURCE_TYPE, SCHEMA_TYPE
from servlet.core.targets import NAMESPACE_TYPE

WIDGETS = ResourceType(group="example.com", version="v1", kind="Widget", plural="widgets", namespaced=True)


def widget(name: str, *, labels: dict[str, str] | None = None, finalizers: list[str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "default", "labels": labels or {}}
    if finalizers:
        metadata["finalizers"] = finalizers
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": metadata, "spec": {"size": 1}}


def widget_ref(name: str) -> ObjectRef:
    return ObjectRef(side=Side.LOCAL, resource=WIDGETS, namespace="default", name=name)


def test_every_write_gets_a_newer_resource_version_and_a_taken_name_is_already_exists() -> None:
    clusters = MemoryClusters()
    first = clusters.create_local(WIDGETS, widget("a"))
    second = clusters.create_local(WIDGETS, widget("b"))
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    assert first["metadata"]["uid"] != second["metadata"]["uid"]
    with pytest.raises(AlreadyExists):
        clusters.create_local(WIDGETS, widget("a"))


async def test_reads_of_missing_objects_are_none_and_writes_to_them_not_found() -> None:
    clusters = MemoryClusters()

    async def main() -> Any:
        assert await clusters.service.get(WIDGETS, namespace="default", name="nope") is None
        return await clusters.service.write_published_status("nope", {"conditions": []})

    with pytest.raises(NotFound):
        await main()


async def test_export_patches_are_merge_patches_guarded_by_the_resource_version_read() -> None:
    clusters = MemoryClusters()
    export = clusters.create_in(
        "org",
        APIEXPORT_TYPE,
        {
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIExport",
            "metadata": {"name": "e"},
            "spec": {"latestResourceSchemas": ["a"], "other": "x"},
        },
    )
    read_at = export["metadata"]["resourceVersion"]

    async def main() -> tuple[dict[str, Any], type[Exception]]:
        patched = await clusters.org.patch_export(
            "e", {"spec": {"latestResourceSchemas": ["a", "b"], "other": None}}, resource_version=read_at
        )
        try:
            await clusters.org.patch_export("e", {"spec": {"latestResourceSchemas": []}}, resource_version=read_at)
        except Conflict as stale:
            return patched, type(stale)
        raise AssertionError("a stale resourceVersion was accepted")

    patched, stale = await main()
    assert patched["spec"] == {"latestResourceSchemas": ["a", "b"]}
    assert stale is Conflict


async def test_a_schema_of_the_same_name_counts_as_created_only_with_the_same_spec() -> None:
    clusters = MemoryClusters()
    schema = {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {"name": "s"},
        "spec": {"group": "g"},
    }

    async def main() -> None:
        created = await clusters.org.create_schema(schema)
        again = await clusters.org.create_schema(schema)
        assert again["metadata"]["uid"] == created["metadata"]["uid"]
        with pytest.raises(AlreadyExists):
            await clusters.org.create_schema({**schema, "spec": {"group": "other"}})

    await main()
    assert clusters.remote("org", SCHEMA_TYPE, name="s") is not None


async def test_deletes_honour_uid_preconditions_and_finalizers() -> None:
    clusters = MemoryClusters()
    held = clusters.create_local(WIDGETS, widget("held", finalizers=["x/cleanup"]))

    async def main() -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        with pytest.raises(Conflict):
            await clusters.executor.execute(DeleteLocal(target=widget_ref("held"), uid="someone-else"))
        await clusters.executor.execute(DeleteLocal(target=widget_ref("held"), uid=held["metadata"]["uid"]))
        marked = clusters.local(WIDGETS, name="held", namespace="default")
        version = str((marked or {}).get("metadata", {}).get("resourceVersion"))
        await clusters.executor.execute(
            RemoveFinalizer(target=widget_ref("held"), finalizers=(), resource_version=version)
        )
        return marked, clusters.local(WIDGETS, name="held", namespace="default")

    marked, after = await main()
    assert marked is not None and marked["metadata"]["deletionTimestamp"]
    assert after is None, "the object goes once its last finalizer is removed"


async def test_creating_a_namespace_that_exists_is_done_not_failed() -> None:
    clusters = MemoryClusters()
    action = CreateNamespace(target=ObjectRef(side=Side.LOCAL, resource=NAMESPACE_TYPE, namespace="", name="team"))

    async def main() -> tuple[Any, Any]:
        return await clusters.executor.execute(action), await clusters.executor.execute(action)

    first, second = await main()
    assert first["metadata"]["name"] == "team" and second is None


async def test_a_lease_replaced_from_a_stale_read_is_a_conflict() -> None:
    clusters = MemoryClusters()
    lease = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "l", "namespace": "default"},
        "spec": {"holderIdentity": "a"},
    }

    async def main() -> str:
        read = await clusters.leases.create_lease(lease)
        await clusters.leases.replace_lease({**read, "spec": {"holderIdentity": "b"}})
        with pytest.raises(Conflict):
            await clusters.leases.replace_lease({**read, "spec": {"holderIdentity": "c"}})
        current = await clusters.leases.get_lease(namespace="default", name="l")
        return str((current or {})["spec"]["holderIdentity"])

    assert await main() == "b"
    assert clusters.local(LEASE_TYPE, name="l", namespace="default") is not None


async def test_the_virtual_workspace_spans_the_tenants_but_not_the_org_and_refuses_unbound_ones() -> None:
    clusters = MemoryClusters()
    for cluster in ("team-a", "team-b", "org"):
        clusters.create_in(cluster, WIDGETS, widget("w"))
    clusters.vw.refused.add("team-b")

    async def main() -> list[str]:
        listed = await clusters.vw.list_objects(WIDGETS)
        with pytest.raises(Forbidden):
            await clusters.vw.get(WIDGETS, cluster="team-b", namespace="default", name="w")
        return [obj["metadata"]["annotations"]["kcp.io/cluster"] for obj in listed]

    assert await main() == ["team-a", "team-b"]


async def test_a_workspace_on_a_shard_whose_url_left_the_slice_is_out_of_sight() -> None:
    clusters = MemoryClusters()
    for cluster in ("team-a", "team-b"):
        clusters.create_in(cluster, WIDGETS, widget("w"))
    clusters.sources.shard_of["team-b"] = "memory://shard-1"
    clusters.sources.set_virtual_workspace_urls(["memory://root", "memory://shard-1"])

    async def clusters_listed() -> list[str]:
        return [obj["metadata"]["annotations"]["kcp.io/cluster"] for obj in await clusters.vw.list_objects(WIDGETS)]

    assert await clusters_listed() == ["team-a", "team-b"]
    assert clusters.sources.set_virtual_workspace_urls(["memory://root"]) == {"team-b"}
    assert await clusters_listed() == ["team-a"]
    with pytest.raises(Forbidden):
        await clusters.vw.get(WIDGETS, cluster="team-b", namespace="default", name="w")


async def test_lists_come_in_pages_of_one_snapshot_and_a_watch_resumes_after_it() -> None:
    clusters = MemoryClusters()
    for name in "abcde":
        clusters.create_local(WIDGETS, widget(name, labels={"keep": "yes"}))
    clusters.create_local(WIDGETS, widget("other"))
    collection = clusters.sources.service_source(WIDGETS).collection

    async def main() -> tuple[list[list[str]], list[tuple[str, str]]]:
        pages: list[list[str]] = []
        token = ""
        while True:
            page = await collection.list_page(limit=2, continue_token=token, label_selector="keep=yes")
            pages.append([obj["metadata"]["name"] for obj in page.items])
            token = page.continue_token
            if not token:
                break
        clusters.create_local(WIDGETS, widget("f", labels={"keep": "yes"}))
        clusters.create_local(WIDGETS, widget("unlabelled"))
        seen: list[tuple[str, str]] = []
        async for event in collection.watch(
            resource_version=page.resource_version, timeout_seconds=0, read_timeout=1, label_selector="keep=yes"
        ):
            seen.append((event.type, event.object["metadata"]["name"]))
        return pages, seen

    pages, seen = await main()
    assert pages == [["a", "b"], ["c", "d"], ["e"]]
    assert seen == [("ADDED", "f")]


async def test_a_watch_from_a_compacted_version_is_gone() -> None:
    clusters = MemoryClusters()
    clusters.create_local(PUBLISHED_RESOURCE_TYPE, {"metadata": {"name": "p"}})
    clusters.create_local(PUBLISHED_RESOURCE_TYPE, {"metadata": {"name": "q"}})
    clusters.server.compact()
    collection = clusters.sources.service_source(PUBLISHED_RESOURCE_TYPE).collection

    async def main() -> None:
        async for _ in collection.watch(resource_version="1", timeout_seconds=0, read_timeout=1):
            pass

    with pytest.raises(Gone):
        await main()
