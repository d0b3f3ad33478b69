"""Taking the servlet's finalizer off remote objects nothing will sync any more.

When a PublishedResource is deleted, or its CRD is gone, no worker cleans up after its remote
objects: a finalizer left on them would block their deletion until it is back. These are the
patches that release them (local copies are kept), and how one is retried after a conflict.

Deliberately not here: sending the patches (the sync manager, through the executor).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from servlet.core import metadata
from servlet.core.actions import ObjectRef, Release, Side
from servlet.core.keys import remote_key_of
from servlet.core.model import ResourceType


def finalizer_releases(remote_objects: Iterable[Mapping[str, Any]], *, resource: ResourceType) -> list[Release]:
    """A release for each of `remote_objects` (of `resource`) that carries the servlet's finalizer.

    Each keeps the other finalizers and is conditional on the resourceVersion it was read at, so
    it cannot drop a finalizer someone added since.
    """
    found = []
    for remote in remote_objects:
        meta = remote.get("metadata") or {}
        finalizers = [f for f in meta.get("finalizers") or [] if isinstance(f, str)]
        if metadata.FINALIZER not in finalizers:
            continue
        key = remote_key_of(remote)
        target = ObjectRef(
            side=Side.REMOTE, resource=resource, namespace=key.namespace, name=key.name, cluster=key.cluster
        )
        found.append(
            Release(
                target=target,
                finalizers=tuple(f for f in finalizers if f != metadata.FINALIZER),
                resource_version=str(meta.get("resourceVersion") or ""),
            )
        )
    return found


def retry_after_conflict(release: Release) -> Release:
    """The release to send after `release` met a conflict (the object changed since it was read).

    Without the resourceVersion precondition: the release was built from a cached read nobody
    refreshes once the worker stopped, so the same precondition would fail every time. This loses
    only a finalizer someone adds in that very moment.
    """
    return attrs.evolve(release, resource_version="")
