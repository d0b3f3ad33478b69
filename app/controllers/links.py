"""Finding the remote object an event is about, whichever side the event happened on.

A sync worker's queue is keyed by remote object. Events on the remote side carry that key
directly; events elsewhere need a way back:

- a local primary names its remote object in its link metadata (SPEC 6): the cluster label and
  the plain namespace/name annotations;
- a related Secret or ConfigMap is found through a reverse index that each reconcile refreshes
  with the related objects it looked at (`core.related.related_reads`), so a Secret that is
  created, changed or deleted later wakes exactly the primaries that care about it.

Also the link index of local primaries: their link labels as one hashable value, so the local
copy of a remote object is found by an exact label match, as SPEC 7 step 1 asks.

Deliberately not here: reading caches or planning.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Iterable, Mapping
from typing import Any

from attrs import field, frozen

from servlet.core import metadata
from servlet.core.actions import Side
from servlet.core.model import RemoteKey, ResourceType
from servlet.core.targets import related_resource_type

LINK_LABEL_KEYS = metadata.LINK_LABEL_KEYS


def _string_map(obj: Mapping[str, Any], field: str) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    value = meta.get(field) if isinstance(meta, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def link_value(obj: Mapping[str, Any]) -> Hashable | None:
    """The link labels of a local object as one index value (None when it has none)."""
    labels = _string_map(obj, "labels")
    # Interned: the index keeps one such value for every local copy (see `ObjectKey.of`).
    link = tuple(
        sorted((sys.intern(key), sys.intern(str(value))) for key, value in labels.items() if key in LINK_LABEL_KEYS)
    )
    return link or None


def workspace_of_copy(obj: Mapping[str, Any], *, servlet_name: str) -> str | None:
    """The workspace a local copy of this servlet belongs to (its cluster label), None for anything else."""
    labels = _string_map(obj, "labels")
    if labels.get(metadata.SERVLET_LABEL) != servlet_name:
        return None
    return labels.get(metadata.REMOTE_CLUSTER_LABEL) or None


def remote_key_of_local(obj: Mapping[str, Any], *, servlet_name: str) -> RemoteKey | None:
    """The remote object a local copy of this servlet names, None for anything else."""
    if _string_map(obj, "labels").get(metadata.SERVLET_LABEL) != servlet_name:
        return None
    return metadata.remote_key_named_by(obj)


@frozen
class RelatedObjectKey:
    """A related object on one side; `cluster` is the workspace for the remote side, "" locally."""

    side: Side
    resource: ResourceType = field(converter=related_resource_type)
    cluster: str = ""
    namespace: str = ""
    name: str = ""


class RelatedIndex:
    """Which remote primaries looked at which related objects in their last reconcile."""

    def __init__(self) -> None:
        self._by_related: dict[RelatedObjectKey, set[RemoteKey]] = {}
        self._by_primary: dict[RemoteKey, frozenset[RelatedObjectKey]] = {}

    def primaries_known(self) -> list[RemoteKey]:
        """The primaries whose last plan read related objects."""
        return list(self._by_primary)

    def set(self, primary: RemoteKey, related: Iterable[RelatedObjectKey]) -> list[RelatedObjectKey]:
        """Remember what `primary` read; returns the related objects no primary reads any more."""
        wanted = frozenset(related)
        previous = self._by_primary.get(primary, frozenset())
        if wanted == previous:
            return []
        unread = []
        for key in previous - wanted:
            self._discard(key, primary)
            if key not in self._by_related:
                unread.append(key)
        for key in wanted - previous:
            self._by_related.setdefault(key, set()).add(primary)
        if wanted:
            self._by_primary[primary] = wanted
        else:
            self._by_primary.pop(primary, None)
        return unread

    def forget(self, primary: RemoteKey) -> list[RelatedObjectKey]:
        return self.set(primary, ())

    def primaries(self, related: RelatedObjectKey) -> list[RemoteKey]:
        return sorted(self._by_related.get(related, ()), key=lambda k: (k.cluster, k.namespace, k.name))

    def __len__(self) -> int:
        return len(self._by_primary)

    def _discard(self, key: RelatedObjectKey, primary: RemoteKey) -> None:
        primaries = self._by_related.get(key)
        if primaries is not None:
            primaries.discard(primary)
            if not primaries:
                del self._by_related[key]
