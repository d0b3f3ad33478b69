"""The servlet under the chart's RBAC, enforced: kcpsim holds its ServiceAccount to exactly the
Roles, ClusterRoles and bindings `helm template` renders, as a real API server would.

The servlet's service-cluster kubeconfig carries a token of the chart's ServiceAccount; its kcp
kubeconfig a user with RBAC in the org workspace (the chart does not manage kcp's RBAC): its
administrator, or only what the servlet needs there. A Widget syncs end to end with exactly the
rendered rules; with one rule taken out, the API server refuses the servlet with 403 and the
servlet shows it. On the kcp side, the virtual workspace needs `apiexports/content` of the export.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kcpsim.harness.process import ServletProcess
from kcpsim.harness.world import SERVLET_NAMESPACE, Rest, start_world
from tests.chart.rendering import one, render, with_required
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    REMOTE_WIDGET,
    WIDGET,
    default_local_name,
    published_resource,
    remote_object,
    widget_crd,
)

VALUES = with_required(publishedResources=[{"apiGroup": "example.com", "resources": ["widgets"]}])
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
SERVICE_TOKEN = "chart-servlet"  # minted for the chart's ServiceAccount
KCP_TOKEN = "provider"
KCP_USER = "provider"
EXPORT = "certificates.example.corp"
# What the servlet does in the org workspace (read the org's identity, publish schemas, update the
# export, find the virtual workspace) and, through `apiexports/content`, in the virtual workspace.
ORG_RULES: list[dict[str, Any]] = [
    {"apiGroups": ["core.kcp.io"], "resources": ["logicalclusters"], "resourceNames": ["cluster"], "verbs": ["get"]},
    {"apiGroups": ["apis.kcp.io"], "resources": ["apiresourceschemas"], "verbs": ["list", "watch", "create"]},
    {"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "verbs": ["get", "list", "watch", "patch"]},
    {"apiGroups": ["apis.kcp.io"], "resources": ["apiexportendpointslices"], "verbs": ["list", "watch"]},
]
CONTENT_RULE = {
    "apiGroups": ["apis.kcp.io"],
    "resources": ["apiexports/content"],
    "resourceNames": [EXPORT],
    "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
}
REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


@pytest.fixture
def e2e(tmp_path: Path) -> Iterator[E2E]:
    """The e2e world with RBAC enforced (overrides the suite's fixture of the same name)."""
    env = E2E(start_world(tmp_path / "world", authz="rbac"))
    try:
        yield env
    finally:
        env.stop_all()
        env.world.stop()


def chart_rbac(*, without: tuple[str, str] | None = None) -> list[dict[str, Any]]:
    """The ServiceAccount and RBAC the chart renders; `without` drops the rule for (apiGroup, resource)."""
    documents = [doc for doc in render(VALUES) if doc["kind"] in RBAC_KINDS]
    if without is not None:
        role = one(documents, "ClusterRole")
        kept = [
            rule
            for rule in role["rules"]
            if not (without[0] in rule.get("apiGroups", []) and without[1] in rule.get("resources", []))
        ]
        assert len(kept) == len(role["rules"]) - 1, f"the chart's ClusterRole has no rule for {without}"
        role["rules"] = kept
    return documents


def _org_binding(e2e: E2E, name: str, role: str) -> None:
    e2e.rest.create(
        e2e.world.in_org("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "User", "name": KCP_USER}],
        },
    )


def install(e2e: E2E, documents: list[dict[str, Any]], *, kcp_rules: list[dict[str, Any]] | None = None) -> str:
    """Store the documents on the service cluster and mint a token for their ServiceAccount; the
    kcp user gets `kcp_rules` and access in the org workspace (`cluster-admin` there when None)."""
    for document in documents:
        e2e.world.apply(document)
    account = one(documents, "ServiceAccount")["metadata"]
    sim = e2e.world.sim
    sim.service_account_token(account["namespace"], account["name"], token=SERVICE_TOKEN)
    sim.add_user(KCP_TOKEN, KCP_USER)
    if kcp_rules is None:
        _org_binding(e2e, "provider-admin", "cluster-admin")
    else:
        e2e.rest.create(
            e2e.world.in_org("/apis/rbac.authorization.k8s.io/v1/clusterroles"),
            {
                "apiVersion": "rbac.authorization.k8s.io/v1",
                "kind": "ClusterRole",
                "metadata": {"name": "kdp-servlet"},
                "rules": kcp_rules,
            },
        )
        _org_binding(e2e, "provider-servlet", "kdp-servlet")
        _org_binding(e2e, "provider-access", "system:kcp:workspace:access")
    return f"system:serviceaccount:{account['namespace']}:{account['name']}"


def refused(e2e: E2E, token: str = SERVICE_TOKEN) -> list[str]:
    return [
        f"{call.method} {call.path} {call.status}"
        for call in e2e.world.callers.calls(token=token)
        if call.status in (401, 403)
    ]


def log_records(servlet: ServletProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in servlet.log_text().splitlines() if line.startswith("{")]


def can_i(e2e: E2E, token: str, **attributes: str) -> bool:
    """What kcpsim's SelfSubjectAccessReview answers the holder of `token` (as `kubectl auth can-i`)."""
    rest = Rest(e2e.world.sim.base_url, token=token)
    try:
        review = rest.create(
            REVIEWS,
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectAccessReview",
                "spec": {"resourceAttributes": attributes},
            },
        )
    finally:
        rest.close()
    return bool(review["status"]["allowed"])


