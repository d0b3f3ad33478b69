"""The events port: core `v1` Events in the service cluster, and in workspaces through the VW.

An Event about an object in a workspace is created through the APIExport's virtual workspace in
that workspace (`<vw url>/clusters/<lc>`), which the export's `events` claim allows; one about a
service-cluster object (a PublishedResource) in the service cluster. Cluster-scoped objects get
their Events in `default`, as kubectl and client-go do.

Core `v1` rather than `events.k8s.io/v1`: `kubectl describe` lists core Events, both APIs show
the same objects on a real API server, and kcp's claims name the core group.

Deliberately not here: deciding, deduplicating or rate-limiting Events (the recorder).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lightkube import AsyncClient

from servlet.adapters import objects
from servlet.adapters.connections import Connections
from servlet.adapters.kube import FIELD_MANAGER, merge_patch, resource_class
from servlet.core.ports import EVENT_TYPE, EventRecord, EventWriter

# Events about cluster-scoped objects go where kubectl looks for them.
DEFAULT_EVENT_NAMESPACE = "default"


def event_namespace(event: EventRecord) -> str:
    return event.regarding.namespace or DEFAULT_EVENT_NAMESPACE


def event_body(event: EventRecord, *, component: str, count: int, first: str, last: str) -> dict[str, Any]:
    """The `v1` Event as created: `generateName` after the object, as client-go's recorder names them."""
    regarding = event.regarding
    involved: dict[str, Any] = {
        "apiVersion": regarding.resource.api_version,
        "kind": regarding.resource.kind,
        "name": regarding.name,
    }
    if regarding.namespace:
        involved["namespace"] = regarding.namespace
    if regarding.uid:
        involved["uid"] = regarding.uid
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{regarding.name}.", "namespace": event_namespace(event)},
        "involvedObject": involved,
        "type": event.type.value,
        "reason": event.reason,
        "message": event.message,
        "source": {"component": component},
        "reportingComponent": component,
        "reportingInstance": component,
        "firstTimestamp": first,
        "lastTimestamp": last,
        "count": count,
    }


class EventsAdapter:
    """`servlet.core.ports.EventWriter` over the connections (service cluster and VW clients)."""

    def __init__(self, connections: Connections, *, component: str = FIELD_MANAGER) -> None:
        self._connections = connections
        self._component = component

    def _client(self, event: EventRecord) -> tuple[AsyncClient, str]:
        cluster = event.regarding.cluster
        if cluster:
            return self._connections.virtual_workspace(cluster), f"workspace {cluster}"
        return self._connections.service, ""

    async def create_event(self, event: EventRecord, *, count: int, first: str, last: str) -> str:
        client, where = self._client(event)
        body = event_body(event, component=self._component, count=count, first=first, last=last)
        created = await objects.create_object(client, EVENT_TYPE, body, namespace=event_namespace(event), where=where)
        return str((created.get("metadata") or {}).get("name") or "")

    async def update_event(self, event: EventRecord, *, name: str, count: int, last: str) -> None:
        client, where = self._client(event)
        await merge_patch(
            client,
            resource_class(EVENT_TYPE),
            name,
            {"count": count, "lastTimestamp": last},
            namespace=event_namespace(event),
            where=where,
        )


if TYPE_CHECKING:  # mypy proves the adapter fills its port

    def _fills_port(adapter: EventsAdapter) -> EventWriter:
        return adapter
