"""RBAC under `authz="rbac"`: stored Roles, ClusterRoles and bindings decide what a non-admin may
do, with kube-apiserver's 403 wording; kcp adds workspace access and the virtual workspace's
`apiexports/content`; SelfSubjectAccessReview (and so `kubectl auth can-i`) answers the same."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import EXPORT, ORG, Raw, widget_crd
from tests.integration.kcpsim.kubectl import kubectl

RBAC = "/apis/rbac.authorization.k8s.io/v1"
REVIEWS = "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"
TEAM_A = "/clusters/root:myorg:team-a"
VW = f"/services/apiexport/{ORG}/{EXPORT}/clusters"


@pytest.fixture
def sim(kcpsim_factory: Callable[..., KcpSim]) -> KcpSim:
    sim: KcpSim = kcpsim_factory(authz="rbac")
    for user, groups in (("alice", ()), ("bob", ("painters",)), ("carol", ())):
        sim.add_user(user, user, groups)
    return sim


def role(kind: str, name: str, rules: list[dict[str, Any]], *, namespace: str = "") -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": meta, "rules": rules}


def binding(
    kind: str, name: str, *, role_kind: str, role_name: str, subjects: list[dict[str, str]], namespace: str = ""
) -> dict[str, Any]:
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": meta,
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role_name},
        "subjects": subjects,
    }


def create(admin: Raw, path: str, body: dict[str, Any]) -> None:
    response = admin("POST", path, body)
    assert response.status_code == 201, response.text


def forbidden(response: Any, message: str) -> None:
    assert response.status_code == 403, response.text
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert (body["kind"], body["status"], body["reason"], body["code"]) == ("Status", "Failure", "Forbidden", 403)
    assert body["message"] == message


def test_a_role_binding_grants_its_rules_in_its_namespace_only(sim: KcpSim, raw_for: Callable[..., Raw]) -> None:
    admin, alice = raw_for(sim), raw_for(sim, token="alice")
    create(admin, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    create(
        admin,
        f"{RBAC}/namespaces/shop/roles",
        role("Role", "reader", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
    )
    create(
        admin,
        f"{RBAC}/namespaces/shop/rolebindings",
        binding(
            "RoleBinding",
            "alice-reads",
            role_kind="Role",
            role_name="reader",
            subjects=[{"kind": "User", "name": "alice"}],
        ),
    )

    assert alice("GET", "/api/v1/namespaces/shop/configmaps").status_code == 200
    forbidden(
        alice("GET", "/api/v1/namespaces/default/configmaps"),
        'configmaps is forbidden: User "alice" cannot '
        'list resource "configmaps" in API group "" in the namespace "default"',
    )
    forbidden(
        alice("GET", "/api/v1/namespaces/default/configmaps/settings"),
        'configmaps "settings" is forbidden: '
        'User "alice" cannot get resource "configmaps" in API group "" in the namespace "default"',
    )
    assert alice("GET", "/api/v1/namespaces/default/configmaps/settings").json()["details"] == {
        "group": "",
        "kind": "configmaps",
        "name": "settings",
    }
    forbidden(
        alice("POST", "/api/v1/namespaces/shop/configmaps", {"metadata": {"name": "x"}}),
        'configmaps is forbidden: User "alice" cannot create resource "configmaps" in API group "" '
        'in the namespace "shop"',
    )
    forbidden(
        alice("GET", "/api/v1/configmaps"),
        'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" at the cluster scope',
    )


def test_subresources_resource_names_and_wildcards(sim: KcpSim, raw_for: Callable[..., Raw]) -> None:
    admin, bob = raw_for(sim), raw_for(sim, token="bob")
    with sim.client(sim.service_config()) as client:
        client.create(widget_crd())
    create(
        admin,
        "/apis/example.com/v1/namespaces/default/widgets",
        {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}},
    )
    create(
        admin,
        f"{RBAC}/clusterroles",
        role(
            "ClusterRole",
            "painter",
            [
                {"apiGroups": ["example.com"], "resources": ["widgets/status"], "verbs": ["patch"]},
                {"apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["palette"], "verbs": ["get"]},
                {"apiGroups": ["*"], "resources": ["*"], "verbs": ["watch"]},
            ],
        ),
    )
    create(
        admin,
        f"{RBAC}/clusterrolebindings",
        binding(
            "ClusterRoleBinding",
            "painters",
            role_kind="ClusterRole",
            role_name="painter",
            subjects=[{"kind": "Group", "name": "painters"}],
        ),
    )

    status = bob(
        "PATCH",
        "/apis/example.com/v1/namespaces/default/widgets/w/status",
        {"status": {"phase": "Dry"}},
        content_type="application/merge-patch+json",
    )
    assert status.status_code == 200 and status.json()["status"] == {"phase": "Dry"}
    forbidden(
        bob(
            "PATCH",
            "/apis/example.com/v1/namespaces/default/widgets/w",
            {"spec": {"size": 2}},
            content_type="application/merge-patch+json",
        ),
        'widgets.example.com "w" is forbidden: User "bob" cannot patch resource "widgets" in API group '
        '"example.com" in the namespace "default"',
    )
    assert bob("GET", "/api/v1/namespaces/default/configmaps/palette").status_code == 404  # allowed, not there
    forbidden(
        bob("GET", "/api/v1/namespaces/default/configmaps/brush"),
        'configmaps "brush" is forbidden: '
        'User "bob" cannot get resource "configmaps" in API group "" in the namespace "default"',
    )
    forbidden(
        bob("GET", "/api/v1/namespaces/default/configmaps"),
        'configmaps is forbidden: User "bob" cannot '
        'list resource "configmaps" in API group "" in the namespace "default"',
    )
    with bob.client.stream("GET", "/api/v1/secrets", params={"watch": "true", "timeoutSeconds": "1"}) as watch:
        assert watch.status_code == 200  # `*` in apiGroups and resources


def test_service_accounts_as_subjects_and_bindings_to_missing_roles(sim: KcpSim, raw_for: Callable[..., Raw]) -> None:
    admin = raw_for(sim)
    create(
        admin,
        "/api/v1/namespaces/default/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
    )
    robot = raw_for(sim, token=sim.service_account_token("default", "robot"))
    create(
        admin,
        f"{RBAC}/namespaces/default/rolebindings",
        binding(
            "RoleBinding",
            "robot-edits",
            role_kind="ClusterRole",
            role_name="edit",
            subjects=[{"kind": "ServiceAccount", "name": "robot"}],
        ),
    )
    forbidden(
        robot("GET", "/api/v1/namespaces/default/secrets"),
        "secrets is forbidden: User "
        '"system:serviceaccount:default:robot" cannot list resource "secrets" in API group "" in the namespace '
        '"default": RBAC: clusterrole.rbac.authorization.k8s.io "edit" not found',
    )
    create(
        admin,
        f"{RBAC}/clusterroles",
        role("ClusterRole", "edit", [{"apiGroups": [""], "resources": ["secrets"], "verbs": ["*"]}]),
    )
    assert robot("GET", "/api/v1/namespaces/default/secrets").status_code == 200
    assert robot("GET", "/api/v1/namespaces/kube-system/secrets").status_code == 403


def test_non_resource_urls(sim: KcpSim, raw_for: Callable[..., Raw]) -> None:
    admin, carol, anonymous = raw_for(sim), raw_for(sim, token="carol"), raw_for(sim, token="")
    assert carol("GET", "/apis").status_code == 200  # system:discovery for every authenticated user
    assert anonymous("GET", "/readyz").status_code == 200
    forbidden(carol("GET", "/"), 'forbidden: User "carol" cannot get path "/"')
    create(
        admin,
        f"{RBAC}/clusterroles",
        role("ClusterRole", "root-reader", [{"nonResourceURLs": ["/"], "verbs": ["get"]}]),
    )
    create(
        admin,
        f"{RBAC}/clusterrolebindings",
        binding(
            "ClusterRoleBinding",
            "carol-root",
            role_kind="ClusterRole",
            role_name="root-reader",
            subjects=[{"kind": "User", "name": "carol"}],
        ),
    )
    assert carol("GET", "/").status_code == 200


def test_a_workspace_needs_access_before_its_own_rbac(sim: KcpSim, raw_for: Callable[..., Raw]) -> None:
    admin, alice = raw_for(sim), raw_for(sim, token="alice")
    path = f"{TEAM_A}/api/v1/namespaces/default/configmaps"
    forbidden(
        alice("GET", path),
        'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API '
        'group "" in the namespace "default": workspace access not permitted',
    )
    create(
        admin,
        f"{TEAM_A}{RBAC}/clusterrolebindings",
        binding(
            "ClusterRoleBinding",
            "alice-access",
            role_kind="ClusterRole",
            role_name="system:kcp:workspace:access",
            subjects=[{"kind": "User", "name": "alice"}],
        ),
    )
    forbidden(
        alice("GET", path),
        'configmaps is forbidden: User "alice" cannot list resource "configmaps" in API '
        'group "" in the namespace "default"',
    )
    create(
        admin,
        f"{TEAM_A}{RBAC}/clusterrolebindings",
        binding(
            "ClusterRoleBinding",
            "alice-admin",
            role_kind="ClusterRole",
            role_name="cluster-admin",
            subjects=[{"kind": "User", "name": "alice"}],
        ),
    )
    assert alice("GET", path).status_code == 200
    # The binding lives in team-a: team-b and the org are still closed.
    assert alice("GET", "/clusters/root:myorg:team-b/api/v1/namespaces").status_code == 403


def test_the_virtual_workspace_needs_apiexports_content_in_the_export_workspace(
    sim: KcpSim, raw_for: Callable[..., Raw]
) -> None:
    admin, provider = raw_for(sim), raw_for(sim, token="carol")
    certificates = "/apis/certificates.example.corp/v1alpha1/certificates"
    forbidden(
        provider("GET", f"{VW}/*{certificates}"),
        'certificates.certificates.example.corp is forbidden: User "carol" cannot list resource "certificates" '
        f'in API group "certificates.example.corp" at the cluster scope: API export: "{EXPORT}", workspace: '
        f'"{ORG}" RBAC decision: ',
    )
    create(
        admin,
        f"/clusters/root:myorg{RBAC}/clusterroles",
        role(
            "ClusterRole",
            "export-reader",
            [
                {
                    "apiGroups": ["apis.kcp.io"],
                    "resources": ["apiexports/content"],
                    "resourceNames": [EXPORT],
                    "verbs": ["get", "list", "watch"],
                }
            ],
        ),
    )
    create(
        admin,
        f"/clusters/root:myorg{RBAC}/clusterrolebindings",
        binding(
            "ClusterRoleBinding",
            "carol-reads-the-export",
            role_kind="ClusterRole",
            role_name="export-reader",
            subjects=[{"kind": "User", "name": "carol"}],
        ),
    )
    assert provider("GET", f"{VW}/*{certificates}").status_code == 200
    assert provider("GET", f"{VW}/*/api/v1/secrets").status_code == 200  # a claimed resource, claim accepted
    forbidden(
        provider("POST", f"{VW}/k7v2m9x4q1w8z3r5/api/v1/namespaces/default/secrets", {"metadata": {"name": "s"}}),
        'secrets is forbidden: User "carol" cannot create resource "secrets" in API group "" in the namespace '
        f'"default": API export: "{EXPORT}", workspace: "{ORG}" RBAC decision: ',
    )


def review(client: Raw, **spec: Any) -> dict[str, Any]:
    response = client(
        "POST", REVIEWS, {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": spec}
    )
    assert response.status_code == 201, response.text
    body: dict[str, Any] = response.json()
    assert (body["kind"], body["apiVersion"]) == ("SelfSubjectAccessReview", "authorization.k8s.io/v1")
    return body


def _alice_reads_configmaps_in_shop(sim: KcpSim, admin: Raw) -> None:
    create(admin, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    create(
        admin,
        f"{RBAC}/clusterroles",
        role(
            "ClusterRole",
            "configmap-reader",
            [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}],
        ),
    )
    create(
        admin,
        f"{RBAC}/namespaces/shop/rolebindings",
        binding(
            "RoleBinding",
            "alice-reads",
            role_kind="ClusterRole",
            role_name="configmap-reader",
            subjects=[{"kind": "User", "name": "alice"}],
        ),
    )


def test_a_self_subject_access_review_answers_for_the_caller(sim: KcpSim, raw_for: Callable[..., Raw]) -> None:
    alice = raw_for(sim, token="alice")
    _alice_reads_configmaps_in_shop(sim, raw_for(sim))
    allowed = review(alice, resourceAttributes={"verb": "list", "resource": "configmaps", "namespace": "shop"})
    assert allowed["status"] == {
        "allowed": True,
        "reason": 'RBAC: allowed by RoleBinding "alice-reads/shop" of ClusterRole "configmap-reader" to User "alice"',
    }
    assert review(alice, resourceAttributes={"verb": "list", "resource": "configmaps", "namespace": "default"})[
        "status"
    ] == {"allowed": False}
    assert review(alice, nonResourceAttributes={"verb": "get", "path": "/version"})["status"]["allowed"] is True
    assert raw_for(sim)("GET", REVIEWS).status_code == 405  # create only
    forbidden(
        alice("GET", REVIEWS),
        'selfsubjectaccessreviews.authorization.k8s.io is forbidden: User "alice" '
        'cannot list resource "selfsubjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope',
    )


def _kubeconfig(sim: KcpSim, tmp_path: Path, token: str) -> Path:
    config = sim.kubeconfig_dict(sim.base_url)
    config["users"][0]["user"]["token"] = token
    path = tmp_path / f"{token}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_kubectl_auth_can_i_and_a_forbidden_get(
    kcpsim_factory: Callable[..., KcpSim], raw_for: Callable[..., Raw], tmp_path: Path
) -> None:
    # TLS: kubectl (client-go) sends a kubeconfig's credentials over HTTPS only.
    sim: KcpSim = kcpsim_factory(authz="rbac", tls=True)
    sim.add_user("alice", "alice")
    _alice_reads_configmaps_in_shop(sim, raw_for(sim))
    alice = _kubeconfig(sim, tmp_path, "alice")

    yes = kubectl(alice, "auth", "can-i", "list", "configmaps", "-n", "shop", cache=tmp_path)
    assert (yes.returncode, yes.stdout.strip()) == (0, "yes"), yes.stderr
    no = kubectl(alice, "auth", "can-i", "delete", "configmaps", "-n", "shop", cache=tmp_path)
    assert (no.returncode, no.stdout.strip()) == (1, "no"), no.stderr
    refused = kubectl(alice, "get", "configmaps", "-n", "default", cache=tmp_path)
    assert refused.returncode == 1
    assert (
        'Error from server (Forbidden): configmaps is forbidden: User "alice" cannot list resource "configmaps" '
        'in API group "" in the namespace "default"'
    ) in refused.stderr


def test_an_aggregated_cluster_role_gathers_the_rules_of_the_roles_it_selects(
    sim: KcpSim, raw_for: Callable[..., Raw]
) -> None:
    admin, alice = raw_for(sim), raw_for(sim, token="alice")
    aggregated = role("ClusterRole", "monitoring", [])
    aggregated["aggregationRule"] = {
        "clusterRoleSelectors": [{"matchLabels": {"example.com/aggregate-to-monitoring": "true"}}]
    }
    create(admin, f"{RBAC}/clusterroles", aggregated)
    create(
        admin,
        f"{RBAC}/clusterrolebindings",
        binding(
            "ClusterRoleBinding",
            "alice-monitors",
            role_kind="ClusterRole",
            role_name="monitoring",
            subjects=[{"kind": "User", "name": "alice"}],
        ),
    )
    assert alice("GET", "/api/v1/configmaps").status_code == 403
    piece = role(
        "ClusterRole", "configmap-lister", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}]
    )
    piece["metadata"]["labels"] = {"example.com/aggregate-to-monitoring": "true"}
    create(admin, f"{RBAC}/clusterroles", piece)
    assert admin("GET", f"{RBAC}/clusterroles/monitoring").json()["rules"] == piece["rules"]
    assert alice("GET", "/api/v1/configmaps").status_code == 200
    assert admin("DELETE", f"{RBAC}/clusterroles/configmap-lister").status_code == 200
    assert alice("GET", "/api/v1/configmaps").status_code == 403


def test_a_service_account_of_a_workspace_has_access_to_it_and_no_other(
    sim: KcpSim, raw_for: Callable[..., Raw]
) -> None:
    admin = raw_for(sim)
    create(
        admin,
        f"{TEAM_A}/api/v1/namespaces/default/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
    )
    robot = raw_for(
        sim, token=sim.service_account_token("default", "robot", cluster=sim.cluster_of("root:myorg:team-a"))
    )
    user = '"system:serviceaccount:default:robot"'
    # In its own workspace it needs no `access`, only local RBAC ...
    forbidden(
        robot("GET", f"{TEAM_A}/api/v1/namespaces/default/configmaps"),
        f"configmaps is forbidden: User {user} "
        'cannot list resource "configmaps" in API group "" in the namespace "default"',
    )
    create(
        admin,
        f"{TEAM_A}{RBAC}/namespaces/default/rolebindings",
        binding(
            "RoleBinding",
            "robot-admin",
            role_kind="ClusterRole",
            role_name="cluster-admin",
            subjects=[{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
        ),
    )
    assert robot("GET", f"{TEAM_A}/api/v1/namespaces/default/configmaps").status_code == 200
    # ... in another it is a stranger, even bound to cluster-admin there.
    create(
        admin,
        f"/clusters/root:myorg:team-b{RBAC}/clusterrolebindings",
        binding(
            "ClusterRoleBinding",
            "robot-admin",
            role_kind="ClusterRole",
            role_name="cluster-admin",
            subjects=[{"kind": "ServiceAccount", "name": "robot", "namespace": "default"}],
        ),
    )
    forbidden(
        robot("GET", "/clusters/root:myorg:team-b/api/v1/namespaces/default/configmaps"),
        f'configmaps is forbidden: User {user} cannot list resource "configmaps" in API group "" in the '
        'namespace "default": workspace access not permitted',
    )