def test_the_servlet_syncs_a_widget_with_exactly_the_charts_rbac(e2e: E2E) -> None:
    user = install(e2e, chart_rbac())
    _, cluster = e2e.serve_widgets(token=SERVICE_TOKEN, kcp_token=KCP_TOKEN)

    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w1", namespace="default", size=1))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w1"))
    e2e.wait_condition("widgets", "Ready")
    assert refused(e2e) == [], "the API server refused the servlet requests the chart's RBAC should allow"
    # The ServiceAccount was held to those rules: what the chart grants, and nothing else.
    assert e2e.world.callers.calls(token=SERVICE_TOKEN), f"the servlet never called as {user}"
    assert can_i(e2e, SERVICE_TOKEN, verb="create", group="example.com", resource="widgets", namespace=cluster)
    assert can_i(
        e2e, SERVICE_TOKEN, verb="update", group="coordination.k8s.io", resource="leases", namespace=SERVLET_NAMESPACE
    )
    assert not can_i(
        e2e, SERVICE_TOKEN, verb="update", group="coordination.k8s.io", resource="leases", namespace="default"
    )
    assert not can_i(e2e, SERVICE_TOKEN, verb="get", group="", resource="secrets", namespace=cluster)


def test_without_the_widgets_rule_the_servlet_is_refused_and_says_so(e2e: E2E) -> None:
    user = install(e2e, chart_rbac(without=("example.com", "widgets")))
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    servlet = e2e.servlet(token=SERVICE_TOKEN, kcp_token=KCP_TOKEN)
    e2e.wait_served("team-a", REMOTE_WIDGET)
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w1", namespace="default", size=1))

    message = (
        f'widgets.example.com is forbidden: User "{user}" cannot list resource "widgets" '
        'in API group "example.com" at the cluster scope'
    )
    e2e.eventually(
        lambda: any(message in str(record.get("error")) for record in log_records(servlet)),
        what="the servlet to log the API server's refusal",
    )
    assert "GET /apis/example.com/v1/widgets 403" in refused(e2e)
    ready = e2e.wait_condition("widgets", "Ready", "False")
    assert ready["reason"] == "CachesNotSynced", ready
    assert e2e.local_objects(WIDGET) == [], "a widget was copied although the servlet may not list widgets"


def test_the_servlets_kcp_identity_needs_apiexports_content_for_the_virtual_workspace(e2e: E2E) -> None:
    install(e2e, chart_rbac(), kcp_rules=[*ORG_RULES, CONTENT_RULE])
    _, cluster = e2e.serve_widgets(token=SERVICE_TOKEN, kcp_token=KCP_TOKEN)
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w1", namespace="default", size=1))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w1"))
    e2e.wait_condition("widgets", "Ready")
    # Only Events are refused: team-a has not accepted a claim on them (kcp's rule, not RBAC's).
    assert [call for call in refused(e2e, KCP_TOKEN) if "/events" not in call] == []


def test_without_apiexports_content_the_virtual_workspace_refuses_the_servlet(e2e: E2E) -> None:
    install(e2e, chart_rbac(), kcp_rules=ORG_RULES)
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    servlet = e2e.servlet(token=SERVICE_TOKEN, kcp_token=KCP_TOKEN)

    reason = f'API export: "{EXPORT}", workspace: "{e2e.world.sim.cluster_of(e2e.world.org)}" RBAC decision: '
    message = (
        f'widgets.{EXPORT} is forbidden: User "{KCP_USER}" cannot list resource "widgets" in API group '
        f'"{EXPORT}" at the cluster scope: {reason}'
    )
    e2e.eventually(
        lambda: any(message in str(record.get("error")) for record in log_records(servlet)),
        what="the servlet to log the virtual workspace's refusal",
    )
    ready = e2e.wait_condition("widgets", "Ready", "False")
    assert ready["reason"] == "CachesNotSynced", ready
