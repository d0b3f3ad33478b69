"""Local namespace and name of a remote object's copy (SPEC 5)."""

from __future__ import annotations

import pytest

from servlet.core.model import LocalKey, Naming, Problem, RemoteKey
from servlet.core.naming import (
    PLACEHOLDERS,
    default_naming,
    expand,
    is_dns1123_label,
    is_dns1123_subdomain,
    local_key_for,
    unknown_placeholders,
)

CLUSTER = "1084s8ceexsehjm2"
# First 20 hex characters of SHA-1, as `printf default | sha1sum | cut -c1-20` prints them.
DEFAULT_HASH = "7505d64a54e061b7acd5"
MY_CERT_HASH = "987a51fb319eff82b6e6"
NAMESPACED_REMOTE = RemoteKey(cluster=CLUSTER, namespace="default", name="my-cert")
CLUSTER_REMOTE = RemoteKey(cluster=CLUSTER, namespace="", name="my-cert")


def test_placeholders_are_listed_longest_first() -> None:
    assert PLACEHOLDERS[0] == "$remoteNamespaceHash"
    assert [len(p) for p in PLACEHOLDERS] == sorted((len(p) for p in PLACEHOLDERS), reverse=True)
    assert set(PLACEHOLDERS) == {
        "$remoteClusterName",
        "$remoteNamespace",
        "$remoteNamespaceHash",
        "$remoteName",
        "$remoteNameHash",
    }


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        ("$remoteClusterName", CLUSTER),
        ("$remoteNamespace", "default"),
        ("$remoteNamespaceHash", DEFAULT_HASH),
        ("$remoteName", "my-cert"),
        ("$remoteNameHash", MY_CERT_HASH),
        ("cert-$remoteNamespaceHash-$remoteNameHash", f"cert-{DEFAULT_HASH}-{MY_CERT_HASH}"),
        ("$remoteNamespace-$remoteName", "default-my-cert"),
        ("$remoteNameHashes", f"{MY_CERT_HASH}es"),
        ("$remoteName2", "my-cert2"),
        ("kube-system", "kube-system"),
        ("", ""),
    ],
)
def test_expand_replaces_longest_placeholder_first(pattern: str, expected: str) -> None:
    assert expand(pattern, remote=NAMESPACED_REMOTE) == expected


def test_hashes_of_an_empty_namespace_are_empty() -> None:
    assert expand("x$remoteNamespaceHash$remoteNamespace", remote=CLUSTER_REMOTE) == "x"


def test_a_placeholder_inside_a_value_is_not_expanded_again() -> None:
    remote = RemoteKey(cluster=CLUSTER, namespace="$remoteName", name="n")
    assert expand("$remoteNamespace", remote=remote) == "$remoteName"


@pytest.mark.parametrize(
    ("pattern", "unknown"),
    [
        ("$remoteNme", ("$remoteNme",)),
        ("$remoteNamespaceHashes-$remoteNme-$remoteNme", ("$remoteNamespaceHashes", "$remoteNme")),
        ("$remote", ("$remote",)),
        ("$remoteclustername", ("$remoteclustername",)),
        ("$remoteClusterName-$remoteNamespaceHash-$remoteNameHash", ()),
        ("$remoteName2", ()),
        ("$localName", ("$localName",)),
        ("$foo-$remoteName", ("$foo",)),
        ("a$", ("$",)),
        ("plain", ()),
    ],
)
def test_unknown_placeholders_are_reported_once_in_order(pattern: str, unknown: tuple[str, ...]) -> None:
    assert unknown_placeholders(pattern) == unknown


@pytest.mark.parametrize(
    ("local_namespaced", "remote_namespaced", "expected"),
    [
        (True, True, Naming(namespace="$remoteClusterName", name="$remoteNamespaceHash-$remoteNameHash")),
        (True, False, Naming(namespace="$remoteClusterName", name="$remoteNameHash")),
        (False, True, Naming(namespace=None, name="$remoteClusterName-$remoteNamespaceHash-$remoteNameHash")),
        (False, False, Naming(namespace=None, name="$remoteClusterName-$remoteNameHash")),
    ],
)
def test_default_naming_follows_the_spec_table(
    local_namespaced: bool,
    remote_namespaced: bool,
    expected: Naming,
) -> None:
    assert default_naming(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced) == expected


@pytest.mark.parametrize(
    ("local_namespaced", "remote", "expected"),
    [
        (True, NAMESPACED_REMOTE, LocalKey(namespace=CLUSTER, name=f"{DEFAULT_HASH}-{MY_CERT_HASH}")),
        (True, CLUSTER_REMOTE, LocalKey(namespace=CLUSTER, name=MY_CERT_HASH)),
        (False, NAMESPACED_REMOTE, LocalKey(namespace="", name=f"{CLUSTER}-{DEFAULT_HASH}-{MY_CERT_HASH}")),
        (False, CLUSTER_REMOTE, LocalKey(namespace="", name=f"{CLUSTER}-{MY_CERT_HASH}")),
    ],
)
def test_unset_naming_uses_the_default_of_the_scope_combination(
    local_namespaced: bool,
    remote: RemoteKey,
    expected: LocalKey,
) -> None:
    key = local_key_for(
        naming=Naming(),
        remote=remote,
        local_namespaced=local_namespaced,
        remote_namespaced=bool(remote.namespace),
    )
    assert key == expected


