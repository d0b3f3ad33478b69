"""Primaries: users' objects become local copies, edits flow down, status flows up (SPEC 5, 6, 7)."""

from __future__ import annotations

from typing import Any

from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    FINALIZER,
    GADGET,
    GROUP,
    LINK,
    REMOTE_WIDGET,
    WIDGET,
    ZERTIFIKAT,
    Resource,
    certificate_crd,
    default_local_name,
    example_local_name,
    example_published_resource,
    gadget_crd,
    link_labels,
    published_resource,
    remote_object,
    sha1,
    widget_crd,
    zertifikat,
)

REMOTE_GADGET = Resource(GROUP, "v1", "gadgets")
CLUSTER_WIDGET = Resource(GROUP, "v1", "clusterwidgets", namespaced=False)


def _start_with_certificates_and_widgets(e2e: E2E) -> None:
    e2e.publish(
        certificate_crd(), widget_crd(), example_published_resource(), published_resource("widgets", kind="Widget")
    )
    e2e.servlet()
    for workspace in ("team-a", "team-b"):
        e2e.wait_served(workspace, ZERTIFIKAT)
        e2e.wait_served(workspace, REMOTE_WIDGET)


def _assert_linked(local: dict[str, Any], *, cluster: str, namespace: str, name: str, remote: dict[str, Any]) -> None:
    labels = local["metadata"].get("labels") or {}
    annotations = local["metadata"].get("annotations") or {}
    expected = link_labels(cluster=cluster, namespace=namespace, name=name)
    assert {k: labels.get(k) for k in expected} == expected
    assert annotations.get(f"{LINK}/remote-object-name") == name
    if namespace:
        assert annotations.get(f"{LINK}/remote-object-namespace") == namespace
    assert f"{LINK}/last-known-state" in annotations
    assert "kcp.io/cluster" not in annotations, "kcp's own annotation must not be copied"
    for key, value in (remote["metadata"].get("labels") or {}).items():
        assert labels.get(key) == value, f"remote label {key} was not copied"
    assert local["spec"] == remote["spec"]


def test_objects_in_two_workspaces_appear_locally_under_the_naming_rules(e2e: E2E) -> None:
    _start_with_certificates_and_widgets(e2e)
    # The same namespace and name in both workspaces: the local names must still differ.
    for workspace in ("team-a", "team-b"):
        e2e.create_remote(workspace, ZERTIFIKAT, zertifikat("web", namespace="prod", labels={"app": "web"}))
        e2e.create_remote(workspace, REMOTE_WIDGET, remote_object("Widget", "web", namespace="prod", size=3))

    for workspace in ("team-a", "team-b"):
        cluster = e2e.world.cluster(workspace)
        # The example's custom pattern: namespace $remoteClusterName, name cert-<ns hash>-<name hash>.
        local_cert = e2e.wait_local(
            CERTIFICATE, namespace=cluster, name=example_local_name(namespace="prod", name="web")
        )
        remote_cert = e2e.wait_finalizer(workspace, ZERTIFIKAT, namespace="prod", name="web")
        _assert_linked(local_cert, cluster=cluster, namespace="prod", name="web", remote=remote_cert)

        # Defaults for namespaced -> namespaced: namespace $remoteClusterName, name <ns hash>-<name hash>.
        local_widget = e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="prod", name="web"))
        remote_widget = e2e.wait_finalizer(workspace, REMOTE_WIDGET, namespace="prod", name="web")
        _assert_linked(local_widget, cluster=cluster, namespace="prod", name="web", remote=remote_widget)
        assert remote_widget["metadata"]["finalizers"].count(FINALIZER) == 1

    assert len(e2e.local_objects(CERTIFICATE)) == 2
    assert len(e2e.local_objects(WIDGET)) == 2


