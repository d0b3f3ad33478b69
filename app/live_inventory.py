"""Gathering an `Inventory` from the live clusters, for `servlet plan` without `-f`.

The live plan must show what `servlet run` would do right now, so it reads what the daemon reads,
through the same adapters: the PublishedResources (with the selector) and the CRDs they name on
the service cluster; the APIExport, the existing APIResourceSchemas and the endpoint slice in
the org workspace; then, once kcp has published the virtual workspace (VW) URL, every remote
object of each projected resource across all workspaces, and per remote object the local copy,
the object that may sit at its computed local name, the namespaces and the related
Secrets/ConfigMaps the planner looks at. Related objects are read one by one (only those the
planner names), never by listing every Secret of a cluster.

Absence is data: a resource the VW does not serve yet, or a VW URL kcp has not published, becomes
a note and the plan covers what it can. Any other failed read raises `LiveReadError`, whose
one-line message names the API server (service cluster, org workspace, virtual workspace) and
its URL.

Deliberately not here: planning (`core.preview.plan_servlet` does it from the Inventory) and
writing anything: this module only sends GET requests.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from attrs import frozen

from servlet.adapters import objects
from servlet.adapters.connections import Connections, Target
from servlet.adapters.errors import ApiFailure, Forbidden, Invalid, NotFound, Operation
from servlet.adapters.kube import failure_from_exception, failure_from_response
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.adapters.service_cluster import ServiceClusterAdapter
from servlet.adapters.virtual_workspace import VirtualWorkspaceAdapter
from servlet.core.actions import NAMESPACE_TYPE, Side, related_resource_type
from servlet.core.apiexport import virtual_workspace_url
from servlet.core.filtering import filter_admits
from servlet.core.inventory import KCP_CLUSTER_ANNOTATION, Inventory
from servlet.core.metadata import SERVLET_LABEL, link_labels
from servlet.core.model import Problem, PublishedResource, ResourceType, ServletIdentity
from servlet.core.naming import local_key_for
from servlet.core.parsing import parse_published_resource
from servlet.core.plan import remote_key_of
from servlet.core.ports import CRD_TYPE, PUBLISHED_RESOURCE_TYPE, SCHEMA_TYPE
from servlet.core.projection import Projected, project
from servlet.core.related import related_reads

Object = dict[str, Any]
T = TypeVar("T")

SELECTOR_FLAG = "--published-resource-selector"
# Enough parallel GETs to make a plan of many objects quick without hammering an API server.
_PARALLEL_READS = 16
_PAGE_SIZE = "500"


# The API server a read goes to, as a person names it in an error message.
TARGET_NAMES = {Target.SERVICE: "service cluster", Target.ORG: "org workspace",
                Target.VIRTUAL_WORKSPACE: "virtual workspace"}


class LiveReadError(Exception):
    """A read that failed for another reason than the object's absence (unreachable, refused, ...)."""

    def __init__(self, *, target: Target, url: str, detail: str) -> None:
        self.target = target
        self.url = url
        # One line, whatever the server put in its message.
        self.detail = " ".join(detail.split())
        super().__init__(f"{self.where}: {self.detail}")

    @property
    def where(self) -> str:
        return f"{TARGET_NAMES[self.target]} at {self.url}"


@frozen
class LiveInventory:
    """What was read, ready for `plan_servlet`, and `notes` on what could not be read yet and why."""

    inventory: Inventory
    notes: tuple[str, ...] = ()
    virtual_workspace_url: str | None = None


@frozen
class _Published:
    """A PublishedResource that parsed and projected: what the object reads need of it."""

    published: PublishedResource
    projected: Projected


@frozen
class _ReadKey:
    """One object read: where (side and workspace) and which object."""

    side: Side
    cluster: str
    resource: ResourceType
    namespace: str
    name: str


