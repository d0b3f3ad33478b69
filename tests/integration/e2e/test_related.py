"""Related objects: the service's TLS Secret goes up, the user's CA Secret and ConfigMap come down (SPEC 4, 8)."""

from __future__ import annotations

import base64

from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    CONFIGMAP,
    LINK,
    REMOTE_WIDGET,
    SECRET,
    WIDGET,
    ZERTIFIKAT,
    certificate_crd,
    certificates_with_platform_secret,
    default_local_name,
    example_local_name,
    link_labels,
    published_resource,
    remote_object,
    secret,
    widget_crd,
    zertifikat,
)

# Distinctive values, so the test can also prove they never reach the servlet's log.
CA_PEM = "-----BEGIN CERTIFICATE----- e2e-ca-7d1f0c -----END CERTIFICATE-----"
TLS_KEY = "-----BEGIN PRIVATE KEY----- e2e-key-3b9a44 -----END PRIVATE KEY-----"
TLS_KEY_ROTATED = "-----BEGIN PRIVATE KEY----- e2e-key-rotated-51ce02 -----END PRIVATE KEY-----"


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def test_related_secrets_flow_up_from_the_service_and_down_from_the_workspace(e2e: E2E) -> None:
    e2e.publish(certificate_crd(), certificates_with_platform_secret())
    servlet = e2e.servlet()
    e2e.wait_served("team-a", ZERTIFIKAT)
    cluster = e2e.world.cluster("team-a")

    # The user provides the CA of their issuer in the workspace (origin platform).
    e2e.create_remote("team-a", SECRET, secret("team-issuer-ca", namespace="default", data={"ca.crt": b64(CA_PEM)}))
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web", issuer="team-issuer"))
    local_name = example_local_name(namespace="default", name="web")
    e2e.wait_local(CERTIFICATE, namespace=cluster, name=local_name)

    local_ca = e2e.wait_local(SECRET, namespace=cluster, name="team-issuer-ca")
    assert local_ca["data"] == {"ca.crt": b64(CA_PEM)}
    expected = link_labels(cluster=cluster, namespace="default", name="team-issuer-ca")
    labels = local_ca["metadata"].get("labels") or {}
    assert {k: labels.get(k) for k in expected} == expected
    assert f"{LINK}/last-known-state" in (local_ca["metadata"].get("annotations") or {})

    # cert-manager issues the TLS Secret next to the local copy (origin service).
    e2e.world.apply(
        secret(
            "web-tls",
            namespace=cluster,
            type_="kubernetes.io/tls",
            data={"tls.crt": b64(CA_PEM), "tls.key": b64(TLS_KEY)},
        )
    )
    remote_tls = e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="web-tls"),
        what="the TLS Secret in the user's workspace",
    )
    assert remote_tls["type"] == "kubernetes.io/tls"
    assert remote_tls["data"] == {"tls.crt": b64(CA_PEM), "tls.key": b64(TLS_KEY)}
    servlet_keys = [
        k
        for k in {**(remote_tls["metadata"].get("labels") or {}), **(remote_tls["metadata"].get("annotations") or {})}
        if k.startswith(LINK)
    ]
    assert servlet_keys == [], "a copy in a workspace must carry no servlet metadata"
    local_cert = e2e.local(CERTIFICATE, namespace=cluster, name=local_name) or {}
    assert f"{LINK}/related-state.tls-secret" in (local_cert["metadata"].get("annotations") or {})

    # A renewal on the service side reaches the workspace too.
    e2e.rest.merge_patch(SECRET.path(namespace=cluster, name="web-tls"), {"data": {"tls.key": b64(TLS_KEY_ROTATED)}})
    e2e.eventually(
        lambda: (
            (e2e.remote("team-a", SECRET, namespace="default", name="web-tls") or {}).get("data", {}).get("tls.key")
            == b64(TLS_KEY_ROTATED)
        ),
        what="the renewed key in the workspace",
    )

    log = servlet.log_text()
    for value in (CA_PEM, TLS_KEY, TLS_KEY_ROTATED):
        assert value not in log and b64(value) not in log, "Secret data appeared in the servlet's log"


