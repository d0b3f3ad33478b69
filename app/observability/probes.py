"""`/healthz`, `/readyz` and `/metrics` over a tiny asyncio HTTP/1.1 server.

Liveness means "the process and its loops are alive", never "kcp is reachable": a kcp outage must
not make Kubernetes restart every replica. Readiness adds "caches synced and leadership known".
Both are registered checks, callables returning `(ok, reason)`; a failing response lists every
check with its reason, as the Kubernetes API server's own `/readyz` does.

Three fixed GET endpoints do not justify a web framework: the server reads one request per
connection, answers with a Content-Length and closes. HEAD is answered like GET without a body
(HTTP requires it of every server); other methods get 405, other paths 404.

Deliberately not here: what the checks test (the runtime registers them), TLS, authentication.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import Any

from attrs import frozen

from servlet.app.observability.logs import get_logger
from servlet.app.observability.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from servlet.app.observability.metrics import Metrics
from servlet.core.model import Problem

Check = Callable[[], tuple[bool, str]]

# Kubernetes controller conventions; the CLI may use other defaults.
DEFAULT_METRICS_ADDRESS = ":8080"
DEFAULT_HEALTH_ADDRESS = ":8081"

_READ_TIMEOUT = 5.0
_MAX_HEADER_LINES = 100
_MAX_DISCARDED_BODY = 64 * 1024
_TEXT = "text/plain; charset=utf-8"
_REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed",
            500: "Internal Server Error", 503: "Service Unavailable"}

_log = get_logger("probes")


@frozen
class Address:
    """Where a listener binds. An empty host means every interface; port 0 picks a free port."""

    host: str
    port: int

    def __str__(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"


def parse_address(text: str, *, flag: str) -> Address | Problem:
    """`host:port`, `:port` or `[ipv6]:port`, as given to `--metrics-address` / `--health-address`."""
    host, separator, port_text = text.rpartition(":")
    if not separator:
        return Problem(field=flag, message=f'"{text}" is not an address of the form host:port (e.g. :8080)')
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        return Problem(field=flag, message=f'"{text}" is an IPv6 address without brackets; write [{host}]:{port_text}')
    if not port_text.isdigit() or not 0 <= int(port_text) <= 65535:
        return Problem(field=flag, message=f'"{text}" has no valid port (a number from 0 to 65535)')
    return Address(host=host, port=int(port_text))


def _run(check: Check) -> tuple[bool, str]:
    try:
        ok, reason = check()
    except Exception as error:  # a broken check must fail the probe, not the server
        return False, f"check raised {type(error).__name__}: {error}"
    return bool(ok), reason


class HealthChecks:
    """Named liveness and readiness checks. Readiness includes liveness: a dead loop is not ready."""

    def __init__(self) -> None:
        self._liveness: dict[str, Check] = {}
        self._readiness: dict[str, Check] = {}

    def add_liveness(self, name: str, check: Check) -> None:
        self._liveness[name] = check

    def add_readiness(self, name: str, check: Check) -> None:
        self._readiness[name] = check

    def remove(self, name: str) -> None:
        """Forget a check, e.g. of a sync worker that stopped with its PublishedResource."""
        self._liveness.pop(name, None)
        self._readiness.pop(name, None)

    def run_liveness(self) -> list[tuple[str, bool, str]]:
        return [(name, *_run(check)) for name, check in sorted(self._liveness.items())]

    def run_readiness(self) -> list[tuple[str, bool, str]]:
        checks = {**self._liveness, **self._readiness}
        return [(name, *_run(check)) for name, check in sorted(checks.items())]


def task_alive(task: asyncio.Task[Any]) -> Check:
    """A liveness check that fails once `task` has ended (a loop that should run forever)."""

    def check() -> tuple[bool, str]:
        if not task.done():
            return True, ""
        if task.cancelled():
            return False, f"task {task.get_name()} was cancelled"
        error = task.exception()
        return False, f"task {task.get_name()} ended" + (f": {type(error).__name__}: {error}" if error else "")

    return check


class Heartbeat:
    """A liveness check for a loop that calls `beat()` each round: fails after `max_silence` seconds
    without one (a loop stuck in a hung call is alive as a task but does no work)."""

    def __init__(self, *, max_silence: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._max_silence = max_silence
        self._clock = clock
        self._last = clock()

    def beat(self) -> None:
        self._last = self._clock()

    def check(self) -> tuple[bool, str]:
        silence = self._clock() - self._last
        if silence > self._max_silence:
            return False, f"no heartbeat for {silence:.0f}s (limit {self._max_silence:.0f}s)"
        return True, ""


@frozen
class _Response:
    status: int
    body: bytes
    content_type: str = _TEXT
    headers: tuple[tuple[str, str], ...] = ()


def _check_response(results: list[tuple[str, bool, str]], *, endpoint: str) -> _Response:
    if all(ok for _, ok, _ in results):
        return _Response(200, b"ok\n")
    lines = [f"[+]{name} ok" if ok else f"[-]{name} failed: {reason}" for name, ok, reason in results]
    lines.append(f"{endpoint} check failed")
    return _Response(503, ("\n".join(lines) + "\n").encode("utf-8"))


Route = Callable[[], _Response]


class ProbeServer:
    """Serves the probes on `health_address` and the metrics on `metrics_address` (one listener
    when both are the same fixed host:port)."""

    def __init__(
        self, *, checks: HealthChecks, metrics: Metrics, health_address: Address, metrics_address: Address,
    ) -> None:
        self._checks = checks
        self._metrics = metrics
        self._health_address = health_address
        self._metrics_address = metrics_address
        self._servers: list[asyncio.Server] = []
        self._connections: set[asyncio.Task[Any]] = set()
        self._bound: dict[str, Address] = {}

    @property
    def health_address(self) -> Address:
        """The bound address (the real port when 0 was asked for); valid after `start()`."""
        return self._bound["health"]

    @property
    def metrics_address(self) -> Address:
        return self._bound["metrics"]

    async def start(self) -> None:
        health: dict[str, Route] = {
            "/healthz": lambda: _check_response(self._checks.run_liveness(), endpoint="healthz"),
            "/readyz": lambda: _check_response(self._checks.run_readiness(), endpoint="readyz"),
        }
        metrics: dict[str, Route] = {
            "/metrics": lambda: _Response(200, self._metrics.render(), content_type=METRICS_CONTENT_TYPE),
        }
        # Two port-0 addresses ask for two free ports, so only a fixed port is shared.
        if self._health_address == self._metrics_address and self._health_address.port != 0:
            bound = await self._listen(self._health_address, {**health, **metrics})
            self._bound = {"health": bound, "metrics": bound}
            return
        try:
            self._bound["health"] = await self._listen(self._health_address, health)
            self._bound["metrics"] = await self._listen(self._metrics_address, metrics)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        """Stop listening and drop open connections (an idle client must not delay shutdown)."""
        servers, self._servers = self._servers, []
        for server in servers:
            server.close()
        connections = list(self._connections)
        for connection in connections:
            connection.cancel()
        await asyncio.gather(*connections, return_exceptions=True)
        for server in servers:
            await server.wait_closed()

    async def __aenter__(self) -> ProbeServer:
        await self.start()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    async def _listen(self, address: Address, routes: Mapping[str, Route]) -> Address:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None  # a connection callback always runs in its own task
            self._connections.add(task)
            try:
                await _serve_one(reader, writer, routes)
            finally:
                self._connections.discard(task)

        server = await asyncio.start_server(handle, host=address.host or None, port=address.port)
        self._servers.append(server)
        port = server.sockets[0].getsockname()[1]
        return Address(host=address.host, port=int(port))


async def _serve_one(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, routes: Mapping[str, Route],
) -> None:
    try:
        request = await asyncio.wait_for(_read_request(reader), _READ_TIMEOUT)
        if request is None:
            response = _Response(400, b"bad request\n")
            method = "GET"
        else:
            method, path = request
            response = _route(method, path, routes)
        writer.write(_encode(response, with_body=method != "HEAD"))
        await writer.drain()
    except (asyncio.TimeoutError, ConnectionError, asyncio.IncompleteReadError):
        pass  # the client went away or never finished its request: nobody to answer
    except Exception as error:
        _log.warning("probe request failed", error=f"{type(error).__name__}: {error}")
    finally:
        writer.close()
        with contextlib.suppress(ConnectionError):
            await writer.wait_closed()


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str] | None:
    """Method and path of one request, its headers and a small body read and dropped."""
    try:
        request_line = (await reader.readline()).decode("latin-1").strip()
        content_length = 0
        for _ in range(_MAX_HEADER_LINES):
            line = (await reader.readline()).decode("latin-1")
            if line in ("\r\n", "\n", ""):
                break
            name, _, value = line.partition(":")
            if name.strip().lower() == "content-length" and value.strip().isdigit():
                content_length = int(value.strip())
        else:
            return None
    except ValueError:  # a line longer than the reader's limit
        return None
    parts = request_line.split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        return None
    if 0 < content_length <= _MAX_DISCARDED_BODY:
        # Reading the body lets the client see our answer instead of a connection reset.
        await reader.readexactly(content_length)
    method, target = parts[0], parts[1]
    return method, target.split("?", 1)[0]


def _route(method: str, path: str, routes: Mapping[str, Route]) -> _Response:
    route = routes.get(path)
    if route is None:
        return _Response(404, b"not found\n")
    if method not in ("GET", "HEAD"):
        return _Response(405, b"method not allowed\n", headers=(("Allow", "GET, HEAD"),))
    try:
        return route()
    except Exception as error:
        _log.warning("probe endpoint failed", path=path, error=f"{type(error).__name__}: {error}")
        return _Response(500, b"internal error\n")


def _encode(response: _Response, *, with_body: bool) -> bytes:
    headers = [
        f"HTTP/1.1 {response.status} {_REASONS[response.status]}",
        f"Content-Type: {response.content_type}",
        f"Content-Length: {len(response.body)}",
        "Cache-Control: no-store",
        "Connection: close",
        *(f"{name}: {value}" for name, value in response.headers),
    ]
    head = ("\r\n".join(headers) + "\r\n\r\n").encode("latin-1")
    return head + response.body if with_body else head
