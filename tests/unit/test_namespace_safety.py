"""Namespace safety (SPEC 5): a tenant never steers its copies into a system namespace, the
servlet's own, or another workspace's, unless the PublishedResource shares namespaces on purpose.

Three places enforce it: parsing (the PublishedResource is invalid, so the daemon reports
`Valid=False`), naming (a computed namespace that is protected is an error for that object) and
so the plan (that object gets an Error and no write).
"""

from __future__ import annotations

from typing import Any

import pytest

from servlet.core.actions import Error
from servlet.core.gather import PlanInputs
from servlet.core.model import (
    LocalKey,
    Naming,
    Problem,
    PublishedResource,
    PublishedResourceSpec,
    RemoteKey,
    ResourceType,
    ServletIdentity,
    SourceResource,
)
from servlet.core.naming import expand, local_key_for
from servlet.core.parsing import parse_published_resource
from servlet.core.plan import SyncContext, plan_object
from servlet.core.projection import Projected

OPT_IN = "spec.naming.allowSharedNamespaces"


def _parse(naming: dict[str, Any], related: list[dict[str, Any]] | None = None) -> list[Problem]:
    spec: dict[str, Any] = {"resource": {"apiGroup": "example.com", "kind": "Widget"}, "naming": naming}
    if related is not None:
        spec["related"] = related
    return list(parse_published_resource({"metadata": {"name": "widgets"}, "spec": spec}).problems)


def _service_secret(namespace: dict[str, Any] | None = None, *, origin: str = "service") -> dict[str, Any]:
    reference: dict[str, Any] = {"name": {"path": "spec.secretName"}}
    if namespace is not None:
        reference["namespace"] = namespace
    return {"identifier": "creds", "origin": origin, "kind": "Secret", "reference": reference}


# --- parsing: which namespace patterns a PublishedResource may use ------------------------------


@pytest.mark.parametrize(
    "pattern",
    [
        "$remoteNamespace",
        "$remoteClusterName-$remoteNamespace",  # workspace a + namespace b-c meets workspace a-b + namespace c
        "$remoteNamespace-$remoteClusterName",
        "$remoteName",
        "w-$remoteNamespaceHash",  # a hash keeps tenants apart only together with the cluster name
        "$remoteNameHash",
    ],
)
def test_a_namespace_tenants_choose_across_workspaces_needs_the_opt_in(pattern: str) -> None:
    (problem,) = _parse({"namespace": pattern})
    assert problem.field == "spec.naming.namespace"
    assert pattern in problem.message and "allowSharedNamespaces: true" in problem.message
    assert _parse({"namespace": pattern, "allowSharedNamespaces": True}) == []


def test_the_verbatim_remote_namespace_after_the_cluster_name_really_collides() -> None:
    # Why `$remoteClusterName-$remoteNamespace` is refused: cluster names may contain '-'.
    pattern = "$remoteClusterName-$remoteNamespace"
    first = expand(pattern, remote=RemoteKey(cluster="ab", namespace="cd-ef", name="x"))
    second = expand(pattern, remote=RemoteKey(cluster="ab-cd", namespace="ef", name="x"))
    assert first == second == "ab-cd-ef"


@pytest.mark.parametrize(
    "pattern",
    [
        "$remoteClusterName",
        "$remoteClusterName-$remoteNamespaceHash",
        "t-$remoteClusterName-$remoteNamespaceHash-$remoteNameHash",
        "shared-widgets",  # fixed: shared, but no tenant chooses it (servlet plan warns)
    ],
)
def test_per_workspace_and_fixed_namespaces_need_no_opt_in(pattern: str) -> None:
    assert _parse({"namespace": pattern}) == []


@pytest.mark.parametrize("pattern", ["kube-system", "kube-public", "kube-$remoteClusterName"])
@pytest.mark.parametrize("shared", [False, True])
def test_a_pattern_that_always_yields_a_system_namespace_is_invalid_even_when_shared(
    pattern: str, shared: bool
) -> None:
    (problem,) = _parse({"namespace": pattern, "allowSharedNamespaces": shared})
    assert problem.field == "spec.naming.namespace"
    assert pattern in problem.message and "system namespace" in problem.message


def test_the_default_namespace_is_allowed_only_with_the_opt_in() -> None:
    (problem,) = _parse({"namespace": "default"})
    assert problem.field == "spec.naming.namespace" and "allowSharedNamespaces: true" in problem.message
    assert _parse({"namespace": "default", "allowSharedNamespaces": True}) == []


def test_the_opt_in_must_be_a_boolean() -> None:
    (problem,) = _parse({"namespace": "$remoteClusterName", "allowSharedNamespaces": "yes"})
    assert problem.field == "spec.naming.allowSharedNamespaces" and '"yes"' in problem.message


@pytest.mark.parametrize(
    "namespace",
    [
        None,
        {"path": "metadata.namespace"},
        {"path": "metadata.namespace", "regex": {"pattern": "^x", "replacement": ""}},
    ],
)
def test_shared_namespaces_refuse_service_secrets_from_the_namespace_the_tenant_chose(
    namespace: dict[str, Any] | None,
) -> None:
    naming = {"namespace": "$remoteNamespace", "allowSharedNamespaces": True}
    (problem,) = _parse(naming, related=[_service_secret(namespace)])
    assert problem.field == "spec.related[0].reference.namespace"
    assert "origin service" in problem.message and "$remoteNamespace" in problem.message


