"""Who the servlet is in the end-to-end world: the chart's ServiceAccount and the documented kcp role.

The suite's fixture starts kcpsim with RBAC enforced and stores, on the service cluster, exactly
the ServiceAccount, Roles, ClusterRoles and bindings `helm template` renders for the resources
the suite publishes (`E2E_VALUES`). In the org workspace it stores the role the operations guide
tells an operator to grant the servlet's kcp identity (`docs/operations.md#permissions`):
`KCP_RULES`, bound to the user `KCP_USER` together with workspace access.

Every servlet process gets two tokens of its own: one of the chart's ServiceAccount for the
service cluster and one of `KCP_USER` for kcp, so a permission the chart or the guide lacks is
refused with 403 as a real API server would. The test's own client stays an admin.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import attrs

from kcpsim.harness.world import World
from tests.chart.rendering import one, render, with_required

# What the e2e suite publishes (CRDs of example.com, the bundled cert-manager example, Roles and
# ConfigMaps) and
# the related kinds and types it syncs, as a service owner would list them in the chart's values.
E2E_VALUES = with_required(
    publishedResources=[
        {"apiGroup": "example.com", "resources": ["widgets", "gadgets", "gizmos"]},
        {"apiGroup": "cert-manager.io", "resources": ["certificates"], "relatedKinds": ["Secret", "ConfigMap"]},
        # Built-in types published without a CRD (test_builtin_types.py).
        {"apiGroup": "rbac.authorization.k8s.io", "resources": ["roles"]},
        {"apiGroup": "", "resources": ["configmaps"]},
    ],
    relatedResources=[{"apiGroup": "databases.example.org", "resources": ["databases"]}],
)
RBAC_KINDS = ("ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding")
KCP_USER = "kdp-servlet"
KCP_ROLE = "kdp-servlet"
RBAC_V1 = "/apis/rbac.authorization.k8s.io/v1"


def kcp_rules(export: str) -> list[dict[str, Any]]:
    """The servlet's kcp permissions in the org workspace as docs/operations.md lists them."""
    return [
        {
            "apiGroups": ["core.kcp.io"],
            "resources": ["logicalclusters"],
            "resourceNames": ["cluster"],
            "verbs": ["get"],
        },
        {"apiGroups": ["apis.kcp.io"], "resources": ["apiresourceschemas"], "verbs": ["list", "watch", "create"]},
        {"apiGroups": ["apis.kcp.io"], "resources": ["apiexports"], "verbs": ["get", "list", "watch", "patch"]},
        {"apiGroups": ["apis.kcp.io"], "resources": ["apiexportendpointslices"], "verbs": ["list", "watch"]},
        # Users' objects, their related objects and Events, through the virtual workspace.
        {
            "apiGroups": ["apis.kcp.io"],
            "resources": ["apiexports/content"],
            "resourceNames": [export],
            "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"],
        },
    ]


@functools.cache
def _rendered_rbac() -> tuple[dict[str, Any], ...]:
    # Rendering goes through Helm's SDK: once per test session is enough.
    return tuple(doc for doc in render(E2E_VALUES) if doc["kind"] in RBAC_KINDS)


def chart_rbac() -> list[dict[str, Any]]:
    """Fresh copies of the ServiceAccount and RBAC the chart renders for `E2E_VALUES`."""
    return copy.deepcopy(list(_rendered_rbac()))


def _org_binding(world: World, name: str, role: str) -> None:
    world.rest.create(
        world.in_org(f"{RBAC_V1}/clusterrolebindings"),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"kind": "User", "name": KCP_USER}],
        },
    )


@attrs.frozen
class ServletIdentities:
    """The identities installed in one world; `register` gives a servlet process its tokens."""

    namespace: str
    service_account: str

    @property
    def user(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.service_account}"

    def register(self, world: World, *, token: str, kcp_token: str) -> None:
        """`token` stands for the chart's ServiceAccount, `kcp_token` for the kcp user."""
        world.sim.service_account_token(self.namespace, self.service_account, token=token)
        world.sim.add_user(kcp_token, KCP_USER)

    def cluster_role_path(self) -> str:
        name = one(chart_rbac(), "ClusterRole")["metadata"]["name"]
        return f"{RBAC_V1}/clusterroles/{name}"

    def kcp_role_path(self, world: World) -> str:
        return world.in_org(f"{RBAC_V1}/clusterroles/{KCP_ROLE}")


def install_servlet_identities(world: World) -> ServletIdentities:
    """Store the chart's RBAC on the service cluster and the documented kcp role in the org."""
    documents = chart_rbac()
    for document in documents:
        world.apply(document)
    world.rest.create(
        world.in_org(f"{RBAC_V1}/clusterroles"),
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": KCP_ROLE},
            "rules": kcp_rules(world.export),
        },
    )
    _org_binding(world, "kdp-servlet", KCP_ROLE)
    _org_binding(world, "kdp-servlet-access", "system:kcp:workspace:access")
    account = one(documents, "ServiceAccount")["metadata"]
    return ServletIdentities(namespace=account["namespace"], service_account=account["name"])
