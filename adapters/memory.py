"""In-memory fakes of every port, over one `MemoryServer`: no network, no cluster, milliseconds.

For two kinds of users: the project's fast controller tests (the simulator stays for the
integration tests, which speak HTTP), and library users who want to run the controllers, or
preview what a PublishedResource would project and sync, against objects they hand in.

`MemoryClusters` bundles them: `service`, `org`, `vw`, `executor`, `leases` and `sources` (the
informers' collections) all read and write the same objects, so a schema the `org` fake creates
shows up in the `sources.org_source(SCHEMA_TYPE)` watch, and an action the `executor` performs
on a workspace shows up in `vw`. They behave like the API servers where the controllers can
tell: resourceVersions, 404, 409 AlreadyExists, resourceVersion and uid preconditions, merge
patches, finalizers, list pages and watches with 410 Gone after `server.compact()`.

Deliberately not here: the rules themselves (`memory_server.py` over `core.world.World`) and
anything the controllers cannot notice (see there).
"""

from __future__ import annotations

import copy
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any

from servlet.adapters.memory_leases import MemoryLeases
from servlet.adapters.memory_server import PARTIAL_API_VERSION, MemoryServer, Place, failure, label_matcher
from servlet.core.actions import Action, Side, Write, secret_spellings
from servlet.core.errors import AlreadyExists, ApiFailure, Forbidden, NotLeader
from servlet.core.keys import metadata_of, string, string_map
from servlet.core.model import ResourceType
from servlet.core.ports import (
    APIEXPORT_TYPE,
    CRD_TYPE,
    ENDPOINT_SLICE_TYPE,
    PUBLISHED_RESOURCE_TYPE,
    SCHEMA_TYPE,
    ActionExecutor,
    Leases,
    ListPage,
    OrgWorkspace,
    ServiceCluster,
    VirtualWorkspace,
    VirtualWorkspaceLocation,
    WatchEvent,
    WatchSource,
    WatchSources,
    WorkspaceIdentity,
)
from servlet.core.world import World

__all__ = [
    "MemoryClusters",
    "MemoryCollection",
    "MemoryExecutor",
    "MemoryLeases",
    "MemoryOrgWorkspace",
    "MemoryServer",
    "MemoryServiceCluster",
    "MemorySources",
    "MemoryVirtualWorkspace",
]

Object = dict[str, Any]
DEFAULT_ORG = WorkspaceIdentity(name="org", path="root:org")


def _label(resource: ResourceType) -> str:
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


class MemoryServiceCluster:
    """`ServiceCluster` in memory."""

    def __init__(self, server: MemoryServer) -> None:
        self._server = server

    async def get_crd(self, name: str) -> Object | None:
        return await self.get(CRD_TYPE, namespace="", name=name)

    async def get(self, resource: ResourceType, *, namespace: str, name: str) -> Object | None:
        return self._server.read(Place(Side.LOCAL, resource).key(namespace=namespace, name=name))

    async def list_objects(
        self, resource: ResourceType, *, namespace: str = "", labels: Mapping[str, str] | None = None
    ) -> list[Object]:
        selector = ",".join(f"{key}={value}" for key, value in (labels or {}).items())
        return self._server.objects(Place(Side.LOCAL, resource), namespace=namespace, selector=selector)

    async def write_published_status(self, name: str, status: Mapping[str, Any]) -> Object:
        place = Place(Side.LOCAL, PUBLISHED_RESOURCE_TYPE)
        return self._server.merge_patch(place, place.key(namespace="", name=name), {"status": dict(status)})


