"""Watch: event types, resuming from a resourceVersion, bookmarks, timeouts and 410 Gone."""

from __future__ import annotations

import logging
import socket
import threading
import time
from collections.abc import Callable

import pytest
from lightkube import ApiError, Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap
from lightkube.types import PatchType

from kcpsim import KcpSim
from kcpsim.waiting import eventually
from tests.integration.kcpsim.helpers import Raw, read_events, stream_lines


def test_watch_from_a_list_version_reports_added_modified_deleted_in_order(service: Client) -> None:
    listing = service.list(ConfigMap, namespace="default")
    list(listing)
    service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="default"), data={"a": "1"}))
    service.patch(ConfigMap, "c", {"data": {"a": "2"}}, namespace="default", patch_type=PatchType.MERGE)
    service.delete(ConfigMap, "c", namespace="default")
    events = []
    for kind, obj in service.watch(
        ConfigMap, namespace="default", resource_version=listing.resourceVersion, server_timeout=1
    ):
        events.append((kind, obj.metadata.name, (obj.data or {}).get("a")))
        if len(events) == 3:
            break
    assert events == [("ADDED", "c", "1"), ("MODIFIED", "c", "2"), ("DELETED", "c", "2")]


def test_watch_without_a_version_starts_with_the_current_objects(service: Client) -> None:
    service.create(ConfigMap(metadata=ObjectMeta(name="old", namespace="default")))
    kind, obj = next(iter(service.watch(ConfigMap, namespace="default", server_timeout=1)))
    assert (kind, obj.metadata.name) == ("ADDED", "old")


def test_live_events_arrive_on_an_open_watch(service: Client, kcpsim: KcpSim) -> None:
    seen: list[str] = []

    def watch() -> None:
        for kind, obj in service.watch(
            ConfigMap, namespace="default", resource_version=str(kcpsim.world.store.rv), server_timeout=5
        ):
            seen.append(f"{kind} {obj.metadata.name}")
            return

    thread = threading.Thread(target=watch)
    thread.start()
    eventually(kcpsim.world.store.all_watchers, what="the watch to be open on the server")
    service.create(ConfigMap(metadata=ObjectMeta(name="live", namespace="default")))
    thread.join(timeout=5)
    assert seen == ["ADDED live"]


def test_watch_streams_are_chunked_newline_delimited_json(raw: Raw) -> None:
    with raw.client.stream("GET", "/api/v1/namespaces", params={"watch": "true", "timeoutSeconds": "5"}) as response:
        assert response.headers["Transfer-Encoding"] == "chunked"
        assert response.headers["Content-Type"] == "application/json"
        events = read_events(response, 4)
    assert {e["type"] for e in events} == {"ADDED"}
    assert "default" in {e["object"]["metadata"]["name"] for e in events}


def test_bookmarks_carry_the_current_resource_version(
    kcpsim_factory: Callable[..., KcpSim], raw_for: Callable[[KcpSim], Raw]
) -> None:
    sim = kcpsim_factory(bookmark_interval=0.1)
    raw = raw_for(sim)
    rv = str(sim.world.store.rv)
    params = {"watch": "true", "resourceVersion": rv, "allowWatchBookmarks": "true", "timeoutSeconds": "5"}
    with raw.client.stream("GET", "/api/v1/namespaces/default/configmaps", params=params) as response:
        events = read_events(response, 3)
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 3
    assert bookmarks[0]["object"] == {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"resourceVersion": rv}}


def test_no_bookmarks_unless_asked(kcpsim_factory: Callable[..., KcpSim], raw_for: Callable[[KcpSim], Raw]) -> None:
    sim = kcpsim_factory(bookmark_interval=0.05)
    raw = raw_for(sim)
    params = {"watch": "true", "resourceVersion": str(sim.world.store.rv), "timeoutSeconds": "1"}
    with raw.client.stream("GET", "/api/v1/configmaps", params=params) as response:
        assert stream_lines(response) == []


def test_timeout_seconds_ends_the_stream(raw: Raw, kcpsim: KcpSim) -> None:
    started = time.monotonic()
    params = {"watch": "true", "resourceVersion": str(kcpsim.world.store.rv), "timeoutSeconds": "1"}
    with raw.client.stream("GET", "/api/v1/configmaps", params=params) as response:
        stream_lines(response)
    assert 0.9 <= time.monotonic() - started < 3


@pytest.fixture
def short_history(kcpsim_factory: Callable[..., KcpSim]) -> tuple[KcpSim, str]:
    sim: KcpSim = kcpsim_factory(history_size=3)
    old = str(sim.world.store.rv)
    client = sim.client(sim.service_config())
    for i in range(5):
        client.create(ConfigMap(metadata=ObjectMeta(name=f"c{i}", namespace="default")))
    client.close()
    return sim, old


