"""Behind a corporate proxy, with a private CA: what the chart's example relies on.

The servlet's connections honour HTTP(S)_PROXY and NO_PROXY as kubectl does, and trust the CA
bundle of SSL_CERT_FILE for a server whose kubeconfig names no CA.

A forwarding HTTP proxy on loopback stands between the servlet and a kcp whose host name does not
resolve (as a corporate DNS would only resolve it at the proxy): the requests reach kcp through
the proxy, and fail when `NO_PROXY` names that host. The simulator serves plain HTTP here, so the
proxy forwards requests instead of tunnelling them; the routing decision is the same for both.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import httpx2
import pytest
from aiohttp import web
from lightkube import KubeConfig
from lightkube.resources.core_v1 import Namespace

from kcpsim import KcpSim
from servlet.adapters.connections import Connections

KCP_HOST = "kcp.corp.example"


@asynccontextmanager
async def _forwarding_proxy(upstream_port: int, seen: list[str]) -> AsyncIterator[str]:
    """An HTTP proxy that sends every request for KCP_HOST to the simulator; returns its URL."""
    session = aiohttp.ClientSession(auto_decompress=False)

    async def forward(request: web.Request) -> web.StreamResponse:
        seen.append(f"{request.method} {request.host}{request.path}")
        if request.url.host != KCP_HOST:
            return web.Response(status=502, text=f"this proxy knows no host {request.url.host}")
        target = f"http://127.0.0.1:{upstream_port}{request.path_qs}"
        headers = {
            key: value for key, value in request.headers.items() if key.lower() not in ("host", "proxy-connection")
        }
        async with session.request(request.method, target, headers=headers, data=await request.read()) as answer:
            response = web.StreamResponse(
                status=answer.status,
                headers={
                    key: value
                    for key, value in answer.headers.items()
                    if key.lower() not in ("content-length", "transfer-encoding", "connection")
                },
            )
            await response.prepare(request)
            async for chunk in answer.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", forward)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        await runner.cleanup()
        await session.close()


def _kcp_behind_the_proxy(sim: KcpSim) -> KubeConfig:
    return KubeConfig.from_dict(sim.kubeconfig_dict(f"http://{KCP_HOST}:{sim.port}/clusters/root:myorg"))


async def _namespaces_of_org(sim: KcpSim) -> list[str]:
    connections = Connections(service_config=sim.service_config(), kcp_config=_kcp_behind_the_proxy(sim))
    try:
        await connections.service.get(Namespace, name="default")  # loopback: never through the proxy
        return [ns.metadata.name async for ns in connections.org.list(Namespace) if ns.metadata and ns.metadata.name]
    finally:
        await connections.aclose()


@pytest.fixture
async def proxied(kcpsim: KcpSim, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[list[str]]:
    """HTTP_PROXY set to a forwarding proxy in front of kcpsim; yields the requests it forwarded."""
    seen: list[str] = []
    async with _forwarding_proxy(kcpsim.port, seen) as proxy:
        monkeypatch.setenv("HTTP_PROXY", proxy)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        yield seen


async def test_the_org_workspace_is_reached_through_the_proxy_and_loopback_directly(
    kcpsim: KcpSim, proxied: list[str]
) -> None:
    found = await _namespaces_of_org(kcpsim)

    assert "default" in found
    assert proxied and all(line.startswith(f"GET {KCP_HOST}/clusters/root:myorg/") for line in proxied), proxied


async def test_no_proxy_naming_the_host_sends_it_directly(
    kcpsim: KcpSim, proxied: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NO_PROXY", f"10.0.0.0/8,.svc,{KCP_HOST}")
    with pytest.raises(httpx2.ConnectError):
        await _namespaces_of_org(kcpsim)

    assert proxied == [], "a request went through the proxy although NO_PROXY names its host"


async def test_a_ca_bundle_in_ssl_cert_file_is_trusted_when_the_kubeconfig_names_no_ca(
    kcpsim_factory: Callable[..., KcpSim], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sim = kcpsim_factory(tls=True)
    config = sim.kubeconfig_dict(sim.workspace_url("root:myorg"))
    del config["clusters"][0]["cluster"]["certificate-authority-data"]
    bundle = tmp_path / "ca.crt"
    bundle.write_bytes(sim.tls.ca_pem)

    async def org_namespaces() -> list[str]:
        connections = Connections(service_config=sim.service_config(), kcp_config=KubeConfig.from_dict(config))
        try:
            return [
                ns.metadata.name async for ns in connections.org.list(Namespace) if ns.metadata and ns.metadata.name
            ]
        finally:
            await connections.aclose()

    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(httpx2.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        await org_namespaces()
    monkeypatch.setenv("SSL_CERT_FILE", str(bundle))
    assert "default" in await org_namespaces()