class MemoryOrgWorkspace:
    """`OrgWorkspace` in memory: the workspace `identity`, a logical cluster like any other."""

    def __init__(self, server: MemoryServer, *, identity: WorkspaceIdentity = DEFAULT_ORG) -> None:
        self._server = server
        self.identity = identity

    def place(self, resource: ResourceType) -> Place:
        return Place(Side.REMOTE, resource, self.identity.name)

    async def resolve_identity(self) -> WorkspaceIdentity:
        return self.identity

    async def create_schema(self, schema: Mapping[str, Any]) -> Object:
        try:
            return self._server.create(self.place(SCHEMA_TYPE), schema)
        except AlreadyExists:
            existing = await self._get(SCHEMA_TYPE, string(metadata_of(schema).get("name")))
            if existing is not None and existing.get("spec") == schema.get("spec"):
                return existing
            raise

    async def list_schemas(self) -> list[Object]:
        return self._server.objects(self.place(SCHEMA_TYPE))

    async def get_export(self, name: str) -> Object | None:
        return await self._get(APIEXPORT_TYPE, name)

    async def patch_export(self, name: str, patch: Mapping[str, Any], *, resource_version: str) -> Object:
        body = copy.deepcopy(dict(patch))
        if resource_version:
            body["metadata"] = {**(body.get("metadata") or {}), "resourceVersion": resource_version}
        place = self.place(APIEXPORT_TYPE)
        return self._server.merge_patch(place, place.key(namespace="", name=name), body)

    async def get_endpoint_slice(self, name: str) -> Object | None:
        return await self._get(ENDPOINT_SLICE_TYPE, name)

    async def _get(self, resource: ResourceType, name: str) -> Object | None:
        return self._server.read(self.place(resource).key(namespace="", name=name))


