"""The one writer of PublishedResource status, fed by every other controller's reports.

Four controllers know one condition each (SPEC 2). If each patched the status itself they would
overwrite each other's `conditions` (a merge patch replaces lists whole) and write far more
often. Instead they `report()` to the `StatusBoard`; a changed report queues the PublishedResource,
and `StatusController` computes the whole status with `core.conditions.status_patch` and writes
it in one merge patch through the status subresource, only when something changed. What changed
is also told as Events on the PublishedResource (`core.events.condition_events`): the schema
published, exported, and every condition that turns False.

Deliberately not here: deciding any condition (the reporters do) and anything but the status.
"""

from __future__ import annotations

from collections.abc import Callable

from servlet.app.controllers.caches import Cache
from servlet.app.observability.events import EventRecorder
from servlet.app.observability.logs import FieldLogger
from servlet.core.conditions import Condition, ConditionType, parse_conditions, status_patch
from servlet.core.errors import NotFound
from servlet.core.events import condition_events
from servlet.core.ports import PUBLISHED_RESOURCE_TYPE, InvolvedObject, ServiceCluster


class StatusBoard:
    """What the controllers currently report per PublishedResource (by name)."""

    def __init__(self) -> None:
        self._conditions: dict[str, dict[ConditionType, Condition]] = {}
        self._schema_names: dict[str, str] = {}
        self._listeners: list[Callable[[str], None]] = []

    def on_change(self, listener: Callable[[str], None]) -> Callable[[], None]:
        """Call `listener(name)` on every change; returns what stops that."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def report(self, name: str, *conditions: Condition, schema_name: str | None = None) -> None:
        """Record conditions (and the schema in use); listeners hear only about real changes."""
        current = self._conditions.setdefault(name, {})
        changed = False
        for condition in conditions:
            if current.get(condition.type) != condition:
                current[condition.type] = condition
                changed = True
        if schema_name is not None and self._schema_names.get(name) != schema_name:
            self._schema_names[name] = schema_name
            changed = True
        if changed:
            for listener in list(self._listeners):
                listener(name)

    def conditions(self, name: str) -> dict[ConditionType, Condition]:
        return dict(self._conditions.get(name, {}))

    def condition(self, name: str, type_: ConditionType) -> Condition | None:
        return self._conditions.get(name, {}).get(type_)

    def schema_name(self, name: str) -> str | None:
        return self._schema_names.get(name)

    def forget(self, name: str) -> None:
        self._conditions.pop(name, None)
        self._schema_names.pop(name, None)


class StatusController:
    """Reconciles one PublishedResource's status (by name) from the board; writes only changes."""

    def __init__(
        self,
        *,
        board: StatusBoard,
        published: Cache,
        service: ServiceCluster,
        now: Callable[[], str],
        log: FieldLogger,
        events: EventRecorder | None = None,
    ) -> None:
        self._board = board
        self._published = published
        self._service = service
        self._now = now
        self._log = log
        self._events = events

    async def reconcile(self, name: str) -> None:
        key = self._published.key(name)
        obj = self._published.get(key)
        if obj is None:
            self._board.forget(name)
            return
        metadata = obj.get("metadata") or {}
        generation = metadata.get("generation")
        status = obj.get("status")
        patch = status_patch(
            current=status if isinstance(status, dict) else None,
            reported=self._board.conditions(name),
            generation=generation if isinstance(generation, int) else 0,
            now=self._now(),
            resource_schema_name=self._board.schema_name(name),
        )
        if patch is None:
            return
        try:
            written = await self._service.write_published_status(name, patch["status"])
        except NotFound:
            return  # deleted meanwhile: nothing to report on
        self._published.wrote(key, written)
        if self._events is not None:
            regarding = InvolvedObject(resource=PUBLISHED_RESOURCE_TYPE, name=name, uid=str(metadata.get("uid") or ""))
            for event in condition_events(
                before=parse_conditions(status if isinstance(status, dict) else None),
                after=parse_conditions(patch["status"]),
            ):
                self._events.record(regarding, event)
        ready = next((c for c in patch["status"].get("conditions", []) if c.get("type") == "Ready"), None)
        self._log.info(
            "status updated",
            published_resource=name,
            ready=ready.get("status") if ready else None,
            reason=ready.get("reason") if ready else None,
        )