def test_status_flows_up_only_for_a_crd_with_a_status_subresource(e2e: E2E) -> None:
    _start_with_certificates_and_widgets(e2e)
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web"))
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "blue", namespace="default", size=1))
    cert_name = example_local_name(namespace="default", name="web")
    widget_name = default_local_name(namespace="default", name="blue")
    e2e.wait_local(CERTIFICATE, namespace=cluster, name=cert_name)
    e2e.wait_local(WIDGET, namespace=cluster, name=widget_name)

    # cert-manager reports on the local copy through /status; the user sees it in the workspace.
    status = {
        "conditions": [
            {
                "type": "Ready",
                "status": "True",
                "reason": "Issued",
                "message": "Certificate is up to date and has not expired",
            }
        ],
        "revision": 1,
    }
    e2e.rest.merge_patch(CERTIFICATE.path(namespace=cluster, name=cert_name) + "/status", {"status": status})

    def remote_status() -> bool:
        remote = e2e.remote("team-a", ZERTIFIKAT, namespace="default", name="web") or {}
        assert remote.get("status") == status, f"remote status is {remote.get('status')}"
        return True

    e2e.eventually(remote_status, what="the local status on the remote Zertifikat")

    # Widgets have no status subresource: a local status is an ordinary field and stays local.
    e2e.rest.merge_patch(WIDGET.path(namespace=cluster, name=widget_name), {"status": {"phase": "Ready"}})
    # A later platform edit proves the widget was reconciled after the local status was set.
    e2e.patch_remote("team-a", REMOTE_WIDGET, namespace="default", name="blue", patch={"spec": {"size": 2}})
    e2e.eventually(
        lambda: (e2e.local(WIDGET, namespace=cluster, name=widget_name) or {})["spec"].get("size") == 2,
        what="the widget's new size on the local copy",
    )
    remote_widget = e2e.remote("team-a", REMOTE_WIDGET, namespace="default", name="blue") or {}
    assert "status" not in remote_widget, f"status flowed up without a status subresource: {remote_widget['status']}"
    assert (e2e.local(WIDGET, namespace=cluster, name=widget_name) or {}).get("status") == {"phase": "Ready"}


def test_platform_edits_reach_the_local_copy_and_local_additions_survive(e2e: E2E) -> None:
    e2e.publish(certificate_crd(), example_published_resource())
    e2e.servlet()
    e2e.wait_served("team-a", ZERTIFIKAT)
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web", labels={"app": "web"}, duration="720h"))
    cluster = e2e.world.cluster("team-a")
    name = example_local_name(namespace="default", name="web")
    e2e.wait_local(CERTIFICATE, namespace=cluster, name=name)

    # Someone else (an operator, a webhook) adds to the local copy.
    e2e.rest.merge_patch(
        CERTIFICATE.path(namespace=cluster, name=name),
        {"metadata": {"labels": {"ops.example.com/team": "blue"}}, "spec": {"renewBefore": "360h"}},
    )
    # The user edits the remote object: a changed field, a changed list, a new label.
    e2e.patch_remote(
        "team-a",
        ZERTIFIKAT,
        namespace="default",
        name="web",
        patch={
            "metadata": {"labels": {"tier": "frontend"}},
            "spec": {"duration": "2160h", "dnsNames": ["web.example.corp", "www.example.corp"]},
        },
    )

    def edits_arrived() -> dict[str, Any]:
        local = e2e.local(CERTIFICATE, namespace=cluster, name=name) or {"metadata": {}, "spec": {}}
        assert local["spec"].get("duration") == "2160h", f"spec is {local['spec']}"
        assert local["spec"].get("dnsNames") == ["web.example.corp", "www.example.corp"], f"spec is {local['spec']}"
        assert (local["metadata"].get("labels") or {}).get("tier") == "frontend"
        return local

    local = e2e.eventually(edits_arrived, what="the platform edits on the local copy")
    assert local["spec"]["renewBefore"] == "360h"
    assert local["metadata"]["labels"]["ops.example.com/team"] == "blue"

    # A field the user removes is removed locally; the local addition still stays.
    e2e.patch_remote("team-a", ZERTIFIKAT, namespace="default", name="web", patch={"spec": {"duration": None}})
    e2e.eventually(
        lambda: "duration" not in (e2e.local(CERTIFICATE, namespace=cluster, name=name) or {})["spec"],
        what="spec.duration to be removed from the local copy",
    )
    local = e2e.local(CERTIFICATE, namespace=cluster, name=name) or {}
    assert local["spec"]["renewBefore"] == "360h"
    assert local["metadata"]["labels"]["ops.example.com/team"] == "blue"


