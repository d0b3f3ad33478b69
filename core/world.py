"""Both sides in memory, answering reads and taking writes as the API servers would.

The offline `servlet plan` runs the daemon's loop on a `World`: gather each remote object's
inputs (`gather.py`), plan it, execute its writes here, and plan again until no plan writes. So
the printed plan lists every write the daemon will send, in order, not just the first round. The
property laws and the stateful model test drive the same world, with faults injected.

The rules are the API servers' as far as a plan can tell them apart: an existing name is
`AlreadyExists`, a missing object `NotFound`, a stale `resourceVersion` precondition `Conflict`; a
delete of an object with finalizers only sets its `deletionTimestamp`, and the object goes once no
finalizer is left; merge patches follow RFC 7386; every write bumps the `resourceVersion`. A
namespace exists when its object was given or created, or when anything lives in it (offline
inputs seldom list namespaces). No clock: timestamps are fixed markers.

Deliberately not here: planning rules (`plan.py`) and what to read (`gather.py`).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, assert_never

from servlet.core.actions import Action, AddFinalizer, Side, Write
from servlet.core.context import SyncContext
from servlet.core.filtering import selector_matches
from servlet.core.gather import (
    UNREADABLE,
    Answer,
    LinkedCopies,
    NamespaceAt,
    ObjectAt,
    ObjectsMatching,
    Read,
    SameLocalName,
)
from servlet.core.keys import CLUSTER_ANNOTATION, is_deleting, metadata_of, remote_key_of, string, string_map
from servlet.core.model import ResourceType
from servlet.core.patch import apply_merge_patch
from servlet.core.targets import NAMESPACE_TYPE

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["World", "WriteFailure"]

# (side, apiVersion, kind, cluster, namespace, name); cluster is "" on the local side.
from servlet.core.world_index import Object as Object, WorldKey as WorldKey, WorldObjects

DELETION_TIMESTAMP = "1970-01-01T00:00:00Z"


class WriteFailure(Exception):
    """A write the API server would refuse; `reason` is its status reason (`AlreadyExists`, ...)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def namespace_key(side: Side, cluster: str, name: str) -> WorldKey:
    return (side, NAMESPACE_TYPE.api_version, NAMESPACE_TYPE.kind, cluster, "", name)


def _key_of(side: Side, obj: Mapping[str, Any]) -> WorldKey:
    meta = metadata_of(obj)
    cluster = remote_key_of(obj).cluster if side is Side.REMOTE else ""
    return (
        side,
        string(obj.get("apiVersion")),
        string(obj.get("kind")),
        cluster,
        string(meta.get("namespace")),
        string(meta.get("name")),
    )


def _target_key(action: Action) -> WorldKey:
    target = action.target
    assert target is not None, "only actions with a target write"
    resource = target.resource
    cluster = target.cluster if target.side is Side.REMOTE else ""
    namespace = target.namespace if resource.namespaced else ""
    return (target.side, resource.api_version, resource.kind, cluster, namespace, target.name)


def _existing(key: WorldKey, current: Object | None) -> Object:
    if current is None:
        raise WriteFailure("NotFound", f"{key[2]} {key[4]}/{key[5]} not found")
    return current


def _check_uid(uid: object, current: Object) -> None:
    """The uid precondition a delete or a patch carries, as the API server checks it."""
    if uid != metadata_of(current).get("uid"):
        raise WriteFailure(
            "Conflict",
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {metadata_of(current).get('uid')}",
        )


