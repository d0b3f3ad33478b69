"""What the controllers need from the outside world, as Protocols: the ports the adapters fill.

Controllers are written against these shapes, so they read as "get the export, plan, execute"
and never name a client library. Objects cross a port as plain JSON-like dicts (what the API
server sent); a missing object is `None`, never an exception. Every other failure is raised as
one of the failures of `core/errors.py` (NotFound, Conflict, AlreadyExists, Gone, Forbidden,
Invalid, Transient), whichever implementation fills the port.

Deliberately not here: any implementation, any I/O, and cached reads. Reconciles read from the
informer caches; the ports are for the few direct reads (startup, the APIExport before a patch)
and for writes. Informers list and watch through a `Collection`, and the leader elector keeps
its Lease through `Leases`; both are ports too, so the app's runtime loops never name a client
library either. Every port has an in-memory fake in `servlet.adapters.memory`.
"""

from __future__ import annotations

import enum
from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Generic, Protocol, TypeVar

from attrs import frozen

from servlet.core.actions import Action
from servlet.core.model import ResourceType

Object = dict[str, Any]

CRD_TYPE = ResourceType(
    group="apiextensions.k8s.io",
    version="v1",
    kind="CustomResourceDefinition",
    plural="customresourcedefinitions",
    namespaced=False,
)
PUBLISHED_RESOURCE_TYPE = ResourceType(
    group="services.kdp.k8c.io",
    version="v1alpha1",
    kind="PublishedResource",
    plural="publishedresources",
    namespaced=False,
)
LOGICAL_CLUSTER_TYPE = ResourceType(
    group="core.kcp.io", version="v1alpha1", kind="LogicalCluster", plural="logicalclusters", namespaced=False
)
SCHEMA_TYPE = ResourceType(
    group="apis.kcp.io",
    version="v1alpha1",
    kind="APIResourceSchema",
    plural="apiresourceschemas",
    namespaced=False,
)
APIEXPORT_TYPE = ResourceType(
    group="apis.kcp.io", version="v1alpha1", kind="APIExport", plural="apiexports", namespaced=False
)
ENDPOINT_SLICE_TYPE = ResourceType(
    group="apis.kcp.io",
    version="v1alpha1",
    kind="APIExportEndpointSlice",
    plural="apiexportendpointslices",
    namespaced=False,
)
EVENT_TYPE = ResourceType(group="", version="v1", kind="Event", plural="events", namespaced=True)
LEASE_TYPE = ResourceType(group="coordination.k8s.io", version="v1", kind="Lease", plural="leases", namespaced=True)


@frozen
class WorkspaceIdentity:
    """The org workspace as kcp names it: logical cluster name (`abc123xyz`) and path (`root:myorg`)."""

    name: str
    path: str


class EventType(enum.Enum):
    NORMAL = "Normal"
    WARNING = "Warning"


@frozen
class InvolvedObject:
    """The object an Event is about: on the service cluster, or in workspace `cluster` (a logical
    cluster name) when that is not ""."""

    resource: ResourceType
    name: str
    namespace: str = ""
    uid: str = ""
    cluster: str = ""


@frozen
class EventRecord:
    """One Kubernetes Event: `reason` is a CamelCase word, `message` a plain sentence."""

    regarding: InvolvedObject
    type: EventType
    reason: str
    message: str


class ServiceCluster(Protocol):
    """The Kubernetes cluster the servlet runs in."""

    async def get_crd(self, name: str) -> Object | None:
        """The CustomResourceDefinition `name` (`<plural>.<group>`), None if there is none."""
        ...

    async def get(self, resource: ResourceType, *, namespace: str, name: str) -> Object | None:
        """One object (`namespace` "" for cluster-scoped ones), None if it does not exist."""
        ...

    async def list_objects(
        self, resource: ResourceType, *, namespace: str = "", labels: Mapping[str, str] | None = None
    ) -> list[Object]:
        """Every object of a type (all namespaces unless `namespace` is given) whose labels include
        `labels`. For one-shot readers such as the live `servlet plan`; the daemon uses informers."""
        ...

    async def write_published_status(self, name: str, status: Mapping[str, Any]) -> Object:
        """Merge-patch a PublishedResource's `status` through its status subresource.

        Returns the PublishedResource the server answered with; NotFound if it is gone.
        """
        ...