def test_watching_from_a_version_older_than_the_history_is_gone(
    short_history: tuple[KcpSim, str], raw_for: Callable[[KcpSim], Raw]
) -> None:
    sim, old = short_history
    raw = raw_for(sim)
    with raw.client.stream("GET", "/api/v1/configmaps", params={"watch": "true", "resourceVersion": old}) as response:
        assert response.status_code == 200
        events = stream_lines(response)
    assert [e["type"] for e in events] == ["ERROR"]
    assert (events[0]["object"]["code"], events[0]["object"]["reason"]) == (410, "Expired")


def test_lightkube_sees_410_as_an_api_error(short_history: tuple[KcpSim, str]) -> None:
    sim, old = short_history
    client = sim.client(sim.service_config())
    with pytest.raises(ApiError) as caught:
        next(iter(client.watch(ConfigMap, namespace="*", resource_version=old, server_timeout=1)))
    client.close()
    assert caught.value.status.code == 410


def test_watching_from_the_retained_history_replays_it(
    short_history: tuple[KcpSim, str], raw_for: Callable[[KcpSim], Raw]
) -> None:
    sim, _ = short_history
    raw = raw_for(sim)
    recent = str(sim.world.store.rv - 2)
    with raw.client.stream(
        "GET", "/api/v1/configmaps", params={"watch": "true", "resourceVersion": recent, "timeoutSeconds": "5"}
    ) as response:
        events = read_events(response, 2)
    assert [e["object"]["metadata"]["name"] for e in events] == ["c3", "c4"]


def test_410_can_be_an_http_status_instead_of_an_event(
    kcpsim_factory: Callable[..., KcpSim], raw_for: Callable[[KcpSim], Raw]
) -> None:
    sim: KcpSim = kcpsim_factory(history_size=1, watch_gone_as_status=True)
    raw = raw_for(sim)
    response = raw("GET", "/api/v1/configmaps", params={"watch": "true", "resourceVersion": "1"})
    assert response.status_code == 410 and response.json()["reason"] == "Expired"


def test_objects_that_stop_or_start_matching_a_selector_are_deleted_or_added(
    service: Client, raw: Raw, kcpsim: KcpSim
) -> None:
    service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="default", labels={"app": "web"})))
    rv = str(kcpsim.world.store.rv)
    service.patch(
        ConfigMap, "c", {"metadata": {"labels": {"app": "db"}}}, namespace="default", patch_type=PatchType.MERGE
    )
    service.patch(
        ConfigMap, "c", {"metadata": {"labels": {"app": "web"}}}, namespace="default", patch_type=PatchType.MERGE
    )
    params = {"watch": "true", "resourceVersion": rv, "labelSelector": "app=web", "timeoutSeconds": "5"}
    with raw.client.stream("GET", "/api/v1/namespaces/default/configmaps", params=params) as response:
        events = read_events(response, 2)
    assert [e["type"] for e in events] == ["DELETED", "ADDED"]


def test_a_continue_token_older_than_the_history_is_gone(
    kcpsim_factory: Callable[..., KcpSim], raw_for: Callable[[KcpSim], Raw]
) -> None:
    sim: KcpSim = kcpsim_factory(history_size=2)
    client = sim.client(sim.service_config())
    for i in range(3):
        client.create(ConfigMap(metadata=ObjectMeta(name=f"c{i}", namespace="default")))
    raw = raw_for(sim)
    token = raw("GET", "/api/v1/configmaps", params={"limit": "1"}).json()["metadata"]["continue"]
    for i in range(3, 6):
        client.create(ConfigMap(metadata=ObjectMeta(name=f"c{i}", namespace="default")))
    response = raw("GET", "/api/v1/configmaps", params={"limit": "1", "continue": token})
    client.close()
    assert response.status_code == 410


def test_a_watch_client_that_hangs_up_at_once_is_no_server_error(
    kcpsim: KcpSim, caplog: pytest.LogCaptureFixture
) -> None:
    # A servlet that stops drops its watches at any moment, also before kcpsim has answered; the
    # benchmark's output showed those as "Error handling request" tracebacks.
    host, port = kcpsim.base_url.removeprefix("http://").rsplit(":", 1)
    request = f"GET /api/v1/configmaps?watch=true HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
    with caplog.at_level(logging.ERROR, logger="aiohttp.server"):
        for _ in range(50):
            with socket.create_connection((host, int(port))) as connection:
                connection.sendall(request)
        time.sleep(0.5)  # the server notices each hang-up on its own loop
    assert [record.getMessage() for record in caplog.records if record.name == "aiohttp.server"] == []
