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


def test_a_delete_sent_for_a_held_object_reads_as_being_deleted_whatever_version_the_informer_reached() -> None:
    cache, informer = _cache()
    cache.deleting(KEY)
    informer.resource_version = "9"  # other objects' events moved it on; this one's deletion is still to come
    deleting = cache.get(KEY)
    assert deleting is not None and "deletionTimestamp" in deleting["metadata"]


def test_an_answer_for_an_object_the_informer_never_held_goes_once_the_informer_has_followed_past_it() -> None:
    """Created and deleted while the watch was down: no event will ever name it."""
    informer = FakeInformer()
    informer.resource_version = "1"
    cache = Cache(informer, clock=lambda: 0.0, index=lambda obj: obj["spec"]["size"])  # type: ignore[arg-type]
    cache.wrote(KEY, _widget("2", 2), created=True)
    cache.deleting(KEY)
    assert cache.get(KEY) is not None and cache.lookup(2) != []  # not followed that far yet
    informer.resource_version = "3"  # a relist whose snapshot came after the deletion
    assert cache.get(KEY) is None and cache.lookup(2) == []
    assert cache.pending_writes == 0
    assert len(cache._index) == 0  # nor is it kept in the index: a daemon would grow with every such object


def test_versions_that_are_not_counters_never_end_an_answer_early() -> None:
    informer = FakeInformer()
    informer.resource_version = "b7"
    cache = Cache(informer, clock=lambda: 0.0)  # type: ignore[arg-type]
    cache.wrote(KEY, _widget("a1", 2), created=True)
    assert cache.get(KEY) == _widget("a1", 2)
