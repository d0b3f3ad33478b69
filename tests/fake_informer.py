"""An informer reduced to what a `Cache` reads of it: its objects, and its events, delivered by hand."""

from __future__ import annotations

from typing import Any

from servlet.app.runtime.informer_events import Event, EventType, Handler, ObjectKey


class FakeInformer:
    name = "test"

    def __init__(self) -> None:
        self.objects: dict[ObjectKey, dict[str, Any]] = {}
        self._handlers: list[Handler] = []

    def add_handler(self, handler: Handler) -> None:
        self._handlers.append(handler)

    def get(self, key: ObjectKey) -> dict[str, Any] | None:
        return self.objects.get(key)

    def keys(self) -> list[ObjectKey]:
        return list(self.objects)

    def put(self, cluster: str, obj: dict[str, Any]) -> Event:
        """Store `obj` of workspace `cluster` ("" on the service cluster) and deliver its event."""
        meta = obj["metadata"]
        key = ObjectKey(cluster=cluster, namespace=meta.get("namespace", ""), name=meta["name"])
        old = self.objects.get(key)
        self.objects[key] = obj
        return self._deliver(Event(EventType.ADDED if old is None else EventType.MODIFIED, key, obj, old))

    def delete(self, cluster: str, namespace: str, name: str) -> Event:
        key = ObjectKey(cluster=cluster, namespace=namespace, name=name)
        obj = self.objects.pop(key)
        return self._deliver(Event(EventType.DELETED, key, obj, obj))

    def _deliver(self, event: Event) -> Event:
        for handler in self._handlers:
            handler(event)
        return event
