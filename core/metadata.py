"""Link metadata: the keys that tie a local copy to its remote object, and what is never copied.

The platform side carries no servlet metadata except the finalizer, so the local copy is where the
link lives: labels that find the copy with an equality selector (hashes, because label values are
short and restricted) and annotations with the plain values for humans and for adoption. The same
prefix guards the copy filters: a tenant controls the labels and annotations of the remote object
and must not be able to forge a link or the sync state by setting them there.

This module only names keys and reads mappings; it does not decide when to add, repair or remove
them (the planner does) and it does not talk to any cluster.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from servlet.core.hashing import name_sha1
from servlet.core.model import RemoteKey

PREFIX = "syncer.kdp.k8c.io/"

SERVLET_LABEL = f"{PREFIX}servlet"
REMOTE_CLUSTER_LABEL = f"{PREFIX}remote-object-cluster"
REMOTE_NAMESPACE_HASH_LABEL = f"{PREFIX}remote-object-namespace-hash"
REMOTE_NAME_HASH_LABEL = f"{PREFIX}remote-object-name-hash"

REMOTE_NAMESPACE_ANNOTATION = f"{PREFIX}remote-object-namespace"
REMOTE_NAME_ANNOTATION = f"{PREFIX}remote-object-name"
LAST_KNOWN_STATE_ANNOTATION = f"{PREFIX}last-known-state"

FINALIZER = f"{PREFIX}cleanup"

# kubectl's own last-known-state: copying it would make kubectl on the service cluster compute
# patches against the tenant's history.
_KUBECTL_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def related_state_annotation(identifier: str) -> str:
    """The annotation on the local primary holding the sync state of one related object (either origin)."""
    return f"{PREFIX}related-state.{identifier}"


def link_labels(*, servlet_name: str, remote: RemoteKey) -> dict[str, str]:
    """The labels naming `remote` on its local copy; as an equality selector they find that copy.

    The namespace hash is left out for cluster-scoped remote objects (namespace ""), so a copy of
    a cluster-scoped object never matches a selector for a namespaced one and vice versa.
    """
    labels = {
        SERVLET_LABEL: servlet_name,
        REMOTE_CLUSTER_LABEL: remote.cluster,
        REMOTE_NAME_HASH_LABEL: name_sha1(remote.name),
    }
    if remote.namespace:
        labels[REMOTE_NAMESPACE_HASH_LABEL] = name_sha1(remote.namespace)
    return labels


def link_annotations(*, remote: RemoteKey) -> dict[str, str]:
    """The plain remote namespace (only when there is one) and name."""
    annotations = {REMOTE_NAME_ANNOTATION: remote.name}
    if remote.namespace:
        annotations[REMOTE_NAMESPACE_ANNOTATION] = remote.namespace
    return annotations


@functools.lru_cache(maxsize=4096)
def is_copyable_key(key: str) -> bool:
    """Whether a remote label or annotation key may be copied to the local object.

    Key prefixes are DNS subdomains and therefore lower case; the comparison ignores case anyway,
    so a key the API server would reject can never slip through by spelling. Cached: the same few
    keys come back on every object of every plan.
    """
    folded = key.lower()
    if folded.startswith(PREFIX) or folded == _KUBECTL_LAST_APPLIED:
        return False
    prefix, slash, _ = folded.partition("/")
    if not slash:
        return True
    return not (prefix == "kcp.io" or prefix.endswith(".kcp.io"))


def copyable(values: Mapping[str, str] | None) -> dict[str, str]:
    """The copyable entries of a label or annotation map (None, as an absent map, gives {})."""
    if not values:
        return {}
    return {key: value for key, value in values.items() if is_copyable_key(key)}


def _string_map(metadata: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = metadata.get(name)
    return value if isinstance(value, Mapping) else {}


def links_to(obj: Mapping[str, Any], *, servlet_name: str, remote: RemoteKey) -> bool:
    """Whether `obj` is provably the local copy of `remote` made by this servlet (adoption proof).

    The servlet label and the cluster label must name this servlet and the remote cluster; the
    object itself is then identified either by the hash labels or by the plain annotations. One
    complete identification is enough, so an object whose hash labels were mangled is still
    recognised by its annotations (and gets its labels repaired). A namespace hash label on the
    copy of a cluster-scoped object, or a namespace annotation, names a different object.
    """
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return False
    labels = _string_map(metadata, "labels")
    if labels.get(SERVLET_LABEL) != servlet_name or labels.get(REMOTE_CLUSTER_LABEL) != remote.cluster:
        return False

    expected_namespace_hash = name_sha1(remote.namespace) if remote.namespace else None
    labels_name_it = (
        labels.get(REMOTE_NAME_HASH_LABEL) == name_sha1(remote.name)
        and labels.get(REMOTE_NAMESPACE_HASH_LABEL) == expected_namespace_hash
    )
    annotations = _string_map(metadata, "annotations")
    annotations_name_it = (
        annotations.get(REMOTE_NAME_ANNOTATION) == remote.name
        and annotations.get(REMOTE_NAMESPACE_ANNOTATION, "") == remote.namespace
    )
    return labels_name_it or annotations_name_it
