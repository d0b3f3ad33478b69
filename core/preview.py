"""Everything the servlet would do with an inventory, as one plan.

This is the library entry point for tools that want to preview projections and plans without a
cluster (`servlet plan` uses it for both its offline and live modes): schemas to create, the
APIExport change, and per remote object its local coordinates and actions. The daemon does not
use it; it plans one object at a time with the same core functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from attrs import frozen

from servlet.core.apiexport import SchemaClaim, plan_export, schema_resource, schema_taken_by
from servlet.core.context import SyncContext
from servlet.core.dryrun import context_of, plan_world
from servlet.core.inventory import Inventory
from servlet.core.keys import remote_key_of
from servlet.core.model import PublishedResource, ServletIdentity
from servlet.core.orphans import Orphan, find_orphans
from servlet.core.parsing import parse_published_resource
from servlet.core.plan import ObjectPlan
from servlet.core.projection import Projected
from servlet.core.resolution import find_crd, resolve
from servlet.core.sharing import SharingWarning, shared_namespace_warnings
from servlet.core.worker_choice import SCHEMA_ONLY_MESSAGE, syncs_objects

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["ExportStep", "OrphanStep", "PlanError", "SchemaStep", "ServletPlan", "plan_servlet"]

Manifest = Mapping[str, Any]


@frozen
class PlanError:
    """An input the servlet cannot act on: which object, which field, what is wrong."""

    object: str
    field: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"object": self.object, "field": self.field, "message": self.message}


@frozen
class SchemaStep:
    published_resource: str
    name: str
    action: str  # "create", or "exists" when an identical schema is already in the org workspace
    spec: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {
            "publishedResource": self.published_resource,
            "name": self.name,
            "action": self.action,
            "spec": self.spec,
        }


@frozen
class ExportStep:
    name: str
    action: str  # "patch", "none", or "missing" when the APIExport is not among the inputs
    spec: dict[str, Any] | None
    patch: dict[str, Any] | None

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "action": self.action, "spec": self.spec, "patch": self.patch}


@frozen
class OrphanStep:
    """A local copy whose remote object is gone; deleted only with `--delete-orphans`."""

    published_resource: str
    orphan: Orphan
    delete: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "publishedResource": self.published_resource,
            "local": {"namespace": self.orphan.local.namespace, "name": self.orphan.local.name},
            "remote": {
                "cluster": self.orphan.remote.cluster,
                "namespace": self.orphan.remote.namespace,
                "name": self.orphan.remote.name,
            },
            "action": "delete" if self.delete else "keep",
        }


@frozen
class ServletPlan:
    servlet: ServletIdentity
    schemas: tuple[SchemaStep, ...]
    api_export: ExportStep
    objects: tuple[ObjectPlan, ...]
    errors: tuple[PlanError, ...]
    # Valid but risky choices (tenants sharing a local namespace): shown, never a failure.
    warnings: tuple[SharingWarning, ...] = ()
    orphans: tuple[OrphanStep, ...] = ()
    # PublishedResources whose schema is published but whose objects are not synced, by design.
    schema_only: tuple[str, ...] = ()

    @property
    def writes(self) -> int:
        """How many write requests executing the plan would send."""
        schema_writes = sum(1 for step in self.schemas if step.action == "create")
        export_writes = 1 if self.api_export.action == "patch" else 0
        object_writes = sum(1 for obj in self.objects for action in obj.actions if action.is_write)
        orphan_writes = sum(1 for step in self.orphans if step.delete)
        return schema_writes + export_writes + object_writes + orphan_writes

    def to_dict(self) -> dict[str, Any]:
        return {
            "servlet": self.servlet.fq_name,
            "schemas": [step.to_dict() for step in self.schemas],
            "apiExport": self.api_export.to_dict(),
            "objects": [obj.to_dict() for obj in self.objects],
            "errors": [error.to_dict() for error in self.errors],
            "warnings": [warning.to_dict() for warning in self.warnings],
            "orphans": [step.to_dict() for step in self.orphans],
            "schemaOnly": [{"publishedResource": name, "message": SCHEMA_ONLY_MESSAGE} for name in self.schema_only],
        }


def _choose_export(exports: Sequence[Manifest], name: str | None) -> tuple[Manifest | None, list[PlanError]]:
    if name is not None:
        matching = [export for export in exports if (export.get("metadata") or {}).get("name") == name]
        if not matching:
            return None, [
                PlanError(
                    object=f"APIExport {name}",
                    field="",
                    message="is not among the inputs; the servlet never creates its APIExport",
                )
            ]
        return matching[0], []
    if len(exports) > 1:
        names = ", ".join(sorted(str((export.get("metadata") or {}).get("name")) for export in exports))
        return None, [
            PlanError(
                object="APIExport",
                field="",
                message=f"the inputs hold several APIExports ({names}); choose one with --apiexport",
            )
        ]
    return (exports[0] if exports else None), []


def _project_all(
    inventory: Inventory, *, servlet: ServletIdentity, crds_from: str
) -> tuple[list[tuple[PublishedResource, Projected]], list[PlanError]]:
    projected: list[tuple[PublishedResource, Projected]] = []
    errors: list[PlanError] = []
    for manifest in inventory.published_resources:
        label = f"PublishedResource {(manifest.get('metadata') or {}).get('name')}"
        parsed = parse_published_resource(manifest)
        crd = None if parsed.value is None else find_crd(inventory.crds, parsed.value)
        resolution = resolve(
            parsed=parsed, crd=crd, api_group=servlet.api_group, crds_from=crds_from, crds=inventory.crds
        )
        if resolution.published is not None and resolution.projected is not None:
            projected.append((resolution.published, resolution.projected))
        errors.extend(PlanError(object=label, field=p.field, message=p.message) for p in resolution.problems)
    return projected, errors


def _without_taken(
    projected: list[tuple[PublishedResource, Projected]], inventory: Inventory
) -> tuple[list[tuple[PublishedResource, Projected]], list[PlanError]]:
    """The daemon's choice among PublishedResources with the same schema: only the keeper is published and synced."""
    created = {
        str((manifest.get("metadata") or {}).get("name")): str(
            (manifest.get("metadata") or {}).get("creationTimestamp") or ""
        )
        for manifest in inventory.published_resources
    }
    taken = schema_taken_by(
        SchemaClaim(
            published_resource=published.name, schema_name=result.schema_name, created=created.get(published.name, "")
        )
        for published, result in projected
    )
    errors = [
        PlanError(
            object=f"PublishedResource {published.name}",
            field="",
            message=f"PublishedResource {taken[published.name]} already publishes "
            f"{schema_resource(result.schema_name)} with the same APIResourceSchema {result.schema_name}, "
            "and the oldest (by creationTimestamp, then name) keeps it: this one is neither exported nor synced",
        )
        for published, result in projected
        if published.name in taken
    ]
    return [(published, result) for published, result in projected if published.name not in taken], errors


