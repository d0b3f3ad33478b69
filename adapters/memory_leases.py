"""`Leases` in memory: the fake behind leader election and the replicas' buckets in tests.

Deliberately not here: the other ports' fakes (`adapters/memory.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.adapters.memory_server import MemoryServer, Place
from servlet.core.actions import Side
from servlet.core.keys import metadata_of, string
from servlet.core.ports import LEASE_TYPE, Object


class MemoryLeases:
    """`Leases` in memory, on the service cluster."""

    def __init__(self, server: MemoryServer) -> None:
        self._server = server
        self._place = Place(Side.LOCAL, LEASE_TYPE)

    async def get_lease(self, *, namespace: str, name: str) -> Object | None:
        return self._server.read(self._place.key(namespace=namespace, name=name))

    async def create_lease(self, lease: Mapping[str, Any]) -> Object:
        return self._server.create(self._place, lease)

    async def replace_lease(self, lease: Mapping[str, Any]) -> Object:
        metadata = metadata_of(lease)
        key = self._place.key(namespace=string(metadata.get("namespace")), name=string(metadata.get("name")))
        return self._server.replace(self._place, key, lease)

    async def list_leases(self, *, namespace: str) -> list[Object]:
        return self._server.objects(self._place, namespace=namespace)

    async def delete_lease(self, *, namespace: str, name: str, uid: str) -> None:
        self._server.delete(self._place, self._place.key(namespace=namespace, name=name), uid=uid)