class _Reader:
    """The adapters of the three targets; failures become LiveReadError, single GETs are cached."""

    def __init__(self, connections: Connections) -> None:
        self.connections = connections
        self.service = ServiceClusterAdapter(connections.service)
        self.org = OrgWorkspaceAdapter(connections.org, where=f"workspace {connections.workspace_path}")
        self.vw = VirtualWorkspaceAdapter(connections)
        self.limit = asyncio.Semaphore(_PARALLEL_READS)
        self._reads: dict[_ReadKey, asyncio.Future[Object | None]] = {}
        self.problems: list[Problem] = []

    def url(self, target: Target) -> str:
        if target is Target.SERVICE:
            return self.connections.service_url
        if target is Target.ORG:
            return self.connections.org_url
        return self.connections.virtual_workspace_url or "(unknown)"

    def failed(self, target: Target, failure: ApiFailure | str) -> LiveReadError:
        return LiveReadError(target=target, url=self.url(target), detail=str(failure))

    async def on(self, target: Target, call: Awaitable[T]) -> T:
        async with self.limit:
            try:
                return await call
            except ApiFailure as failure:
                raise self.failed(target, failure) from failure

    async def get(self, key: _ReadKey) -> Object | None:
        """One object (None when absent), read at most once per plan however many ask for it."""
        read = self._reads.get(key)
        if read is None:
            read = self._reads[key] = asyncio.ensure_future(self._get(key))
        return await read

    async def _get(self, key: _ReadKey) -> Object | None:
        if key.side is Side.LOCAL:
            return await self.on(Target.SERVICE, self.service.get(key.resource, namespace=key.namespace, name=key.name))
        try:
            found = await self.on(Target.VIRTUAL_WORKSPACE, self.vw.get(
                key.resource, cluster=key.cluster, namespace=key.namespace, name=key.name))
        except LiveReadError as error:
            if not isinstance(error.__cause__, Forbidden):
                raise
            # One workspace refusing (claim not accepted) says nothing about the others.
            self.problems.append(_refused(key, error.__cause__))
            return None
        return None if found is None else _in_workspace(found, key.cluster)

    def read(self) -> list[tuple[_ReadKey, Object]]:
        """Every object found by `get` so far."""
        return [(key, found) for key, read in self._reads.items()
                if read.done() and not read.cancelled() and read.exception() is None
                and (found := read.result()) is not None]


def _refused(key: _ReadKey, failure: ApiFailure) -> Problem:
    where = f"{key.namespace}/{key.name}" if key.namespace else key.name
    return Problem(
        field=f"{key.resource.kind} {key.cluster}:{where}",
        message=f"the virtual workspace refused to read it ({failure.message}); has the workspace accepted "
                f"the APIExport's permission claim for {key.resource.plural}?",
    )


