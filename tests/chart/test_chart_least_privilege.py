"""Least privilege, proven: the servlet runs end to end against kcpsim (two replicas, primaries,
status, related Secrets and ConfigMaps both ways, a conflict, a bad PublishedResource, deletion,
a leader handing over), every request it makes to the service cluster is recorded, and

- the chart's rendered RBAC (for values listing the published CRDs) allows every one of them, and
- every rule the chart renders was needed by some request, except the few listed in
  `NOT_EXERCISED`, each with the reason the scenario cannot show it;

and `test_chart_rbac.py` proves that the rendered RBAC never exceeds the README's table.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import attrs
import pytest

from kcpsim import Topology
from kcpsim.harness.world import SERVLET_NAMESPACE
from tests.chart.rbac import Grant, allows, granted
from tests.chart.recording import KCP_PREFIXES, ApiRequest, as_api_request, start_recorded_world
from tests.chart.rendering import one, render, with_required
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    REMOTE_WIDGET,
    SECRET,
    WIDGET,
    ZERTIFIKAT,
    Resource,
    certificate_crd,
    certificates_with_platform_secret,
    default_local_name,
    example_local_name,
    published_resource,
    remote_object,
    secret,
    widget_crd,
    zertifikat,
)

TOKENS = ("replica-1", "replica-2")
# The chart passes --buckets with its default two replicas: the replicas share the workspaces.
BUCKETS = ("--buckets", "16")
CONFIGMAP = Resource("", "v1", "configmaps")
# The CRDs the scenario publishes, as the service owner lists them in the chart's values.
VALUES = with_required(
    publishedResources=[
        {"apiGroup": "cert-manager.io", "resources": ["certificates"], "relatedKinds": ["Secret"]},
        {"apiGroup": "example.com", "resources": ["widgets"], "relatedKinds": ["ConfigMap"]},
    ]
)
# Rendered grants no request in the scenario needed, and why they are still right.
NOT_EXERCISED: dict[Grant, str] = {
    Grant(
        group="coordination.k8s.io", resource="leases", verb="delete", namespace=SERVLET_NAMESPACE
    ): "deletes the membership Lease of a replica gone for ten Lease durations (150 s); the scenario's replicas "
    "are stopped cleanly or live (tests/unit/test_bucket_coordinator.py deletes one)",
    Grant(
        group="", resource="configmaps", verb="get", namespace=""
    ): "confirms that a service-origin ConfigMap is gone before its workspace copy is deleted; the scenario's "
    "ConfigMap comes from the workspace (the same read for Secrets is exercised)",
    Grant(
        group="", resource="events", verb="patch", namespace="default"
    ): "counts up an Event about a PublishedResource recorded again within ten minutes; in the scenario each "
    "condition changes once (tests/integration/test_events_recorder.py shows the repeat over HTTP)",
    **{
        Grant(group=group, resource=plural, verb="get", namespace=""): "reads a copy of another replica's share "
        "standing at a name this replica wants (with buckets, its informer leaves those out); the scenario runs "
        "one replica (tests/integration/e2e/test_bucket_replicas.py reads one)"
        for group, plural in (("cert-manager.io", "certificates"), ("example.com", "widgets"))
    },
}


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def widgets_with_platform_configmap() -> dict[str, Any]:
    """Widgets, each with the workspace ConfigMap named in its spec.note copied down."""
    return published_resource(
        "widgets",
        kind="Widget",
        related=[
            {
                "identifier": "settings",
                "origin": "platform",
                "kind": "ConfigMap",
                "reference": {"name": {"path": "spec.note"}},
            }
        ],
    )


def configmap(name: str, *, namespace: str, data: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": data}


def _leader_token(e2e: E2E) -> str:
    for process in e2e.processes:
        if process.alive() and process.metric("servlet_leader") == [1.0]:
            return process.options.token
    raise AssertionError("no replica leads")


def run_scenario(e2e: E2E) -> None:
    """Everything the servlet does on the service cluster in normal operation, once."""
    broken = published_resource("broken", kind="Widget", naming={"name": "$remoteNme"})
    e2e.publish(
        certificate_crd(), certificates_with_platform_secret(), widget_crd(), widgets_with_platform_configmap(), broken
    )
    first = e2e.servlet(token=TOKENS[0], extra=BUCKETS)
    e2e.eventually(lambda: first.metric("servlet_leader") == [1.0], what="the first replica to lead")
    e2e.servlet(token=TOKENS[1], extra=BUCKETS)
    e2e.wait_condition("broken", "Valid", "False")
    e2e.wait_served("team-a", ZERTIFIKAT)
    e2e.wait_served("team-a", REMOTE_WIDGET)
    cluster = e2e.world.cluster("team-a")

    # Primaries down, the workspace's CA Secret down, the service's TLS Secret and status up.
    e2e.create_remote("team-a", SECRET, secret("team-issuer-ca", namespace="default", data={"ca.crt": b64("ca")}))
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web", issuer="team-issuer"))
    certificate = example_local_name(namespace="default", name="web")
    e2e.wait_local(CERTIFICATE, namespace=cluster, name=certificate)
    e2e.wait_local(SECRET, namespace=cluster, name="team-issuer-ca")
    e2e.rest.merge_patch(
        e2e.remote_path("team-a", SECRET, namespace="default", name="team-issuer-ca"),
        {"data": {"ca.crt": b64("rotated ca")}},
    )
    e2e.eventually(
        lambda: (
            (e2e.local(SECRET, namespace=cluster, name="team-issuer-ca") or {}).get("data", {}).get("ca.crt")
            == b64("rotated ca")
        ),
        what="the rotated CA on the service cluster",
    )
    e2e.world.apply(
        secret(
            "web-tls", namespace=cluster, type_="kubernetes.io/tls", data={"tls.crt": b64("crt"), "tls.key": b64("key")}
        )
    )
    e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="web-tls"),
        what="the TLS Secret in the workspace",
    )
    # The service removes the TLS Secret: confirmed gone with a read, its workspace copy goes too.
    e2e.rest.delete(SECRET.path(namespace=cluster, name="web-tls"))
    e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="web-tls") is None,
        what="the TLS Secret's copy to leave the workspace",
    )
    e2e.world.apply(
        secret(
            "web-tls", namespace=cluster, type_="kubernetes.io/tls", data={"tls.crt": b64("crt"), "tls.key": b64("key")}
        )
    )
    e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="web-tls"),
        what="the renewed TLS Secret in the workspace",
    )
    e2e.rest.merge_patch(
        CERTIFICATE.path(namespace=cluster, name=certificate) + "/status",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
    )
    e2e.eventually(
        lambda: (
            (e2e.remote("team-a", ZERTIFIKAT, namespace="default", name="web") or {})
            .get("status", {})
            .get("conditions")
        ),
        what="the status in the workspace",
    )

    # A widget with its workspace ConfigMap; then a spec change travels down.
    e2e.rest.create(
        e2e.remote_path("team-a", CONFIGMAP, namespace="default"),
        configmap("blue", namespace="default", data={"color": "blue"}),
    )
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w1", namespace="default", size=1, note="blue"))
    widget = default_local_name(namespace="default", name="w1")
    e2e.wait_local(WIDGET, namespace=cluster, name=widget)
    e2e.wait_local(CONFIGMAP, namespace=cluster, name="blue")
    e2e.rest.merge_patch(
        e2e.remote_path("team-a", CONFIGMAP, namespace="default", name="blue"), {"data": {"color": "navy"}}
    )
    e2e.eventually(
        lambda: (e2e.local(CONFIGMAP, namespace=cluster, name="blue") or {}).get("data", {}).get("color") == "navy",
        what="the changed ConfigMap on the service cluster",
    )
    e2e.patch_remote("team-a", REMOTE_WIDGET, namespace="default", name="w1", patch={"spec": {"size": 2}})
    e2e.eventually(
        lambda: (e2e.local(WIDGET, namespace=cluster, name=widget) or {}).get("spec", {}).get("size") == 2,
        what="the changed spec on the local widget",
    )

    # Local objects in the way that are not the servlet's: known from the cache, a conflict, never written.
    taken_widget = default_local_name(namespace="default", name="taken")
    e2e.rest.create(
        WIDGET.path(namespace=cluster),
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": taken_widget, "namespace": cluster},
            "spec": {"size": 9},
        },
    )
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "taken", namespace="default", size=1))
    taken_certificate = example_local_name(namespace="default", name="taken")
    e2e.rest.create(
        CERTIFICATE.path(namespace=cluster),
        {
            "apiVersion": "cert-manager.io/v1",
            "kind": "Certificate",
            "metadata": {"name": taken_certificate, "namespace": cluster},
            "spec": {"secretName": "other-tls", "issuerRef": {"name": "other"}},
        },
    )
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("taken"))
    for name in (taken_widget, taken_certificate):
        e2e.eventually(
            lambda name=name: any(
                "conflict: not writing" in line and name in line
                for process in e2e.processes
                for line in process.log_text().splitlines()
            ),
            what=f"the servlet to report the object in the way at {name}",
        )

    # Deletion: local copies and the servlet's related copies go before the finalizer.
    e2e.rest.delete(e2e.remote_path("team-a", ZERTIFIKAT, namespace="default", name="web"))
    e2e.eventually(
        lambda: e2e.remote("team-a", ZERTIFIKAT, namespace="default", name="web") is None,
        what="the deleted Zertifikat to be gone from the workspace",
    )
    e2e.rest.delete(e2e.remote_path("team-a", REMOTE_WIDGET, namespace="default", name="w1"))
    e2e.eventually(
        lambda: e2e.remote("team-a", REMOTE_WIDGET, namespace="default", name="w1") is None,
        what="the deleted widget to be gone from the workspace",
    )

    # The leader stops (SIGTERM releases the Lease); the other replica takes over and works.
    leader = next(p for p in e2e.processes if p.options.token == _leader_token(e2e))
    assert leader.terminate(timeout=10) == 0
    e2e.eventually(lambda: _leader_token(e2e) != leader.options.token, what="the other replica to lead")
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w2", namespace="default", size=3))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w2"))


@attrs.frozen
class Recording:
    requests: frozenset[ApiRequest]
    non_resource_paths: frozenset[str]
    cluster: str  # logical cluster of team-a: the local namespace of its objects


@pytest.fixture(scope="module")
def recording(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Recording]:
    # The export claims ConfigMaps from the start, so the bindings accept the claim.
    topology = Topology(with_schema=False, claims=("namespaces", "secrets", "configmaps"))
    world, recorder = start_recorded_world(tmp_path_factory.mktemp("least-privilege"), topology=topology)
    e2e = E2E(world)
    try:
        run_scenario(e2e)
        yield Recording(
            requests=frozenset(recorder.api_requests(tokens=set(TOKENS))),
            non_resource_paths=frozenset(recorder.non_resource_paths(tokens=set(TOKENS))),
            cluster=world.cluster("team-a"),
        )
    finally:
        e2e.stop_all()
        world.stop()


def _rendered_grants() -> set[Grant]:
    documents = render(VALUES, namespace=SERVLET_NAMESPACE)
    account = one(documents, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
    return granted(documents, service_account=account, namespace=SERVLET_NAMESPACE)


def _needed(request: ApiRequest, grants: set[Grant]) -> Grant | None:
    """The grant that allows `request` (the narrower, namespaced one first)."""
    for namespace in ([request.namespace] if request.namespace else []) + [""]:
        grant = Grant(group=request.group, resource=request.resource, verb=request.verb, namespace=namespace)
        if grant in grants:
            return grant
    return None


def test_the_scenario_recorded_the_servlets_work(recording: Recording) -> None:
    # A recording that missed the servlet would make the next tests pass for nothing.
    for expected in [
        ApiRequest("watch", "services.kdp.k8c.io", "publishedresources", ""),
        ApiRequest("create", "cert-manager.io", "certificates", recording.cluster),
        ApiRequest("update", "coordination.k8s.io", "leases", SERVLET_NAMESPACE),
    ]:
        assert expected in recording.requests, f"not recorded: {expected.describe()}"


def test_the_rendered_rbac_allows_every_request_the_servlet_made(recording: Recording) -> None:
    grants = _rendered_grants()
    refused = sorted(
        r.describe()
        for r in recording.requests
        if not allows(grants, verb=r.verb, group=r.group, resource=r.resource, namespace=r.namespace)
    )
    assert refused == []


def test_every_rendered_grant_was_needed_or_is_explained(recording: Recording) -> None:
    grants = _rendered_grants()
    needed = {grant for request in recording.requests if (grant := _needed(request, grants)) is not None}
    unused = sorted(g.describe() for g in grants - needed - set(NOT_EXERCISED))
    assert unused == []
    explained_but_used = sorted(g.describe() for g in set(NOT_EXERCISED) & needed)
    assert explained_but_used == [], "the scenario uses these now: remove them from NOT_EXERCISED"


def test_outside_resources_the_servlet_only_reads_discovery(recording: Recording) -> None:
    # Discovery is open to every authenticated user (system:discovery); nothing else may appear.
    assert {p for p in recording.non_resource_paths if not p.startswith(("/api", "/apis", "/version"))} == set()


@pytest.mark.parametrize(
    ("method", "path", "query", "expected"),
    [
        (
            "GET",
            "/apis/services.kdp.k8c.io/v1alpha1/publishedresources",
            "watch=true&resourceVersion=5",
            ApiRequest("watch", "services.kdp.k8c.io", "publishedresources", ""),
        ),
        (
            "GET",
            "/apis/services.kdp.k8c.io/v1alpha1/publishedresources",
            "limit=500",
            ApiRequest("list", "services.kdp.k8c.io", "publishedresources", ""),
        ),
        (
            "PATCH",
            "/apis/services.kdp.k8c.io/v1alpha1/publishedresources/certs/status",
            "",
            ApiRequest("patch", "services.kdp.k8c.io", "publishedresources/status", ""),
        ),
        (
            "GET",
            "/apis/cert-manager.io/v1/certificates",
            "labelSelector=a%3Db",
            ApiRequest("list", "cert-manager.io", "certificates", ""),
        ),
        (
            "POST",
            "/apis/cert-manager.io/v1/namespaces/ws1/certificates",
            "",
            ApiRequest("create", "cert-manager.io", "certificates", "ws1"),
        ),
        (
            "DELETE",
            "/apis/cert-manager.io/v1/namespaces/ws1/certificates/web",
            "",
            ApiRequest("delete", "cert-manager.io", "certificates", "ws1"),
        ),
        ("DELETE", "/api/v1/namespaces/ws1/secrets", "", ApiRequest("deletecollection", "", "secrets", "ws1")),
        ("POST", "/api/v1/namespaces", "", ApiRequest("create", "", "namespaces", "")),
        ("GET", "/api/v1/namespaces/ws1", "", ApiRequest("get", "", "namespaces", "")),
        ("PUT", "/api/v1/namespaces/ws1/finalize", "", ApiRequest("update", "", "namespaces/finalize", "")),
        ("GET", "/api/v1/namespaces/ws1/configmaps/blue", "", ApiRequest("get", "", "configmaps", "ws1")),
        (
            "PUT",
            "/apis/coordination.k8s.io/v1/namespaces/kdp-system/leases/tom",
            "",
            ApiRequest("update", "coordination.k8s.io", "leases", "kdp-system"),
        ),
        ("GET", "/apis", "", None),
        ("GET", "/api/v1", "", None),
        ("GET", "/version", "", None),
    ],
)
def test_a_request_is_read_as_the_rbac_authorizer_reads_it(
    method: str, path: str, query: str, expected: ApiRequest | None
) -> None:
    assert as_api_request(method, path, query) == expected


def test_kcp_paths_are_not_taken_for_the_service_cluster() -> None:
    assert all(not p.startswith(KCP_PREFIXES) for p in ("/api/v1/secrets", "/apis/x.io/v1/ys"))
    assert "/clusters/root:myorg/api/v1/secrets".startswith(KCP_PREFIXES)
    assert "/services/apiexport/abc/certificates.example.corp/clusters/*/api/v1/secrets".startswith(KCP_PREFIXES)
