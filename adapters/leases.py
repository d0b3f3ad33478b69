"""The `Leases` port over lightkube: get, create, replace, list and delete `coordination.k8s.io/v1` Leases.

A replace is a PUT carrying the resourceVersion that was read, so of two candidates writing the
same Lease the API server accepts one and answers the other 409 (Conflict): the election's
safety rests on that precondition, not on anything here.

Deliberately not here: the election itself (`app/runtime/leader.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lightkube import AsyncClient

from servlet.adapters import objects
from servlet.adapters.errors import api_errors
from servlet.adapters.kube import as_dict, resource_class, wrap
from servlet.core.ports import LEASE_TYPE, Leases


class LeasesAdapter:
    """`servlet.core.ports.Leases` over the service cluster's lightkube client."""

    def __init__(self, client: AsyncClient) -> None:
        self._client = client

    async def get_lease(self, *, namespace: str, name: str) -> dict[str, Any] | None:
        return await objects.get_object(self._client, LEASE_TYPE, namespace=namespace, name=name)

    async def create_lease(self, lease: Mapping[str, Any]) -> dict[str, Any]:
        return await objects.create_object(self._client, LEASE_TYPE, lease)

    async def replace_lease(self, lease: Mapping[str, Any]) -> dict[str, Any]:
        metadata = lease.get("metadata") or {}
        operation = objects.operation(
            "update", LEASE_TYPE, namespace=str(metadata.get("namespace") or ""), name=str(metadata.get("name") or "")
        )
        with api_errors(operation):
            replaced = await self._client.replace(wrap(resource_class(LEASE_TYPE), lease))
        return as_dict(replaced)

    async def list_leases(self, *, namespace: str) -> list[dict[str, Any]]:
        return await objects.list_objects(self._client, LEASE_TYPE, namespace=namespace)

    async def delete_lease(self, *, namespace: str, name: str, uid: str) -> None:
        await objects.delete_object(self._client, LEASE_TYPE, namespace=namespace, name=name, uid=uid)


if TYPE_CHECKING:  # mypy proves the adapter fills its port

    def _fills_port(adapter: LeasesAdapter) -> Leases:
        return adapter
