"""Namespace safety end to end (issue 13, defect 5): a tenant who names a namespace of its
workspace `kube-system` (or after the servlet's own namespace) gets nothing written there on the
service cluster and nothing of it copied up.

Two layers, each against `servlet run` and kcpsim over HTTP: a PublishedResource whose namespace
the tenant chooses without opting in to shared namespaces is `Valid=False` and never served; one
that opts in is served, but every object aimed at a protected namespace is refused ("cannot
sync", no finalizer, no write) while its neighbours in ordinary namespaces are synced.
"""

from __future__ import annotations

import base64
from typing import Any

from kcpsim.harness.world import SERVLET_NAMESPACE
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    GADGET,
    LINK,
    REMOTE_WIDGET,
    SECRET,
    WIDGET,
    Resource,
    default_local_name,
    gadget_crd,
    published_resource,
    remote_object,
    secret,
    widget_crd,
)

CLUSTER_SECRET = "cluster-admin-token"
TOKEN = base64.b64encode(b"kube-system-token-5c0ffee").decode()
# The tenant names the Secret it wants copied up through its object (origin service).
SERVICE_SECRET = {
    "identifier": "creds",
    "origin": "service",
    "kind": "Secret",
    "reference": {"name": {"path": "spec.note"}},
}


def _linked_widgets(e2e: E2E, namespace: str) -> list[dict[str, Any]]:
    return [
        obj
        for obj in e2e.rest.list(WIDGET.path(namespace=namespace))
        if f"{LINK}/servlet" in (obj["metadata"].get("labels") or {})
    ]


def test_a_namespace_the_tenant_chooses_is_invalid_and_nothing_reaches_kube_system(e2e: E2E) -> None:
    e2e.world.ensure_namespace("kube-system")
    e2e.publish(secret(CLUSTER_SECRET, namespace="kube-system", data={"token": TOKEN}))
    e2e.publish(
        widget_crd(),
        published_resource(
            "widgets", kind="Widget", naming={"namespace": "$remoteNamespace"}, related=[SERVICE_SECRET]
        ),
        gadget_crd(),
        published_resource("gadgets", kind="Gadget"),
    )
    servlet = e2e.servlet()

    valid = e2e.wait_condition("widgets", "Valid", "False")
    assert "spec.naming.namespace: '$remoteNamespace'" in valid["message"], valid
    assert "allowSharedNamespaces" in valid["message"], valid
    # The tenant prepares its side: a namespace kube-system in its workspace.
    e2e.world.ensure_namespace("kube-system", workspace="team-a")
    # The servlet is at work (a good neighbour is synced), yet never serves the invalid resource.
    remote_gadget = Resource(REMOTE_WIDGET.group, "v1", "gadgets", namespaced=False)
    e2e.wait_served("team-a", remote_gadget)
    e2e.create_remote("team-a", remote_gadget, remote_object("Gadget", "fine", note=CLUSTER_SECRET))
    e2e.eventually(lambda: e2e.local_objects(GADGET), what="the good neighbour's Gadget to be synced")
    assert not e2e.rest.served(e2e.remote_path("team-a", REMOTE_WIDGET, namespace="kube-system"))

    def untouched() -> bool:
        assert _linked_widgets(e2e, "kube-system") == []
        assert e2e.remote("team-a", SECRET, namespace="kube-system", name=CLUSTER_SECRET) is None
        local_secrets = [s["metadata"]["name"] for s in e2e.rest.list(SECRET.path(namespace="kube-system"))]
        assert local_secrets == [CLUSTER_SECRET], local_secrets
        return True

    e2e.consistently(untouched, what="nothing written into kube-system and nothing copied up")
    assert TOKEN not in servlet.log_text()


def test_with_shared_namespaces_a_protected_namespace_is_refused_object_by_object(e2e: E2E) -> None:
    shared = published_resource(
        "widgets", kind="Widget", naming={"namespace": "$remoteNamespace", "allowSharedNamespaces": True}
    )
    e2e.publish(widget_crd(), shared)
    servlet = e2e.servlet()
    e2e.wait_served("team-a", REMOTE_WIDGET)
    refused = ("kube-system", SERVLET_NAMESPACE)
    for namespace in refused:
        e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "grab", namespace=namespace, size=1))
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "fine", namespace="team-ns", size=1))
    e2e.wait_local(WIDGET, namespace="team-ns", name=default_local_name(namespace="team-ns", name="fine"))

    def reported() -> bool:
        lines = [
            line
            for line in servlet.log_text().splitlines()
            if '"cannot sync"' in line and "spec.naming.namespace" in line
        ]
        assert all(any(f"'{namespace}'" in line for line in lines) for namespace in refused), lines
        return True

    e2e.eventually(reported, what="both objects aimed at protected namespaces to be logged as not syncable")
    for namespace in refused:
        assert _linked_widgets(e2e, namespace) == []
        assert not e2e.has_finalizer("team-a", REMOTE_WIDGET, namespace=namespace, name="grab")
