"""The daemon's own life against kcpsim, in-process: probes while kcp is unreachable, then ready."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import httpx2
import yaml

from kcpsim.harness.world import start_world
from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import daemon_running


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _probe(port: int, path: str) -> tuple[int, str]:
    async with httpx2.AsyncClient(trust_env=False, timeout=5) as client:
        response = await client.get(f"http://127.0.0.1:{port}{path}")
    return response.status_code, response.text


async def test_while_kcp_is_unreachable_the_daemon_is_alive_but_not_ready_and_stops_cleanly(tmp_path: Path) -> None:
    world = start_world(tmp_path / "world")
    try:
        config = world.sim.kubeconfig_dict(f"http://127.0.0.1:{_closed_port()}/clusters/root:myorg")
        unreachable = tmp_path / "unreachable-kcp.kubeconfig"
        unreachable.write_text(yaml.safe_dump(config))
        async with daemon_running(world, tmp_path, kcp_kubeconfig=str(unreachable), wait_for_controllers=False) as h:
            probes = await eventually_async(lambda: h.daemon.probes, what="the probe server to listen")
            port = probes.health_address.port
            assert (await _probe(port, "/healthz"))[0] == 200, "an unreachable kcp must not fail liveness"
            status, body = await _probe(port, "/readyz")
            assert status == 503 and "[-]startup failed" in body, body
            await asyncio.sleep(0.2)
            assert h.daemon.controllers is None
    finally:
        world.stop()


async def test_a_started_daemon_is_ready_and_serves_its_metrics(tmp_path: Path) -> None:
    world = start_world(tmp_path / "world")
    try:
        async with daemon_running(world, tmp_path) as h:
            assert h.daemon.probes is not None
            port = h.daemon.probes.health_address.port
            await eventually_async(
                lambda: h.daemon.checks.run_readiness() and all(ok for _, ok, _ in h.daemon.checks.run_readiness()),
                what="readiness",
            )
            assert (await _probe(port, "/readyz"))[0] == 200
            status, metrics = await _probe(h.daemon.probes.metrics_address.port, "/metrics")
            assert status == 200
            for line in (
                "servlet_leader 1.0",
                'servlet_api_requests_total{code="200",target="org",verb="get"}',
                "servlet_build_info{version=",
            ):
                assert line in metrics, line
    finally:
        world.stop()
