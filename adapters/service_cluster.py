"""The service-cluster port: CRDs, single objects and PublishedResource status.

Reads here are the few a reconcile cannot take from an informer cache (a CRD when a
PublishedResource first names it); the write is the PublishedResource status (merge patch through
the status subresource, never a full replace). Events are written by `events.py`.

Deliberately not here: listing and watching (informers), syncing objects (the executor), and
deciding what a status says (controllers).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lightkube import AsyncClient

from servlet.adapters import objects
from servlet.adapters.kube import merge_patch, resource_class
from servlet.core.model import ResourceType
from servlet.core.ports import CRD_TYPE, PUBLISHED_RESOURCE_TYPE, ServiceCluster


class ServiceClusterAdapter:
    """`servlet.core.ports.ServiceCluster` over one lightkube client."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

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


if TYPE_CHECKING:  # mypy proves the adapter fills its port

    def _fills_port(adapter: ServiceClusterAdapter) -> ServiceCluster:
        return adapter
