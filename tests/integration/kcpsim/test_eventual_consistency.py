"""With `controller_delay`, kcp's reactions take reconcile rounds, as in a real kcp (6.7)."""

from __future__ import annotations

from collections.abc import Callable

from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Namespace

from kcpsim import KcpSim
from kcpsim.waiting import eventually
from tests.integration.kcpsim.helpers import APIBinding, APIExport, EndpointSlice, Raw

DELAY = 0.15


def test_a_new_export_gets_identity_then_hash_then_slice_in_rounds(kcpsim_factory: Callable[..., KcpSim]) -> None:
    sim = kcpsim_factory(controller_delay=DELAY)
    with Raw(sim) as raw, sim.client(sim.kcp_config()) as org:
        org.create(APIExport({"metadata": {"name": "slow.example.corp"}, "spec": {}}))
        assert "identity" not in org.get(APIExport, "slow.example.corp")["spec"]
        eventually(lambda: "identity" in org.get(APIExport, "slow.example.corp")["spec"], what="the export's identity")
        assert "identityHash" not in (org.get(APIExport, "slow.example.corp").get("status") or {})
        eventually(
            lambda: (org.get(APIExport, "slow.example.corp").get("status") or {}).get("identityHash"),
            what="the export's identity hash",
        )
        slice_path = "/clusters/root:myorg/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/slow.example.corp"
        eventually(lambda: raw("GET", slice_path).status_code == 200, what="the endpoint slice")
        assert org.get(EndpointSlice, "slow.example.corp")


def test_a_binding_is_bound_and_its_resources_served_only_after_reconciles(
    kcpsim_factory: Callable[..., KcpSim],
) -> None:
    sim = kcpsim_factory(controller_delay=DELAY)
    sim.add_workspace("late", bind_export=False)
    with Raw(sim) as raw, sim.client(sim.workspace_config("late")) as late:
        late.create(
            APIBinding(
                {
                    "metadata": {"name": "certificates.example.corp"},
                    "spec": {"reference": {"export": {"path": "root:myorg", "name": "certificates.example.corp"}}},
                }
            )
        )
        assert (late.get(APIBinding, "certificates.example.corp").get("status") or {}).get("phase") != "Bound"
        path = "/clusters/root:myorg:late/apis/certificates.example.corp/v1alpha1/certificates"
        assert raw("GET", path).status_code == 404
        eventually(
            lambda: (late.get(APIBinding, "certificates.example.corp").get("status") or {}).get("phase") == "Bound",
            what="the binding to be Bound",
        )
        assert raw("GET", path).status_code == 200


def test_namespace_contents_go_away_after_a_round(kcpsim_factory: Callable[..., KcpSim]) -> None:
    sim = kcpsim_factory(controller_delay=DELAY)
    with sim.client(sim.service_config()) as service:
        service.create(Namespace(metadata=ObjectMeta(name="doomed")))
        service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="doomed")))
        service.delete(Namespace, "doomed")
        assert service.get(Namespace, "doomed").status.phase == "Terminating"
        eventually(
            lambda: "doomed" not in {n.metadata.name for n in service.list(Namespace)}, what="namespace doomed to go"
        )
