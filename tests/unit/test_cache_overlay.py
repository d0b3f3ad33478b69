"""A cache keeps the answer to an own write only while its informer lags behind (`app/controllers/caches.py`)."""

from __future__ import annotations

from typing import Any

from servlet.app.controllers.caches import Cache
from servlet.app.runtime.informer_events import ObjectKey
from tests.fake_informer import FakeInformer

KEY = ObjectKey(cluster="", namespace="ns", name="w")


def _widget(version: str, size: int) -> dict[str, Any]:
    return {"metadata": {"name": "w", "namespace": "ns", "resourceVersion": version}, "spec": {"size": size}}


def _cache() -> tuple[Cache, FakeInformer]:
    informer = FakeInformer()
    informer.put("", _widget("1", 1))
    return Cache(informer, clock=lambda: 0.0), informer  # type: ignore[arg-type]


def test_an_answer_the_informer_has_not_shown_yet_is_read_until_it_does() -> None:
    cache, informer = _cache()
    cache.wrote(KEY, _widget("2", 2))
    assert cache.get(KEY) == _widget("2", 2) and cache.pending_writes == 1
    informer.put("", _widget("2", 2))
    assert cache.get(KEY) == _widget("2", 2) and cache.pending_writes == 0


def test_an_answer_that_arrives_after_its_watch_event_is_not_kept_as_a_second_copy() -> None:
    cache, informer = _cache()
    informer.put("", _widget("2", 2))  # the event beats the answer, as it often does
    cache.wrote(KEY, _widget("2", 2))
    assert cache.pending_writes == 0
    assert cache.get(KEY) == _widget("2", 2)


def test_a_delete_sent_reads_as_being_deleted_until_the_informer_notices() -> None:
    cache, informer = _cache()
    cache.deleting(KEY)
    deleting = cache.get(KEY)
    assert deleting is not None and "deletionTimestamp" in deleting["metadata"]
    informer.put("", {**_widget("3", 1), "metadata": {**_widget("3", 1)["metadata"], "deletionTimestamp": "now"}})
    assert cache.pending_writes == 0
