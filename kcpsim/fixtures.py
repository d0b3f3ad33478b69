"""pytest fixtures: an in-process kcpsim on a free port, and a factory for custom ones.

`kcpsim` gives a running simulator seeded with the default topology (org `root:myorg`, export
`certificates.example.corp`, workspaces team-a and team-b) and a clean request log and fault
plan; `kcpsim_factory(**SimConfig fields)` starts others (TLS, small watch history, another
topology). Every simulator is stopped at the end of the test.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kcpsim.sim import KcpSim, SimConfig


@pytest.fixture
def kcpsim_factory() -> Iterator[Callable[..., KcpSim]]:
    started: list[KcpSim] = []

    def make(**config: Any) -> KcpSim:
        sim = KcpSim(SimConfig(**config)).start()
        started.append(sim)
        return sim

    yield make
    for sim in started:
        sim.stop()


@pytest.fixture
def kcpsim(kcpsim_factory: Callable[..., KcpSim]) -> KcpSim:
    return kcpsim_factory()