class EventWriter(Protocol):
    """Writes core `v1` Events, in the service cluster or (through the VW) in a workspace.

    An Event about a cluster-scoped object goes in the `default` namespace, where `kubectl
    describe` finds it. Timestamps are RFC 3339 strings the caller read from its clock.
    """

    async def create_event(self, event: EventRecord, *, count: int, first: str, last: str) -> str:
        """Create an Event; returns its name, for `update_event`."""
        ...

    async def update_event(self, event: EventRecord, *, name: str, count: int, last: str) -> None:
        """Raise the count and last timestamp of an Event `create_event` wrote. NotFound if it is gone."""
        ...


class OrgWorkspace(Protocol):
    """The kcp workspace the kcp kubeconfig points at, holding the APIExport and the schemas."""

    async def resolve_identity(self) -> WorkspaceIdentity:
        """Read the `LogicalCluster` named `cluster`: the workspace's logical cluster name and path."""
        ...

    async def create_schema(self, schema: Mapping[str, Any]) -> Object:
        """Create an APIResourceSchema; one already there with the same `spec` counts as created.

        Returns the stored schema. AlreadyExists when a schema of that name has another spec.
        """
        ...

    async def list_schemas(self) -> list[Object]:
        """Every APIResourceSchema of the workspace, for one-shot readers such as the live
        `servlet plan`; the daemon uses an informer."""
        ...

    async def get_export(self, name: str) -> Object | None:
        """The APIExport as `apis.kcp.io/v1alpha1`, None if it does not exist."""
        ...

    async def patch_export(self, name: str, patch: Mapping[str, Any], *, resource_version: str) -> Object:
        """Merge-patch the APIExport (v1alpha1) with `resource_version` as a precondition.

        The version travels inside the patch body, so a stale one fails with Conflict instead of
        overwriting a list someone changed meanwhile.
        """
        ...

    async def get_endpoint_slice(self, name: str) -> Object | None:
        """The APIExportEndpointSlice `name` (named like the export), None if there is none."""
        ...


