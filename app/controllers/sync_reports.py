"""What a sync worker tells people: log lines, metrics and Events about its objects.

A write is logged once it is done. A conflict or an error is logged and counted the first time a
plan of the remote object shows it, not again on every reconcile that finds it still there. A
fight (`fights.py`) is logged and counted when it starts. The managed-objects gauge counts the
local objects carrying this servlet's label. An accepted, created or updated object, and each
conflict or error when it first shows, is also an Event on the user's object in its workspace
(`core.events` says which), recorded in the background.

Deliberately not here: deciding what to report (the core plans conflicts and errors) and
remembering what was reported (`object_book.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from servlet.app.controllers.object_book import Report
from servlet.app.observability.events import EventRecorder
from servlet.app.observability.logs import FieldLogger
from servlet.app.observability.metrics import Metrics
from servlet.app.runtime.informer_events import ObjectKey
from servlet.core import metadata
from servlet.core.actions import Action, Conflict, Error, Patch
from servlet.core.events import object_event
from servlet.core.model import RemoteKey
from servlet.core.ports import InvolvedObject

CONTROLLER = "sync"


def describe(key: RemoteKey) -> str:
    return f"{key.namespace}/{key.name}" if key.namespace else key.name


class SyncReporter:
    """Logs and metrics of the sync worker of one PublishedResource (`name`)."""

    def __init__(
        self,
        *,
        name: str,
        servlet_name: str,
        metrics: Metrics,
        log: FieldLogger,
        events: EventRecorder | None = None,
        regarding: Callable[[RemoteKey], InvolvedObject] | None = None,
        primary_kind: str = "",
    ) -> None:
        self._name = name
        self._servlet_name = servlet_name
        self._metrics = metrics
        self._log = log
        self._events = events
        self._regarding = regarding
        self._primary_kind = primary_kind
        self._managed: set[ObjectKey] = set()
        self._counting = False

    def synced(self, key: RemoteKey, action: Action) -> None:
        target = action.target.to_dict() if action.target is not None else None
        self._log.info("synced", object=describe(key), workspace=key.cluster, action=action.type, target=target)
        self._record(key, action)

    def _record(self, key: RemoteKey, action: Action) -> None:
        if self._events is None or self._regarding is None:
            return
        spec = object_event(action, primary_kind=self._primary_kind)
        if spec is not None:
            self._events.record(self._regarding(key), spec)

    def problem(self, key: RemoteKey, action: Conflict | Error, *, known: frozenset[Report]) -> Report:
        """Log and count a conflict or error unless it is among those `known` for `key` already."""
        report = Report(type=action.type, target=action.target, identifier=action.identifier, reason=action.reason)
        where = action.target.to_dict() if action.target is not None else None
        if report in known:
            self._log.debug(
                "still not writing", object=describe(key), workspace=key.cluster, action=action.type, target=where
            )
            return report
        if isinstance(action, Conflict):
            self._metrics.count_sync_conflict(published_resource=self._name)
            self._log.warning(
                "conflict: not writing",
                object=describe(key),
                workspace=key.cluster,
                action=action.type,
                target=where,
                identifier=action.identifier or None,
                reason=action.reason,
            )
        else:
            self._metrics.count_error(controller=CONTROLLER, kind="plan")
            self._log.warning(
                "cannot sync",
                object=describe(key),
                workspace=key.cluster,
                action=action.type,
                target=where,
                field=action.field or None,
                identifier=action.identifier or None,
                reason=action.reason,
            )
        self._record(key, action)
        return report

    def fight_started(self, key: RemoteKey, action: Patch, *, wait: float) -> None:
        self._metrics.count_sync_fight(published_resource=self._name)
        self._log.warning(
            "another writer keeps changing the local copy back; backing off",
            object=describe(key),
            workspace=key.cluster,
            target=action.target.to_dict(),
            fields=sorted(k for k in action.patch if k != "metadata"),
            wait=round(wait, 1),
        )

    # -- the managed-objects gauge -------------------------------------------------------------

    def count_managed(self, key: ObjectKey, obj: dict[str, Any] | None) -> None:
        """Whether the local object at `key` (None: deleted) carries this servlet's label."""
        mine = (
            obj is not None
            and ((obj.get("metadata") or {}).get("labels") or {}).get(metadata.SERVLET_LABEL) == self._servlet_name
        )
        if mine:
            self._managed.add(key)
        else:
            self._managed.discard(key)
        if self._counting:
            self._publish_managed()

    def start_counting(self) -> None:
        """The caches are synced: from now on the gauge follows every change."""
        self._counting = True
        self._publish_managed()

    def _publish_managed(self) -> None:
        self._metrics.set_managed_objects(published_resource=self._name, count=len(self._managed))
