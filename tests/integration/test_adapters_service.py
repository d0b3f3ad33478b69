"""The service-cluster adapter and the connections' plumbing, over HTTP against kcpsim.

Covers the port's reads and writes (CRDs, single objects, PublishedResource status), how
the connections load the service kubeconfig, count every request by target, verb and code, give
informers their sources, and close everything.
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from lightkube import Client, KubeConfig

from kcpsim import KcpSim
from servlet.adapters.connections import (
    KUBECONFIG_FLAG,
    ConfigurationError,
    Connections,
    Target,
    load_service_config,
)
from servlet.adapters.kube import resource_class, wrap
from servlet.adapters.org_workspace import OrgWorkspaceAdapter
from servlet.adapters.request_verbs import request_verb
from servlet.adapters.service_cluster import ServiceClusterAdapter
from servlet.app.runtime.informer import Informer
from servlet.core.errors import NotFound, Transient
from servlet.core.model import ResourceType
from servlet.core.ports import CRD_TYPE, PUBLISHED_RESOURCE_TYPE
from servlet.core.targets import NAMESPACE_TYPE, SECRET_TYPE

T = TypeVar("T")
REPO = Path(__file__).resolve().parents[2]
PR_CRD = REPO / "charts" / "servlet" / "crds" / "publishedresources.yaml"
CERT_CRD = REPO / "examples" / "certificates" / "crd-certificates.yaml"


class Calls:
    """A request observer that keeps what it was told."""

    def __init__(self) -> None:
        self.seen: list[tuple[Target, str, int | None]] = []

    def __call__(self, *, target: Target, verb: str, code: int | None) -> None:
        self.seen.append((target, verb, code))


def connect(sim: KcpSim, calls: Calls | None = None) -> Connections:
    return Connections(
        service_config=sim.service_config(), kcp_config=sim.kcp_config(), on_request=calls, trust_env=False
    )


async def with_service(sim: KcpSim, body: Callable[[ServiceClusterAdapter], Awaitable[T]]) -> T:
    connections = connect(sim)
    try:
        return await body(ServiceClusterAdapter(connections.service))
    finally:
        await connections.aclose()


def install(client: Client, path: Path) -> None:
    client.create(wrap(resource_class(CRD_TYPE), yaml.safe_load(path.read_text())))


@pytest.fixture
def service(kcpsim: KcpSim) -> Iterator[Client]:
    client = kcpsim.client(kcpsim.service_config())
    yield client
    client.close()


def published(name: str = "certificates") -> dict[str, Any]:
    return {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": name},
        "spec": {"resource": {"apiGroup": "cert-manager.io", "kind": "Certificate"}},
    }


# -- reads -------------------------------------------------------------------------------------


async def test_a_crd_is_read_by_name_and_a_missing_one_is_none(kcpsim: KcpSim, service: Client) -> None:
    install(service, CERT_CRD)

    async def body(adapter: ServiceClusterAdapter) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        return await adapter.get_crd("certificates.cert-manager.io"), await adapter.get_crd("nope.example.com")

    crd, missing = await with_service(kcpsim, body)
    assert crd is not None and crd["spec"]["names"]["kind"] == "Certificate"
    assert missing is None


@pytest.mark.parametrize(("namespace", "name", "found"), [("", "default", True), ("", "absent", False)])
async def test_one_object_is_read_by_type_namespace_and_name(
    kcpsim: KcpSim, namespace: str, name: str, found: bool
) -> None:
    async def body(adapter: ServiceClusterAdapter) -> dict[str, Any] | None:
        return await adapter.get(NAMESPACE_TYPE, namespace=namespace, name=name)

    obj = await with_service(kcpsim, body)
    assert (obj is not None) is found
    if obj is not None:
        assert obj["metadata"]["name"] == name


async def test_a_namespaced_custom_resource_is_read_in_its_namespace(kcpsim: KcpSim, service: Client) -> None:
    install(service, CERT_CRD)
    certs = ResourceType(
        group="cert-manager.io", version="v1", kind="Certificate", plural="certificates", namespaced=True
    )
    service.create(
        wrap(
            resource_class(certs),
            {
                "apiVersion": "cert-manager.io/v1",
                "kind": "Certificate",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"secretName": "web-tls", "issuerRef": {"name": "ca"}},
            },
        )
    )

    async def body(adapter: ServiceClusterAdapter) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
        return (
            await adapter.get(certs, namespace="default", name="web"),
            await adapter.get(certs, namespace="kube-system", name="web"),
        )

    here, elsewhere = await with_service(kcpsim, body)
    assert here is not None and here["spec"]["secretName"] == "web-tls"
    assert elsewhere is None


# -- writes ------------------------------------------------------------------------------------


async def test_the_published_resource_status_is_merge_patched_through_the_status_subresource(
    kcpsim: KcpSim, service: Client
) -> None:
    install(service, PR_CRD)
    service.create(wrap(resource_class(PUBLISHED_RESOURCE_TYPE), published()))
    condition = {
        "type": "Valid",
        "status": "True",
        "reason": "Valid",
        "message": "ok",
        "observedGeneration": 1,
        "lastTransitionTime": "2026-01-01T00:00:00Z",
    }

    async def body(adapter: ServiceClusterAdapter) -> dict[str, Any]:
        kcpsim.requests.clear()
        await adapter.write_published_status("certificates", {"resourceSchemaName": "v1.a.b", "conditions": []})
        return await adapter.write_published_status("certificates", {"conditions": [condition]})

    returned = await with_service(kcpsim, body)
    sent = [(r.method, r.path.rsplit("/", 1)[-1]) for r in kcpsim.requests.records()]
    stored = service.get(resource_class(PUBLISHED_RESOURCE_TYPE), "certificates")
    assert stored["status"] == {"resourceSchemaName": "v1.a.b", "conditions": [condition]}
    assert returned["status"] == stored["status"]
    assert stored["spec"] == published()["spec"]
    assert sent == [("PATCH", "status")] * 2


async def test_status_of_a_missing_published_resource_is_not_found(kcpsim: KcpSim, service: Client) -> None:
    install(service, PR_CRD)

    async def body(adapter: ServiceClusterAdapter) -> dict[str, Any]:
        return await adapter.write_published_status("absent", {"conditions": []})

    with pytest.raises(NotFound):
        await with_service(kcpsim, body)


# -- connections: kubeconfig, counting, sources, closing -----------------------------------------


def test_the_service_kubeconfig_comes_from_the_flag_then_kubeconfig_env(
    kcpsim: KcpSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    flag = tmp_path / "flag.kubeconfig"
    env = tmp_path / "env.kubeconfig"
    flag.write_text(yaml.safe_dump(kcpsim.kubeconfig_dict("http://flag.example.test")))
    env.write_text(yaml.safe_dump(kcpsim.kubeconfig_dict("http://env.example.test")))
    monkeypatch.setenv("KUBECONFIG", f"{env}:{tmp_path / 'second'}")
    assert load_service_config(str(flag)).cluster.server == "http://flag.example.test"
    assert load_service_config(None).cluster.server == "http://env.example.test"


def test_without_flag_or_kubeconfig_env_the_home_kubeconfig_is_used(
    kcpsim: KcpSim, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / ".kube").mkdir()
    (tmp_path / ".kube" / "config").write_text(yaml.safe_dump(kcpsim.kubeconfig_dict("http://home.example.test")))
    assert load_service_config(None).cluster.server == "http://home.example.test"


def test_a_context_is_chosen_by_name_and_a_missing_one_lists_the_others(kcpsim: KcpSim, tmp_path: Path) -> None:
    config = kcpsim.kubeconfig_dict("http://current.example.test")
    other = copy.deepcopy(config)
    other["clusters"][0].update(name="other", cluster={"server": "http://other.example.test"})
    other["contexts"][0].update(name="other", context={**config["contexts"][0]["context"], "cluster": "other"})
    config["clusters"] += other["clusters"]
    config["contexts"] += other["contexts"]
    path = tmp_path / "two.kubeconfig"
    path.write_text(yaml.safe_dump(config))

    assert load_service_config(str(path)).cluster.server == "http://current.example.test"
    assert load_service_config(str(path), context="other").cluster.server == "http://other.example.test"
    with pytest.raises(ConfigurationError) as raised:
        load_service_config(str(path), context="absent")
    assert str(raised.value) == (
        f"--context: {path} has no context 'absent' (it has: {config['contexts'][0]['name']}, other)"
    )


def test_without_flag_kubeconfig_or_service_account_the_error_names_the_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(ConfigurationError) as raised:
        load_service_config(None)
    assert KUBECONFIG_FLAG in str(raised.value) and "service account" in str(raised.value)
    with pytest.raises(ConfigurationError) as raised:
        load_service_config(None, context="kind")
    assert str(raised.value).startswith("--context: 'kind' cannot be chosen: no kubeconfig was found")


async def test_every_request_is_counted_by_target_verb_and_code(kcpsim: KcpSim) -> None:
    calls = Calls()

    connections = connect(kcpsim, calls)
    try:
        connections.set_virtual_workspace_url(kcpsim.vw_url())
        await ServiceClusterAdapter(connections.service).get(NAMESPACE_TYPE, namespace="", name="default")
        await ServiceClusterAdapter(connections.service).get(NAMESPACE_TYPE, namespace="", name="absent")
        await OrgWorkspaceAdapter(connections.org).get_export("certificates.example.corp")
        source = connections.virtual_workspace_sources(NAMESPACE_TYPE)[0]
        (await source.collection.http.get(source.collection.path)).raise_for_status()
    finally:
        await connections.aclose()

    assert calls.seen == [
        (Target.SERVICE, "get", 200),
        (Target.SERVICE, "get", 404),
        (Target.ORG, "get", 200),
        (Target.VIRTUAL_WORKSPACE, "list", 200),
    ]


async def test_a_request_without_a_response_is_counted_with_no_code(kcpsim: KcpSim) -> None:
    calls = Calls()

    connections = connect(kcpsim, calls)
    try:
        kcpsim.refuse_connections(2.0)
        with pytest.raises(Transient):
            await ServiceClusterAdapter(connections.service).get(NAMESPACE_TYPE, namespace="", name="default")
    finally:
        await connections.aclose()

    assert calls.seen == [(Target.SERVICE, "get", None)]


@pytest.mark.parametrize(
    ("method", "path", "query", "verb"),
    [
        ("GET", "/api/v1/namespaces", "", "list"),
        ("GET", "/api/v1/namespaces/default", "", "get"),
        ("GET", "/api/v1/namespaces/default/secrets", "", "list"),
        ("GET", "/api/v1/namespaces/default/secrets/x", "", "get"),
        ("GET", "/api/v1/secrets", "watch=true&resourceVersion=1", "watch"),
        ("GET", "/clusters/root:myorg/apis/apis.kcp.io/v1alpha1/apiexports/e", "", "get"),
        ("GET", "/services/apiexport/abc/e/clusters/*/apis/g.example/v1/widgets", "", "list"),
        ("PATCH", "/services/apiexport/abc/e/clusters/lc/apis/g.example/v1/namespaces/n/widgets/w/status", "", "patch"),
        ("POST", "/api/v1/namespaces", "", "create"),
        ("POST", "/api/v1/namespaces/default/events", "", "create"),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/n/leases/l", "", "update"),
        ("DELETE", "/apis/g.example/v1/namespaces/n/widgets/w", "", "delete"),
        ("DELETE", "/apis/g.example/v1/namespaces/n/widgets", "", "deletecollection"),
        ("GET", "/services/apiexport/abc/api/clusters/lc/api/v1/namespaces/n/secrets/s", "", "get"),
        ("GET", "/apis/cluster.x-k8s.io/v1beta1/namespaces/n/clusters/c", "", "get"),
        ("GET", "/apis/cluster.x-k8s.io/v1beta1/clusters", "", "list"),
        ("GET", "/kcp/clusters/root:org/apis/apis.kcp.io/v1alpha1/apiexports", "", "list"),
        ("GET", "/apis", "", "discovery"),
        ("GET", "/api/v1", "", "discovery"),
        ("GET", "/clusters/*/apis/g.example/v1", "", "discovery"),
    ],
)
def test_the_counted_verb_is_the_kubernetes_verb(method: str, path: str, query: str, verb: str) -> None:
    assert request_verb(method, path, query) == verb


async def test_informer_sources_list_and_watch_each_target(kcpsim: KcpSim) -> None:
    async def main() -> tuple[set[str], set[str], set[tuple[str, str]]]:
        connections = connect(kcpsim)
        connections.set_virtual_workspace_url(kcpsim.vw_url())
        sources = [
            connections.service_source(NAMESPACE_TYPE),
            connections.org_source(NAMESPACE_TYPE),
            connections.virtual_workspace_sources(NAMESPACE_TYPE)[0],
        ]
        informers = [Informer(source) for source in sources]
        tasks = [asyncio.create_task(informer.run()) for informer in informers]
        try:
            for informer in informers:
                await informer.wait_synced()
            service, org, vw = (informer.keys() for informer in informers)
            return ({key.name for key in service}, {key.name for key in org}, {(key.cluster, key.name) for key in vw})
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await connections.aclose()

    service, org, vw = await main()
    assert {"default", "kube-system"} <= service
    assert "kcp-system" in org and "kube-system" not in org
    assert {("k7v2m9x4q1w8z3r5", "default"), ("p4n8c2l6t0y9h1j3", "default")} <= vw


async def test_sources_are_named_by_target_and_resource(kcpsim: KcpSim) -> None:
    async def main() -> list[tuple[str, str]]:
        connections = connect(kcpsim)
        try:
            connections.set_virtual_workspace_url(kcpsim.vw_url())
            sources = [
                connections.service_source(CRD_TYPE),
                connections.org_source(NAMESPACE_TYPE),
                connections.virtual_workspace_sources(NAMESPACE_TYPE)[0],
            ]
            return [(source.name, source.collection.location) for source in sources]
        finally:
            await connections.aclose()

    assert await main() == [
        (
            "service/customresourcedefinitions.apiextensions.k8s.io",
            f"{kcpsim.base_url}/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        ),
        ("org/namespaces", f"{kcpsim.base_url}/clusters/root:myorg/api/v1/namespaces"),
        ("vw/namespaces", f"{kcpsim.vw_url()}/clusters/*/api/v1/namespaces"),
    ]


async def test_aclose_closes_every_client_and_pool(kcpsim: KcpSim) -> None:
    connections = connect(kcpsim)
    connections.set_virtual_workspace_url(kcpsim.vw_url())
    https = [
        connections.service_source(NAMESPACE_TYPE).collection.http,
        connections.org_source(NAMESPACE_TYPE).collection.http,
        connections.virtual_workspace_sources(NAMESPACE_TYPE)[0].collection.http,
    ]
    await ServiceClusterAdapter(connections.service).get(NAMESPACE_TYPE, namespace="", name="default")
    await connections.aclose()
    result = [http.is_closed for http in https]

    assert result == [True, True, True]


async def test_objects_are_listed_by_labels_across_namespaces_or_in_one(kcpsim: KcpSim, service: Client) -> None:
    for namespace, name, labels in [
        ("default", "a", {"app": "x", "tier": "1"}),
        ("kube-system", "b", {"app": "x"}),
        ("default", "c", {"app": "y"}),
    ]:
        service.create(
            wrap(
                resource_class(SECRET_TYPE),
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": name, "namespace": namespace, "labels": labels},
                },
            )
        )

    async def body(adapter: ServiceClusterAdapter) -> list[list[tuple[str, str, str]]]:
        found = [
            await adapter.list_objects(SECRET_TYPE, labels={"app": "x"}),
            await adapter.list_objects(SECRET_TYPE, namespace="default", labels={"app": "x"}),
            await adapter.list_objects(NAMESPACE_TYPE, labels={"absent": "label"}),
        ]
        return [sorted((o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs) for objs in found]

    assert await with_service(kcpsim, body) == [
        [("Secret", "default", "a"), ("Secret", "kube-system", "b")],
        [("Secret", "default", "a")],
        [],
    ]


async def test_tls_uses_the_kubeconfig_ca_for_every_target_and_refuses_an_unknown_server(
    kcpsim_factory: Callable[..., KcpSim],
) -> None:
    sim = kcpsim_factory(tls=True)
    untrusting = sim.kubeconfig_dict(sim.base_url)
    del untrusting["clusters"][0]["cluster"]["certificate-authority-data"]

    async def main() -> tuple[bool, bool, bool, int]:
        connections = Connections(service_config=sim.service_config(), kcp_config=sim.kcp_config(), trust_env=False)
        connections.set_virtual_workspace_url(sim.vw_url())
        stranger = Connections(
            service_config=KubeConfig.from_dict(untrusting), kcp_config=sim.kcp_config(), trust_env=False
        )
        try:
            service = await ServiceClusterAdapter(connections.service).get(NAMESPACE_TYPE, namespace="", name="default")
            org = await OrgWorkspaceAdapter(connections.org).resolve_identity()
            source = connections.virtual_workspace_sources(NAMESPACE_TYPE)[0]
            vw = (await source.collection.http.get(source.collection.path)).status_code
            with pytest.raises(Transient) as raised:
                await ServiceClusterAdapter(stranger.service).get(NAMESPACE_TYPE, namespace="", name="default")
            assert "certificate" in raised.value.message.lower()
            return service is not None, org.name == "abc123xyz", vw == 200, raised.value.code
        finally:
            await connections.aclose()
            await stranger.aclose()

    assert await main() == (True, True, True, 0)