class World:
    """Objects of both sides by key; `version` is the last resourceVersion handed out.

    A world built from everything there is (offline inputs, a test) is `complete`: what it does
    not hold does not exist. The live plan builds an incomplete one from the lists it read, and
    `known` holds the keys it read one by one (found or not). Reads of anything else are answered
    "absent" and recorded in `missed`, for the caller to read and plan again.
    """

    def __init__(
        self,
        *,
        remote: Iterable[Mapping[str, Any]] = (),
        local: Iterable[Mapping[str, Any]] = (),
        complete: bool = True,
        known: Iterable[WorldKey] = (),
        unreadable: Iterable[WorldKey] = (),
    ) -> None:
        self._objects = WorldObjects()
        self._namespaces: set[tuple[Side, str, str]] = set()
        self.version = 0
        self.complete = complete
        self.known: set[WorldKey] = set(known)
        self.missed: dict[WorldKey, ResourceType] = {}
        # Objects a read was refused for (a workspace that rejected a claim): read as UNREADABLE.
        self.unreadable: frozenset[WorldKey] = frozenset(unreadable)
        for side, objects in ((Side.REMOTE, remote), (Side.LOCAL, local)):
            for obj in objects:
                self._store(_key_of(side, obj), copy.deepcopy(dict(obj)))  # as given, versions included

    @property
    def objects(self) -> WorldObjects:
        return self._objects

    @objects.setter
    def objects(self, objects: Mapping[WorldKey, Object]) -> None:
        self._objects = WorldObjects(objects.items())

    def copy(self) -> World:
        twin = World()
        twin.objects = copy.deepcopy(dict(self.objects))
        twin._namespaces = set(self._namespaces)
        twin.version = self.version
        twin.complete, twin.known, twin.missed = self.complete, set(self.known), dict(self.missed)
        twin.unreadable = self.unreadable
        return twin

    # -- reading ---------------------------------------------------------------------------------

    def get(self, key: WorldKey) -> Object | None:
        return self.objects.get(key)

    def listed(self, side: Side) -> list[Object]:
        return [obj for key, obj in sorted(self.objects.items(), key=lambda item: item[0][1:]) if key[0] is side]

    def namespace_exists(self, side: Side, cluster: str, name: str) -> bool:
        return (side, cluster, name) in self._namespaces

    def answer(self, context: SyncContext, reads: Sequence[Read]) -> list[Answer]:
        """The answers to one round of `gather` reads for `context`'s objects."""
        return [self._answer(context, read) for read in reads]

    def _answer(self, context: SyncContext, read: Read) -> Answer:
        if isinstance(read, LinkedCopies):
            return self.objects.linked_copies(read.resource, dict(read.labels))
        if isinstance(read, ObjectAt):
            resource = read.resource
            key = (
                read.side,
                resource.api_version,
                resource.kind,
                read.cluster,
                read.namespace if resource.namespaced else "",
                read.name,
            )
            return UNREADABLE if key in self.unreadable else self._read(key, resource)
        if isinstance(read, ObjectsMatching):
            return self._matching(read)
        if isinstance(read, NamespaceAt):
            if self.namespace_exists(read.side, read.cluster, read.name):
                return True
            return self._read(namespace_key(read.side, read.cluster, read.name), NAMESPACE_TYPE) is not None
        assert isinstance(read, SameLocalName)
        return self.objects.same_local_name(context, read.local)

    def _matching(self, read: ObjectsMatching) -> Answer:
        """The objects a label selector finds in one namespace (UNREADABLE where reads are refused)."""
        resource = read.resource
        where = (read.side, resource.api_version, resource.kind, read.cluster, read.namespace)
        if any(key[:5] == where for key in self.unreadable):
            return UNREADABLE
        return [
            obj
            for key, obj in self.objects.items()
            if key[:5] == where and selector_matches(read.selector, string_map(metadata_of(obj).get("labels")))
        ]

    def _read(self, key: WorldKey, resource: ResourceType) -> Object | None:
        found = self.objects.get(key)
        if found is None and not self.complete and key not in self.known:
            self.missed[key] = resource
        return found

    # -- writing ---------------------------------------------------------------------------------

    def apply(self, action: Action) -> Object | None:
        """Execute one write as the API server would; WriteFailure when it would refuse it.

        As the daemon's executor does, creating a namespace that exists and deleting an object
        that is gone succeed: the world already looks as the action wants.
        """
        key = _target_key(action)
        current = self.objects.get(key)
        match action.write:
            case Write.NOTHING:
                raise AssertionError(f"not a write: {action.type}")
            case Write.CREATE | Write.CREATE_NAMESPACE:
                if current is not None:
                    if action.write is Write.CREATE_NAMESPACE:
                        return current
                    raise WriteFailure("AlreadyExists", f"{key[2]} {key[4]}/{key[5]} already exists")
                created = copy.deepcopy(action.object)
                if key[0] is Side.REMOTE:
                    created.setdefault("metadata", {}).setdefault("annotations", {})[CLUSTER_ANNOTATION] = key[3]
                return self._put(key, created)
            case Write.DELETE:
                if current is None:
                    return None
                if action.uid:
                    _check_uid(action.uid, current)
                return self._delete(key, current)
            case Write.FINALIZERS:
                current = _existing(key, current)
                expected = action.resource_version
                if expected and expected != string(metadata_of(current).get("resourceVersion")):
                    raise WriteFailure("Conflict", f"{key[2]} {key[4]}/{key[5]} was changed since it was read")
                if isinstance(action, AddFinalizer) and is_deleting(current):
                    raise WriteFailure("Invalid", "no new finalizers can be added while the object is being deleted")
                patch: Mapping[str, Any] = {"metadata": {"finalizers": list(action.finalizers)}}
            case Write.STATUS:
                current = _existing(key, current)
                patch = action.patch  # as the daemon sends it: fields only the remote status has are removed
            case Write.PATCH:
                current = _existing(key, current)
                patch = action.patch
                uid = metadata_of(patch).get("uid")
                if uid is not None:
                    _check_uid(uid, current)
            case _:
                assert_never(action.write)
        updated = apply_merge_patch(current, patch)
        if is_deleting(updated) and not metadata_of(updated).get("finalizers"):
            del self.objects[key]  # the deletion completes once no finalizer is left
            return updated
        return self._put(key, updated)

    def _put(self, key: WorldKey, obj: Object) -> Object:
        self.version += 1
        meta = obj.setdefault("metadata", {})
        meta["resourceVersion"] = str(self.version)
        meta.setdefault("uid", f"uid-{self.version}")
        return self._store(key, obj)

    def _store(self, key: WorldKey, obj: Object) -> Object:
        self.objects[key] = obj
        self.known.add(key)
        side, cluster, namespace = key[0], key[3], key[4]
        if (key[1], key[2]) == (NAMESPACE_TYPE.api_version, NAMESPACE_TYPE.kind):
            self._namespaces.add((side, cluster, key[5]))
        elif namespace:
            self._namespaces.add((side, cluster, namespace))
        return obj

    def _delete(self, key: WorldKey, current: Object) -> Object | None:
        if metadata_of(current).get("finalizers"):
            if is_deleting(current):
                return current
            marked = copy.deepcopy(current)
            marked["metadata"]["deletionTimestamp"] = DELETION_TIMESTAMP
            return self._put(key, marked)
        del self.objects[key]
        return None

    # -- other writers ---------------------------------------------------------------------------

    def put(self, side: Side, obj: Mapping[str, Any]) -> Object:
        """Create or replace an object as another writer (a tenant, the service owner)."""
        return self._put(_key_of(side, obj), copy.deepcopy(dict(obj)))

    def remove(self, side: Side, obj: Mapping[str, Any]) -> Object | None:
        """Delete an object as another writer: honours finalizers like the API server."""
        key = _key_of(side, obj)
        current = self.objects.get(key)
        return None if current is None else self._delete(key, current)
