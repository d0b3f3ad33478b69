"""Kubernetes RBAC over the stored Roles, ClusterRoles and their bindings, per logical cluster.

`RequestAttributes` is what the API server's request-info resolver makes of a request (verb,
API group, resource, subresource, namespace, name, or a non-resource path). `authorize` walks
the ClusterRoleBindings of the cluster, then the RoleBindings of the request's namespace, as the
RBAC authorizer does, and grants when one rule of a role bound to the identity covers the
request: verbs, apiGroups, resources (`widgets/status`, `*`, `*/status`), resourceNames and
nonResourceURLs (`/healthz`, `/apis/*`) with `*` wildcards. Built-in roles (`cluster-admin`,
`system:discovery`, `system:basic-user`, `system:public-info-viewer` and kcp's
`system:kcp:workspace:access`) and their default bindings are the bootstrap policy: they apply in
every cluster and can be referenced by stored bindings, but are not stored objects themselves.
Aggregated ClusterRoles get their rules written by rbac_aggregation.py.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from kcpsim.auth import AUTHENTICATED, MASTERS, UNAUTHENTICATED, Identity, service_account_user
from kcpsim.store import Store

GROUP = "rbac.authorization.k8s.io"
ROLES = f"{GROUP}/roles"
ROLE_BINDINGS = f"{GROUP}/rolebindings"
CLUSTER_ROLES = f"{GROUP}/clusterroles"
CLUSTER_ROLE_BINDINGS = f"{GROUP}/clusterrolebindings"
Rule = Mapping[str, Any]

_DISCOVERY_URLS = [
    "/api",
    "/api/*",
    "/apis",
    "/apis/*",
    "/healthz",
    "/livez",
    "/openapi",
    "/openapi/*",
    "/readyz",
    "/version",
    "/version/",
]
_PUBLIC_URLS = ["/healthz", "/livez", "/readyz", "/version", "/version/"]
BOOTSTRAP_ROLES: dict[str, list[Rule]] = {
    "cluster-admin": [
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["*"]},
    ],
    "system:discovery": [{"nonResourceURLs": _DISCOVERY_URLS, "verbs": ["get"]}],
    "system:public-info-viewer": [{"nonResourceURLs": _PUBLIC_URLS, "verbs": ["get"]}],
    "system:basic-user": [
        {
            "apiGroups": ["authorization.k8s.io"],
            "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
            "verbs": ["create"],
        },
        {"apiGroups": ["authentication.k8s.io"], "resources": ["selfsubjectreviews"], "verbs": ["create"]},
    ],
    "system:kcp:workspace:access": [{"nonResourceURLs": ["/"], "verbs": ["access"]}],
}
_BOOTSTRAP_BINDINGS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("cluster-admin", (MASTERS,)),
    ("system:discovery", (AUTHENTICATED,)),
    ("system:basic-user", (AUTHENTICATED,)),
    ("system:public-info-viewer", (AUTHENTICATED, UNAUTHENTICATED)),
)


@attrs.frozen
class RequestAttributes:
    verb: str
    resource_request: bool
    api_group: str = ""
    api_version: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""

    @property
    def combined_resource(self) -> str:
        return f"{self.resource}/{self.subresource}" if self.subresource else self.resource


@attrs.frozen
class Decision:
    allowed: bool
    reason: str = ""


def request_attributes(method: str, rest: list[str], query: Mapping[str, str], *, path: str) -> RequestAttributes:
    """The request info of a path relative to its cluster, as kube-apiserver's resolver derives it."""
    watch = query.get("watch") in ("true", "1")
    is_api = len(rest) >= 3 and rest[0] == "api"
    is_apis = len(rest) >= 4 and rest[0] == "apis"
    if not (is_api or is_apis):
        return RequestAttributes(verb=method.lower(), resource_request=False, path=path)
    group, version, parts = ("", rest[1], rest[2:]) if is_api else (rest[1], rest[2], rest[3:])
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 1:
        namespace = parts[1]
        if len(parts) > 2 and parts[2] not in ("status", "finalize"):
            parts = parts[2:]
    name = parts[1] if len(parts) >= 2 else ""
    subresource = parts[2] if len(parts) >= 3 else ""
    verb = {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, "")
    if method == "GET":
        verb = "watch" if watch else ("get" if name else "list")
    elif method == "DELETE":
        verb = "delete" if name else "deletecollection"
    return RequestAttributes(
        verb=verb or method.lower(),
        resource_request=True,
        api_group=group,
        api_version=version,
        resource=parts[0],
        subresource=subresource,
        namespace=namespace,
        name=name,
        path=path,
    )


# ---- rules -------------------------------------------------------------------------------------


def _matches(patterns: list[str], value: str) -> bool:
    return "*" in patterns or value in patterns


def _resource_matches(patterns: list[str], attrs: RequestAttributes) -> bool:
    for pattern in patterns:
        if pattern in ("*", attrs.combined_resource):
            return True
        if attrs.subresource and pattern == f"*/{attrs.subresource}":
            return True
    return False


