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
from servlet.core.json_values import is_mapping
from servlet.core.keys import string_map
from servlet.core.model import RemoteKey, ResourceType

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = [
    "FINALIZER",
    "LAST_KNOWN_STATE_ANNOTATION",
    "LINK_ANNOTATION_KEYS",
    "LINK_LABEL_KEYS",
    "PREFIX",
    "REMOTE_CLUSTER_LABEL",
    "REMOTE_NAMESPACE_ANNOTATION",
    "REMOTE_NAMESPACE_HASH_LABEL",
    "REMOTE_NAME_ANNOTATION",
    "REMOTE_NAME_HASH_LABEL",
    "REMOTE_RESOURCE_ANNOTATION",
    "REMOTE_RESOURCE_LABEL",
    "REMOTE_WORKSPACE_PATH_ANNOTATION",
    "SERVLET_LABEL",
    "copyable",
    "link_annotations",
    "link_labels",
    "links_to",
    "related_state_annotation",
]

PREFIX = "syncer.kdp.k8c.io/"

SERVLET_LABEL = f"{PREFIX}servlet"
REMOTE_CLUSTER_LABEL = f"{PREFIX}remote-object-cluster"
REMOTE_NAMESPACE_HASH_LABEL = f"{PREFIX}remote-object-namespace-hash"
REMOTE_NAME_HASH_LABEL = f"{PREFIX}remote-object-name-hash"
# Which remote resource (group and plural of the projection) the copy belongs to, hashed: two
# PublishedResources may share one local type, and their copies must never meet.
REMOTE_RESOURCE_LABEL = f"{PREFIX}remote-object-resource-hash"

REMOTE_NAMESPACE_ANNOTATION = f"{PREFIX}remote-object-namespace"
REMOTE_NAME_ANNOTATION = f"{PREFIX}remote-object-name"
REMOTE_RESOURCE_ANNOTATION = f"{PREFIX}remote-object-resource"
LAST_KNOWN_STATE_ANNOTATION = f"{PREFIX}last-known-state"
# The workspace path (`root:org:team`) of the remote object, with `spec.enableWorkspacePaths` only:
# for people and tools on the service cluster; nothing is ever found by it.
REMOTE_WORKSPACE_PATH_ANNOTATION = f"{PREFIX}remote-object-workspace-path"

FINALIZER = f"{PREFIX}cleanup"

# The labels that link a local copy to its remote object; a copy is found by exactly these.
LINK_LABEL_KEYS = frozenset(
    {SERVLET_LABEL, REMOTE_CLUSTER_LABEL, REMOTE_NAMESPACE_HASH_LABEL, REMOTE_NAME_HASH_LABEL, REMOTE_RESOURCE_LABEL}
)
LINK_ANNOTATION_KEYS = frozenset({REMOTE_NAMESPACE_ANNOTATION, REMOTE_NAME_ANNOTATION, REMOTE_RESOURCE_ANNOTATION})

# kubectl's own last-known-state: copying it would make kubectl on the service cluster compute
# patches against the tenant's history.
KUBECTL_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def related_state_annotation(identifier: str) -> str:
    """The annotation on the local primary holding the sync state of one related object (either origin)."""
    return f"{PREFIX}related-state.{identifier}"


@functools.lru_cache(maxsize=256)  # a few resources, asked on every plan
def resource_name(resource: ResourceType) -> str:
    """`plural.group` (plain `plural` in the core group), as kubectl names a resource."""
    return f"{resource.plural}.{resource.group}" if resource.group else resource.plural


@functools.lru_cache(maxsize=256)
def resource_identity(resource: ResourceType) -> str:
    """The value of the resource label: a hash, as `plural.group` can exceed a label's 63 characters."""
    return name_sha1(resource_name(resource))


def link_labels(*, servlet_name: str, remote: RemoteKey, resource: ResourceType | None = None) -> dict[str, str]:
    """The labels naming `remote` on its local copy; as an equality selector they find that copy.

    The namespace hash is left out for cluster-scoped remote objects (namespace ""), so a copy of
    a cluster-scoped object never matches a selector for a namespaced one and vice versa.
    `resource` is the remote object's resource; every primary's copy names it (related copies do
    not: their kind already keeps them apart).
    """
    labels = {
        SERVLET_LABEL: servlet_name,
        REMOTE_CLUSTER_LABEL: remote.cluster,
        REMOTE_NAME_HASH_LABEL: name_sha1(remote.name),
    }
    if remote.namespace:
        labels[REMOTE_NAMESPACE_HASH_LABEL] = name_sha1(remote.namespace)
    if resource is not None:
        labels[REMOTE_RESOURCE_LABEL] = resource_identity(resource)
    return labels


