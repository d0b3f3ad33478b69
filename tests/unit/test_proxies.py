"""The proxy each request of the servlet goes through, by the environment kubectl reads."""

from __future__ import annotations

import httpx2
import pytest

from servlet.adapters.proxies import ProxySettings

PROXY = "http://proxy.corp.example:3128"


def _route(url: str, **environ: str) -> str | None:
    return ProxySettings.from_environment(environ).proxy_for(httpx2.URL(url))


def test_https_and_http_urls_take_their_own_proxy() -> None:
    environ = {"HTTPS_PROXY": PROXY, "HTTP_PROXY": "http://plain.corp.example:80"}
    assert _route("https://kcp.example:6443/clusters/root", **environ) == PROXY
    assert _route("http://kcp.example/clusters/root", **environ) == "http://plain.corp.example:80"
    assert _route("https://kcp.example", HTTP_PROXY=PROXY) is None, "HTTP_PROXY is not used for https"


def test_the_upper_case_name_wins_and_a_proxy_without_scheme_is_http() -> None:
    assert _route("https://kcp.example", HTTPS_PROXY=PROXY, https_proxy="http://other:1") == PROXY
    assert _route("https://kcp.example", https_proxy="proxy.corp.example:3128") == PROXY


@pytest.mark.parametrize(
    "url", ["https://localhost:6443", "https://127.0.0.1:6443", "https://127.8.0.1", "https://[::1]:6443"]
)
def test_loopback_is_never_proxied(url: str) -> None:
    assert _route(url, HTTPS_PROXY=PROXY) is None


@pytest.mark.parametrize(
    ("no_proxy", "url", "direct"),
    [
        ("*", "https://kcp.example", True),
        ("kcp.example", "https://kcp.example", True),
        ("kcp.example", "https://shard-1.kcp.example", True),
        ("kcp.example", "https://notkcp.example", False),
        (".kcp.example", "https://kcp.example", False),
        (".kcp.example", "https://shard-1.kcp.example", True),
        ("*.kcp.example", "https://kcp.example", False),
        ("*.kcp.example", "https://shard-1.kcp.example", True),
        ("KCP.Example", "https://kcp.example", True),
        ("kcp.example:6443", "https://kcp.example:6443", True),
        ("kcp.example:6443", "https://kcp.example:443", False),
        ("kcp.example:443", "https://kcp.example", True),
        ("10.0.0.0/8", "https://10.96.0.1:443", True),
        ("10.0.0.0/8", "https://192.168.0.1", False),
        ("10.96.0.1", "https://10.96.0.1", True),
        ("10.96.0.1:443", "https://10.96.0.1:6443", False),
        ("fd00::/8", "https://[fd00::1]:6443", True),
        ("[fd00::1]:6443", "https://[fd00::1]:6443", True),
        (" , other.example , .svc", "https://kubernetes.default.svc", True),
        ("not a cidr/x, kcp.example", "https://kcp.example", True),
    ],
)
def test_no_proxy_entries_follow_kubectls_rules(no_proxy: str, url: str, direct: bool) -> None:
    assert (_route(url, HTTPS_PROXY=PROXY, NO_PROXY=no_proxy) is None) == direct


def test_without_a_proxy_everything_is_direct() -> None:
    assert _route("https://kcp.example", NO_PROXY="other.example") is None
