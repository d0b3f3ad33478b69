"""Laws of namespace safety (SPEC 5), for any pattern the parser accepts and anything a tenant types.

Tenant input and cluster names are drawn from a tiny alphabet with '-', so that values which
could glue together into the same namespace (`a` + `b-a` and `a-b` + `a`) come up often.
"""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings, strategies as st

from servlet.core.model import LocalKey, Naming, RemoteKey
from servlet.core.naming import (
    CLUSTER_NAME,
    NAME,
    NAME_HASH,
    NAMESPACE,
    NAMESPACE_HASH,
    PLACEHOLDERS,
    is_dns1123_label,
    local_key_for,
)
from servlet.core.parsing import parse_published_resource

SERVLET_NAMESPACE = "kdp-system"
_labels = st.from_regex(r"[ab]([-ab]{0,4}[ab])?", fullmatch=True)
# What a tenant may name its namespace: anything, including the names it must never reach.
_tenant_namespaces = _labels | st.sampled_from(
    ["kube-system", "kube-public", "default", SERVLET_NAMESPACE, "k7v2m9x4q1w8z3r5", "a-b"]
)
# kcp logical cluster names: lower-case letters, digits and '-', starting and ending with a letter or digit.
_clusters = st.from_regex(r"[ab][-ab]{0,4}[ab]", fullmatch=True) | st.sampled_from(["default", "kube-x"])
_patterns = st.lists(
    st.sampled_from(PLACEHOLDERS) | st.sampled_from(["-", "a", "kube-", "default", "kdp-system"]),
    min_size=1,
    max_size=4,
).map("".join)
# Patterns around the cluster name, built from the tenant's values (the parser accepts most of them).
_around = st.lists(st.sampled_from(["-", "-", "a", NAMESPACE_HASH, NAME_HASH, NAMESPACE, NAME]), max_size=3)
_steered_patterns = st.tuples(_around, _around).map(lambda sides: "".join([*sides[0], CLUSTER_NAME, *sides[1]]))
_plain_clusters = st.from_regex(r"[ab][-ab]{0,4}[ab]", fullmatch=True)


def _accepted(pattern: str, *, shared: bool) -> Naming:
    """The naming the parser makes of `pattern`; the example is skipped when the parser refuses it."""
    manifest = {
        "spec": {
            "resource": {"apiGroup": "example.com", "kind": "Widget"},
            "naming": {"namespace": pattern, "allowSharedNamespaces": shared},
        }
    }
    result = parse_published_resource(manifest)
    assume(result.value is not None)
    assert result.value is not None
    return result.value.spec.naming


def _namespace(naming: Naming, *, cluster: str, namespace: str, name: str) -> str | None:
    key = local_key_for(
        naming=naming,
        remote=RemoteKey(cluster=cluster, namespace=namespace, name=name),
        local_namespaced=True,
        remote_namespaced=True,
        protected_namespaces=frozenset({SERVLET_NAMESPACE}),
    )
    return key.namespace if isinstance(key, LocalKey) else None


@given(_patterns, st.booleans(), _clusters, _tenant_namespaces, _labels)
def test_no_computed_namespace_is_ever_protected(
    pattern: str, shared: bool, cluster: str, namespace: str, name: str
) -> None:
    naming = _accepted(pattern, shared=shared)
    computed = _namespace(naming, cluster=cluster, namespace=namespace, name=name)
    if computed is None:
        return  # refused: an Error for this object, nothing written
    assert not computed.startswith("kube-")
    assert computed != SERVLET_NAMESPACE
    assert computed != "default" or naming.allow_shared_namespaces


def _pieces(text: str) -> set[str]:
    """The values another workspace would need (as its cluster name, namespace or object name) to
    glue together `text`: its prefixes, its suffixes and its runs of '-'-separated words."""
    words = text.split("-")
    runs = {"-".join(words[i:j]) for i in range(len(words)) for j in range(i + 1, len(words) + 1)}
    return runs | {text[:i] for i in range(1, len(text))} | {text[i:] for i in range(1, len(text))}


# Refused patterns and invalid results are filtered out on purpose: the law is about what is accepted.
@settings(suppress_health_check=[HealthCheck.filter_too_much])
@given(_steered_patterns, _plain_clusters, _tenant_namespaces, _labels)
def test_no_other_workspace_can_reach_a_workspaces_namespace_without_the_opt_in(
    pattern: str, cluster: str, namespace: str, name: str
) -> None:
    naming = _accepted(pattern, shared=False)
    target = _namespace(naming, cluster=cluster, namespace=namespace, name=name)
    assume(target is not None)
    candidates = sorted(piece for piece in _pieces(target or "") if is_dns1123_label(piece))
    # Only the values the pattern reads are worth varying.
    namespaces = candidates if NAMESPACE in pattern else [namespace]  # also covers $remoteNamespaceHash
    names = candidates if NAME in pattern.replace(NAMESPACE, "") else [name]
    tenant_values = (
        [(n, m) for n in namespaces for m in names]
        if len(namespaces) * len(names) < 400
        else ([(n, name) for n in namespaces] + [(namespace, m) for m in names] + [(v, v) for v in candidates])
    )
    for other_cluster in candidates:
        if other_cluster == cluster:
            continue
        for other_namespace, other_name in tenant_values:
            reached = _namespace(naming, cluster=other_cluster, namespace=other_namespace, name=other_name)
            assert reached != target, (other_cluster, other_namespace, other_name)
