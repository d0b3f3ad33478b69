"""Workspace paths (`spec.enableWorkspacePaths`): where a remote object's path comes from and where it goes.

kcp names a workspace twice: by its logical cluster name (`k7v2m9x4q1w8z3r5`, on every object)
and by its path (`root:myorg:team-a`, only on the workspace's `LogicalCluster` named `cluster`,
in the annotation `kcp.io/path`). With the switch on, a plan reads that object through the
virtual workspace (the APIExport claims `logicalclusters` for it); the path then feeds
`.ClusterPath` in naming templates and the annotation `REMOTE_WORKSPACE_PATH_ANNOTATION` on the
local copy.

Deliberately not here: the read itself (`gather.py` asks for it, the callers answer it) and what
a missing path stops (`plan.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core.json_values import is_mapping
from servlet.core.keys import string_map
from servlet.core.metadata import REMOTE_WORKSPACE_PATH_ANNOTATION, link_annotations
from servlet.core.model import PublishedResource, RemoteKey, ResourceType

LOGICAL_CLUSTER_TYPE = ResourceType(
    group="core.kcp.io", version="v1alpha1", kind="LogicalCluster", plural="logicalclusters", namespaced=False
)
LOGICAL_CLUSTER_NAME = "cluster"  # kcp's CRD allows no other name
PATH_ANNOTATION = "kcp.io/path"
ROOT = "root"


def workspace_path_of(logical_cluster: object, *, cluster: str) -> str | None:
    """The path recorded in a workspace's LogicalCluster; None when it could not be read.

    The root workspace's LogicalCluster carries no path: its name, `root`, is its path."""
    if not is_mapping(logical_cluster):
        return None
    meta = logical_cluster.get("metadata")
    path = string_map(meta.get("annotations") if is_mapping(meta) else None).get(PATH_ANNOTATION)
    if isinstance(path, str) and path:
        return path
    return ROOT if cluster == ROOT else None


def unknown_path_reason(cluster: str) -> str:
    return (
        f"the workspace path of workspace {cluster} is unknown: its LogicalCluster '{LOGICAL_CLUSTER_NAME}' "
        f"could not be read through the virtual workspace or has no {PATH_ANNOTATION} annotation (the "
        "workspace must accept the APIExport's claim on logicalclusters); no copy is created until it is known"
    )


def path_annotation_patch(local_metadata: Mapping[str, Any], path: str) -> dict[str, Any]:
    """The merge patch that records `path` on a local copy; {} when it already does."""
    if string_map(local_metadata.get("annotations")).get(REMOTE_WORKSPACE_PATH_ANNOTATION) == path:
        return {}
    return {"metadata": {"annotations": {REMOTE_WORKSPACE_PATH_ANNOTATION: path}}}


def copy_annotations(*, remote: RemoteKey, resource: ResourceType, path: str | None) -> dict[str, str]:
    """The annotations a new local copy is created with: its link, and its workspace path when known."""
    annotations = link_annotations(remote=remote, resource=resource)
    if path is not None:
        annotations[REMOTE_WORKSPACE_PATH_ANNOTATION] = path
    return annotations


def with_path_annotation(content_patch: dict[str, Any], local: Mapping[str, Any], path: str | None) -> dict[str, Any]:
    """A copy's content patch, plus recording `path` when the copy does not record it yet."""
    meta = local.get("metadata")
    addition = {} if path is None else path_annotation_patch(meta if is_mapping(meta) else {}, path)
    if not addition:
        return content_patch
    patch_meta = content_patch.get("metadata")
    patch_meta = dict(patch_meta) if is_mapping(patch_meta) else {}
    annotations = patch_meta.get("annotations")
    patch_meta["annotations"] = {
        **(annotations if is_mapping(annotations) else {}),
        **addition["metadata"]["annotations"],
    }
    return {**content_patch, "metadata": patch_meta}


def missing_path_reason(published: PublishedResource, cluster: str, path: str | None) -> str | None:
    """Why no copy may be created yet: the PublishedResource wants paths and this one is unknown."""
    return unknown_path_reason(cluster) if published.spec.workspace_paths and path is None else None
