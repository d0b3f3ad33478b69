"""What an informer tells its handlers: the kind of change, the object's key, and the event.

Deliberately not here: the informer (`informer.py`), which makes them.
"""

from __future__ import annotations

import enum
import sys
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from attrs import frozen

from servlet.app.runtime.stores import ObjectStore
from servlet.core.keys import CLUSTER_ANNOTATION

Object = dict[str, Any]


class EventType(enum.Enum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"


class Located(Protocol):
    """Any key of an object's place (a `RemoteKey`, a related object's key)."""

    @property
    def cluster(self) -> str: ...
    @property
    def namespace(self) -> str: ...
    @property
    def name(self) -> str: ...


@frozen
class ObjectKey:
    """Where an object lives: logical cluster ("" outside kcp), namespace ("" if cluster-scoped), name."""

    cluster: str
    namespace: str
    name: str

    @classmethod
    def at(cls, key: Located) -> ObjectKey:
        return cls(cluster=key.cluster, namespace=key.namespace, name=key.name)

    @classmethod
    def of(cls, obj: Mapping[str, Any]) -> ObjectKey:
        metadata = obj.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        # Interned: the indexes of a sync worker keep keys for every object, built from several
        # events each; interned, they all share one string instead of one per decoded event.
        return cls(
            cluster=sys.intern(str(annotations.get(CLUSTER_ANNOTATION, ""))),
            namespace=sys.intern(str(metadata.get("namespace") or "")),
            name=sys.intern(str(metadata.get("name") or "")),
        )


@frozen(eq=False)
class Event:
    """One change seen by the informer; `old` is the object stored before it, if there was one.

    `own`: the change is exactly a write of this servlet whose answer had already arrived (set by
    `Cache`, which keeps those answers; the informer itself cannot tell).
    """

    type: EventType
    key: ObjectKey
    obj: Object
    old: Object | None = None
    own: bool = False


Handler = Callable[[Event], None]


def version_reached(followed: str, version: str) -> bool:
    """Whether a view that has followed every change up to resourceVersion `followed` includes the
    change that made `version`. Kubernetes calls versions opaque; kube-apiserver's and kcp's are
    etcd revisions, which count up. Any other spelling answers False: nothing is concluded."""
    return followed.isdigit() and version.isdigit() and int(followed) >= int(version)


@frozen
class Keep:
    """Which objects a share informer holds (a replica's share of the workspaces).

    `by_key`: decided by the key (a virtual workspace's objects, whose key names their workspace);
    `by_content`: decided by the object itself (a local copy names its workspace in a label), so
    dropping what is no longer kept reads every object once. An object is kept when both keep it.
    """

    by_key: Callable[[ObjectKey], bool] | None = None
    by_content: Callable[[Object], bool] | None = None

    def keeps(self, key: ObjectKey, obj: Object | None) -> bool:
        """Whether `key` is kept; `obj` None: as far as its key tells."""
        if self.by_key is not None and not self.by_key(key):
            return False
        return obj is None or self.by_content is None or self.by_content(obj)


class Holding:
    """Which objects an informer holds: every one without `keep`; with it, the kept ones and the
    pinned ones (objects of another share in the way of a write, held until they are deleted)."""

    def __init__(self, keep: Keep | None) -> None:
        self.keep = keep
        self.pinned: set[ObjectKey] = set()

    def holds(self, key: ObjectKey, obj: Object | None) -> bool:
        """Whether `key` is held (`obj` None: as far as its key tells)."""
        return self.keep is None or key in self.pinned or self.keep.keeps(key, obj)

    def not_held(self, store: ObjectStore[ObjectKey]) -> list[ObjectKey]:
        """The keys of `store` no longer held; objects are decoded only when their content decides."""
        if self.keep is not None and self.keep.by_content is None:
            return [key for key in store.keys() if not self.holds(key, None)]
        return [key for key, obj in store.items() if not self.holds(key, obj)]
