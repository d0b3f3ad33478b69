"""The `apiresourceschema` controller: each PublishedResource's CRD, projected, as an APIResourceSchema.

For every PublishedResource (those the `--published-resource-selector` admits) it asks the
catalog for the projected schema and creates it in the org workspace unless the schema cache
already has it. Schema names are hashes of their spec, so "a schema of that name exists" means
"this exact schema exists" and a converged reconcile sends nothing. Schemas are immutable and
never deleted: a changed CRD yields a new schema next to the old one (SPEC 3).

It reports `Valid` and `SchemaPublished` (and `resourceSchemaName`) to the status board.

Deliberately not here: the APIExport (the `apiexport` controller) and the projection rules
(`core/projection.py`).
"""

from __future__ import annotations

from collections.abc import Callable

from servlet.app.controllers.caches import Cache
from servlet.app.controllers.catalog import Catalog, Entry
from servlet.app.controllers.status import StatusBoard
from servlet.app.observability.logs import FieldLogger
from servlet.app.runtime.informer_events import Event, EventType
from servlet.core.conditions import Condition, ConditionType, condition_problems
from servlet.core.errors import AlreadyExists, ApiFailure
from servlet.core.ports import OrgWorkspace
from servlet.core.projection import schema_manifest

CONTROLLER = "apiresourceschema"
NOT_PUBLISHED = "NotPublished"


def valid_condition(entry: Entry) -> Condition:
    if entry.valid:
        return Condition.true(ConditionType.VALID, reason="Valid", message="the spec is valid")
    return Condition.false(ConditionType.VALID, reason=entry.reason, message=condition_problems(entry.problems))


class SchemaController:
    """Reconciles one PublishedResource (by name): its APIResourceSchema exists in the org workspace."""

    def __init__(
        self,
        *,
        catalog: Catalog,
        schemas: Cache,
        org: OrgWorkspace,
        board: StatusBoard,
        on_published: Callable[[], None],
        log: FieldLogger,
    ) -> None:
        self._catalog = catalog
        self._schemas = schemas
        self._org = org
        self._board = board
        self._on_published = on_published
        self._log = log

    # -- which keys an event concerns ----------------------------------------------------------

    def keys_for_published(self, event: Event) -> list[str]:
        return [event.key.name]

    def keys_for_crd(self, event: Event) -> list[str]:
        names = set(self._catalog.names_for_crd(event.obj))
        if event.old is not None:
            names.update(self._catalog.names_for_crd(event.old))
        return sorted(names)

    def keys_for_schema(self, event: Event) -> list[str]:
        # Only a deleted schema needs work (someone removed it: create it again).
        return self._catalog.names() if event.type is EventType.DELETED else []

    # -- reconcile -----------------------------------------------------------------------------

    async def reconcile(self, name: str) -> None:
        entry = self._catalog.entry(name)
        if entry is None:
            self._board.forget(name)
            return
        valid = valid_condition(entry)
        projected = entry.projected
        if projected is None:
            self._board.report(
                name,
                valid,
                Condition.false(
                    ConditionType.SCHEMA_PUBLISHED,
                    reason=NOT_PUBLISHED,
                    message="nothing can be published until the PublishedResource is valid",
                ),
            )
            return
        schema_name = projected.schema_name
        if self._schemas.get(self._schemas.key(schema_name)) is None:
            try:
                created = await self._org.create_schema(schema_manifest(projected))
            except AlreadyExists as exc:
                self._board.report(
                    name,
                    valid,
                    Condition.false(
                        ConditionType.SCHEMA_PUBLISHED,
                        reason="SchemaNameTaken",
                        message=f"an APIResourceSchema named {schema_name} with a different spec already exists: {exc.message}",
                    ),
                )
                return
            except ApiFailure as exc:
                self._board.report(
                    name,
                    valid,
                    Condition.false(
                        ConditionType.SCHEMA_PUBLISHED,
                        reason="CreateFailed",
                        message=f"creating APIResourceSchema {schema_name} failed: {exc}",
                    ),
                )
                raise
            self._schemas.wrote(self._schemas.key(schema_name), created, created=True)
            self._log.info("schema published", published_resource=name, schema=schema_name, action="createSchema")
        self._board.report(
            name,
            valid,
            Condition.true(
                ConditionType.SCHEMA_PUBLISHED,
                reason="Published",
                message=f"APIResourceSchema {schema_name} exists in the org workspace",
            ),
            schema_name=schema_name,
        )
        self._on_published()
