"""The `apiexport` controller: every published schema, and the claims they need, in the one APIExport.

One key (the export). A reconcile collects the schemas of all PublishedResources whose schema
exists, asks `core.apiexport.plan_export` what the export lacks, and sends that as one JSON merge
patch carrying the resourceVersion it planned from (SPEC 4): a concurrent change makes the patch
fail with a conflict and the reconcile runs again from the fresher cache. Nothing is ever removed;
an export that already has everything gets no request at all.

It reports `Exported` per PublishedResource: True when its schema is in the export; False when
the export is missing, the schema is not published yet, or another schema serves the same
resource (kcp allows one per resource), also when that schema is the very same one, projected by
an older PublishedResource (`core.apiexport.schema_taken_by`): only that one is served.

Deliberately not here: creating schemas, creating or deleting the export (KDP owns it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from servlet.app.controllers.caches import Cache, resource_version
from servlet.app.controllers.catalog import Catalog, Entry, schema_taken_by
from servlet.app.controllers.status import StatusBoard
from servlet.app.observability.logs import FieldLogger
from servlet.app.runtime.informer_events import ObjectKey
from servlet.core.apiexport import SCHEMAS_FIELD, plan_export, schema_resource
from servlet.core.conditions import Condition, ConditionType
from servlet.core.ports import OrgWorkspace

CONTROLLER = "apiexport"
KEY = "apiexport"


def exported_schemas(export: Mapping[str, Any] | None) -> set[str]:
    spec = (export or {}).get("spec")
    names = spec.get(SCHEMAS_FIELD) if isinstance(spec, Mapping) else None
    return {name for name in names if isinstance(name, str)} if isinstance(names, list) else set()


class ExportController:
    """Keeps the APIExport `name` listing every published schema."""

    def __init__(
        self,
        *,
        name: str,
        catalog: Catalog,
        schemas: Cache,
        exports: Cache,
        org: OrgWorkspace,
        board: StatusBoard,
        on_exported: Callable[[], None],
        log: FieldLogger,
    ) -> None:
        self.name = name
        self._catalog = catalog
        self._schemas = schemas
        self._exports = exports
        self._org = org
        self._board = board
        self._on_exported = on_exported
        self._log = log

    @property
    def key(self) -> ObjectKey:
        return self._exports.key(self.name)

    def export(self) -> dict[str, Any] | None:
        return self._exports.get(self.key)

    async def reconcile(self, _: str = KEY) -> None:
        entries = self._catalog.entries()
        taken = schema_taken_by(entries)
        # A PublishedResource whose schema another one keeps asks for nothing, not even claims.
        published = [entry for entry in entries if self._schema_exists(entry) and entry.name not in taken]
        export = self.export()
        if export is None:
            for entry in entries:
                self._board.report(
                    entry.name,
                    Condition.false(
                        ConditionType.EXPORTED,
                        reason="ExportNotFound",
                        message=f"the APIExport {self.name} does not exist in the org workspace (KDP creates it)",
                    ),
                )
            return
        related = [item for entry in published if entry.published for item in entry.published.spec.related]
        change = plan_export(
            export=export,
            schema_names=[entry.projected.schema_name for entry in published if entry.projected],
            related=related,
            workspace_paths=any(entry.published.spec.workspace_paths for entry in published if entry.published),
        )
        if change is not None:
            written = await self._org.patch_export(self.name, change.patch, resource_version=resource_version(export))
            self._exports.wrote(self.key, written)
            export = written
            self._log.info(
                "export updated",
                apiexport=self.name,
                action="patchExport",
                schemas=sorted(change.spec.get(SCHEMAS_FIELD) or []),
            )
        listed = exported_schemas(export)
        for entry in entries:
            keeper = taken.get(entry.name)
            if keeper is not None and entry.projected is not None:
                condition = self._taken(schema=entry.projected.schema_name, keeper=keeper)
            else:
                condition = self._condition(entry, listed)
            self._board.report(entry.name, condition)
        self._on_exported()

    def _schema_exists(self, entry: Entry) -> bool:
        return (
            entry.projected is not None
            and self._schemas.get(self._schemas.key(entry.projected.schema_name)) is not None
        )

    def _condition(self, entry: Entry, listed: set[str]) -> Condition:
        if entry.projected is None:
            return Condition.false(
                ConditionType.EXPORTED,
                reason="NotPublished",
                message="nothing is exported until the PublishedResource is valid",
            )
        schema = entry.projected.schema_name
        if schema in listed:
            return Condition.true(
                ConditionType.EXPORTED, reason="Exported", message=f"APIExport {self.name} serves {schema}"
            )
        if not self._schema_exists(entry):
            return Condition.false(
                ConditionType.EXPORTED, reason="SchemaNotPublished", message=f"waiting for APIResourceSchema {schema}"
            )
        resource = schema_resource(schema)
        other = sorted(name for name in listed if schema_resource(name) == resource)
        return Condition.false(
            ConditionType.EXPORTED,
            reason="ResourceTaken",
            message=f"APIExport {self.name} already serves {resource} with {', '.join(other) or 'another schema'}; "
            "kcp allows one schema per resource",
        )

    def _taken(self, *, schema: str, keeper: str) -> Condition:
        return Condition.false(
            ConditionType.EXPORTED,
            reason="ResourceTaken",
            message=f"PublishedResource {keeper} already publishes {schema_resource(schema)} with the same "
            f"APIResourceSchema {schema}; kcp allows one schema per resource, and the oldest PublishedResource "
            "(by creationTimestamp, then name) keeps it: delete this one, or re-create it with another "
            "projection.kind or projection.plural",
        )
