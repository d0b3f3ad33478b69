"""The probe server over real HTTP on 127.0.0.1, as kubelet and Prometheus talk to it."""

from __future__ import annotations

import asyncio
import http.client
import logging
import socket
from collections.abc import Awaitable, Callable
from typing import TypeVar

import pytest

from servlet.app.observability.metrics import Metrics
from servlet.app.observability.probes import (
    Address,
    HealthChecks,
    Heartbeat,
    ProbeServer,
    parse_address,
    task_alive,
)
from servlet.core.model import Problem

LOCAL = Address(host="127.0.0.1", port=0)
T = TypeVar("T")


class Reply:
    def __init__(self, response: http.client.HTTPResponse) -> None:
        self.status = response.status
        self.headers = {name.lower(): value for name, value in response.getheaders()}
        self.body = response.read().decode("utf-8")


def _request(port: int, path: str, method: str = "GET", body: bytes | None = None) -> Reply:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request(method, path, body=body)
        return Reply(connection.getresponse())
    finally:
        connection.close()


async def _get(port: int, path: str, method: str = "GET", body: bytes | None = None) -> Reply:
    return await asyncio.to_thread(_request, port, path, method, body)


async def _run_with_server(
    checks: HealthChecks,
    scenario: Callable[[ProbeServer], Awaitable[T]],
    *,
    metrics: Metrics | None = None,
    health: Address = LOCAL,
    metrics_address: Address = LOCAL,
) -> T:
    server = ProbeServer(
        checks=checks,
        metrics=metrics or Metrics(version="9.9.9"),
        health_address=health,
        metrics_address=metrics_address,
    )
    async with server:
        return await scenario(server)


async def test_healthy_process_answers_ok_on_both_probes() -> None:
    checks = HealthChecks()
    checks.add_liveness("watch-loops", lambda: (True, ""))
    checks.add_readiness("caches", lambda: (True, ""))

    async def scenario(server: ProbeServer) -> list[Reply]:
        port = server.health_address.port
        return [await _get(port, "/healthz"), await _get(port, "/readyz")]

    for reply in await _run_with_server(checks, scenario):
        assert (reply.status, reply.body) == (200, "ok\n")
        assert reply.headers["content-length"] == "3"


async def test_unsynced_caches_make_the_servlet_unready_but_not_dead() -> None:
    # kcp being unreachable shows up here: caches do not sync, but kubelet must not restart us.
    checks = HealthChecks()
    checks.add_liveness("watch-loops", lambda: (True, ""))
    checks.add_readiness("caches", lambda: (False, "informer for zertifikate has not synced"))
    checks.add_readiness("leadership", lambda: (True, ""))

    async def scenario(server: ProbeServer) -> tuple[Reply, Reply]:
        port = server.health_address.port
        return await _get(port, "/healthz"), await _get(port, "/readyz")

    healthz, readyz = await _run_with_server(checks, scenario)
    assert healthz.status == 200
    assert readyz.status == 503
    assert "[-]caches failed: informer for zertifikate has not synced" in readyz.body
    assert "[+]leadership ok" in readyz.body


async def test_a_dead_loop_fails_liveness_and_readiness_and_names_the_check() -> None:
    checks = HealthChecks()
    checks.add_liveness("sync-worker", lambda: (False, "task sync-certs ended"))
    checks.add_liveness("informers", lambda: (True, ""))

    async def scenario(server: ProbeServer) -> tuple[Reply, Reply]:
        port = server.health_address.port
        return await _get(port, "/healthz"), await _get(port, "/readyz")

    for reply in await _run_with_server(checks, scenario):
        assert reply.status == 503
        assert "[-]sync-worker failed: task sync-certs ended" in reply.body
        assert "[+]informers ok" in reply.body


async def test_a_check_that_raises_fails_the_probe_with_its_error() -> None:
    def broken() -> tuple[bool, str]:
        raise RuntimeError("lease state unreadable")

    checks = HealthChecks()
    checks.add_readiness("leadership", broken)

    async def scenario(server: ProbeServer) -> Reply:
        return await _get(server.health_address.port, "/readyz")

    reply = await _run_with_server(checks, scenario)
    assert reply.status == 503
    assert "leadership failed: check raised RuntimeError: lease state unreadable" in reply.body