def _url_matches(patterns: list[str], path: str) -> bool:
    for pattern in patterns:
        if pattern in ("*", path) or (pattern.endswith("*") and path.startswith(pattern[:-1])):
            return True
    return False


def rule_allows(rule: Rule, attrs: RequestAttributes) -> bool:
    if not _matches(list(rule.get("verbs") or []), attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(list(rule.get("nonResourceURLs") or []), attrs.path)
    names = list(rule.get("resourceNames") or [])
    return (
        _matches(list(rule.get("apiGroups") or []), attrs.api_group)
        and _resource_matches(list(rule.get("resources") or []), attrs)
        and (not names or attrs.name in names)
    )


def _subject_applies(subject: Mapping[str, Any], identity: Identity, binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return name == identity.user
    if kind == "Group":
        return name in identity.groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return identity.user == service_account_user(namespace, str(name))
    return False


# ---- evaluation --------------------------------------------------------------------------------


@attrs.frozen
class _Binding:
    kind: str  # RoleBinding | ClusterRoleBinding
    name: str
    namespace: str
    role_kind: str
    role_name: str
    subjects: tuple[Mapping[str, Any], ...]

    def describe(self, subject: Mapping[str, Any]) -> str:
        who = subject.get("name", "")
        if subject.get("kind") == "ServiceAccount":
            who = f"{who}/{subject.get('namespace') or self.namespace}"
        where = f"{self.name}/{self.namespace}" if self.namespace else self.name
        return f'{self.kind} "{where}" of {self.role_kind} "{self.role_name}" to {subject.get("kind")} "{who}"'


def _bindings(store: Store, cluster: str, namespace: str) -> Iterator[_Binding]:
    for role, groups in _BOOTSTRAP_BINDINGS:
        yield _Binding(
            "ClusterRoleBinding",
            role,
            "",
            "ClusterRole",
            role,
            tuple({"kind": "Group", "name": group} for group in groups),
        )
    for _, obj in store.sorted_items(CLUSTER_ROLE_BINDINGS, cluster, None):
        yield _from_object(obj, "ClusterRoleBinding", "")
    if namespace:
        for _, obj in store.sorted_items(ROLE_BINDINGS, cluster, namespace):
            yield _from_object(obj, "RoleBinding", namespace)


def _from_object(obj: Mapping[str, Any], kind: str, namespace: str) -> _Binding:
    ref = obj.get("roleRef") or {}
    return _Binding(
        kind,
        obj["metadata"]["name"],
        namespace,
        ref.get("kind", ""),
        ref.get("name", ""),
        tuple(obj.get("subjects") or ()),
    )


def _role_rules(store: Store, cluster: str, binding: _Binding) -> list[Rule] | None:
    if binding.role_kind == "Role" and binding.namespace:
        role = store.get(ROLES, cluster, binding.namespace, binding.role_name)
    elif binding.role_kind == "ClusterRole":
        role = store.get(CLUSTER_ROLES, cluster, "", binding.role_name)
        if role is None and binding.role_name in BOOTSTRAP_ROLES:
            return BOOTSTRAP_ROLES[binding.role_name]
    else:
        return None
    return None if role is None else list(role.get("rules") or [])


def authorize(store: Store, cluster: str, identity: Identity, attrs: RequestAttributes) -> Decision:
    """RBAC's decision for `identity` in `cluster`: allowed, with the binding that allows it, or
    not, with the reason RBAC gives (bindings to roles that do not exist)."""
    problems: list[str] = []
    for binding in _bindings(store, cluster, attrs.namespace):
        subject = next((s for s in binding.subjects if _subject_applies(s, identity, binding.namespace)), None)
        if subject is None:
            continue
        rules = _role_rules(store, cluster, binding)
        if rules is None:
            resource = "role" if binding.role_kind == "Role" else "clusterrole"
            problems.append(f'{resource}.{GROUP} "{binding.role_name}" not found')
            continue
        if any(rule_allows(rule, attrs) for rule in rules):
            return Decision(True, f"RBAC: allowed by {binding.describe(subject)}")
    if not problems:
        return Decision(False)
    return Decision(False, "RBAC: " + (problems[0] if len(problems) == 1 else "[" + ", ".join(problems) + "]"))


def forbidden_message(identity: Identity, attrs: RequestAttributes) -> str:
    """The sentence kube-apiserver writes when a request is not authorized (without the reason)."""
    if not attrs.resource_request:
        return f'User "{identity.user}" cannot {attrs.verb} path "{attrs.path}"'
    where = f'in the namespace "{attrs.namespace}"' if attrs.namespace else "at the cluster scope"
    return (
        f'User "{identity.user}" cannot {attrs.verb} resource "{attrs.combined_resource}" '
        f'in API group "{attrs.api_group}" {where}'
    )
