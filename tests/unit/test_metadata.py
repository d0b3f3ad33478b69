from __future__ import annotations

from typing import Any

import pytest

from servlet.core.hashing import sha1_hex
from servlet.core.metadata import (
    FINALIZER,
    LAST_KNOWN_STATE_ANNOTATION,
    REMOTE_CLUSTER_LABEL,
    REMOTE_NAME_ANNOTATION,
    REMOTE_NAME_HASH_LABEL,
    REMOTE_NAMESPACE_ANNOTATION,
    REMOTE_NAMESPACE_HASH_LABEL,
    SERVLET_LABEL,
    copyable,
    is_copyable_key,
    link_annotations,
    link_labels,
    links_to,
    related_state_annotation,
)
from servlet.core.model import RemoteKey

NAMESPACED = RemoteKey(cluster="1084s8ceexsehjm2", namespace="default", name="my-cert")
CLUSTER_SCOPED = RemoteKey(cluster="1084s8ceexsehjm2", namespace="", name="my-cert")


@pytest.mark.parametrize(
    ("constant", "expected"),
    [
        (SERVLET_LABEL, "syncer.kdp.k8c.io/servlet"),
        (REMOTE_CLUSTER_LABEL, "syncer.kdp.k8c.io/remote-object-cluster"),
        (REMOTE_NAMESPACE_HASH_LABEL, "syncer.kdp.k8c.io/remote-object-namespace-hash"),
        (REMOTE_NAME_HASH_LABEL, "syncer.kdp.k8c.io/remote-object-name-hash"),
        (REMOTE_NAMESPACE_ANNOTATION, "syncer.kdp.k8c.io/remote-object-namespace"),
        (REMOTE_NAME_ANNOTATION, "syncer.kdp.k8c.io/remote-object-name"),
        (LAST_KNOWN_STATE_ANNOTATION, "syncer.kdp.k8c.io/last-known-state"),
        (FINALIZER, "syncer.kdp.k8c.io/cleanup"),
        (related_state_annotation("tls-secret"), "syncer.kdp.k8c.io/related-state.tls-secret"),
    ],
)
def test_keys_are_the_ones_the_spec_names(constant: str, expected: str) -> None:
    assert constant == expected


def test_link_labels_of_a_namespaced_remote_carry_full_hashes_of_namespace_and_name() -> None:
    assert link_labels(servlet_name="tom", remote=NAMESPACED) == {
        SERVLET_LABEL: "tom",
        REMOTE_CLUSTER_LABEL: "1084s8ceexsehjm2",
        REMOTE_NAMESPACE_HASH_LABEL: "7505d64a54e061b7acd54ccd58b49dc43500b635",
        REMOTE_NAME_HASH_LABEL: sha1_hex("my-cert"),
    }


def test_link_labels_of_a_cluster_scoped_remote_have_no_namespace_hash() -> None:
    labels = link_labels(servlet_name="tom", remote=CLUSTER_SCOPED)
    assert REMOTE_NAMESPACE_HASH_LABEL not in labels
    assert labels[REMOTE_NAME_HASH_LABEL] == sha1_hex("my-cert")


@pytest.mark.parametrize(
    ("remote", "expected"),
    [
        (NAMESPACED, {REMOTE_NAMESPACE_ANNOTATION: "default", REMOTE_NAME_ANNOTATION: "my-cert"}),
        (CLUSTER_SCOPED, {REMOTE_NAME_ANNOTATION: "my-cert"}),
    ],
)
def test_link_annotations_carry_plain_values(remote: RemoteKey, expected: dict[str, str]) -> None:
    assert link_annotations(remote=remote) == expected


@pytest.mark.parametrize(
    ("key", "copied"),
    [
        ("app", True),
        ("app.kubernetes.io/name", True),
        ("example.com/owner", True),
        ("kcp.io", True),  # a bare name, not a prefix
        ("notkcp.io/x", True),  # only the kcp.io domain and its subdomains are withheld
        ("syncer.kdp.k8c.io/servlet", False),  # a forged link
        ("syncer.kdp.k8c.io/remote-object-name-hash", False),
        ("syncer.kdp.k8c.io/last-known-state", False),
        ("syncer.kdp.k8c.io/anything-new", False),
        ("Syncer.KDP.k8c.io/servlet", False),
        ("kcp.io/cluster", False),
        ("kcp.io/path", False),
        ("tenancy.kcp.io/workspace", False),
        ("apis.v1alpha2.kcp.io/resource-schemas", False),
        ("kubectl.kubernetes.io/last-applied-configuration", False),
        ("kubectl.kubernetes.io/restartedAt", True),
    ],
)
def test_is_copyable_key(key: str, copied: bool) -> None:
    assert is_copyable_key(key) is copied


