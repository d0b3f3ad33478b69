"""Optional TLS: a generated CA in the kubeconfig makes clients verify the server."""

from __future__ import annotations

from collections.abc import Callable

import httpx2
import pytest
from lightkube import Client
from lightkube.config.kubeconfig import KubeConfig
from lightkube.config.models import Cluster, User
from lightkube.resources.core_v1 import Namespace

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import LogicalCluster


def test_tls_clients_trust_the_generated_ca(kcpsim_factory: Callable[..., KcpSim]) -> None:
    sim: KcpSim = kcpsim_factory(tls=True)
    assert sim.base_url.startswith("https://")
    with sim.client(sim.kcp_config()) as org:
        assert org.get(LogicalCluster, "cluster").metadata.annotations["kcp.io/cluster"] == "abc123xyz"


def test_without_the_ca_the_server_is_not_trusted(kcpsim_factory: Callable[..., KcpSim]) -> None:
    sim: KcpSim = kcpsim_factory(tls=True)
    config = KubeConfig.from_one(cluster=Cluster(server=sim.base_url), user=User(token="kcpsim"))
    with Client(config, trust_env=False) as client, pytest.raises(httpx2.ConnectError):
        list(client.list(Namespace))