class MemoryVirtualWorkspace:
    """`VirtualWorkspace` in memory: every workspace but the org's. A workspace in `refused`
    answers Forbidden, like one that does not bind the export; so does one whose shard's URL is
    not among the location's (`MemorySources.shard_of`), and lists leave those out."""

    def __init__(
        self, server: MemoryServer, *, org: str = DEFAULT_ORG.name, shards: MemorySources | None = None
    ) -> None:
        self._server = server
        self._org = org
        self._shards = shards
        self.refused: set[str] = set()

    def _out_of_sight(self, cluster: str) -> bool:
        return self._shards is not None and not self._shards.in_sight(cluster)

    def _bound(self, place: Place, cluster: str, verb: str, *, namespace: str, name: str = "") -> None:
        if cluster in self.refused or cluster == self._org or self._out_of_sight(cluster):
            raise failure(
                Forbidden,
                place.operation(verb, namespace=namespace, name=name),
                f"workspace {cluster} does not bind the export",
            )

    async def get(self, resource: ResourceType, *, cluster: str, namespace: str, name: str) -> Object | None:
        place = Place(Side.REMOTE, resource, cluster)
        self._bound(place, cluster, "get", namespace=namespace, name=name)
        return self._server.read(place.key(namespace=namespace, name=name))

    async def list_in_workspace(
        self, resource: ResourceType, *, cluster: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> list[Object]:
        place = Place(Side.REMOTE, resource, cluster)
        self._bound(place, cluster, "list", namespace=namespace)
        selector = ",".join(f"{key}={value}" for key, value in (labels or {}).items())
        return self._server.objects(place, namespace=namespace, selector=selector)

    async def list_objects(self, resource: ResourceType) -> list[Object]:
        place = Place(Side.REMOTE, resource, None, excluded=self._org, on_shard=lambda c: not self._out_of_sight(c))
        return self._server.objects(place)


class MemoryExecutor:
    """`ActionExecutor` in memory, with the daemon's executor's outcomes: a namespace already
    there and a delete of something gone are done; a replica that may not write raises NotLeader."""

    def __init__(self, server: MemoryServer, *, can_write: Callable[[], bool] = lambda: True) -> None:
        self._server = server
        self._can_write = can_write
        #: Every action executed (not the refused ones), in order.
        self.executed: list[Action] = []

    async def execute(self, action: Action) -> Object | None:
        if action.write is Write.NOTHING:
            return None
        if not self._can_write():
            raise NotLeader(action)
        target = action.target
        if (
            action.write is Write.CREATE_NAMESPACE
            and self._server.read(
                Place(target.side, target.resource, target.cluster).key(namespace="", name=target.name)
            )
            is not None
        ):
            return None
        try:
            written = self._server.apply(action)
        except ApiFailure as refused:
            refused.hide(secret_spellings(action))
            raise
        self.executed.append(action)
        return None if action.write is Write.DELETE else written


class MemoryCollection:
    """`Collection` in memory: list pages cut from one snapshot version, and watches that replay
    the history after a version (410 Gone once `server.compact()` dropped it)."""

    def __init__(self, server: MemoryServer, place: Place) -> None:
        self._server = server
        self._place = place

    @property
    def location(self) -> str:
        where = "service" if self._place.side is Side.LOCAL else f"clusters/{self._place.cluster or '*'}"
        shard = f"{self._place.shard}/" if self._place.shard else ""
        return f"memory:{shard}{where}/{_label(self._place.resource)}"

    async def list_page(
        self, *, limit: int, continue_token: str = "", label_selector: str | None = None, metadata_only: bool = False
    ) -> ListPage:
        self._server.take_fault()
        found = self._server.objects(self._place, selector=label_selector)
        version, _, offset_text = continue_token.partition(":")
        version = version or str(self._server.world.version)
        offset = int(offset_text or 0)
        end = offset + limit
        page = [_partial(obj) if metadata_only else obj for obj in found[offset:end]]
        return ListPage(
            items=page, resource_version=version, continue_token=f"{version}:{end}" if end < len(found) else ""
        )

    async def watch(
        self,
        *,
        resource_version: str,
        timeout_seconds: int,
        read_timeout: float,
        label_selector: str | None = None,
        metadata_only: bool = False,
    ) -> AsyncGenerator[WatchEvent, None]:
        matches = label_matcher(label_selector, operation=self._place.operation("watch"))
        changes = self._server.changes(self._place, since=resource_version, timeout=timeout_seconds)
        async with aclosing(changes) as stream:
            async for change in stream:
                if matches(string_map(metadata_of(change.object).get("labels"))):
                    obj = change.object
                    yield WatchEvent(type=change.type, object=_partial(obj) if metadata_only else copy.deepcopy(obj))


def _partial(obj: Mapping[str, Any]) -> Object:
    return {
        "apiVersion": PARTIAL_API_VERSION,
        "kind": "PartialObjectMetadata",
        "metadata": copy.deepcopy(dict(metadata_of(obj))),
    }


class MemorySources:
    """`WatchSources` in memory, and where the VW is (the sync manager sets it from the endpoint slice).

    Shards are modelled by URL: `shard_of` names the VW URL serving each workspace (those it does
    not name are on the first URL), and each URL's source shows only its workspaces; a workspace
    whose URL is not among the location's is out of sight, as on a sharded kcp. Before any URL is
    set, one source shows every workspace."""

    def __init__(self, server: MemoryServer, *, org: str = DEFAULT_ORG.name) -> None:
        self._server = server
        self._org = org
        self.virtual_workspace_urls: tuple[str, ...] = ()
        #: Workspace (logical cluster) -> the VW URL of its shard.
        self.shard_of: dict[str, str] = {}

    def set_virtual_workspace_urls(self, urls: Sequence[str]) -> frozenset[str]:
        self.virtual_workspace_urls = tuple(dict.fromkeys(url.rstrip("/") for url in urls))
        return frozenset(cluster for cluster, url in self.shard_of.items() if url not in self.virtual_workspace_urls)

    def in_sight(self, cluster: str) -> bool:
        """Whether a VW URL of the location serves workspace `cluster` (all do before any is set)."""
        urls = self.virtual_workspace_urls
        return not urls or self.shard_of.get(cluster, urls[0]) in urls

    def _serves(self, url: str) -> Callable[[str], bool]:
        first = self.virtual_workspace_urls[0]
        return lambda cluster: self.shard_of.get(cluster, first) == url

    def service_source(self, resource: ResourceType) -> WatchSource[MemoryCollection]:
        return self._source(Place(Side.LOCAL, resource), f"service/{_label(resource)}")

    def org_source(self, resource: ResourceType) -> WatchSource[MemoryCollection]:
        return self._source(Place(Side.REMOTE, resource, self._org), f"org/{_label(resource)}")

    def virtual_workspace_sources(self, resource: ResourceType) -> tuple[WatchSource[MemoryCollection], ...]:
        name = f"vw/{_label(resource)}"
        if not self.virtual_workspace_urls:
            return (self._source(Place(Side.REMOTE, resource, None, excluded=self._org), name),)
        return tuple(
            self._source(
                Place(Side.REMOTE, resource, None, excluded=self._org, shard=url, on_shard=self._serves(url)), name
            )
            for url in self.virtual_workspace_urls
        )

    def _source(self, place: Place, name: str) -> WatchSource[MemoryCollection]:
        return WatchSource(collection=MemoryCollection(self._server, place), name=name)


class MemoryClusters:
    """The service cluster, the org workspace and the tenants' workspaces in memory, with a fake
    of every port over them. `world`: objects to start from (a `core.world.World`)."""

    def __init__(
        self,
        *,
        org: WorkspaceIdentity = DEFAULT_ORG,
        world: World | None = None,
        can_write: Callable[[], bool] = lambda: True,
    ) -> None:
        self.server = MemoryServer(world)
        self.service = MemoryServiceCluster(self.server)
        self.org = MemoryOrgWorkspace(self.server, identity=org)
        self.sources = MemorySources(self.server, org=org.name)
        self.vw = MemoryVirtualWorkspace(self.server, org=org.name, shards=self.sources)
        self.executor = MemoryExecutor(self.server, can_write=can_write)
        self.leases = MemoryLeases(self.server)

    def create_local(self, resource: ResourceType, obj: Mapping[str, Any]) -> Object:
        """Create an object on the service cluster, as another writer would."""
        return self.server.create(Place(Side.LOCAL, resource), obj)

    def create_in(self, cluster: str, resource: ResourceType, obj: Mapping[str, Any]) -> Object:
        """Create an object in workspace `cluster` (a logical cluster name; the org's for its own)."""
        return self.server.create(Place(Side.REMOTE, resource, cluster), obj)

    def delete_local(self, resource: ResourceType, *, name: str, namespace: str = "") -> None:
        """Delete an object on the service cluster, as another writer would (finalizers hold it)."""
        place = Place(Side.LOCAL, resource)
        self.server.delete(place, place.key(namespace=namespace, name=name))

    def delete_in(self, cluster: str, resource: ResourceType, *, name: str, namespace: str = "") -> None:
        """Delete an object in workspace `cluster`, as a tenant would (finalizers hold it)."""
        place = Place(Side.REMOTE, resource, cluster)
        self.server.delete(place, place.key(namespace=namespace, name=name))

    def patch_local(
        self, resource: ResourceType, patch: Mapping[str, Any], *, name: str, namespace: str = ""
    ) -> Object:
        """Merge-patch an object on the service cluster, as another writer (its controller) would."""
        place = Place(Side.LOCAL, resource)
        return self.server.merge_patch(place, place.key(namespace=namespace, name=name), patch)

    def list_local(self, resource: ResourceType) -> list[Object]:
        return self.server.objects(Place(Side.LOCAL, resource))

    def local(self, resource: ResourceType, *, name: str, namespace: str = "") -> Object | None:
        return self.server.read(Place(Side.LOCAL, resource).key(namespace=namespace, name=name))

    def remote(self, cluster: str, resource: ResourceType, *, name: str, namespace: str = "") -> Object | None:
        return self.server.read(Place(Side.REMOTE, resource, cluster).key(namespace=namespace, name=name))


if TYPE_CHECKING:  # mypy proves every fake fills its port

    def _fills_ports(
        clusters: MemoryClusters,
    ) -> tuple[
        ServiceCluster,
        OrgWorkspace,
        VirtualWorkspace,
        ActionExecutor,
        Leases,
        WatchSources[MemoryCollection],
        VirtualWorkspaceLocation,
    ]:
        return (
            clusters.service,
            clusters.org,
            clusters.vw,
            clusters.executor,
            clusters.leases,
            clusters.sources,
            clusters.sources,
        )
