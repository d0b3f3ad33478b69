"""Laws of the link metadata: the link finds exactly one remote object, and nothing forges it."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import assume, given, strategies as st

from servlet.core.metadata import (
    PREFIX,
    copyable,
    is_copyable_key,
    link_annotations,
    link_labels,
    links_to,
)
from servlet.core.model import RemoteKey

# Label values: at most 63 characters, alphanumeric at both ends, `-_.` inside (or empty).
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")

NAMES = st.sampled_from(["a", "b", "my-cert", "default", "x.y"]) | st.text(min_size=1, max_size=12)
CLUSTERS = st.sampled_from(["1084s8ceexsehjm2", "abc", "root"])
REMOTES = st.builds(RemoteKey, cluster=CLUSTERS, namespace=st.just("") | NAMES, name=NAMES)
SERVLETS = st.sampled_from(["tom", "jerry"])
KEYS = st.sampled_from(
    [
        "app",
        "example.com/x",
        "kcp.io/cluster",
        "tenancy.kcp.io/ws",
        f"{PREFIX}servlet",
        f"{PREFIX}new",
        "kubectl.kubernetes.io/last-applied-configuration",
        "notkcp.io/y",
    ]
) | st.text(max_size=20)


def _object(labels: dict[str, str] | None, annotations: dict[str, str] | None) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": "local"}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"metadata": metadata}


@given(servlet=SERVLETS, remote=REMOTES, extra=st.dictionaries(st.sampled_from(["app", "tier"]), st.just("v")))
def test_a_copy_carrying_its_link_labels_is_linked(servlet: str, remote: RemoteKey, extra: dict[str, str]) -> None:
    obj = _object({**extra, **link_labels(servlet_name=servlet, remote=remote)}, None)
    assert links_to(obj, servlet_name=servlet, remote=remote)


@given(servlet=SERVLETS, remote=REMOTES)
def test_link_labels_are_valid_label_values(servlet: str, remote: RemoteKey) -> None:
    for value in link_labels(servlet_name=servlet, remote=remote).values():
        assert len(value) <= 63 and LABEL_VALUE.match(value), value


@given(servlet=SERVLETS, one=REMOTES, other=REMOTES)
def test_different_remote_objects_get_different_link_labels(servlet: str, one: RemoteKey, other: RemoteKey) -> None:
    assume(one != other)
    assert link_labels(servlet_name=servlet, remote=one) != link_labels(servlet_name=servlet, remote=other)


@given(
    servlet=SERVLETS,
    other_servlet=SERVLETS,
    owner=REMOTES,
    remote=REMOTES,
    with_labels=st.booleans(),
    with_annotations=st.booleans(),
)
def test_a_copy_of_another_object_or_servlet_is_never_linked(
    servlet: str, other_servlet: str, owner: RemoteKey, remote: RemoteKey, with_labels: bool, with_annotations: bool
) -> None:
    assume((servlet, remote) != (other_servlet, owner))
    obj = _object(
        link_labels(servlet_name=other_servlet, remote=owner) if with_labels else None,
        link_annotations(remote=owner) if with_annotations else None,
    )
    assert not links_to(obj, servlet_name=servlet, remote=remote)


@given(servlet=SERVLETS, remote=REMOTES, labels=st.dictionaries(KEYS, st.just("v")))
def test_without_the_servlet_label_nothing_is_linked(servlet: str, remote: RemoteKey, labels: dict[str, str]) -> None:
    link = link_labels(servlet_name=servlet, remote=remote)
    del link[f"{PREFIX}servlet"]
    obj = _object({**labels, **link}, link_annotations(remote=remote))
    assert not links_to(obj, servlet_name=servlet, remote=remote)


@given(values=st.dictionaries(KEYS, st.text(max_size=5)))
def test_copyable_keeps_a_subset_without_any_link_or_kcp_key(values: dict[str, str]) -> None:
    kept = copyable(values)
    assert kept.items() <= values.items()
    assert copyable(kept) == kept
    for key in kept:
        prefix = key.partition("/")[0] if "/" in key else ""
        assert not key.startswith(PREFIX)
        assert prefix != "kcp.io" and not prefix.endswith(".kcp.io")
    for key in values.keys() - kept.keys():
        assert not is_copyable_key(key)
