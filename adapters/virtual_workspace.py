"""The virtual-workspace port: reads of one object in one workspace through the APIExport's VW.

Each workspace is addressed by logical cluster name (`<vw url>/clusters/<lc>`); the connections
keep one cached client per workspace over a shared pool. A workspace that does not bind the
export, or has not accepted the permission claim for the resource, answers 403: Forbidden.

`list_in_workspace` reads one namespace of one workspace (a related entry's label selector);
`list_objects` reads one resource across every workspace (`/clusters/*`) of every VW URL (one per kcp
shard), for one-shot readers such as the live `servlet plan`; what it reads teaches the
connections which shard serves each workspace, so the gets after it go to the right URL.

Deliberately not here: watching (informers, `Connections.virtual_workspace_sources`) and writes
(the executor).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from servlet.adapters import objects
from servlet.adapters.connections import WILDCARD, Connections
from servlet.core.model import ResourceType
from servlet.core.ports import VirtualWorkspace


class VirtualWorkspaceAdapter:
    """`servlet.core.ports.VirtualWorkspace` over the connections' per-workspace VW clients."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections

    async def get(self, resource: ResourceType, *, cluster: str, namespace: str, name: str) -> dict[str, Any] | None:
        client = self._connections.virtual_workspace(cluster)
        return await objects.get_object(client, resource, namespace=namespace, name=name, where=f"workspace {cluster}")

    async def list_objects(self, resource: ResourceType) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        urls = self._connections.virtual_workspace_urls
        for url in urls or (None,):
            if url is None:  # not known yet: the connections say so
                client = self._connections.virtual_workspace(WILDCARD)
            else:
                client = self._connections.virtual_workspace_at(url, WILDCARD)
            where = "every workspace" if len(urls) <= 1 else f"every workspace at {url}"
            listed = await objects.list_objects(client, resource, where=where)
            for obj in listed:
                self._connections.shards.learn(url or "", obj)
            found.extend(listed)
        return found

    async def list_in_workspace(
        self, resource: ResourceType, *, cluster: str, namespace: str, labels: Mapping[str, str] | None = None
    ) -> list[dict[str, Any]]:
        client = self._connections.virtual_workspace(cluster)
        return await objects.list_objects(
            client, resource, namespace=namespace, labels=labels, where=f"workspace {cluster}"
        )


if TYPE_CHECKING:  # mypy proves the adapter fills its port

    def _fills_port(adapter: VirtualWorkspaceAdapter) -> VirtualWorkspace:
        return adapter