def serve_widgets_with_a_settings_configmap(e2e: E2E) -> None:
    """Widgets whose `spec.note` names a platform-origin ConfigMap, the claim accepted by team-a."""
    e2e.publish(
        widget_crd(),
        published_resource(
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
        ),
    )
    e2e.servlet()
    e2e.wait_served("team-a", REMOTE_WIDGET)
    export_path = e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{e2e.world.export}")

    def configmaps_claimed() -> bool:
        claims = ((e2e.rest.get(export_path) or {}).get("spec") or {}).get("permissionClaims") or []
        assert {"group": "", "resource": "configmaps", "all": True} in [
            {k: c.get(k, "") for k in ("group", "resource", "all")} for c in claims
        ], claims
        return True

    e2e.eventually(configmaps_claimed, what="the APIExport to claim configmaps")
    # The consumer accepts every claim of the export in its APIBinding, as a user of team-a would.
    claims = (e2e.rest.get(export_path) or {})["spec"]["permissionClaims"]
    e2e.rest.merge_patch(
        e2e.world.in_workspace("team-a", f"/apis/apis.kcp.io/v1alpha1/apibindings/{e2e.world.export}"),
        {"spec": {"permissionClaims": [{**c, "state": "Accepted"} for c in claims]}},
    )


def settings_configmap(name: str, color: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"color": color},
    }


def test_a_workspace_configmap_comes_down_once_the_consumer_accepts_the_new_claim(e2e: E2E) -> None:
    serve_widgets_with_a_settings_configmap(e2e)

    e2e.create_remote("team-a", CONFIGMAP, settings_configmap("widget-settings", "blue"))
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", size=1, note="widget-settings")
    )
    cluster = e2e.world.cluster("team-a")
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w"))
    local = e2e.wait_local(CONFIGMAP, namespace=cluster, name="widget-settings")
    assert local["data"] == {"color": "blue"}
    expected = link_labels(cluster=cluster, namespace="default", name="widget-settings")
    assert {k: (local["metadata"].get("labels") or {}).get(k) for k in expected} == expected


def test_pointing_the_reference_at_another_configmap_deletes_the_old_copy(e2e: E2E) -> None:
    serve_widgets_with_a_settings_configmap(e2e)
    e2e.create_remote("team-a", CONFIGMAP, settings_configmap("widget-settings", "blue"))
    e2e.create_remote("team-a", CONFIGMAP, settings_configmap("widget-settings-v2", "green"))
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", size=1, note="widget-settings")
    )
    cluster = e2e.world.cluster("team-a")
    e2e.wait_local(CONFIGMAP, namespace=cluster, name="widget-settings")

    e2e.patch_remote(
        "team-a", REMOTE_WIDGET, namespace="default", name="w", patch={"spec": {"note": "widget-settings-v2"}}
    )

    assert e2e.wait_local(CONFIGMAP, namespace=cluster, name="widget-settings-v2")["data"] == {"color": "green"}
    e2e.eventually(
        lambda: e2e.local(CONFIGMAP, namespace=cluster, name="widget-settings") is None,
        what="the copy of the ConfigMap no longer named to be deleted",
    )
    # Its origin is untouched: only the copy was the servlet's.
    assert e2e.remote("team-a", CONFIGMAP, namespace="default", name="widget-settings") is not None


def test_rejecting_the_claim_keeps_the_copy_and_reports_what_cannot_be_read(e2e: E2E) -> None:
    serve_widgets_with_a_settings_configmap(e2e)
    e2e.create_remote("team-a", CONFIGMAP, settings_configmap("widget-settings", "blue"))
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", size=1, note="widget-settings")
    )
    cluster = e2e.world.cluster("team-a")
    e2e.wait_local(CONFIGMAP, namespace=cluster, name="widget-settings")
    binding = e2e.world.in_workspace("team-a", f"/apis/apis.kcp.io/v1alpha1/apibindings/{e2e.world.export}")

    # The tenant rejects the claim: the servlet loses sight of the ConfigMap, which still exists.
    claims = (e2e.rest.get(binding) or {})["spec"]["permissionClaims"]
    e2e.rest.merge_patch(
        binding,
        {
            "spec": {
                "permissionClaims": [
                    {**claim, "state": "Rejected" if claim["resource"] == "configmaps" else claim["state"]}
                    for claim in claims
                ]
            }
        },
    )
    (servlet,) = e2e.processes
    e2e.eventually(
        lambda: "cannot read a related object" in servlet.log_text(),
        what="the servlet to report the ConfigMap it can no longer read",
    )
    e2e.consistently(
        lambda: e2e.local(CONFIGMAP, namespace=cluster, name="widget-settings") is not None,
        what="the copy to be kept",
        duration=2.0,
    )
    assert e2e.remote("team-a", CONFIGMAP, namespace="default", name="widget-settings") is not None