def plan_servlet(
    *,
    inventory: Inventory,
    servlet: ServletIdentity,
    apiexport_name: str | None = None,
    delete_orphans: bool = False,
    crds_from: str = "among the inputs",
) -> ServletPlan:
    """The plan of everything; with `delete_orphans`, orphans are deleted as `--delete-orphans` does.

    `crds_from` says where the inventory's CRDs came from, for the error of a CRD not among them.
    """
    errors = [PlanError(object=p.field, field="", message=p.message) for p in inventory.problems]
    projected, projection_errors = _project_all(inventory, servlet=servlet, crds_from=crds_from)
    errors.extend(projection_errors)
    projected, taken_errors = _without_taken(projected, inventory)
    errors.extend(taken_errors)

    existing_schemas = {(schema.get("metadata") or {}).get("name") for schema in inventory.schemas}
    schemas = tuple(
        SchemaStep(
            published_resource=published.name,
            name=result.schema_name,
            action="exists" if result.schema_name in existing_schemas else "create",
            spec=result.schema_spec,
        )
        for published, result in projected
    )

    export, export_errors = _choose_export(inventory.api_exports, apiexport_name)
    errors.extend(export_errors)
    related = [item for published, _ in projected for item in published.spec.related]
    workspace_paths = any(published.spec.workspace_paths for published, _ in projected)
    export_name = apiexport_name or str(((export or {}).get("metadata") or {}).get("name", ""))
    if export is None:
        change = plan_export(
            export={"spec": {}},
            schema_names=[step.name for step in schemas],
            related=related,
            workspace_paths=workspace_paths,
        )
        api_export = ExportStep(
            name=export_name,
            action="missing",
            spec=change.spec if change else None,
            patch=change.patch if change else None,
        )
    else:
        change = plan_export(
            export=export,
            schema_names=[step.name for step in schemas],
            related=related,
            workspace_paths=workspace_paths,
        )
        api_export = ExportStep(
            name=export_name,
            action="patch" if change else "none",
            spec=change.spec if change else None,
            patch=change.patch if change else None,
        )

    # The daemon starts no worker for a schema-only PublishedResource: nothing of it is planned either.
    contexts = [
        SyncContext(servlet=servlet, published=published, projected=result)
        for published, result in projected
        if syncs_objects(published)
    ]
    remote_objects = [_in_stored_version(obj, [result for _, result in projected]) for obj in inventory.remote_objects]
    objects = plan_world(
        contexts=contexts,
        remote_objects=remote_objects,
        unreadable_remote=inventory.unreadable_remote,
        local_objects=inventory.local_objects,
    )
    for obj in objects:
        errors.extend(
            PlanError(object=obj.describe(), field=problem.field, message=problem.message) for problem in obj.problems
        )
    warnings = tuple(
        warning
        for published, _ in projected
        for warning in shared_namespace_warnings(published, servlet_namespace=servlet.namespace)
    )
    orphans = _orphans(contexts, inventory, remote_objects, delete=delete_orphans)
    return ServletPlan(
        servlet=servlet,
        schemas=schemas,
        api_export=api_export,
        objects=tuple(objects),
        errors=tuple(errors),
        warnings=warnings,
        orphans=orphans,
        schema_only=tuple(published.name for published, _ in projected if not syncs_objects(published)),
    )


