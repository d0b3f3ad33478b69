"""Naming with Go templates and `$` placeholders: what a PublishedResource is refused for, where
objects land, and how template namespaces are judged for namespace safety (SPEC 5)."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from servlet.core.model import LocalKey, Naming, Problem, RemoteKey
from servlet.core.namespace_safety import is_per_workspace, tenant_steers_namespace
from servlet.core.naming import local_key_for, pattern_problems
from servlet.core.parsing import parse_published_resource

REMOTE = RemoteKey(cluster="k7v2m9x4q1w8z3r5", namespace="default", name="web")
OBJECT: dict[str, Any] = {
    "metadata": {"name": "web", "namespace": "default", "labels": {"tier": "Gold"}},
    "spec": {"size": 3},
}


def problems(naming: dict[str, Any]) -> list[str]:
    spec = {"resource": {"apiGroup": "example.com", "kind": "Widget"}, "naming": naming}
    return [str(p) for p in parse_published_resource({"metadata": {"name": "widgets"}, "spec": spec}).problems]


def key(
    naming: Naming,
    *,
    remote_object: dict[str, Any] | None = OBJECT,
    local_namespaced: bool = True,
    remote: RemoteKey = REMOTE,
) -> LocalKey | Problem:
    return local_key_for(
        naming=naming,
        remote=remote,
        local_namespaced=local_namespaced,
        remote_namespaced=True,
        remote_object=remote_object,
    )


@pytest.mark.parametrize(
    ("naming", "expected"),
    [
        ({"name": "$foo-$remoteName"}, "spec.naming.name: unknown placeholder $foo"),
        ({"name": "$remoteName-$"}, "spec.naming.name: unknown placeholder $"),
        (
            {"name": "{{ .Nope }}"},
            "spec.naming.name: template '{{ .Nope }}': unknown field .Nope (known: .Object, .ClusterName, .ClusterPath)",
        ),
        (
            {"name": "{{ .ClusterName | sha3short 8 }}"},
            "spec.naming.name: template '{{ .ClusterName | sha3short 8 }}': "
            "sha3short: argument 1 must be a string, not 8 (a piped value comes last: write `sha3short .X 8` or "
            "`.X | sha3short`)",
        ),
        (
            {"name": "{{ .ClusterPath | sha3short }}"},
            "spec.naming.name: template '{{ .ClusterPath | sha3short }}':"
            " .ClusterPath is not available: the servlet reads workspace paths only with "
            "spec.enableWorkspacePaths: true (set it, or use .ClusterName)",
        ),
        (
            {"name": "Web_$remoteName"},
            "spec.naming.name: 'Web_$remoteName' can never yield a valid name: its own text "
            "holds 'W', '_'; a name is a DNS-1123 subdomain (dot-separated parts of lower-case letters, digits and '-' "
            "that start and end with a letter or digit, at most 253 characters)",
        ),
        (
            {"namespace": "team.$remoteClusterName"},
            "spec.naming.namespace: 'team.$remoteClusterName' can never yield a "
            "valid namespace: its own text holds '.'; a namespace is a DNS-1123 label (lower-case letters, digits and '-', "
            "starting and ending with a letter or digit, at most 63 characters)",
        ),
        (
            {"name": "{{ .ClusterName }}_copy"},
            "spec.naming.name: '{{ .ClusterName }}_copy' can never yield a valid name: its own text holds '_'",
        ),
        (
            {"namespace": "x" * 64 + "{{ .ClusterName }}"},
            "spec.naming.namespace: '" + "x" * 64 + "{{ .ClusterName }}' "
            "can never yield a valid namespace: its own text is 64 characters, more than 63",
        ),
    ],
)
def test_a_pattern_that_can_never_work_is_one_problem_naming_its_field(naming: dict[str, Any], expected: str) -> None:
    found = problems(naming)
    assert len(found) == 1 and found[0].startswith(expected), found


@pytest.mark.parametrize(
    "naming",
    [
        {"name": "{{ .Object.metadata.name }}"},
        {"name": "  {{ .Object.metadata.name | lower }}\n"},  # trimmed, as by the peer
        {"name": "cert-{{ sha3short .Object.metadata.namespace 10 }}.{{ shortHash .Object.metadata.name }}"},
        {"namespace": "{{ .ClusterName }}", "name": '{{ printf "%s-%s" .Object.metadata.name "x" }}'},
        {"namespace": "svc-{{ sha3short .ClusterName 12 }}"},
        {"name": "$remoteName2"},
    ],
)
def test_patterns_that_may_work_are_valid(naming: dict[str, Any]) -> None:
    assert problems(naming) == []


def test_a_template_name_reads_the_whole_remote_object() -> None:
    naming = Naming(
        name="{{ .Object.metadata.labels.tier | lower }}-{{ .Object.spec.size }}-{{ sha3short .Object.metadata.name 6 }}"
    )
    assert key(naming) == LocalKey("k7v2m9x4q1w8z3r5", f"gold-3-{hashlib.sha3_256(b'web').hexdigest()[:6]}")


def test_without_the_object_a_template_sees_the_name_and_namespace_of_the_key() -> None:
    naming = Naming(name="{{ .Object.metadata.namespace }}-{{ .Object.metadata.name }}")
    assert key(naming, remote_object=None) == LocalKey("k7v2m9x4q1w8z3r5", "default-web")


def test_the_peers_default_naming_computes_sha3_prefixes() -> None:
    naming = Naming(
        namespace="{{ .ClusterName }}",
        name="{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}",
    )
    expected = f"{hashlib.sha3_256(b'default').hexdigest()[:20]}-{hashlib.sha3_256(b'web').hexdigest()[:20]}"
    assert key(naming) == LocalKey("k7v2m9x4q1w8z3r5", expected)


@pytest.mark.parametrize(
    ("naming", "field", "message"),
    [
        (
            Naming(name="{{ .Object.metadata.labels.missing | lower }}"),
            "spec.naming.name",
            "yields no name for this object: argument 1 must be a string, not a missing field",
        ),
        (
            Naming(name="{{ .Object.metadata.labels.tier }}"),
            "spec.naming.name",
            "yields 'Gold', which is not a DNS-1123",
        ),
        (Naming(name="{{ .Object.metadata.missing }}"), "spec.naming.name", "yields '<no value>', which is not"),
        (
            Naming(
                namespace="{{ .Object.metadata.name }}-{{ .Object.spec.size }}-" + "x" * 60,
                allow_shared_namespaces=True,
            ),
            "spec.naming.namespace",
            "which is not a DNS-1123 label",
        ),
        (
            Naming(name="{{ .Object.metadata.name }}" + "-{{ sha3sum .Object.metadata.name }}" * 4),
            "spec.naming.name",
            "yields no name for this object: the output is longer than 253 characters",
        ),
    ],
)
def test_a_template_that_fails_for_one_object_is_a_problem_for_that_object(
    naming: Naming,
    field: str,
    message: str,
) -> None:
    problem = key(naming)
    assert isinstance(problem, Problem) and problem.field == field and message in problem.message, problem


def test_a_template_namespace_that_lands_in_a_system_namespace_is_refused() -> None:
    naming = Naming(namespace="{{ .Object.metadata.namespace }}", allow_shared_namespaces=True)
    problem = key(
        naming,
        remote=RemoteKey(cluster="c1", namespace="kube-system", name="web"),
        remote_object={"metadata": {"name": "web", "namespace": "kube-system"}},
    )
    assert isinstance(problem, Problem) and "a system namespace (kube-*)" in problem.message


@pytest.mark.parametrize(
    ("pattern", "per_workspace", "steers"),
    [
        ("{{ .ClusterName }}", True, False),
        ("svc-{{ .ClusterName }}-{{ sha3short .Object.metadata.namespace 8 }}", True, True),
        (
            "{{ .ClusterName }}-{{ shortHash .Object.metadata.namespace }}-{{ sha3sum .Object.metadata.name }}",
            True,
            True,
        ),
        ("{{ sha3short .ClusterName 10 }}", False, False),  # a hash alone may collide: no cluster name verbatim
        ("{{ .ClusterName }}-{{ .Object.metadata.namespace }}", False, True),  # verbatim tenant text
        ("{{ .ClusterName }}-{{ .Object.metadata.namespace | trunc 5 }}", False, True),  # length varies
        ("{{ .ClusterName | lower }}", False, False),
        ("{{ .ClusterName }}-{{ sha3short .Object.metadata.name .Object.spec.size }}", False, True),
        ("{{ .Nope }}", False, False),
    ],
)
def test_a_template_namespace_is_per_workspace_only_when_its_length_gives_the_cluster_name_away(
    pattern: str,
    per_workspace: bool,
    steers: bool,
) -> None:
    assert is_per_workspace(pattern) is per_workspace
    assert tenant_steers_namespace(pattern) is steers


def test_a_template_namespace_tenants_steer_needs_the_shared_namespaces_opt_in() -> None:
    found = problems({"namespace": "{{ .Object.metadata.namespace }}"})
    assert len(found) == 1 and "lets tenants choose the local namespace" in found[0]
    assert problems({"namespace": "{{ .Object.metadata.namespace }}", "allowSharedNamespaces": True}) == []
    assert problems({"namespace": "{{ .ClusterName }}-{{ .Object.metadata.namespace | sha3short }}"}) == []


def test_a_template_namespace_that_always_starts_with_kube_is_refused() -> None:
    found = problems({"namespace": " kube-{{ .ClusterName }}"})
    assert any("always yields a system namespace" in problem for problem in found), found


def test_pattern_problems_checks_one_pattern_for_a_library_user() -> None:
    assert pattern_problems("{{ .ClusterName }}", field="f", namespace=True) == []
    assert [str(p) for p in pattern_problems("$foo", field="f", namespace=False)] == ["f: unknown placeholder $foo"]
