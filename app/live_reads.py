"""The live plan's reads of the three API servers, with failures named by server and URL.

`Reader` holds the adapters of the service cluster, the org workspace and the virtual workspace,
reads each single object at most once per plan, and turns any failure other than absence into a
`LiveReadError` whose one-line message names the server and its URL. A workspace that refuses a
read (a claim not accepted) is recorded, not fatal: it says nothing about the other workspaces.

Deliberately not here: what to read (`live_inventory.py` and the core's gather) and writing.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable
from typing import Any, TypeVar

from attrs import frozen

from servlet.adapters.connections import Connections, Target
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.adapters.service_cluster import ServiceClusterAdapter
from servlet.adapters.virtual_workspace import VirtualWorkspaceAdapter
from servlet.core.actions import Side
from servlet.core.errors import ApiFailure, Forbidden
from servlet.core.keys import CLUSTER_ANNOTATION
from servlet.core.model import Problem, ResourceType

Object = dict[str, Any]
T = TypeVar("T")

# Enough parallel GETs to make a plan of many objects quick without hammering an API server.
_PARALLEL_READS = 16


# The API server a read goes to, as a person names it in an error message.
TARGET_NAMES = {
    Target.SERVICE: "service cluster",
    Target.ORG: "org workspace",
    Target.VIRTUAL_WORKSPACE: "virtual workspace",
}


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
class ReadKey:
    """One object read: where (side and workspace) and which object."""

    side: Side
    cluster: str
    resource: ResourceType
    namespace: str
    name: str


class Reader:
    """The adapters of the three targets; failures become LiveReadError, single GETs are cached."""

    def __init__(self, connections: Connections) -> None:
        self.connections = connections
        self.service = ServiceClusterAdapter(connections.service)
        self.org = OrgWorkspaceAdapter(connections.org, where=f"workspace {connections.workspace_path}")
        self.vw = VirtualWorkspaceAdapter(connections)
        self.limit = asyncio.Semaphore(_PARALLEL_READS)
        self._reads: dict[ReadKey, asyncio.Future[Object | None]] = {}
        self.problems: list[Problem] = []
        self.refused: list[ReadKey] = []  # remote reads a workspace refused

    def url(self, target: Target) -> str:
        if target is Target.SERVICE:
            return self.connections.service_url
        if target is Target.ORG:
            return self.connections.org_url
        return " ".join(self.connections.virtual_workspace_urls) or "(unknown)"

    def failed(self, target: Target, failure: ApiFailure | str) -> LiveReadError:
        return LiveReadError(target=target, url=self.url(target), detail=str(failure))

    async def on(self, target: Target, call: Awaitable[T]) -> T:
        async with self.limit:
            try:
                return await call
            except ApiFailure as failure:
                raise self.failed(target, failure) from failure

    async def get(self, key: ReadKey) -> Object | None:
        """One object (None when absent), read at most once per plan however many ask for it."""
        read = self._reads.get(key)
        if read is None:
            read = self._reads[key] = asyncio.ensure_future(self._get(key))
        return await read

    async def _get(self, key: ReadKey) -> Object | None:
        if key.side is Side.LOCAL:
            return await self.on(Target.SERVICE, self.service.get(key.resource, namespace=key.namespace, name=key.name))
        try:
            found = await self.on(
                Target.VIRTUAL_WORKSPACE,
                self.vw.get(key.resource, cluster=key.cluster, namespace=key.namespace, name=key.name),
            )
        except LiveReadError as error:
            if not isinstance(error.__cause__, Forbidden):
                raise
            # One workspace refusing (claim not accepted) says nothing about the others.
            self.problems.append(_refused(key, error.__cause__))
            self.refused.append(key)
            return None
        return None if found is None else _in_workspace(found, key.cluster)

    def read(self) -> list[tuple[ReadKey, Object]]:
        """Every object found by `get` so far."""
        return [
            (key, found)
            for key, read in self._reads.items()
            if read.done()
            and not read.cancelled()
            and read.exception() is None
            and (found := read.result()) is not None
        ]


def _refused(key: ReadKey, failure: ApiFailure) -> Problem:
    where = f"{key.namespace}/{key.name}" if key.namespace else key.name
    return Problem(
        field=f"{key.resource.kind} {key.cluster}:{where}",
        message=f"the virtual workspace refused to read it ({failure.message}); has the workspace accepted "
        f"the APIExport's permission claim for {key.resource.plural}?",
    )


def _in_workspace(obj: Object, cluster: str) -> Object:
    """The object with its workspace in `kcp.io/cluster` (kcp always sets it; the plan relies on it)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if annotations.get(CLUSTER_ANNOTATION) == cluster:
        return obj
    fixed = copy.deepcopy(obj)
    metadata = fixed.setdefault("metadata", {})
    metadata["annotations"] = {**(metadata.get("annotations") or {}), CLUSTER_ANNOTATION: cluster}
    return fixed