def _in_stored_version(obj: Manifest, projected: Sequence[Projected]) -> Manifest:
    """A workspace object written in another published version, as kcp lists it: in the stored one.

    kcp converts between the versions of a schema with strategy None, which only rewrites
    apiVersion, so the object given in any served version is the same object."""
    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    for result in projected:
        remote = result.remote
        if kind == remote.kind and api_version in {f"{remote.group}/{version}" for version in result.remote_versions}:
            return {**obj, "apiVersion": remote.api_version}
    return obj


def _orphans(
    contexts: Sequence[SyncContext], inventory: Inventory, remote_objects: Sequence[Manifest], *, delete: bool
) -> tuple[OrphanStep, ...]:
    """Orphans of each published remote resource, as the daemon's orphan scan finds them."""
    steps: list[OrphanStep] = []
    for context in contexts:
        local = context.projected.local
        found = find_orphans(
            servlet_name=context.servlet.name,
            remote_resource=context.projected.remote,
            local_objects=[
                obj
                for obj in inventory.local_objects
                if (obj.get("apiVersion"), obj.get("kind")) == (local.api_version, local.kind)
            ],
            remote_keys=[remote_key_of(obj) for obj in remote_objects if context_of(obj, [context])],
        )
        steps.extend(
            OrphanStep(published_resource=context.published.name, orphan=orphan, delete=delete) for orphan in found
        )
    return tuple(steps)