def test_a_local_copy_changed_or_deleted_by_hand_is_repaired(e2e: E2E) -> None:
    e2e.publish(certificate_crd(), example_published_resource())
    e2e.servlet()
    e2e.wait_served("team-a", ZERTIFIKAT)
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web"))
    cluster = e2e.world.cluster("team-a")
    name = example_local_name(namespace="default", name="web")
    e2e.wait_local(CERTIFICATE, namespace=cluster, name=name)

    e2e.rest.merge_patch(CERTIFICATE.path(namespace=cluster, name=name), {"spec": {"commonName": "hijacked.example"}})
    e2e.eventually(
        lambda: (
            (e2e.local(CERTIFICATE, namespace=cluster, name=name) or {})["spec"].get("commonName") == "web.example.corp"
        ),
        what="the drifted commonName to be set back to the remote value",
    )

    first_uid = (e2e.local(CERTIFICATE, namespace=cluster, name=name) or {})["metadata"]["uid"]
    e2e.rest.delete(CERTIFICATE.path(namespace=cluster, name=name))
    recreated = e2e.eventually(
        lambda: (
            (found := e2e.local(CERTIFICATE, namespace=cluster, name=name))
            and found["metadata"]["uid"] != first_uid
            and found
        ),
        what="the deleted local copy to be recreated",
    )
    assert recreated["spec"]["commonName"] == "web.example.corp"


def test_cluster_scoped_primaries_both_ways(e2e: E2E) -> None:
    e2e.publish(
        widget_crd(),
        gadget_crd(),
        # cluster-scoped locally, namespaced in the workspaces
        published_resource("gadgets", kind="Gadget", projection={"scope": "Namespaced"}),
        # namespaced locally, cluster-scoped in the workspaces
        published_resource("cluster-widgets", kind="Widget", projection={"scope": "Cluster", "kind": "ClusterWidget"}),
    )
    e2e.servlet()
    e2e.wait_served("team-a", REMOTE_GADGET)
    e2e.wait_served("team-b", CLUSTER_WIDGET)
    cluster_a, cluster_b = e2e.world.cluster("team-a"), e2e.world.cluster("team-b")

    remote_gadget = e2e.create_remote(
        "team-a", REMOTE_GADGET, remote_object("Gadget", "g1", namespace="default", size=5)
    )
    local_gadget = e2e.wait_local(GADGET, name=f"{cluster_a}-{sha1('default')[:20]}-{sha1('g1')[:20]}")
    assert "namespace" not in local_gadget["metadata"]
    _assert_linked(local_gadget, cluster=cluster_a, namespace="default", name="g1", remote=remote_gadget)

    remote_widget = e2e.create_remote("team-b", CLUSTER_WIDGET, remote_object("ClusterWidget", "w1", size=7))
    local_widget = e2e.wait_local(WIDGET, namespace=cluster_b, name=sha1("w1")[:20])
    _assert_linked(local_widget, cluster=cluster_b, namespace="", name="w1", remote=remote_widget)
    assert f"{LINK}/remote-object-namespace-hash" not in local_widget["metadata"]["labels"]
    e2e.wait_finalizer("team-a", REMOTE_GADGET, namespace="default", name="g1")
    e2e.wait_finalizer("team-b", CLUSTER_WIDGET, name="w1")
