"""Fixtures of the kcpsim contract suite: raw HTTP and lightkube clients bound to a simulator."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from lightkube import Client

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import Raw


@pytest.fixture
def raw(kcpsim: KcpSim) -> Iterator[Raw]:
    client = Raw(kcpsim)
    yield client
    client.close()


@pytest.fixture
def service(kcpsim: KcpSim) -> Iterator[Client]:
    client = kcpsim.client(kcpsim.service_config())
    yield client
    client.close()


@pytest.fixture
def org(kcpsim: KcpSim) -> Iterator[Client]:
    client = kcpsim.client(kcpsim.kcp_config())
    yield client
    client.close()


@pytest.fixture
def team_a(kcpsim: KcpSim) -> Iterator[Client]:
    client = kcpsim.client(kcpsim.workspace_config("team-a"))
    yield client
    client.close()


@pytest.fixture
def team_b(kcpsim: KcpSim) -> Iterator[Client]:
    client = kcpsim.client(kcpsim.workspace_config("team-b"))
    yield client
    client.close()


@pytest.fixture
def vw(kcpsim: KcpSim) -> Iterator[Client]:
    client = kcpsim.client(kcpsim.vw_config("*"))
    yield client
    client.close()


@pytest.fixture
def raw_for() -> Iterator[Callable[..., Raw]]:
    """Raw HTTP clients for other simulators (from kcpsim_factory), closed after the test;
    `token=` another caller's token than the admin's ("" none)."""
    made: list[Raw] = []

    def make(sim: KcpSim, *, token: str | None = None) -> Raw:
        made.append(Raw(sim, token=token))
        return made[-1]

    yield make
    for client in made:
        client.close()
