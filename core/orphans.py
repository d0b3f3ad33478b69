"""Orphans: local copies whose remote object is gone for good (SPEC 7), and their deletion.

An orphan is a copy of this servlet, of this remote resource (its link names the resource, see
`metadata.py`), whose remote object is not among the resource's remote objects. A copy of another
remote resource is never an orphan here, even when it shares the local type: a PublishedResource
deleted and re-created with another projection does not make the old resource's copies orphans,
as their remote objects may well still exist. A copy whose link names no resource (made before
links carried one) is not judged either: it cannot be proven to be of this resource.

Deliberately not here: when to look (the daemon's orphan scan, `servlet plan --delete-orphans`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set as AbstractSet
from typing import Any

from attrs import frozen

from servlet.core import metadata
from servlet.core.actions import DeleteLocal, ObjectRef, Side
from servlet.core.keys import is_deleting, local_key_of, metadata_of, string_map, uid_of
from servlet.core.model import LocalKey, RemoteKey, ResourceType

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["Orphan", "delete_orphans", "find_orphans"]


@frozen
class Orphan:
    """A local copy whose remote object no longer exists; `remote` as its link annotations name it."""

    local: LocalKey
    remote: RemoteKey
    uid: str = ""


def find_orphans(
    *,
    servlet_name: str,
    remote_resource: ResourceType,
    local_objects: Iterable[Mapping[str, Any]],
    remote_keys: Iterable[RemoteKey],
    unreadable_workspaces: AbstractSet[str] = frozenset(),
) -> tuple[Orphan, ...]:
    """The copies of `remote_resource` made by this servlet that no remote object in `remote_keys` links to.

    `remote_keys` must cover every remote object of the resource, also those outside the filter:
    a released copy is kept on purpose and is not an orphan while its remote object lives. Copies
    already being deleted are not listed.

    `unreadable_workspaces` are logical clusters whose objects cannot be read at the moment (their
    kcp shard's VW URL left the endpoint slice): a remote object missing there is not known to be
    gone, so the copies of that workspace are not judged.
    """
    identity = metadata.resource_identity(remote_resource)
    live = set(remote_keys)
    live_links = {
        tuple(sorted(metadata.link_labels(servlet_name=servlet_name, remote=key, resource=remote_resource).items()))
        for key in live
    }
    orphans: list[Orphan] = []
    for obj in local_objects:
        meta = metadata_of(obj)
        labels = string_map(meta.get("labels"))
        if (
            labels.get(metadata.SERVLET_LABEL) != servlet_name
            or labels.get(metadata.REMOTE_RESOURCE_LABEL) != identity
            or is_deleting(obj)
        ):
            continue
        named = metadata.remote_key_named_by(obj)
        # Named by either half of the link: a copy whose annotations were edited is still its
        # remote object's copy while the labels name it, and the other way round.
        if (
            named is None
            or named in live
            or named.cluster in unreadable_workspaces
            or tuple(sorted(metadata.link_labels_of(obj).items())) in live_links
        ):
            continue
        orphans.append(Orphan(local=local_key_of(obj), remote=named, uid=uid_of(obj)))
    return tuple(sorted(orphans, key=lambda orphan: (orphan.local.namespace, orphan.local.name)))


def delete_orphans(*, orphans: Iterable[Orphan], resource: ResourceType) -> tuple[DeleteLocal, ...]:
    """The deletions for `--delete-orphans`; without that flag orphans are only reported."""
    return tuple(
        DeleteLocal(
            target=ObjectRef(
                Side.LOCAL, resource, orphan.local.namespace if resource.namespaced else "", orphan.local.name
            ),
            uid=orphan.uid,
        )
        for orphan in orphans
    )
