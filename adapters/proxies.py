"""Which proxy a request goes through: `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY`, as kubectl reads them.

httpx2 applies the environment's proxies only to a client that builds its own transport, and every
client of a target shares one transport (connections.py), so without this the servlet would ignore
a corporate proxy. The rules are those of Go's net/http, which kubectl and client-go use, because
operators write one `NO_PROXY` for all their Kubernetes tools:

- `https://` URLs go through `HTTPS_PROXY`, `http://` URLs through `HTTP_PROXY` (the upper-case
  name wins over the lower-case one); a proxy given without a scheme is `http://`;
- `localhost` and loopback addresses never go through a proxy;
- `NO_PROXY` is a comma-separated list of `*` (nothing is proxied), IP addresses, CIDR ranges
  (`10.0.0.0/8`), and domain names: `corp.example` matches that name and its subdomains,
  `.corp.example` and `*.corp.example` only the subdomains; an IP address or a name may carry a
  port (`kcp.corp.example:6443`), and then matches that port only.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import TypeAlias

import httpx2
from attrs import frozen

_DEFAULT_PORTS = {"http": 80, "https": 443}
IPAddress: TypeAlias = ipaddress.IPv4Address | ipaddress.IPv6Address


@frozen
class _Bypass:
    """One entry of NO_PROXY."""

    network: ipaddress.IPv4Network | ipaddress.IPv6Network | None = None
    domain: str = ""  # with a leading dot
    domain_itself: bool = False  # whether the name without subdomain matches too
    port: int | None = None

    def matches(self, host: str, address: IPAddress | None, port: int) -> bool:
        if self.port is not None and self.port != port:
            return False
        if self.network is not None:
            return address is not None and address in self.network
        return host.endswith(self.domain) or (self.domain_itself and host == self.domain[1:])


@frozen
class ProxySettings:
    http: str | None = None
    https: str | None = None
    everything_direct: bool = False
    bypasses: tuple[_Bypass, ...] = ()

    @classmethod
    def from_environment(cls, environ: Mapping[str, str]) -> ProxySettings:
        def value(name: str) -> str:
            return (environ.get(name) or environ.get(name.lower()) or "").strip()

        entries = [entry.strip().lower() for entry in value("NO_PROXY").split(",")]
        return cls(
            http=_proxy_url(value("HTTP_PROXY")),
            https=_proxy_url(value("HTTPS_PROXY")),
            everything_direct="*" in entries,
            bypasses=tuple(parsed for entry in entries if entry and (parsed := _bypass(entry))),
        )

    def proxy_for(self, url: httpx2.URL) -> str | None:
        """The proxy URL for a request to `url`, None to connect directly."""
        proxy = self.https if url.scheme == "https" else self.http if url.scheme == "http" else None
        if proxy is None or self.everything_direct:
            return None
        host = url.host.lower()
        address = _address(host)
        if host == "localhost" or (address is not None and address.is_loopback):
            return None
        port = url.port or _DEFAULT_PORTS.get(url.scheme, 0)
        return None if any(entry.matches(host, address, port) for entry in self.bypasses) else proxy


def _proxy_url(value: str) -> str | None:
    if not value:
        return None
    return value if "://" in value else f"http://{value}"


def _address(host: str) -> IPAddress | None:
    try:
        return ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return None


def _bypass(entry: str) -> _Bypass | None:
    """A NO_PROXY entry, or None for one that cannot be read (ignored, as Go ignores it)."""
    if "/" in entry:
        try:
            return _Bypass(network=ipaddress.ip_network(entry, strict=False))
        except ValueError:
            return None
    host, port = _split_port(entry)
    if not host:
        return None
    address = _address(host)
    if address is not None:
        return _Bypass(network=ipaddress.ip_network(address), port=port)
    if host.startswith("*."):
        host = host[1:]
    return _Bypass(
        domain=host if host.startswith(".") else f".{host}", domain_itself=not host.startswith("."), port=port
    )


def _split_port(entry: str) -> tuple[str, int | None]:
    """`host:port` or `[v6]:port` split; an entry without a port (a bare IPv6 address included) whole."""
    head, colon, tail = entry.rpartition(":")
    if not colon or not tail.isdigit() or (":" in head and not head.endswith("]")):
        return entry.strip("[]"), None
    return head.strip("[]"), int(tail)


class ProxyRouting(httpx2.AsyncBaseTransport):
    """A transport that sends each request directly or through its proxy, one pool per route."""

    def __init__(self, settings: ProxySettings, *, pool: Callable[[str | None], httpx2.AsyncBaseTransport]) -> None:
        self._settings = settings
        self._pool = pool
        self._pools: dict[str | None, httpx2.AsyncBaseTransport] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        proxy = self._settings.proxy_for(request.url)
        pool = self._pools.get(proxy)
        if pool is None:
            pool = self._pools[proxy] = self._pool(proxy)
        return await pool.handle_async_request(request)

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()
