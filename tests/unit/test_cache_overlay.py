"""A cache keeps the answer to an own write only while its informer lags behind (`app/controllers/caches.py`)."""

from __future__ import annotations

from typing import Any

from servlet.app.controllers.caches import Cache
from servlet.app.runtime.informer_events import Event, EventType, Handler, ObjectKey

KEY = ObjectKey(cluster="", namespace="ns", name="w")


class _Informer:
    """What a Cache reads of an informer: its objects, and a way to deliver events."""

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

    def see(self, obj: dict[str, Any]) -> None:
        old = self.objects.get(KEY)
        self.objects[KEY] = obj
        for handler in self._handlers:
            handler(Event(EventType.ADDED if old is None else EventType.MODIFIED, KEY, obj, old))


def _widget(version: str, size: int) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "ns", "resourceVersion": version}, "spec": {"size": size}}


def _cache() -> tuple[Cache, _Informer]:
    informer = _Informer()
    informer.see(_widget("1", 1))
    return Cache(informer, clock=lambda: 0.0), informer  # type: ignore[arg-type]


def test_an_answer_the_informer_has_not_shown_yet_is_read_until_it_does() -> None:
    cache, informer = _cache()
    cache.wrote(KEY, _widget("2", 2))
    assert cache.get(KEY) == _widget("2", 2) and cache.pending_writes == 1
    informer.see(_widget("2", 2))
    assert cache.get(KEY) == _widget("2", 2) and cache.pending_writes == 0


def test_an_answer_that_arrives_after_its_watch_event_is_not_kept_as_a_second_copy() -> None:
    cache, informer = _cache()
    informer.see(_widget("2", 2))  # the event beats the answer, as it often does
    cache.wrote(KEY, _widget("2", 2))
    assert cache.pending_writes == 0
    assert cache.get(KEY) == _widget("2", 2)


def test_a_delete_sent_reads_as_being_deleted_until_the_informer_notices() -> None:
    cache, informer = _cache()
    cache.deleting(KEY)
    deleting = cache.get(KEY)
    assert deleting is not None and "deletionTimestamp" in deleting["metadata"]
    informer.see({**_widget("3", 1), "metadata": {**_widget("3", 1)["metadata"], "deletionTimestamp": "now"}})
    assert cache.pending_writes == 0
