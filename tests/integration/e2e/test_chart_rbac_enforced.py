"""The servlet under the chart's RBAC, enforced: kcpsim holds its ServiceAccount to exactly the
Roles, ClusterRoles and bindings `helm template` renders, as a real API server would.

The suite's fixture installs them (`identities.py`) for every test; here they are shown to be
the ones in force. A Widget syncs end to end with exactly the rendered rules; with one rule taken
out, the API server refuses the servlet with 403 and the servlet shows it. On the kcp side, the
servlet's user holds the role the operations guide documents, and the virtual workspace needs
its `apiexports/content` rule.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from kcpsim.harness.process import ServletProcess
from kcpsim.harness.world import SERVLET_NAMESPACE, world_client
from tests.integration.e2e.env import E2E
from tests.integration.e2e.identities import KCP_USER, ServletIdentities
from tests.integration.e2e.manifests import (
    REMOTE_WIDGET,
    WIDGET,
    default_local_name,
    published_resource,
    remote_object,
    widget_crd,
)

pytestmark = pytest.mark.kcpsim_only("stores RBAC and mints tokens through kcpsim, reads its request log")

SERVICE_TOKEN = "servlet"  # the fixture mints it for the chart's ServiceAccount
REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"


def identities(e2e: E2E) -> ServletIdentities:
    assert e2e.identities is not None, "the e2e fixture installs the servlet's identities"
    return e2e.identities


def take_out_rule(e2e: E2E, role_path: str, *, group: str, resource: str) -> None:
    """Drop the role's rule for (group, resource), as an operator editing the role would."""
    e2e.refusals_expected = True
    role = e2e.rest.get(role_path)
    assert role is not None, f"no role at {role_path}"
    kept = [rule for rule in role["rules"] if not (group in rule["apiGroups"] and resource in rule["resources"])]
    assert len(kept) == len(role["rules"]) - 1, f"{role_path} has no rule for {resource}.{group}"
    e2e.rest.merge_patch(role_path, {"rules": kept})


def refused(e2e: E2E) -> list[str]:
    """Requests of the servlet (either credential) the simulator refused."""
    return [
        f"{call.method} {call.path} {call.status}"
        for call in e2e.simulated.callers.calls(token=SERVICE_TOKEN)
        if call.status in (401, 403)
    ]


def log_records(servlet: ServletProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in servlet.log_text().splitlines() if line.startswith("{")]


def can_i(e2e: E2E, token: str, **attributes: str) -> bool:
    """What kcpsim's SelfSubjectAccessReview answers the holder of `token` (as `kubectl auth can-i`)."""
    rest = world_client(e2e.simulated.sim, token=token)
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
    _, cluster = e2e.serve_widgets()

    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w1", namespace="default", size=1))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w1"))
    e2e.wait_condition("widgets", "Ready")
    # Only Events in the workspace are refused: team-a has not accepted a claim on them (kcp's
    # rule, not RBAC's).
    assert [call for call in refused(e2e) if "/events" not in call] == [], (
        "the API server refused the servlet requests the chart's RBAC or the documented kcp role should allow"
    )
    # The ServiceAccount was held to those rules: what the chart grants, and nothing else.
    assert can_i(e2e, SERVICE_TOKEN, verb="create", group="example.com", resource="widgets", namespace=cluster)
    assert can_i(
        e2e, SERVICE_TOKEN, verb="update", group="coordination.k8s.io", resource="leases", namespace=SERVLET_NAMESPACE
    )
    assert not can_i(
        e2e, SERVICE_TOKEN, verb="update", group="coordination.k8s.io", resource="leases", namespace="default"
    )
    assert not can_i(e2e, SERVICE_TOKEN, verb="delete", group="", resource="namespaces")
    assert not can_i(e2e, SERVICE_TOKEN, verb="get", group="", resource="pods", namespace=cluster)


def test_without_the_widgets_rule_the_servlet_is_refused_and_says_so(e2e: E2E) -> None:
    take_out_rule(e2e, identities(e2e).cluster_role_path(), group="example.com", resource="widgets")
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    servlet = e2e.servlet()
    e2e.wait_served("team-a", REMOTE_WIDGET)
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w1", namespace="default", size=1))

    message = (
        f'widgets.example.com is forbidden: User "{identities(e2e).user}" cannot list resource "widgets" '
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


def test_without_apiexports_content_the_virtual_workspace_refuses_the_servlet(e2e: E2E) -> None:
    export = e2e.world.export
    take_out_rule(e2e, identities(e2e).kcp_role_path(e2e.simulated), group="apis.kcp.io", resource="apiexports/content")
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    servlet = e2e.servlet()

    reason = f'API export: "{export}", workspace: "{e2e.simulated.sim.cluster_of(e2e.world.org)}" RBAC decision: '
    message = (
        f'widgets.{export} is forbidden: User "{KCP_USER}" cannot list resource "widgets" in API group '
        f'"{export}" at the cluster scope: {reason}'
    )
    e2e.eventually(
        lambda: any(message in str(record.get("error")) for record in log_records(servlet)),
        what="the servlet to log the virtual workspace's refusal",
    )
    ready = e2e.wait_condition("widgets", "Ready", "False")
    assert ready["reason"] == "CachesNotSynced", ready
