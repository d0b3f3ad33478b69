"""Which VW URL serves which workspace: the routing table of a sharded kcp.

A large kcp is split into shards; each serves its own workspaces, and the APIExportEndpointSlice
lists one VW URL per shard with a workspace bound to the export. A request for one workspace
must go to its shard's URL (another shard does not know the workspace). Nothing tells which
shard a workspace is on except where its objects were read, so the table is learned from reads:
every object a VW list or watch returns carries its workspace (`kcp.io/cluster`), and the URL it
came from is that workspace's shard. Workspaces never move between shards while bound.

With one URL (an unsharded kcp) every workspace is on it, learned or not: the table only matters
when there are several.

Deliberately not here: the clients themselves (`connections.py`) and deciding which URLs exist
(the endpoint slice, read by the sync manager).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from servlet.core.errors import Forbidden, Operation
from servlet.core.keys import CLUSTER_ANNOTATION


class WorkspaceShardUnknown(Forbidden):
    """A request for a workspace none of the VW URLs is known to serve: as out of reach as one
    that does not bind the export, so it fails like one (nothing was sent)."""

    def __init__(self, cluster: str, *, urls: int) -> None:
        super().__init__(
            operation=Operation(verb="request", resource="", where=f"workspace {cluster}"),
            code=0,
            reason="WorkspaceShardUnknown",
            message=f"workspace {cluster} was not read from any of the {urls} virtual workspace URL(s) of the "
            "APIExportEndpointSlice, so which kcp shard serves it is unknown",
        )


class ShardRoutes:
    """The VW URLs in the endpoint slice's order, and the URL each workspace was read from."""

    def __init__(self) -> None:
        self._urls: tuple[str, ...] = ()
        self._routes: dict[str, str] = {}

    @property
    def urls(self) -> tuple[str, ...]:
        return self._urls

    def set_urls(self, urls: Sequence[str]) -> frozenset[str]:
        """The URLs to use from now on. Workspaces learned on a URL no longer listed are forgotten,
        and returned: their objects cannot be read any more."""
        self._urls = tuple(dict.fromkeys(url.rstrip("/") for url in urls))
        kept = set(self._urls)
        gone = frozenset(cluster for cluster, url in self._routes.items() if url not in kept)
        self._routes = {cluster: url for cluster, url in self._routes.items() if url in kept}
        return gone

    def learn(self, url: str, obj: Mapping[str, Any]) -> None:
        """`obj` was read from `url`: its workspace is served there."""
        metadata = obj.get("metadata")
        annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
        cluster = annotations.get(CLUSTER_ANNOTATION) if isinstance(annotations, Mapping) else None
        if isinstance(cluster, str) and cluster and url in self._urls:
            self._routes[cluster] = url

    def url_for(self, cluster: str) -> str | None:
        """The URL serving workspace `cluster`; with a single URL that one; None when unknown."""
        learned = self._routes.get(cluster)
        if learned is not None:
            return learned
        return self._urls[0] if len(self._urls) == 1 else None

    def workspaces(self) -> dict[str, str]:
        """Every learned workspace and its URL."""
        return dict(self._routes)