@pytest.mark.parametrize(
    "related",
    [
        _service_secret({"path": "status.secretNamespace"}),
        _service_secret({"path": "spec.secretName", "regex": {"pattern": "", "replacement": "certs"}}),
        _service_secret(None, origin="platform"),
    ],
)
def test_shared_namespaces_allow_service_namespaces_and_platform_objects(related: dict[str, Any]) -> None:
    assert _parse({"namespace": "$remoteNamespace", "allowSharedNamespaces": True}, related=[related]) == []


def test_per_workspace_namespaces_keep_service_secrets_in_the_primarys_namespace() -> None:
    assert _parse({"namespace": "$remoteClusterName-$remoteNamespaceHash"}, related=[_service_secret()]) == []


def test_the_index_of_a_refused_related_entry_is_its_place_in_the_manifest() -> None:
    broken = {
        "identifier": "first",
        "origin": "service",
        "kind": "Deployment",
        "reference": {"name": {"path": "spec.a"}},
    }
    problems = _parse(
        {"namespace": "$remoteNamespace", "allowSharedNamespaces": True}, related=[broken, _service_secret()]
    )
    assert [p.field for p in problems] == ["spec.related[0].kind", "spec.related[1].reference.namespace"]


# --- naming: computed namespaces that are refused whatever the pattern --------------------------

SHARED = Naming(namespace="$remoteNamespace", allow_shared_namespaces=True)


def _key(
    naming: Naming, *, cluster: str = "k7v2m9x4q1w8z3r5", namespace: str, protected: frozenset[str] = frozenset()
) -> LocalKey | Problem:
    return local_key_for(
        naming=naming,
        remote=RemoteKey(cluster=cluster, namespace=namespace, name="web"),
        local_namespaced=True,
        remote_namespaced=True,
        protected_namespaces=protected,
    )


@pytest.mark.parametrize("namespace", ["kube-system", "kube-public", "kube-node-lease", "kube-x"])
def test_a_tenant_namespace_named_like_a_system_one_is_refused(namespace: str) -> None:
    problem = _key(SHARED, namespace=namespace)
    assert problem == Problem(
        field="spec.naming.namespace",
        message=(
            f"pattern '$remoteNamespace' yields '{namespace}', which is a system namespace (kube-*); "
            "no copy is written there"
        ),
    )


def test_the_servlets_own_namespace_is_refused() -> None:
    problem = _key(SHARED, namespace="kdp-system", protected=frozenset({"kdp-system"}))
    assert isinstance(problem, Problem) and problem.field == "spec.naming.namespace"
    assert "'kdp-system'" in problem.message and "the servlet's own namespace" in problem.message
    unprotected = _key(SHARED, namespace="kdp-system")  # the same namespace when the servlet runs elsewhere
    assert isinstance(unprotected, LocalKey) and unprotected.namespace == "kdp-system"


def test_default_is_refused_unless_the_published_resource_shares_namespaces() -> None:
    unshared = _key(Naming(), cluster="default", namespace="prod")  # a logical cluster may be called default
    assert isinstance(unshared, Problem) and "allowSharedNamespaces" in unshared.message
    assert "default naming '$remoteClusterName'" in unshared.message
    shared = _key(SHARED, namespace="default")
    assert isinstance(shared, LocalKey) and shared.namespace == "default"


# --- plan: the refused object gets an Error and no write ----------------------------------------


def _context(servlet: ServletIdentity) -> SyncContext:
    spec = PublishedResourceSpec(resource=SourceResource(api_group="example.com", kind="Widget"), naming=SHARED)
    projected = Projected(
        schema_name="v0123abcd.widgets.example.com",
        schema_spec={},
        has_status_subresource=False,
        local=ResourceType("example.com", "v1", "Widget", "widgets", True),
        remote=ResourceType("example.com", "v1", "Widget", "widgets", True),
    )
    return SyncContext(servlet=servlet, published=PublishedResource(name="widgets", spec=spec), projected=projected)


def _remote(namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "spec": {"size": 1},
        "metadata": {
            "name": "web",
            "namespace": namespace,
            "resourceVersion": "1",
            "annotations": {"kcp.io/cluster": "k7v2m9x4q1w8z3r5"},
        },
    }


@pytest.mark.parametrize("namespace", ["kube-system", "kdp-system"])
def test_the_plan_for_an_object_aimed_at_a_protected_namespace_is_one_error(namespace: str) -> None:
    servlet = ServletIdentity(name="tom", api_group="widgets.example.corp", namespace="kdp-system")
    result = plan_object(context=_context(servlet), inputs=PlanInputs(_remote(namespace)))
    (error,) = result.actions
    assert isinstance(error, Error) and error.field == "spec.naming.namespace" and namespace in error.reason
    assert result.local is None and not result.writes
    # The same object from an ordinary namespace is synced: the refusal is about the namespace only.
    fine = plan_object(context=_context(servlet), inputs=PlanInputs(_remote("team-a")))
    assert fine.local is not None and fine.local.namespace == "team-a" and fine.writes
