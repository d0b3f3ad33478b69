"""An informer reduced to what a `Cache` reads of it: its objects, and its events, delivered by hand."""

from __future__ import annotations

from typing import Any

from servlet.app.runtime.informer_events import Event, EventType, Handler, ObjectKey, version_reached


class FakeInformer:
    name = "test"
    has_synced = True
    catching_up = False

    def __init__(self) -> None:
        self.stored: dict[ObjectKey, dict[str, Any]] = {}
        self.resource_version = ""  # followed up to here: set by hand, as a relist or bookmark would
        self._handlers: list[Handler] = []

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        return self.stored.get(key)

    def keys(self) -> list[ObjectKey]:
        return list(self.stored)

    def reflects(self, version: str) -> bool:
        return version_reached(self.resource_version, version)

    def objects(self) -> list[dict[str, Any]]:
        return list(self.stored.values())

    def put(self, cluster: str, obj: dict[str, Any]) -> Event:
        """Store `obj` of workspace `cluster` ("" on the service cluster) and deliver its event."""
        meta = obj["metadata"]
        key = ObjectKey(cluster=cluster, namespace=meta.get("namespace", ""), name=meta["name"])
        old = self.stored.get(key)
        self.stored[key] = obj
        return self._deliver(Event(EventType.ADDED if old is None else EventType.MODIFIED, key, obj, old))

    def pin(self, key: ObjectKey, obj: dict[str, Any]) -> None:
        if key not in self.stored:
            self.stored[key] = obj
            self._deliver(Event(EventType.ADDED, key, obj))

    def delete(self, cluster: str, namespace: str, name: str) -> Event:
        key = ObjectKey(cluster=cluster, namespace=namespace, name=name)
        obj = self.stored.pop(key)
        return self._deliver(Event(EventType.DELETED, key, obj, obj))

    def _deliver(self, event: Event) -> Event:
        for handler in self._handlers:
            handler(event)
        return event