async def test_removed_checks_no_longer_count() -> None:
    checks = HealthChecks()
    checks.add_readiness("sync-certs", lambda: (False, "not synced"))
    checks.remove("sync-certs")

    async def scenario(server: ProbeServer) -> Reply:
        return await _get(server.health_address.port, "/readyz")

    assert (await _run_with_server(checks, scenario)).status == 200


async def test_metrics_are_served_in_the_text_format_with_current_values() -> None:
    metrics = Metrics(version="9.9.9")

    async def scenario(server: ProbeServer) -> Reply:
        metrics.set_leader(True)
        return await _get(server.metrics_address.port, "/metrics")

    reply = await _run_with_server(HealthChecks(), scenario, metrics=metrics)
    assert reply.status == 200
    assert reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert 'servlet_build_info{version="9.9.9"} 1.0' in reply.body
    assert "servlet_leader 1.0" in reply.body
    assert int(reply.headers["content-length"]) == len(reply.body.encode("utf-8"))


async def test_separate_addresses_serve_separate_endpoints() -> None:
    async def scenario(server: ProbeServer) -> list[int]:
        health, metrics = server.health_address.port, server.metrics_address.port
        assert health != metrics
        return [
            (await _get(health, "/healthz")).status,
            (await _get(health, "/metrics")).status,
            (await _get(metrics, "/metrics")).status,
            (await _get(metrics, "/readyz")).status,
        ]

    assert await _run_with_server(HealthChecks(), scenario) == [200, 404, 200, 404]


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_one_address_serves_all_three_endpoints() -> None:
    shared = Address(host="127.0.0.1", port=_free_port())

    async def scenario(server: ProbeServer) -> list[int]:
        assert server.health_address == server.metrics_address == shared
        return [(await _get(shared.port, path)).status for path in ("/healthz", "/readyz", "/metrics")]

    assert await _run_with_server(HealthChecks(), scenario, health=shared, metrics_address=shared) == [200, 200, 200]


@pytest.mark.parametrize(
    "method,path,status",
    [
        ("POST", "/healthz", 405),
        ("DELETE", "/metrics", 405),
        ("GET", "/", 404),
        ("POST", "/nothing-here", 404),
        ("GET", "/readyz?verbose", 200),
    ],
)
async def test_methods_and_paths(method: str, path: str, status: int) -> None:
    async def scenario(server: ProbeServer) -> Reply:
        port = server.metrics_address.port if path == "/metrics" else server.health_address.port
        return await _get(port, path, method, body=b"{}" if method == "POST" else None)

    reply = await _run_with_server(HealthChecks(), scenario)
    assert reply.status == status
    if status == 405:
        # A comma-separated list (RFC 9110); how it is spaced is the server's choice.
        assert {method.strip() for method in reply.headers["allow"].split(",")} == {"GET", "HEAD"}


async def test_head_answers_like_get_without_a_body() -> None:
    async def scenario(server: ProbeServer) -> Reply:
        return await _get(server.health_address.port, "/healthz", "HEAD")

    reply = await _run_with_server(HealthChecks(), scenario)
    assert reply.status == 200
    assert reply.headers["content-length"] == "3"
    assert reply.body == ""


