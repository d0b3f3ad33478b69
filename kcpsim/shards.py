"""A sharded kcp: workspaces spread over N shards, one APIExport virtual workspace URL per shard.

Real kcp runs several shards behind a front proxy. Workspace requests (`/clusters/<path>`) go
through the proxy and reach every workspace wherever it lives, but an APIExport's virtual
workspace is served by each shard for its own workspaces only. The APIExportEndpointSlice lists
one URL per shard that has at least one APIBinding to the export, in shard order, and kcp adds
and removes URLs as bindings come and go.

Here all shards are one server: shard 0 (`root`) serves the VW at the usual
`/services/apiexport/...`, shard N at `/shards/shard-N/services/apiexport/...`; each answers
only for the workspaces assigned to it. A workspace is assigned explicitly (the topology's
`WorkspaceSpec.shard`, `KcpSim.add_workspace(shard=...)`) or else by a hash of its logical
cluster name. With one shard (the default) everything is on `root` and nothing changes.

`KcpSim.remove_shard` takes a shard out, as when its Shard object is deleted: its URL leaves the
slices and answers 404, and its workspaces become unreachable through the VW (not deleted).

Endpoint slices: every APIExportEndpointSlice, in whatever workspace, gets the URLs of the
export its `spec.export.{path,name}` names (`APIExportValid=False` when there is no such export).

Deliberately not here: request handling (server.py strips the shard prefix and hands the shard to
the VW) and the VW's own rules (vw.py).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from kcpsim.resources import BINDING_KEY

if TYPE_CHECKING:
    from kcpsim.kcp import Kcp
    from kcpsim.store import Obj

ROOT_SHARD = "root"
SHARDS_PATH = "shards"
CLUSTER_ANNOTATION = "kcp.io/cluster"  # as world.py stamps it


@attrs.define
class Shards:
    """How many shards there are and which workspace (logical cluster) each one serves."""

    count: int = 1
    assigned: dict[str, int] = attrs.Factory(dict)
    # Shards taken out of kcp (their Shard object deleted): their URL leaves every endpoint slice
    # and answers 404, while their workspaces stay where they are.
    removed: set[int] = attrs.Factory(set)

    def __attrs_post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"shards: at least one shard is needed, not {self.count}")

    def name(self, index: int) -> str:
        return ROOT_SHARD if index == 0 else f"shard-{index}"

    def index_of(self, name: str) -> int | None:
        for index in range(self.count):
            if self.name(index) == name and index not in self.removed:
                return index
        return None

    def remove(self, shard: int) -> None:
        if not 0 < shard < self.count:
            raise ValueError(f"shard: {shard} is not one of the removable shards (1 to {self.count - 1})")
        self.removed.add(shard)

    def assign(self, cluster: str, shard: int) -> None:
        """Put workspace `cluster` on shard `shard` (0 is `root`)."""
        if not 0 <= shard < self.count:
            raise ValueError(f"shard: {shard} is not one of the {self.count} shards (0 to {self.count - 1})")
        self.assigned[cluster] = shard

    def shard_of(self, cluster: str) -> int:
        if cluster in self.assigned:
            return self.assigned[cluster]
        if self.count == 1:
            return 0
        return int.from_bytes(hashlib.sha256(cluster.encode()).digest()[:8], "big") % self.count

    def serves(self, shard: int, obj: Mapping[str, Any]) -> bool:
        """Whether shard `shard` holds `obj` (by its `kcp.io/cluster` annotation)."""
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        return self.shard_of(str(annotations.get(CLUSTER_ANNOTATION, ""))) == shard

    def base_url(self, base_url: str, shard: int) -> str:
        """Where shard `shard` serves its virtual workspaces."""
        return base_url if shard == 0 else f"{base_url}/{SHARDS_PATH}/{self.name(shard)}"

    def split(self, parts: list[str]) -> tuple[int | None, list[str]]:
        """A request path's shard (None: no shard prefix) and the path after the prefix.

        A prefix naming no shard is kept in the path, so the request fails as any unknown path."""
        if len(parts) >= 2 and parts[0] == SHARDS_PATH:
            index = self.index_of(parts[1])
            if index is not None:
                return index, parts[2:]
        return None, parts


def vw_urls(kcp: Kcp, export_cluster: str, export_name: str) -> list[str]:
    """The export's VW URLs: one per shard with a workspace binding the export, in shard order."""
    from kcpsim.kcp import vw_url

    shards = kcp.shards
    every_shard = set(range(shards.count)) - shards.removed
    bound: set[int] = set()
    # Only the workspaces holding bindings are looked at, and only until every live shard is found:
    # with thousands of workspaces, a scan of them all on each change made adding them quadratic.
    kcp_clusters = kcp.world.catalog.kcp_clusters
    for (cluster, _, _), binding in kcp.world.store.iter(BINDING_KEY, None):
        if bound >= every_shard:
            break
        shard = shards.shard_of(cluster)
        if shard in bound or cluster not in kcp_clusters:
            continue
        found = kcp.binding_export(cluster, binding)
        if found is not None and found[0] == export_cluster and found[1]["metadata"]["name"] == export_name:
            bound.add(shard)
    live = sorted(bound - shards.removed)
    return [vw_url(shards.base_url(kcp.base_url, shard), export_cluster, export_name) for shard in live]


def slice_status(kcp: Kcp, cluster: str, slice_obj: Obj) -> dict[str, Any]:
    """The status kcp gives an endpoint slice: its export's URLs, or APIExportValid=False."""
    from kcpsim.kcp import _condition

    ref = (slice_obj.get("spec") or {}).get("export") or {}
    conditions = list((slice_obj.get("status") or {}).get("conditions") or [])
    found = kcp.find_export(ref.get("path") or cluster, ref.get("name") or "")
    if found is None:
        conditions = _condition(
            conditions,
            "APIExportValid",
            "False",
            reason="APIExportNotFound",
            message=f"APIExport {ref.get('path') or cluster}:{ref.get('name') or ''} not found",
            severity="Error",
        )
        return {"conditions": _condition(conditions, "PartitionValid", "True"), "endpoints": []}
    conditions = _condition(conditions, "APIExportValid", "True")
    conditions = _condition(conditions, "PartitionValid", "True")
    urls = vw_urls(kcp, found[0], found[1]["metadata"]["name"])
    return {"conditions": conditions, "endpoints": [{"url": url} for url in urls]}


def reconcile_slice(kcp: Kcp, cluster: str, slice_obj: Obj) -> None:
    wanted = slice_status(kcp, cluster, slice_obj)
    if (slice_obj.get("status") or {}) != wanted:
        kcp.write_status(("apis.kcp.io", "apiexportendpointslices"), cluster, slice_obj, wanted)


def reconcile_slices(kcp: Kcp) -> None:
    """Every endpoint slice of every workspace gets the URLs of the export it names."""
    from kcpsim.kcp import SLICE_KEY

    kcp_clusters = kcp.world.catalog.kcp_clusters
    for (cluster, _, _), slice_obj in list(kcp.world.store.iter(SLICE_KEY, None)):
        if cluster in kcp_clusters:
            reconcile_slice(kcp, cluster, slice_obj)
