"""The org-workspace port: who the workspace is, its APIResourceSchemas, APIExport and endpoint slice.

Everything goes to the workspace the kcp kubeconfig points at (`.../clusters/<path>`). The
APIExport is read and written as `apis.kcp.io/v1alpha1` (served by every kcp version), and
only with merge patches carrying the resourceVersion read, so a concurrent change to the
export's lists makes the write fail (Conflict) instead of being overwritten.

Deliberately not here: what to add to the export (`core/apiexport.py`) or which schema to
publish (`core/projection.py`); creating or deleting the APIExport (KDP owns it).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lightkube import AsyncClient

from servlet.adapters import objects
from servlet.adapters.kube import merge_patch, resource_class
from servlet.core.errors import AlreadyExists, NotFound
from servlet.core.keys import CLUSTER_ANNOTATION
from servlet.core.ports import (
    APIEXPORT_TYPE,
    ENDPOINT_SLICE_TYPE,
    LOGICAL_CLUSTER_TYPE,
    SCHEMA_TYPE,
    OrgWorkspace,
    WorkspaceIdentity,
)

LOGICAL_CLUSTER_NAME = "cluster"
PATH_ANNOTATION = "kcp.io/path"


class OrgWorkspaceAdapter:
    """`servlet.core.ports.OrgWorkspace` over a lightkube client whose base URL is the workspace."""

    def __init__(self, client: AsyncClient, *, where: str = "") -> None:
        self._client = client
        self._where = where

    async def resolve_identity(self) -> WorkspaceIdentity:
        found = await objects.get_object(
            self._client, LOGICAL_CLUSTER_TYPE, namespace="", name=LOGICAL_CLUSTER_NAME, where=self._where
        )
        operation = objects.operation("get", LOGICAL_CLUSTER_TYPE, name=LOGICAL_CLUSTER_NAME, where=self._where)
        if found is None:
            raise NotFound(
                operation=operation,
                code=404,
                message="the kcp kubeconfig does not point into a workspace: it has no LogicalCluster named 'cluster'",
            )
        metadata = found.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        name = str(annotations.get(CLUSTER_ANNOTATION) or "")
        if not name:
            # The last segment of status.URL is the logical cluster name as well.
            url = str((found.get("status") or {}).get("URL") or "")
            name = url.rstrip("/").rsplit("/", 1)[-1] if "/clusters/" in url else ""
        if not name:
            raise NotFound(
                operation=operation,
                code=404,
                message=f"the LogicalCluster has neither a {CLUSTER_ANNOTATION} annotation nor a status.URL",
            )
        # The root workspace has no path annotation: its path is its name.
        return WorkspaceIdentity(name=name, path=str(annotations.get(PATH_ANNOTATION) or name))

    async def create_schema(self, schema: Mapping[str, Any]) -> dict[str, Any]:
        try:
            return await objects.create_object(self._client, SCHEMA_TYPE, schema, where=self._where)
        except AlreadyExists:
            name = str((schema.get("metadata") or {}).get("name") or "")
            existing = await objects.get_object(self._client, SCHEMA_TYPE, namespace="", name=name, where=self._where)
            # Schema names derive from a hash of the spec, so the same name with the same spec is
            # our own earlier create (or another replica's); anything else is a real clash.
            if existing is not None and existing.get("spec") == schema.get("spec"):
                return existing
            raise

    async def list_schemas(self) -> list[dict[str, Any]]:
        return await objects.list_objects(self._client, SCHEMA_TYPE, where=self._where)

    async def get_export(self, name: str) -> dict[str, Any] | None:
        return await objects.get_object(self._client, APIEXPORT_TYPE, namespace="", name=name, where=self._where)

    async def patch_export(self, name: str, patch: Mapping[str, Any], *, resource_version: str) -> dict[str, Any]:
        body = copy.deepcopy(dict(patch))
        if resource_version:
            body["metadata"] = {**(body.get("metadata") or {}), "resourceVersion": resource_version}
        return await merge_patch(self._client, resource_class(APIEXPORT_TYPE), name, body, where=self._where)

    async def get_endpoint_slice(self, name: str) -> dict[str, Any] | None:
        return await objects.get_object(self._client, ENDPOINT_SLICE_TYPE, namespace="", name=name, where=self._where)


if TYPE_CHECKING:  # mypy proves the adapter fills its port

    def _fills_port(adapter: OrgWorkspaceAdapter) -> OrgWorkspace:
        return adapter