def link_annotations(*, remote: RemoteKey, resource: ResourceType | None = None) -> dict[str, str]:
    """The plain remote namespace (only when there is one), name and resource."""
    annotations = {REMOTE_NAME_ANNOTATION: remote.name}
    if remote.namespace:
        annotations[REMOTE_NAMESPACE_ANNOTATION] = remote.namespace
    if resource is not None:
        annotations[REMOTE_RESOURCE_ANNOTATION] = resource_name(resource)
    return annotations


def remote_key_named_by(obj: Mapping[str, Any]) -> RemoteKey | None:
    """The remote object a copy's cluster label and plain annotations name, None if incomplete."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, Mapping):
        return None
    cluster = _string_map(metadata, "labels").get(REMOTE_CLUSTER_LABEL)
    annotations = _string_map(metadata, "annotations")
    name, namespace = annotations.get(REMOTE_NAME_ANNOTATION), annotations.get(REMOTE_NAMESPACE_ANNOTATION, "")
    if not isinstance(cluster, str) or not isinstance(name, str) or not isinstance(namespace, str):
        return None
    if not cluster or not name:
        return None
    return RemoteKey(cluster=cluster, namespace=namespace, name=name)


@functools.lru_cache(maxsize=4096)
def is_copyable_key(key: str) -> bool:
    """Whether a remote label or annotation key may be copied to the local object.

    Key prefixes are DNS subdomains and therefore lower case; the comparison ignores case anyway,
    so a key the API server would reject can never slip through by spelling. Cached: the same few
    keys come back on every object of every plan.
    """
    folded = key.lower()
    if folded.startswith(PREFIX) or folded == KUBECTL_LAST_APPLIED:
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


def link_labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    """The link labels an object carries (string values only), to compare with `link_labels`."""
    metadata = obj.get("metadata")
    labels = _string_map(metadata, "labels") if isinstance(metadata, Mapping) else {}
    return {key: value for key, value in labels.items() if key in LINK_LABEL_KEYS and isinstance(value, str)}


def links_to(
    obj: Mapping[str, Any], *, servlet_name: str, remote: RemoteKey, resource: ResourceType | None = None
) -> bool:
    """Whether `obj` is provably the local copy of `remote` made by this servlet (adoption proof).

    The servlet label and the cluster label must name this servlet and the remote cluster; the
    object itself is then identified either by the hash labels or by the plain annotations. One
    complete identification is enough, so an object whose hash labels were mangled is still
    recognised by its annotations (and gets its labels repaired). A namespace hash label on the
    copy of a cluster-scoped object, or a namespace annotation, names a different object.

    With `resource`, a copy that names another remote resource (by label or annotation) is not
    this one's; a copy that names none was made before links carried the resource and is ours.
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
    if resource is not None and (
        labels.get(REMOTE_RESOURCE_LABEL, resource_identity(resource)) != resource_identity(resource)
        or annotations.get(REMOTE_RESOURCE_ANNOTATION, resource_name(resource)) != resource_name(resource)
    ):
        return False
    annotations_name_it = (
        annotations.get(REMOTE_NAME_ANNOTATION) == remote.name
        and annotations.get(REMOTE_NAMESPACE_ANNOTATION, "") == remote.namespace
    )
    return labels_name_it or annotations_name_it


# Sorted, so a repair patch lists its keys in the same order every time.
_LINK_LABEL_KEYS = tuple(sorted(LINK_LABEL_KEYS))
_LINK_ANNOTATION_KEYS = tuple(sorted(LINK_ANNOTATION_KEYS))


def link_repair(
    meta: Mapping[str, Any], *, servlet_name: str, remote: RemoteKey, resource: ResourceType, labels_match: bool = False
) -> dict[str, Any]:
    """The merge patch that sets every link label and annotation, and drops stale ones.

    `labels_match`: the object was found by exactly its link labels, so only the annotations can
    be off; checked on every reconcile, so the common case (nothing to repair) reads three keys.
    """
    annotations = meta.get("annotations")
    if (
        labels_match
        and is_mapping(annotations)
        and annotations.get(REMOTE_NAME_ANNOTATION) == remote.name
        and annotations.get(REMOTE_NAMESPACE_ANNOTATION) == (remote.namespace or None)
        and annotations.get(REMOTE_RESOURCE_ANNOTATION) == resource_name(resource)
    ):
        return {}  # the same answer as the walk below when the labels are known to match
    wanted_annotations = link_annotations(remote=remote, resource=resource)
    repair: dict[str, Any] = {}
    for section, keys, wanted in (
        ("labels", _LINK_LABEL_KEYS, link_labels(servlet_name=servlet_name, remote=remote, resource=resource)),
        ("annotations", _LINK_ANNOTATION_KEYS, wanted_annotations),
    ):
        current = string_map(meta.get(section))
        changes = {key: wanted.get(key) for key in keys if current.get(key) != wanted.get(key)}
        if changes:
            repair[section] = changes
    return {"metadata": repair} if repair else {}