def _in_workspace(obj: Object, cluster: str) -> Object:
    """The object with its workspace in `kcp.io/cluster` (kcp always sets it; the plan relies on it)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if annotations.get(KCP_CLUSTER_ANNOTATION) == cluster:
        return obj
    fixed = copy.deepcopy(obj)
    metadata = fixed.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), KCP_CLUSTER_ANNOTATION: cluster}
    return fixed


async def _gather(calls: Iterable[Awaitable[T]]) -> list[T]:
    return list(await asyncio.gather(*calls))


# -- the org workspace and the service cluster ---------------------------------------------------


async def _list_published_resources(reader: _Reader, *, selector: str) -> list[Object]:
    """Every PublishedResource matching `selector`, which the API server evaluates exactly as for
    `servlet run` (lightkube cannot pass a selector string through, hence the plain request)."""
    source = reader.connections.service_source(PUBLISHED_RESOURCE_TYPE)
    operation = Operation(verb="list", resource=f"{PUBLISHED_RESOURCE_TYPE.plural}.{PUBLISHED_RESOURCE_TYPE.group}")
    params = {"limit": _PAGE_SIZE, **({"labelSelector": selector} if selector else {})}
    items: list[Object] = []
    while True:
        try:
            async with reader.limit:
                response = await source.http.get(source.path, params=params)
        except Exception as exc:
            failure = failure_from_exception(exc, operation=operation)
            if failure is None:
                raise
            raise reader.failed(Target.SERVICE, failure) from exc
        if response.status_code != 200:
            failure = failure_from_response(operation=operation, code=response.status_code,
                                            headers=response.headers, body=response.content)
            if isinstance(failure, NotFound):
                raise reader.failed(Target.SERVICE, "it does not serve publishedresources.services.kdp.k8c.io: "
                                    "install the PublishedResource CRD (charts/servlet/crds) first")
            if isinstance(failure, Invalid) and selector:
                raise reader.failed(Target.SERVICE, f"{SELECTOR_FLAG} {selector!r} was rejected: {failure.message}")
            raise reader.failed(Target.SERVICE, failure)
        page = response.json()
        for item in page.get("items") or []:
            item.setdefault("apiVersion", PUBLISHED_RESOURCE_TYPE.api_version)
            item.setdefault("kind", PUBLISHED_RESOURCE_TYPE.kind)
            items.append(item)
        token = (page.get("metadata") or {}).get("continue")
        if not token:
            return items
        params["continue"] = token


def _crd_for(crds: Sequence[Object], published: PublishedResource) -> Object | None:
    resource = published.spec.resource
    for crd in crds:
        spec = crd.get("spec") or {}
        if spec.get("group") == resource.api_group and (spec.get("names") or {}).get("kind") == resource.kind:
            return crd
    return None


def _publishable(
    manifests: Sequence[Object], crds: Sequence[Object], *, servlet: ServletIdentity
) -> tuple[list[Object], list[_Published]]:
    """The CRDs the PublishedResources name, and the PublishedResources that project cleanly.

    The others are still handed to the planner, which reports what is wrong with them.
    """
    named: dict[str, Object] = {}
    usable: list[_Published] = []
    for manifest in manifests:
        parsed = parse_published_resource(manifest)
        if parsed.value is None:
            continue
        crd = _crd_for(crds, parsed.value)
        if crd is None:
            continue
        named[str((crd.get("metadata") or {}).get("name"))] = crd
        result = project(crd=crd, published=parsed.value, api_group=servlet.api_group)
        if isinstance(result, Projected):
            usable.append(_Published(published=parsed.value, projected=result))
    return list(named.values()), usable


# -- objects ----------------------------------------------------------------------------------


def _sort_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    key = remote_key_of(obj)
    return key.cluster, key.namespace, key.name


async def _list_remote(reader: _Reader, resource: ResourceType, notes: list[str]) -> list[Object]:
    try:
        found = await reader.on(Target.VIRTUAL_WORKSPACE, reader.vw.list_objects(resource))
    except LiveReadError as error:
        if not isinstance(error.__cause__, NotFound):
            raise
        notes.append(
            f"{resource.kind} ({resource.plural}.{resource.group}/{resource.version}) is not served by the virtual "
            "workspace yet (its schema is not in the APIExport, or no workspace binds it): no remote objects read"
        )
        return []
    return sorted(found, key=_sort_key)


async def _list_local(reader: _Reader, resource: ResourceType, *, servlet: ServletIdentity) -> list[Object]:
    try:
        return await reader.on(Target.SERVICE, reader.service.list_objects(
            resource, labels={SERVLET_LABEL: servlet.name}))
    except LiveReadError as error:
        if isinstance(error.__cause__, NotFound):  # no such version served yet: no copies to find
            return []
        raise


def _candidates(remote: Mapping[str, Any], locals_: Sequence[Object], *, servlet: ServletIdentity) -> list[Object]:
    """Local copies whose labels name `remote` (a superset of what the planner picks: reading
    a little more is harmless, reading less would hide something)."""
    wanted = link_labels(servlet_name=servlet.name, remote=remote_key_of(remote)).items()
    return [obj for obj in locals_ if wanted <= ((obj.get("metadata") or {}).get("labels") or {}).items()]


def _local_key(remote: Mapping[str, Any], item: _Published) -> _ReadKey | None:
    """Where the copy of `remote` would be created (a bad naming rule is the planner's to report)."""
    resource = item.projected.local
    computed = local_key_for(
        naming=item.published.spec.naming, remote=remote_key_of(remote),
        local_namespaced=item.projected.local.namespaced, remote_namespaced=item.projected.remote.namespaced,
    )
    if isinstance(computed, Problem):
        return None
    return _ReadKey(Side.LOCAL, "", resource, computed.namespace if resource.namespaced else "", computed.name)


async def _primary_neighbours(
    reader: _Reader, remote: Mapping[str, Any], item: _Published, locals_: Sequence[Object],
    *, servlet: ServletIdentity,
) -> None:
    """Read what the planner looks at around one remote primary; results land in the reader's cache."""
    key = remote_key_of(remote)
    metadata = remote.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (metadata.get("labels") or {}).items()}
    if not key.cluster or not filter_admits(item.published.spec.filter, namespace=key.namespace, labels=labels):
        return  # planned without further reads
    options: list[Object] = _candidates(remote, locals_, servlet=servlet)
    if not options:
        occupant_key = _local_key(remote, item)
        if occupant_key is not None:
            reads = [reader.get(occupant_key)]
            if occupant_key.namespace:
                reads.append(reader.get(_ReadKey(Side.LOCAL, "", NAMESPACE_TYPE, "", occupant_key.namespace)))
            occupant = (await _gather(reads))[0]
            if occupant is not None:
                options.append(occupant)
    keys: dict[_ReadKey, None] = {}
    locals_or_none: list[Object | None] = [*options] or [None]
    for local in locals_or_none:
        wanted = related_reads(related=item.published.spec.related, remote=remote, local=local)
        for related in wanted.objects:
            cluster = key.cluster if related.side is Side.REMOTE else ""
            keys[_ReadKey(related.side, cluster, related_resource_type(related.kind), related.namespace,
                          related.name)] = None
        for side, namespace in wanted.namespaces:
            keys[_ReadKey(side, key.cluster if side is Side.REMOTE else "", NAMESPACE_TYPE, "", namespace)] = None
    await _gather(reader.get(read_key) for read_key in keys)