def test_seed_certificate_example_is_refused_in_kube_system() -> None:
    # The seed put every copy into kube-system; the SPEC's namespace safety never allows that.
    naming = Naming(namespace="kube-system", name="$remoteClusterName-$remoteNamespaceHash-$remoteNameHash")
    key = local_key_for(naming=naming, remote=NAMESPACED_REMOTE, local_namespaced=True, remote_namespaced=True)
    assert key == Problem(
        field="spec.naming.namespace",
        message="pattern 'kube-system' yields 'kube-system', "
        "which is a system namespace (kube-*); no copy is written there",
    )


def test_only_the_name_pattern_set_keeps_the_default_namespace() -> None:
    naming = Naming(name="cert-$remoteName")
    key = local_key_for(naming=naming, remote=NAMESPACED_REMOTE, local_namespaced=True, remote_namespaced=True)
    assert key == LocalKey(namespace=CLUSTER, name="cert-my-cert")


def test_only_the_namespace_pattern_set_keeps_the_default_name() -> None:
    naming = Naming(namespace="tenants")
    key = local_key_for(naming=naming, remote=NAMESPACED_REMOTE, local_namespaced=True, remote_namespaced=True)
    assert key == LocalKey(namespace="tenants", name=f"{DEFAULT_HASH}-{MY_CERT_HASH}")


def test_a_cluster_scoped_local_object_ignores_the_namespace_pattern() -> None:
    naming = Naming(namespace="Not A Namespace", name="$remoteClusterName-$remoteName")
    key = local_key_for(naming=naming, remote=NAMESPACED_REMOTE, local_namespaced=False, remote_namespaced=True)
    assert key == LocalKey(namespace="", name=f"{CLUSTER}-my-cert")


@pytest.mark.parametrize(
    ("naming", "remote", "problem"),
    [
        (
            Naming(namespace="$remoteNamespace"),
            CLUSTER_REMOTE,
            Problem(
                field="spec.naming.namespace",
                message="pattern '$remoteNamespace' yields '', which is not a "
                "DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter or digit, "
                "at most 63 characters)",
            ),
        ),
        (
            Naming(name="$remoteName.Upper"),
            NAMESPACED_REMOTE,
            Problem(
                field="spec.naming.name",
                message="pattern '$remoteName.Upper' yields 'my-cert.Upper', which is "
                "not a DNS-1123 subdomain (dot-separated parts of lower-case letters, digits and '-' that start "
                "and end with a letter or digit, at most 253 characters)",
            ),
        ),
    ],
)
def test_an_invalid_result_is_a_problem_naming_the_pattern_and_the_value(
    naming: Naming,
    remote: RemoteKey,
    problem: Problem,
) -> None:
    key = local_key_for(naming=naming, remote=remote, local_namespaced=True, remote_namespaced=bool(remote.namespace))
    assert key == problem


@pytest.mark.parametrize(
    ("naming", "field"),
    [
        (Naming(namespace="$remoteNme"), "spec.naming.namespace"),
        (Naming(namespace="ns-$remoteNamespace-$remoteName"), "spec.naming.namespace"),  # 64 characters
        (Naming(name="$remoteNme"), "spec.naming.name"),
        (Naming(name="$remoteName-"), "spec.naming.name"),
        (Naming(name="a..b$remoteName"), "spec.naming.name"),
        (Naming(name="x" * 254), "spec.naming.name"),
    ],
)
def test_names_that_the_api_server_would_reject_are_problems(naming: Naming, field: str) -> None:
    remote = RemoteKey(cluster=CLUSTER, namespace="n" * 30, name="m" * 30)
    key = local_key_for(naming=naming, remote=remote, local_namespaced=True, remote_namespaced=True)
    assert isinstance(key, Problem)
    assert key.field == field


def test_a_default_rule_that_fails_says_it_was_the_default() -> None:
    # An internal logical cluster name such as system:admin is no DNS label.
    remote = RemoteKey(cluster="system:admin", namespace="default", name="my-cert")
    key = local_key_for(naming=Naming(), remote=remote, local_namespaced=True, remote_namespaced=True)
    assert key == Problem(
        field="spec.naming.namespace",
        message="default naming '$remoteClusterName' yields 'system:admin', which is not a DNS-1123 label "
        "(lower-case letters, digits and '-', starting and ending with a letter or digit, at most 63 characters)",
    )


@pytest.mark.parametrize(
    ("value", "label", "subdomain"),
    [
        ("a", True, True),
        ("kube-system", True, True),
        ("0abc9", True, True),
        ("a" * 63, True, True),
        ("a" * 64, False, True),
        ("cert-manager.io", False, True),
        (".".join(["a" * 63] * 3 + ["a" * 61]), False, True),  # 253 characters
        (".".join(["a" * 63] * 3 + ["a" * 62]), False, False),  # 254 characters
        ("", False, False),
        ("-a", False, False),
        ("a-", False, False),
        ("A", False, False),
        ("a_b", False, False),
        ("a..b", False, False),
        (".a", False, False),
        ("a.", False, False),
        ("a\n", False, False),
        ("ä", False, False),
    ],
)
def test_dns1123_rules(value: str, label: bool, subdomain: bool) -> None:
    assert is_dns1123_label(value) is label
    assert is_dns1123_subdomain(value) is subdomain