async def _raw(port: int, data: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(data)
        await writer.drain()
        return await asyncio.wait_for(reader.read(), 5)
    finally:
        writer.close()
        await writer.wait_closed()


@pytest.mark.parametrize(
    "request_bytes",
    [b"NONSENSE\r\n\r\n", b"GET /healthz SPDY/3\r\n\r\n", b"GET /healthz HTTP/1.1\r\n" + b"X-A: b\r\n" * 200],
    ids=["no-path", "not-http", "too-many-headers"],
)
async def test_malformed_requests_get_400_and_the_server_keeps_serving(
    request_bytes: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def scenario(server: ProbeServer) -> tuple[bytes, int]:
        port = server.health_address.port
        answer = await _raw(port, request_bytes)
        return answer, (await _get(port, "/healthz")).status

    with caplog.at_level(logging.INFO):
        answer, status_after = await _run_with_server(HealthChecks(), scenario)
    status_line = answer.split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.") and status_line.endswith(b" 400 Bad Request")
    assert status_after == 200
    # A port scanner is not the servlet's problem: no error lines (with tracebacks) for it.
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.INFO] == []


async def test_a_plain_http_1_1_request_gets_a_well_formed_response() -> None:
    async def scenario(server: ProbeServer) -> bytes:
        # Connection: close, so the answer ends where the connection does (keep-alive is the default).
        return await _raw(server.health_address.port, b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")

    answer = await _run_with_server(HealthChecks(), scenario)
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    assert lines[0] == b"HTTP/1.1 200 OK"
    assert b"Content-Length: 3" in lines
    assert body == b"ok\n"


async def test_stopping_closes_the_port() -> None:
    async def main() -> int:
        server = ProbeServer(
            checks=HealthChecks(), metrics=Metrics(version="x"), health_address=LOCAL, metrics_address=LOCAL
        )
        await server.start()
        port = server.health_address.port
        await server.stop()
        return port

    port = await main()
    with pytest.raises(ConnectionRefusedError):
        _request(port, "/healthz")


async def test_task_alive_reports_how_a_loop_ended() -> None:
    async def main() -> list[tuple[bool, str]]:
        async def crash() -> None:
            raise ValueError("watch stream broke")

        async def forever() -> None:
            await asyncio.Event().wait()

        running = asyncio.create_task(forever(), name="informer-secrets")
        crashed = asyncio.create_task(crash(), name="informer-configmaps")
        cancelled = asyncio.create_task(forever(), name="sync-certs")
        await asyncio.sleep(0)
        cancelled.cancel()
        await asyncio.gather(crashed, cancelled, return_exceptions=True)
        results = [task_alive(task)() for task in (running, crashed, cancelled)]
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        return results

    running, crashed, cancelled = await main()
    assert running == (True, "")
    assert crashed == (False, "task informer-configmaps ended: ValueError: watch stream broke")
    assert cancelled == (False, "task sync-certs was cancelled")


def test_heartbeat_fails_after_too_long_a_silence() -> None:
    now = [100.0]
    heartbeat = Heartbeat(max_silence=30, clock=lambda: now[0])
    now[0] = 125.0
    assert heartbeat.check() == (True, "")
    now[0] = 131.0
    assert heartbeat.check() == (False, "no heartbeat for 31s (limit 30s)")
    heartbeat.beat()
    assert heartbeat.check() == (True, "")


@pytest.mark.parametrize(
    "text,expected",
    [
        (":8080", Address(host="", port=8080)),
        ("127.0.0.1:0", Address(host="127.0.0.1", port=0)),
        ("[::1]:9090", Address(host="::1", port=9090)),
        ("localhost:8081", Address(host="localhost", port=8081)),
    ],
)
def test_parse_address_accepts_host_port(text: str, expected: Address) -> None:
    assert parse_address(text, flag="--metrics-address") == expected


@pytest.mark.parametrize(
    "text,message",
    [
        ("8080", '"8080" is not an address of the form host:port (e.g. :8080)'),
        (":http", '":http" has no valid port (a number from 0 to 65535)'),
        (":70000", '":70000" has no valid port (a number from 0 to 65535)'),
        ("::1:80", '"::1:80" is an IPv6 address without brackets; write [::1]:80'),
    ],
)
def test_parse_address_reports_bad_input_as_a_problem(text: str, message: str) -> None:
    assert parse_address(text, flag="--health-address") == Problem(field="--health-address", message=message)


def test_address_prints_as_host_port() -> None:
    assert [str(Address(host="::1", port=80)), str(Address(host="", port=8080))] == ["[::1]:80", ":8080"]


async def test_a_client_that_sends_nothing_does_not_block_others() -> None:
    async def scenario(server: ProbeServer) -> int:
        port = server.health_address.port
        _, idle = await asyncio.open_connection("127.0.0.1", port)
        try:
            return (await _get(port, "/healthz")).status
        finally:
            idle.close()
            await idle.wait_closed()

    assert await _run_with_server(HealthChecks(), scenario) == 200


async def test_stopping_closes_idle_connections_at_once() -> None:
    async def main() -> tuple[float, bytes]:
        server = ProbeServer(
            checks=HealthChecks(), metrics=Metrics(version="x"), health_address=LOCAL, metrics_address=LOCAL
        )
        await server.start()
        reader, idle = await asyncio.open_connection("127.0.0.1", server.health_address.port)
        try:
            await asyncio.sleep(0.05)  # let the server accept the connection
            started = asyncio.get_running_loop().time()
            await server.stop()
            elapsed = asyncio.get_running_loop().time() - started
            return elapsed, await asyncio.wait_for(reader.read(), 1.0)
        finally:
            idle.close()
            await idle.wait_closed()

    # Left alone, the idle connection would hold the server for the 5-second read timeout.
    elapsed, received = await main()
    assert elapsed < 1.0
    assert received == b""
