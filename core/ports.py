"""What the controllers need from the outside world, as Protocols: the ports the adapters fill.

Controllers are written against these shapes, so they read as "get the export, plan, execute"
and never name a client library. Objects cross a port as plain JSON-like dicts (what the API
server sent); a missing object is `None`, never an exception. Every other failure is raised as
one of the adapters' own errors (NotFound, Conflict, AlreadyExists, Gone, Forbidden, Invalid,
Transient); the core cannot import them, so the docstrings name them.

Deliberately not here: any implementation, any I/O, and cached reads. Reconciles read from the
informer caches; the ports are for the few direct reads (startup, the APIExport before a patch)
and for writes. The informer sources are described generically (`WatchSource[HttpT]`) so the
core does not depend on the HTTP library the adapters use.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
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
    group="services.kdp.k8c.io", version="v1alpha1", kind="PublishedResource", plural="publishedresources",
    namespaced=False,
)
LOGICAL_CLUSTER_TYPE = ResourceType(
    group="core.kcp.io", version="v1alpha1", kind="LogicalCluster", plural="logicalclusters", namespaced=False
)
SCHEMA_TYPE = ResourceType(
    group="apis.kcp.io", version="v1alpha1", kind="APIResourceSchema", plural="apiresourceschemas",
    namespaced=False,
)
APIEXPORT_TYPE = ResourceType(
    group="apis.kcp.io", version="v1alpha1", kind="APIExport", plural="apiexports", namespaced=False
)
ENDPOINT_SLICE_TYPE = ResourceType(
    group="apis.kcp.io", version="v1alpha1", kind="APIExportEndpointSlice", plural="apiexportendpointslices",
    namespaced=False,
)
EVENT_TYPE = ResourceType(group="", version="v1", kind="Event", plural="events", namespaced=True)


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


class ActionExecutor(Protocol):
    """Performs one planned action exactly as it says; decides nothing."""

    async def execute(self, action: Action) -> Object | None:
        """The object the server returned for a write that returns one; None otherwise
        (conflicts and errors, deletes, and creates of something already there where that is fine)."""
        ...


HttpT_co = TypeVar("HttpT_co", covariant=True)


@frozen
class WatchSource(Generic[HttpT_co]):
    """What an informer needs to list and watch one resource: a client whose base URL picks the
    cluster (or every workspace, for the VW wildcard) and the collection path relative to it."""

    http: HttpT_co
    path: str
    # A short name for logs and metrics, e.g. `vw/certificates.example.corp`.
    name: str
    # List and watch only the objects' metadata (Kubernetes' PartialObjectMetadata): for kinds
    # whose content is needed for a few objects only, fetched one by one.
    metadata_only: bool = False


class WatchSources(Protocol[HttpT_co]):
    """Where the app's informers list and watch from."""

    def service_source(self, resource: ResourceType) -> WatchSource[HttpT_co]:
        """A resource on the service cluster, across all namespaces."""
        ...

    def org_source(self, resource: ResourceType) -> WatchSource[HttpT_co]:
        """A resource in the org workspace."""
        ...

    def virtual_workspace_source(self, resource: ResourceType) -> WatchSource[HttpT_co]:
        """A resource across every workspace bound to the export (`<vw url>/clusters/*`)."""
        ...
