"""The service-cluster port: CRDs, single objects, PublishedResource status and Events.

Reads here are the few a reconcile cannot take from an informer cache (a CRD when a
PublishedResource first names it); writes are the PublishedResource status (merge patch through
the status subresource, never a full replace) and Events.

Deliberately not here: listing and watching (informers), syncing objects (the executor), and
deciding what a status says (controllers).
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from lightkube import AsyncClient

from servlet.adapters import objects
from servlet.adapters.kube import FIELD_MANAGER, merge_patch, resource_class
from servlet.core.model import ResourceType
from servlet.core.ports import CRD_TYPE, EVENT_TYPE, PUBLISHED_RESOURCE_TYPE, EventRecord, ServiceCluster

# Events about cluster-scoped objects (PublishedResources) go where kubectl looks for them.
DEFAULT_EVENT_NAMESPACE = "default"


def _utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


class ServiceClusterAdapter:
    """`servlet.core.ports.ServiceCluster` over one lightkube client."""

    def __init__(
        self,
        client: AsyncClient,
        *,
        component: str = FIELD_MANAGER,
        clock: Callable[[], datetime.datetime] = _utc_now,
    ) -> None:
        self._client = client
        self._component = component
        self._clock = clock

    async def get_crd(self, name: str) -> dict[str, Any] | None:
        return await objects.get_object(self._client, CRD_TYPE, namespace="", name=name)

    async def get(self, resource: ResourceType, *, namespace: str, name: str) -> dict[str, Any] | None:
        return await objects.get_object(self._client, resource, namespace=namespace, name=name)

    async def list_objects(
        self, resource: ResourceType, *, namespace: str = "", labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        return await objects.list_objects(self._client, resource, namespace=namespace, labels=labels)

    async def write_published_status(self, name: str, status: Mapping[str, Any]) -> dict[str, Any]:
        return await merge_patch(
            self._client, resource_class(PUBLISHED_RESOURCE_TYPE), name, {"status": dict(status)}, status=True
        )

    async def record_event(self, event: EventRecord) -> None:
        regarding = event.regarding
        namespace = regarding.namespace or DEFAULT_EVENT_NAMESPACE
        stamp = self._clock().strftime("%Y-%m-%dT%H:%M:%SZ")
        involved: dict[str, Any] = {
            "apiVersion": regarding.resource.api_version,
            "kind": regarding.resource.kind,
            "name": regarding.name,
        }
        if regarding.namespace:
            involved["namespace"] = regarding.namespace
        if regarding.uid:
            involved["uid"] = regarding.uid
        body = {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"generateName": f"{regarding.name}.", "namespace": namespace},
            "involvedObject": involved,
            "type": event.type.value,
            "reason": event.reason,
            "message": event.message,
            "source": {"component": self._component},
            "reportingComponent": self._component,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "count": 1,
        }
        await objects.create_object(self._client, EVENT_TYPE, body, namespace=namespace)


if TYPE_CHECKING:  # mypy proves the adapter fills its port

    def _fills_port(adapter: ServiceClusterAdapter) -> ServiceCluster:
        return adapter
