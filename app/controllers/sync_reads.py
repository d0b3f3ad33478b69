"""The sync worker's answers to the planner's reads (`core.gather`), from its caches.

One `SnapshotReader` per sync worker answers every read kind the core asks for: the local
copies by their exact link labels, the object at a computed local name, the remote objects
wanting one local name, namespaces, related objects (through `related_contents.py`), the
fresh reads that confirm a related origin is gone, and workspaces' LogicalClusters (their paths,
with `spec.enableWorkspacePaths`). Only the fresh reads and each workspace's first LogicalCluster
read go to an API server: a workspace's path does not change, so it is remembered.

Deliberately not here: what to read (the core decides) and what a plan does with it.
"""

from __future__ import annotations

import asyncio
from typing import Any

from servlet.app.controllers.caches import Cache
from servlet.app.controllers.links import RelatedObjectKey
from servlet.app.controllers.names import LocalNames
from servlet.app.controllers.related_contents import RelatedCaches, refused_read
from servlet.app.observability.logs import FieldLogger
from servlet.app.runtime.informer_events import ObjectKey
from servlet.core.actions import Side
from servlet.core.context import SyncContext
from servlet.core.errors import Forbidden
from servlet.core.gather import (
    UNREADABLE,
    Answer,
    LinkedCopies,
    NamespaceAt,
    ObjectAt,
    ObjectsMatching,
    PlanInputs,
    Read,
    SameLocalName,
    gather_async,
)
from servlet.core.ports import ServiceCluster, VirtualWorkspace
from servlet.core.workspace_paths import LOGICAL_CLUSTER_TYPE, workspace_path_of


class SnapshotReader:
    def __init__(
        self,
        *,
        context: SyncContext,
        remote: Cache,
        local: Cache,
        names: LocalNames,
        related: RelatedCaches,
        local_namespaces: Cache,
        remote_namespaces: Cache | None,
        service: ServiceCluster,
        vw: VirtualWorkspace,
        log: FieldLogger,
    ) -> None:
        self._context = context
        self._remote = remote
        self._local = local
        self._names = names
        self._related = related
        self._local_namespaces = local_namespaces
        self._remote_namespaces = remote_namespaces
        self._service = service
        self._vw = vw
        self._log = log
        # Each workspace's LogicalCluster once its path was read: {cluster: the object}.
        self._logical_clusters: dict[str, dict[str, Any]] = {}

    async def inputs(self, remote: dict[str, Any], watched: list[RelatedObjectKey]) -> PlanInputs:
        """The planner's inputs for `remote`; `watched` collects the related objects read."""

        async def answer(reads: tuple[Read, ...]) -> list[Answer]:
            if not any(self._awaits(read) for read in reads):
                # Without yielding to the event loop: no cache event lands between such rounds,
                # so they read one consistent snapshot, as the dry run does.
                return [self._answer(read) for read in reads]
            # A round's related objects not held yet are fetched side by side.
            return list(await asyncio.gather(*(self._read(read, watched) for read in reads)))

        return await gather_async(self._context, remote, answer)

    def _awaits(self, read: Read) -> bool:
        """Whether answering `read` may wait: fresh reads, related objects, LogicalClusters not read yet."""
        if isinstance(read, ObjectAt) and read.resource == LOGICAL_CLUSTER_TYPE:
            return read.cluster not in self._logical_clusters
        if isinstance(read, ObjectsMatching):
            return True
        return isinstance(read, ObjectAt) and (read.fresh or self._related.find(read.side, read.resource) is not None)

    async def _read(self, read: Read, watched: list[RelatedObjectKey]) -> Answer:
        if isinstance(read, ObjectsMatching):
            return await self._matching(read)
        if isinstance(read, ObjectAt) and read.resource == LOGICAL_CLUSTER_TYPE:
            return await self._logical_cluster(read)
        if isinstance(read, ObjectAt) and read.fresh:
            return await self._read_fresh(read)
        if isinstance(read, ObjectAt) and self._related.find(read.side, read.resource) is not None:
            return await self._related.read(read, watched)
        return self._answer(read)

    def _answer(self, read: Read) -> Answer:
        """One read from the caches (related objects aside)."""
        if isinstance(read, LinkedCopies):
            return self._local.lookup(read.labels)
        if isinstance(read, SameLocalName):
            return [
                obj
                for holder in self._names.holders(read.local)
                if (obj := self._remote.get(ObjectKey(holder.cluster, holder.namespace, holder.name))) is not None
            ]
        if isinstance(read, NamespaceAt):
            return self._namespace_exists(read.side, read.cluster, read.name)
        if isinstance(read, ObjectsMatching):
            return UNREADABLE  # always awaited (`_awaits`): never answered from a cache
        if read.resource == LOGICAL_CLUSTER_TYPE:
            return self._logical_clusters.get(read.cluster)
        object_at = ObjectKey(cluster=read.cluster, namespace=read.namespace, name=read.name)
        if read.side is Side.LOCAL and read.resource == self._context.projected.local:
            return self._local.get(object_at)
        return None

    async def _matching(self, read: ObjectsMatching) -> Answer:
        """The objects a related entry's label selector finds: one list request, filtered here.

        The metadata-only caches of related types keep no labels (a tenant's labels must not grow
        the servlet's memory), so the list is asked of the API server, with matchLabels as its
        label selector, in the one namespace of the service cluster or of the workspace. The planner
        then reads each found object as usual."""
        try:
            if read.side is Side.LOCAL:
                return await self._service.list_objects(
                    read.resource, namespace=read.namespace, labels=dict(read.selector.match_labels)
                )
            return await self._vw.list_in_workspace(
                read.resource, cluster=read.cluster, namespace=read.namespace, labels=dict(read.selector.match_labels)
            )
        except Forbidden as refused:
            return refused_read(self._log, read, refused)

    async def _read_fresh(self, read: ObjectAt) -> Answer:
        """One object from its API server: confirms that a related origin the cache misses is gone."""
        try:
            if read.side is Side.LOCAL:
                return await self._service.get(read.resource, namespace=read.namespace, name=read.name)
            return await self._vw.get(read.resource, cluster=read.cluster, namespace=read.namespace, name=read.name)
        except Forbidden as refused:
            return refused_read(self._log, read, refused)

    async def _logical_cluster(self, read: ObjectAt) -> Answer:
        """A workspace's LogicalCluster, remembered once it names the workspace's path."""
        known = self._logical_clusters.get(read.cluster)
        if known is not None:
            return known
        try:
            found = await self._vw.get(read.resource, cluster=read.cluster, namespace="", name=read.name)
        except Forbidden as refused:
            self._log.warning("cannot read the workspace path", workspace=read.cluster, reason=str(refused))
            return UNREADABLE
        if found is not None and workspace_path_of(found, cluster=read.cluster) is not None:
            annotations = (found.get("metadata") or {}).get("annotations") or {}
            self._logical_clusters[read.cluster] = {"metadata": {"annotations": annotations}}
        return found

    def _namespace_exists(self, side: Side, cluster: str, name: str) -> bool:
        if side is Side.LOCAL:
            return self._local_namespaces.get(ObjectKey(cluster="", namespace="", name=name)) is not None
        cache = self._remote_namespaces
        return cache is not None and cache.get(ObjectKey(cluster=cluster, namespace="", name=name)) is not None
