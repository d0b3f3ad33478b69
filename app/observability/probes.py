"""`/healthz`, `/readyz` and `/metrics` over HTTP, served by aiohttp's web server.

Liveness means "the process and its loops are alive", never "kcp is reachable": a kcp outage must
not make Kubernetes restart every replica. Readiness adds "caches synced and leadership known".
Both are registered checks, callables returning `(ok, reason)`; a failing response lists every
check with its reason, as the Kubernetes API server's own `/readyz` does.

aiohttp does the HTTP: parsing (malformed requests get 400), keep-alive, HEAD answered like GET
without a body, 405 with `Allow` for other methods, 404 for other paths, and a shutdown that drops
idle connections. It runs on the daemon's own event loop, so the checks read the daemon's state
without locks, as the work loops do.

Deliberately not here: what the checks test (the runtime registers them), TLS, authentication.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any

from aiohttp import web
from attrs import frozen

from servlet.app.observability.logs import get_logger
from servlet.app.observability.loop_lag import watch_loop_lag
from servlet.app.observability.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE, Metrics
from servlet.core.model import Problem

Check = Callable[[], tuple[bool, str]]

# Kubernetes controller conventions; the CLI may use other defaults.
DEFAULT_METRICS_ADDRESS = ":8080"
DEFAULT_HEALTH_ADDRESS = ":8081"

# How long stopping waits for a request already being answered; idle connections close at once.
# Answering a probe takes microseconds, and a pod being deleted has better things to wait for.
_SHUTDOWN_GRACE = 1.0
# Probe answers describe this instant: a cache between kubelet (or Prometheus) and us must not keep them.
_NO_STORE = {"Cache-Control": "no-store"}

_log = get_logger("probes")


class _ClientTroubleIsDebug(logging.Filter):
    """aiohttp reports a client that sends something other than HTTP (a port scanner, TLS to a
    plain port, a request with 200 headers) as an ERROR with a traceback. It answers 400 and the
    servlet is fine, so those lines are kept for debugging only."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)


# The logger aiohttp's HTTP protocol reports to (our handlers catch their own errors, see `_logged`).
_http_log = logging.getLogger("servlet.probes.http")
_http_log.addFilter(_ClientTroubleIsDebug())


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


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def _text(status: int, body: str) -> web.Response:
    return web.Response(status=status, text=body, content_type="text/plain", charset="utf-8", headers=_NO_STORE)


def _check_response(results: list[tuple[str, bool, str]], *, endpoint: str) -> web.Response:
    if all(ok for _, ok, _ in results):
        return _text(200, "ok\n")
    lines = [f"[+]{name} ok" if ok else f"[-]{name} failed: {reason}" for name, ok, reason in results]
    lines.append(f"{endpoint} check failed")
    return _text(503, "\n".join(lines) + "\n")


def _logged(path: str, answer: Callable[[], web.Response]) -> Handler:
    """A GET (and HEAD) handler; a failing endpoint answers 500 and says why in our own log."""

    async def handle(_request: web.Request) -> web.StreamResponse:
        try:
            return answer()
        except Exception as error:
            _log.warning("probe endpoint failed", path=path, error=f"{type(error).__name__}: {error}")
            return _text(500, "internal error\n")

    return handle


class ProbeServer:
    """Serves the probes on `health_address` and the metrics on `metrics_address` (one listener
    when both are the same fixed host:port), and samples the event loop's lag for the metrics."""

    def __init__(
        self,
        *,
        checks: HealthChecks,
        metrics: Metrics,
        health_address: Address,
        metrics_address: Address,
    ) -> None:
        self._checks = checks
        self._metrics = metrics
        self._health_address = health_address
        self._metrics_address = metrics_address
        self._runners: list[web.AppRunner] = []
        self._bound: dict[str, Address] = {}
        self._lag: asyncio.Task[None] | None = None

    @property
    def health_address(self) -> Address:
        """The bound address (the real port when 0 was asked for); valid after `start()`."""
        return self._bound["health"]

    @property
    def metrics_address(self) -> Address:
        return self._bound["metrics"]

    async def start(self) -> None:
        health = {
            "/healthz": lambda: _check_response(self._checks.run_liveness(), endpoint="healthz"),
            "/readyz": lambda: _check_response(self._checks.run_readiness(), endpoint="readyz"),
        }
        metrics = {"/metrics": self._metrics_response}
        try:
            # Two port-0 addresses ask for two free ports, so only a fixed port is shared.
            if self._health_address == self._metrics_address and self._health_address.port != 0:
                bound = await self._listen(self._health_address, {**health, **metrics})
                self._bound = {"health": bound, "metrics": bound}
            else:
                self._bound["health"] = await self._listen(self._health_address, health)
                self._bound["metrics"] = await self._listen(self._metrics_address, metrics)
        except BaseException:
            await self.stop()
            raise
        self._lag = asyncio.create_task(watch_loop_lag(self._metrics.observe_loop_lag), name="event loop lag")

    async def stop(self) -> None:
        """Stop listening and drop open connections (an idle client must not delay shutdown)."""
        lag, self._lag = self._lag, None
        if lag is not None:
            lag.cancel()
            await asyncio.gather(lag, return_exceptions=True)
        runners, self._runners = self._runners, []
        for runner in runners:
            await runner.cleanup()

    async def __aenter__(self) -> ProbeServer:
        await self.start()
        return self

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    def _metrics_response(self) -> web.Response:
        return web.Response(body=self._metrics.render(), headers={"Content-Type": METRICS_CONTENT_TYPE, **_NO_STORE})

    async def _listen(self, address: Address, routes: dict[str, Callable[[], web.Response]]) -> Address:
        app = web.Application()
        for path, answer in routes.items():
            app.router.add_get(path, _logged(path, answer))  # HEAD too
        # No access log: kubelet probes every few seconds, and those lines would drown the useful ones.
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=_SHUTDOWN_GRACE, logger=_http_log)
        await runner.setup()
        self._runners.append(runner)
        await web.TCPSite(runner, host=address.host or None, port=address.port).start()
        port = runner.addresses[0][1]
        return Address(host=address.host, port=int(port))