def test_copyable_drops_forged_links_and_kcp_keys_and_keeps_the_rest() -> None:
    remote_labels = {
        "app": "web",
        SERVLET_LABEL: "someone-else",
        REMOTE_CLUSTER_LABEL: "victim",
    }
    remote_annotations = {
        "kcp.io/cluster": "1084s8ceexsehjm2",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
        "team": "payments",
    }
    assert copyable(remote_labels) == {"app": "web"}
    assert copyable(remote_annotations) == {"team": "payments"}


@pytest.mark.parametrize("values", [None, {}])
def test_copyable_of_an_absent_or_empty_map_is_empty(values: dict[str, str] | None) -> None:
    assert copyable(values) == {}


def _object(labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "local"}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "example.corp/v1", "kind": "Certificate", "metadata": metadata}


def _labels(remote: RemoteKey, servlet: str = "tom", **changes: str | None) -> dict[str, str]:
    labels = link_labels(servlet_name=servlet, remote=remote)
    for key, value in changes.items():
        full = {
            "servlet": SERVLET_LABEL,
            "cluster": REMOTE_CLUSTER_LABEL,
            "ns": REMOTE_NAMESPACE_HASH_LABEL,
            "name": REMOTE_NAME_HASH_LABEL,
        }[key]
        if value is None:
            labels.pop(full, None)
        else:
            labels[full] = value
    return labels


@pytest.mark.parametrize(
    ("obj", "remote", "expected"),
    [
        pytest.param(_object(_labels(NAMESPACED)), NAMESPACED, True, id="labels-name-it"),
        pytest.param(_object(_labels(CLUSTER_SCOPED)), CLUSTER_SCOPED, True, id="labels-name-cluster-scoped"),
        pytest.param(
            _object(_labels(NAMESPACED, name=None, ns="mangled"), link_annotations(remote=NAMESPACED)),
            NAMESPACED,
            True,
            id="mangled-hash-labels-but-annotations-name-it",
        ),
        pytest.param(
            _object(_labels(CLUSTER_SCOPED, name=None), link_annotations(remote=CLUSTER_SCOPED)),
            CLUSTER_SCOPED,
            True,
            id="annotations-name-cluster-scoped",
        ),
        pytest.param(_object(), NAMESPACED, False, id="no-metadata-of-ours"),
        pytest.param(_object(_labels(NAMESPACED, servlet=None)), NAMESPACED, False, id="no-servlet-label"),
        pytest.param(_object(_labels(NAMESPACED, servlet="jerry")), NAMESPACED, False, id="other-servlet"),
        pytest.param(_object(_labels(NAMESPACED, cluster="other")), NAMESPACED, False, id="other-cluster"),
        pytest.param(_object(_labels(NAMESPACED, cluster=None)), NAMESPACED, False, id="no-cluster-label"),
        pytest.param(
            _object(_labels(NAMESPACED, servlet=None), link_annotations(remote=NAMESPACED)),
            NAMESPACED,
            False,
            id="annotations-without-servlet-label",
        ),
        pytest.param(
            _object(_labels(RemoteKey(cluster=NAMESPACED.cluster, namespace="default", name="other"))),
            NAMESPACED,
            False,
            id="other-name",
        ),
        pytest.param(
            _object(_labels(RemoteKey(cluster=NAMESPACED.cluster, namespace="kube-system", name="my-cert"))),
            NAMESPACED,
            False,
            id="other-namespace",
        ),
        pytest.param(
            _object(_labels(NAMESPACED)), CLUSTER_SCOPED, False, id="namespaced-copy-is-not-cluster-scoped-one"
        ),
        pytest.param(
            _object(_labels(CLUSTER_SCOPED)), NAMESPACED, False, id="cluster-scoped-copy-is-not-namespaced-one"
        ),
        pytest.param(
            _object(_labels(NAMESPACED, name=None), {REMOTE_NAME_ANNOTATION: "my-cert"}),
            NAMESPACED,
            False,
            id="annotations-missing-the-namespace",
        ),
        pytest.param(
            _object(
                _labels(NAMESPACED, name=None), {**link_annotations(remote=NAMESPACED), REMOTE_NAME_ANNOTATION: "x"}
            ),
            NAMESPACED,
            False,
            id="annotations-name-another-object",
        ),
        pytest.param({"metadata": None}, NAMESPACED, False, id="metadata-not-a-map"),
        pytest.param({"metadata": {"labels": None}}, NAMESPACED, False, id="labels-null"),
    ],
)
def test_links_to_accepts_only_proof_of_this_servlets_copy_of_this_object(
    obj: dict[str, Any], remote: RemoteKey, expected: bool
) -> None:
    assert links_to(obj, servlet_name="tom", remote=remote) is expected