class VirtualWorkspace(Protocol):
    """The APIExport's virtual workspace, addressed one workspace (logical cluster) at a time."""

    async def get(self, resource: ResourceType, *, cluster: str, namespace: str, name: str) -> Object | None:
        """One object in workspace `cluster`, None if it does not exist. Forbidden when the
        workspace does not bind the export or has not accepted the claim for `resource`."""
        ...

    async def list_objects(self, resource: ResourceType) -> list[Object]:
        """Every object of a type across every bound workspace (`/clusters/*`), each carrying its
        workspace in the `kcp.io/cluster` annotation. For one-shot readers; the daemon uses informers."""
        ...

    async def list_in_workspace(
        self, resource: ResourceType, *, cluster: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> list[Object]:
        """The objects of a type in one namespace of one workspace whose labels include `labels`:
        one list request (a related entry's label selector); Forbidden as `get`."""
        ...


class ActionExecutor(Protocol):
    """Performs one planned action exactly as it says; decides nothing."""

    async def execute(self, action: Action) -> Object | None:
        """The object the server returned for a write that returns one; None otherwise
        (conflicts and errors, deletes, and creates of something already there where that is fine)."""
        ...


@frozen
class ListPage:
    """One page of a list: its objects, the version of the snapshot it is cut from, and the token
    that asks for the next page ("" on the last one)."""

    items: list[Object]
    resource_version: str
    continue_token: str = ""


@frozen
class WatchEvent:
    """One change a watch reports: `type` is ADDED, MODIFIED, DELETED or BOOKMARK (a bookmark's
    object carries only the resourceVersion the watch has reached)."""

    type: str
    object: Object


class Collection(Protocol):
    """One resource's objects at one base URL (a cluster, a workspace, or every workspace of the
    VW): what an informer lists and watches.

    `metadata_only` asks for Kubernetes' PartialObjectMetadata instead of whole objects.
    """

    @property
    def location(self) -> str:
        """Where the collection is (its URL), for logs and to tell two collections apart."""
        ...

    async def list_page(
        self, *, limit: int, continue_token: str = "", label_selector: str | None = None, metadata_only: bool = False
    ) -> ListPage:
        """One page of at most `limit` objects. NotFound when the resource is not served."""
        ...

    def watch(
        self,
        *,
        resource_version: str,
        timeout_seconds: int,
        read_timeout: float,
        label_selector: str | None = None,
        metadata_only: bool = False,
    ) -> AsyncGenerator[WatchEvent, None]:
        """The changes after `resource_version`, with bookmarks, until the server ends the watch
        (after about `timeout_seconds`). Gone when that version is too old to resume from; an
        ERROR event is raised as the failure it describes; Unreadable for an event that cannot
        be read; Transient when nothing arrives for `read_timeout` seconds or the connection breaks.
        Close it (`contextlib.aclosing`) when leaving early, so the connection is given back."""
        ...


CollectionT_co = TypeVar("CollectionT_co", bound=Collection, covariant=True)


@frozen
class WatchSource(Generic[CollectionT_co]):
    """What an informer lists and watches: a collection, named for logs and metrics.

    Generic in the collection's implementation, so code holding a concrete source reaches its
    collection's own attributes (the HTTP client of `adapters.watch.HttpCollection`, which the
    adapter tests inspect) without a cast; controllers take `WatchSource[Any]`.
    """

    collection: CollectionT_co
    # A short name for logs and metrics, e.g. `vw/certificates.example.corp`.
    name: str
    # List and watch only the objects' metadata (Kubernetes' PartialObjectMetadata): for kinds
    # whose content is needed for a few objects only, fetched one by one.
    metadata_only: bool = False


class WatchSources(Protocol[CollectionT_co]):
    """Where the app's informers list and watch from."""

    def service_source(self, resource: ResourceType) -> WatchSource[CollectionT_co]:
        """A resource on the service cluster, across all namespaces."""
        ...

    def org_source(self, resource: ResourceType) -> WatchSource[CollectionT_co]:
        """A resource in the org workspace."""
        ...

    def virtual_workspace_sources(self, resource: ResourceType) -> tuple[WatchSource[CollectionT_co], ...]:
        """A resource across every workspace bound to the export: one source per VW URL (one per
        kcp shard serving a bound workspace, `<vw url>/clusters/*`), in the location's order."""
        ...


class VirtualWorkspaceLocation(Protocol):
    """Where the virtual workspace's clients and sources point: the VW URLs of the endpoint slice,
    one per kcp shard with a bound workspace. The sync manager sets them once kcp publishes them
    (the daemon's connections fill it). A write to a workspace goes to the URL its objects were
    read from, so the shard is a property of the read, never of the plan."""

    @property
    def virtual_workspace_urls(self) -> tuple[str, ...]: ...

    def set_virtual_workspace_urls(self, urls: Sequence[str]) -> frozenset[str]:
        """Use these URLs from now on; returns the workspaces (logical clusters) last read from a
        URL no longer listed, whose objects can no longer be read."""
        ...


class Leases(Protocol):
    """`coordination.k8s.io/v1` Leases on the service cluster, for leader election and the replicas' buckets."""

    async def get_lease(self, *, namespace: str, name: str) -> Object | None:
        """The Lease, None if it does not exist."""
        ...

    async def create_lease(self, lease: Mapping[str, Any]) -> Object:
        """Create the Lease; AlreadyExists when another candidate created it first."""
        ...

    async def replace_lease(self, lease: Mapping[str, Any]) -> Object:
        """Replace the Lease whole; Conflict when its resourceVersion is no longer the stored one."""
        ...

    async def list_leases(self, *, namespace: str) -> list[Object]:
        """Every Lease in `namespace`: the replicas read each other's membership and bucket Leases."""
        ...

    async def delete_lease(self, *, namespace: str, name: str, uid: str) -> None:
        """Delete the Lease if its uid is still `uid` (Conflict otherwise); NotFound when it is gone."""
        ...