async def _objects(
    reader: _Reader, usable: Sequence[_Published], *, servlet: ServletIdentity, notes: list[str]
) -> tuple[list[Object], list[Object]]:
    """Remote and local objects for every projected resource (each resource read once)."""
    remote_types = list(dict.fromkeys(item.projected.remote for item in usable))
    local_types = list(dict.fromkeys(item.projected.local for item in usable))
    remote_lists = await _gather(_list_remote(reader, resource, notes) for resource in remote_types)
    local_lists = await _gather(_list_local(reader, resource, servlet=servlet) for resource in local_types)
    remotes = dict(zip(remote_types, remote_lists))
    locals_ = dict(zip(local_types, local_lists))
    # The planner publishes a remote type through the first PublishedResource projecting it.
    owner = {resource: next(item for item in usable if item.projected.remote == resource) for resource in remote_types}
    await _gather(
        _primary_neighbours(reader, remote, owner[resource], locals_[owner[resource].projected.local], servlet=servlet)
        for resource in remote_types for remote in remotes[resource]
    )
    remote_objects: list[Object] = [obj for resource in remote_types for obj in remotes[resource]]
    local_objects: list[Object] = [obj for resource in local_types for obj in locals_[resource]]
    for read_key, obj in reader.read():
        (remote_objects if read_key.side is Side.REMOTE else local_objects).append(obj)
    return remote_objects, _unique(local_objects)


def _unique(objects: Iterable[Object]) -> list[Object]:
    """Local objects once each (a listed copy may also have been read as an occupant)."""
    seen: dict[tuple[str, str, str, str], Object] = {}
    for obj in objects:
        metadata = obj.get("metadata") or {}
        key = (str(obj.get("apiVersion")), str(obj.get("kind")), str(metadata.get("namespace") or ""),
               str(metadata.get("name")))
        seen.setdefault(key, obj)
    return list(seen.values())


# -- the whole read -------------------------------------------------------------------------------


def _vw_unknown_note(*, apiexport: str) -> str:
    return (
        f"the virtual workspace URL is not known yet (kcp publishes it in the APIExportEndpointSlice {apiexport} "
        "once a workspace binds the export): no remote objects were read, so only schemas and the APIExport "
        "are planned"
    )


async def read_live_inventory(
    *, connections: Connections, servlet: ServletIdentity, apiexport: str, published_resource_selector: str = ""
) -> LiveInventory:
    """Read everything `servlet run` would read (GET requests only) into an Inventory.

    LiveReadError when a target cannot be read, when the kcp kubeconfig does not point into a
    workspace, or when the APIExport does not exist (the servlet never creates it).
    """
    reader = _Reader(connections)
    notes: list[str] = []
    identity = await reader.on(Target.ORG, reader.org.resolve_identity())
    published = await _list_published_resources(reader, selector=published_resource_selector)
    crds = await reader.on(Target.SERVICE, reader.service.list_objects(CRD_TYPE)) if published else []
    export, schemas, endpoint_slice = await asyncio.gather(
        reader.on(Target.ORG, reader.org.get_export(apiexport)),
        reader.on(Target.ORG, _list_schemas(reader)),
        reader.on(Target.ORG, reader.org.get_endpoint_slice(apiexport)),
    )
    if export is None:
        raise reader.failed(Target.ORG, f"the APIExport {apiexport!r} does not exist in workspace {identity.path} "
                                        f"({identity.name}); the servlet never creates it, KDP does")
    named_crds, usable = _publishable(published, crds, servlet=servlet)
    if not published:
        selected = f" matching {SELECTOR_FLAG} {published_resource_selector!r}" if published_resource_selector else ""
        notes.append(f"the service cluster holds no PublishedResource{selected}: nothing to publish")

    url = virtual_workspace_url(endpoint_slice=endpoint_slice, export=export)
    remote_objects: list[Object] = []
    local_objects: list[Object] = []
    if url is None:
        notes.append(_vw_unknown_note(apiexport=apiexport))
    elif usable:
        connections.set_virtual_workspace_url(_checked_url(url, reader))
        remote_objects, local_objects = await _objects(reader, usable, servlet=servlet, notes=notes)
    inventory = Inventory(
        crds=tuple(named_crds),
        published_resources=tuple(published),
        api_exports=(export,),
        schemas=tuple(schemas),
        endpoint_slices=(endpoint_slice,) if endpoint_slice is not None else (),
        remote_objects=tuple(remote_objects),
        local_objects=tuple(local_objects),
        problems=tuple(reader.problems),
    )
    return LiveInventory(inventory=inventory, notes=tuple(notes), virtual_workspace_url=url)


async def _list_schemas(reader: _Reader) -> list[Object]:
    # The OrgWorkspace port reads schemas by name; a plan needs all of them, once.
    return await objects.list_objects(reader.connections.org, SCHEMA_TYPE,
                                      where=f"workspace {reader.connections.workspace_path}")


def _checked_url(url: str, reader: _Reader) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise reader.failed(Target.ORG, f"the endpoint slice names a virtual workspace URL that is not one: {url!r}")
    return url
