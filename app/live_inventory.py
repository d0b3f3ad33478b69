"""Gathering an `Inventory` from the live clusters, for `servlet plan` without `-f`.

The live plan must show what `servlet run` would do right now, so it reads what the daemon reads,
through the same adapters: the PublishedResources (with the selector) and the CRDs they name on
the service cluster; the APIExport, the existing APIResourceSchemas and the endpoint slice in
the org workspace; then, once kcp has published the virtual workspace (VW) URL, every remote
object of each projected resource across all workspaces and every object of each local type
(as the daemon caches them), and then what the plans look at (`core.gather`, the daemon's own
reads): namespaces and related Secrets/ConfigMaps, read one by one, never by listing every
Secret of a cluster.

Absence is data: a resource the VW does not serve yet, or a VW URL kcp has not published, becomes
a note and the plan covers what it can. Any other failed read raises `LiveReadError`, whose
one-line message names the API server (service cluster, org workspace, virtual workspace) and
its URL.

Deliberately not here: planning (`core.preview.plan_servlet` does it from the Inventory) and
writing anything: this module only sends GET requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import urlsplit

from attrs import frozen

from servlet.adapters.builtin_discovery import describe_builtin_types
from servlet.adapters.connections import Connections, Target
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.app.live_reads import LiveReadError, Reader, ReadKey
from servlet.core.actions import Side
from servlet.core.apiexport import virtual_workspace_urls
from servlet.core.context import SyncContext
from servlet.core.dryrun import settle
from servlet.core.endpoint_slices import SliceChoice, slice_mismatch, slice_missing
from servlet.core.errors import ApiFailure, Invalid, NotFound
from servlet.core.inventory import Inventory
from servlet.core.keys import remote_key_of
from servlet.core.model import PublishedResource, ResourceType, ServletIdentity
from servlet.core.parsing import parse_published_resource
from servlet.core.ports import CRD_TYPE, PUBLISHED_RESOURCE_TYPE
from servlet.core.projection import Projected
from servlet.core.related_sides import origin_side, type_on, type_problem
from servlet.core.related_types import related_crds
from servlet.core.resolution import crd_identity, find_crd, published_identity, resolve
from servlet.core.worker_choice import syncs_objects
from servlet.core.world import World, WorldKey

Object = dict[str, Any]
T = TypeVar("T")

SELECTOR_FLAG = "--published-resource-selector"
_PAGE_SIZE = 500


@frozen
class LiveInventory:
    """What was read, ready for `plan_servlet`, and `notes` on what could not be read yet and why."""

    inventory: Inventory
    notes: tuple[str, ...] = ()
    # Every VW URL (one per kcp shard with a bound workspace); empty when kcp published none.
    virtual_workspace_urls: tuple[str, ...] = ()


@frozen
class _Published:
    """A PublishedResource that parsed and projected: what the object reads need of it."""

    published: PublishedResource
    projected: Projected


async def _gather(calls: Iterable[Awaitable[T]]) -> list[T]:
    return list(await asyncio.gather(*calls))


# -- the org workspace and the service cluster ---------------------------------------------------


async def _list_published_resources(reader: Reader, *, selector: str) -> list[Object]:
    """Every PublishedResource matching `selector`, which the API server evaluates exactly as for
    `servlet run` (read through the informers' collection, which passes the selector as written)."""
    collection = reader.connections.service_source(PUBLISHED_RESOURCE_TYPE).collection
    items: list[Object] = []
    token = ""
    while True:
        try:
            async with reader.limit:
                page = await collection.list_page(
                    limit=_PAGE_SIZE, continue_token=token, label_selector=selector or None
                )
        except NotFound as failure:
            raise reader.failed(
                Target.SERVICE,
                "it does not serve publishedresources.services.kdp.k8c.io: "
                "install the PublishedResource CRD (charts/servlet/crds) first",
            ) from failure
        except Invalid as failure:
            if not selector:
                raise reader.failed(Target.SERVICE, failure) from failure
            raise reader.failed(
                Target.SERVICE, f"{SELECTOR_FLAG} {selector!r} was rejected: {failure.message}"
            ) from failure
        except ApiFailure as failure:
            raise reader.failed(Target.SERVICE, failure) from failure
        for item in page.items:
            item.setdefault("apiVersion", PUBLISHED_RESOURCE_TYPE.api_version)
            item.setdefault("kind", PUBLISHED_RESOURCE_TYPE.kind)
            items.append(item)
        token = page.continue_token
        if not token:
            return items


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
        crd = None if parsed.value is None else find_crd(crds, parsed.value)
        if crd is None:
            continue
        for needed in (crd, *([] if parsed.value is None else related_crds(parsed.value, crds))):
            named[str((needed.get("metadata") or {}).get("name"))] = dict(needed)
        resolution = resolve(
            parsed=parsed, crd=crd, api_group=servlet.api_group, crds_from="on the service cluster", crds=crds
        )
        if resolution.published is not None and resolution.projected is not None:
            usable.append(_Published(published=resolution.published, projected=resolution.projected))
    return list(named.values()), usable


# -- objects ----------------------------------------------------------------------------------


def _sort_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    key = remote_key_of(obj)
    return key.cluster, key.namespace, key.name


async def _list_remote(reader: Reader, resource: ResourceType, notes: list[str]) -> list[Object]:
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


async def _list_local(reader: Reader, resource: ResourceType) -> list[Object]:
    try:
        # Every object of the type, as the daemon caches it: a foreign object at a computed name
        # is a conflict the plan must show.
        return await reader.on(Target.SERVICE, reader.service.list_objects(resource))
    except LiveReadError as error:
        if isinstance(error.__cause__, NotFound):  # no such version served yet: no copies to find
            return []
        raise


# Rounds of "plan, read what the plan missed": each round's reads can only reveal objects a
# later plan step looks at (a related object of a copy that is yet to be created, ...).
_READ_ROUNDS = 5


async def _objects(
    reader: Reader, usable: Sequence[_Published], *, servlet: ServletIdentity, notes: list[str]
) -> tuple[list[Object], list[Object]]:
    """Remote and local objects for every projected resource, and what their plans look at.

    The lists are read once per resource. Then the daemon's loop runs on what was read (the same
    `core.gather` reads, `core.dryrun`), and every object a plan looked at that no list held is
    read with a GET; until no plan misses anything. So the plan printed later from this inventory
    is planned from exactly what the daemon would see.
    """
    remote_types = list(dict.fromkeys(item.projected.remote for item in usable))
    local_types = list(dict.fromkeys(item.projected.local for item in usable))
    remote_lists = await _gather(_list_remote(reader, resource, notes) for resource in remote_types)
    local_lists = await _gather(_list_local(reader, resource) for resource in local_types)
    # Objects found by a label selector: their whole origin type is listed too (the daemon lists
    # them once per reconcile), so the plan finds exactly what the daemon would.
    selected = sorted(
        {
            (origin_side(entry), type_on(entry, origin_side(entry)))
            for item in usable
            for index, entry in enumerate(item.published.spec.related)
            if entry.reference.selector is not None and type_problem(entry, index=index) is None
        },
        key=lambda pair: (pair[0].value, pair[1].api_version, pair[1].plural),
    )
    remote_lists.extend(
        await _gather(_list_remote(reader, resource, notes) for side, resource in selected if side is Side.REMOTE)
    )
    local_lists.extend(
        await _gather(_list_local(reader, resource) for side, resource in selected if side is Side.LOCAL)
    )
    remote_objects: list[Object] = [obj for found in remote_lists for obj in found]
    local_objects: list[Object] = [obj for found in local_lists for obj in found]
    contexts = [SyncContext(servlet=servlet, published=item.published, projected=item.projected) for item in usable]
    listed = {(Side.LOCAL, resource.api_version, resource.kind) for resource in local_types}
    listed.update((side, resource.api_version, resource.kind) for side, resource in selected)
    known: set[WorldKey] = set()
    for _ in range(_READ_ROUNDS):
        world = World(
            remote=remote_objects,
            local=local_objects,
            complete=False,
            known=known,
            unreadable=[_world_key(key) for key in reader.refused],
        )
        settle(world, contexts)
        missed = sorted(
            ((key, resource) for key, resource in world.missed.items() if (key[0], key[1], key[2]) not in listed),
            key=lambda item: (item[0][0].value, *item[0][1:]),
        )
        if not missed:
            break
        known.update(key for key, _ in missed)
        found = await _gather(reader.get(ReadKey(key[0], key[3], resource, key[4], key[5])) for key, resource in missed)
        for (key, _), obj in zip(missed, found):
            if obj is not None:
                (remote_objects if key[0] is Side.REMOTE else local_objects).append(obj)
    return remote_objects, _unique(local_objects)


def _world_key(key: ReadKey) -> WorldKey:
    resource = key.resource
    return (key.side, resource.api_version, resource.kind, key.cluster, key.namespace, key.name)


def _unique(objects: Iterable[Object]) -> list[Object]:
    """Local objects once each (a listed copy may also have been read as an occupant)."""
    seen: dict[tuple[str, str, str, str], Object] = {}
    for obj in objects:
        metadata = obj.get("metadata") or {}
        key = (
            str(obj.get("apiVersion")),
            str(obj.get("kind")),
            str(metadata.get("namespace") or ""),
            str(metadata.get("name")),
        )
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
    *,
    connections: Connections,
    servlet: ServletIdentity,
    apiexport: str,
    published_resource_selector: str = "",
    endpoint_slice: SliceChoice | None = None,
) -> LiveInventory:
    """Read everything `servlet run` would read (GET requests only) into an Inventory.

    LiveReadError when a target cannot be read, when the kcp kubeconfig does not point into a
    workspace, or when the APIExport does not exist (the servlet never creates it).
    """
    reader = Reader(connections)
    notes: list[str] = []
    identity = await reader.on(Target.ORG, reader.org.resolve_identity())
    published = await _list_published_resources(reader, selector=published_resource_selector)
    crds = await reader.on(Target.SERVICE, reader.service.list_objects(CRD_TYPE)) if published else []
    # Built-in types named without a CRD, described from discovery and OpenAPI v3 as the daemon does.
    builtins = {published_identity(obj) for obj in published} - {crd_identity(crd) for crd in crds}
    if builtins:
        described, problems = await reader.on(
            Target.SERVICE, describe_builtin_types(connections.service_http, sorted(builtins))
        )
        crds = [*crds, *described]
        reader.problems.extend(problems)
    export, schemas, chosen_slice = await asyncio.gather(
        reader.on(Target.ORG, reader.org.get_export(apiexport)),
        reader.on(Target.ORG, reader.org.list_schemas()),
        reader.on(Target.ORG, _read_slice(connections, reader, choice=endpoint_slice, apiexport=apiexport)),
    )
    if export is None:
        raise reader.failed(
            Target.ORG,
            f"the APIExport {apiexport!r} does not exist in workspace {identity.path} "
            f"({identity.name}); the servlet never creates it, KDP does",
        )
    if endpoint_slice is not None:
        unusable = (
            slice_missing(endpoint_slice, org_path=identity.path)
            if chosen_slice is None
            else slice_mismatch(
                chosen_slice,
                choice=endpoint_slice,
                export_name=apiexport,
                org_path=identity.path,
                org_cluster=identity.name,
            )
        )
        if unusable is not None:
            raise reader.failed(Target.ORG, unusable)
    named_crds, usable = _publishable(published, crds, servlet=servlet)
    if not published:
        selected = f" matching {SELECTOR_FLAG} {published_resource_selector!r}" if published_resource_selector else ""
        notes.append(f"the service cluster holds no PublishedResource{selected}: nothing to publish")

    # A chosen slice is the only source of URLs, as for `servlet run`.
    urls = virtual_workspace_urls(endpoint_slice=chosen_slice, export=export if endpoint_slice is None else None)
    remote_objects: list[Object] = []
    local_objects: list[Object] = []
    if not urls:
        notes.append(_vw_unknown_note(apiexport=apiexport))
    elif usable:
        connections.set_virtual_workspace_urls([_checked_url(url, reader) for url in urls])
        # Nothing of a schema-only PublishedResource is synced, so none of its objects is read.
        synced = [item for item in usable if syncs_objects(item.published)]
        remote_objects, local_objects = await _objects(reader, synced, servlet=servlet, notes=notes)
    inventory = Inventory(
        crds=tuple(named_crds),
        published_resources=tuple(published),
        api_exports=(export,),
        schemas=tuple(schemas),
        endpoint_slices=(chosen_slice,) if chosen_slice is not None else (),
        remote_objects=tuple(remote_objects),
        local_objects=tuple(local_objects),
        problems=tuple(reader.problems),
        unreadable_remote=tuple(_world_key(key)[1:] for key in reader.refused),
    )
    return LiveInventory(inventory=inventory, notes=tuple(notes), virtual_workspace_urls=urls)


async def _read_slice(
    connections: Connections, reader: Reader, *, choice: SliceChoice | None, apiexport: str
) -> Object | None:
    """The slice `--apiexportendpointslice` names (in its workspace), else the one named like the export."""
    if choice is None:
        return await reader.org.get_endpoint_slice(apiexport)
    if not choice.workspace:
        return await reader.org.get_endpoint_slice(choice.name)
    other = OrgWorkspaceAdapter(connections.workspace(choice.workspace), where=f"workspace {choice.workspace}")
    return await other.get_endpoint_slice(choice.name)


def _checked_url(url: str, reader: Reader) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise reader.failed(Target.ORG, f"the endpoint slice names a virtual workspace URL that is not one: {url!r}")
    return url
