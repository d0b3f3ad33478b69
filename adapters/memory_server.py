"""The service cluster and every kcp workspace in one process's memory, for the in-memory fakes.

Objects are kept by a core `World`, the same rules the offline `servlet plan` executes its writes
by: a taken name is AlreadyExists, a missing object NotFound, a stale resourceVersion or a uid
precondition that does not hold Conflict; merge patches follow RFC 7386; a delete of an object
with finalizers only marks it; every write bumps one shared resourceVersion. Here those rules
also raise the core's failures (`core/errors.py`), and every change is kept in a history that
watches replay, so an informer over a fake sees what it would see from an API server: a list's
version, the changes after it, and 410 Gone once the history it asks for was compacted.

Where things are: the service cluster is the world's local side; every workspace is its remote
side, named by logical cluster (the org workspace is one of them). Objects in a workspace carry
the `kcp.io/cluster` annotation, as kcp serves them.

Deliberately not here: anything a real server does that controllers never notice (admission,
defaulting, field validation, server-side apply, set-based label selectors) and the ports
themselves (`memory.py`).
"""

from __future__ import annotations

import asyncio
import copy
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any

import attrs
from attrs import frozen

from servlet.core.actions import Action, Side
from servlet.core.errors import AlreadyExists, ApiFailure, Conflict, Gone, Invalid, NotFound, Operation
from servlet.core.keys import CLUSTER_ANNOTATION, is_deleting, metadata_of, string, string_map
from servlet.core.model import ResourceType
from servlet.core.patch import apply_merge_patch
from servlet.core.world import World, WorldKey, WriteFailure

Object = dict[str, Any]
PARTIAL_API_VERSION = "meta.k8s.io/v1"
_FAILURES: dict[str, type[ApiFailure]] = {
    "AlreadyExists": AlreadyExists,
    "NotFound": NotFound,
    "Conflict": Conflict,
    "Invalid": Invalid,
}
_CODES = {AlreadyExists: 409, NotFound: 404, Conflict: 409, Invalid: 422, Gone: 410}


@frozen
class Place:
    """Which objects: one side, one resource, and for the remote side one logical cluster (None:
    every workspace but `excluded`, as the VW's `/clusters/*` view; with `shard`, only the
    workspaces `on_shard` says that VW URL serves)."""

    side: Side
    resource: ResourceType
    cluster: str | None = ""
    excluded: str = ""
    shard: str = ""
    on_shard: Callable[[str], bool] | None = attrs.field(default=None, eq=False)

    def holds(self, key: WorldKey) -> bool:
        if (key[0], key[1], key[2]) != (self.side, self.resource.api_version, self.resource.kind):
            return False
        if self.cluster is not None:
            return key[3] == self.cluster
        return key[3] != self.excluded and (self.on_shard is None or self.on_shard(key[3]))

    def key(self, *, namespace: str, name: str, cluster: str = "") -> WorldKey:
        where = cluster if self.cluster is None else self.cluster
        return (
            self.side,
            self.resource.api_version,
            self.resource.kind,
            where,
            namespace if self.resource.namespaced else "",
            name,
        )

    def operation(self, verb: str, *, namespace: str = "", name: str = "") -> Operation:
        label = f"{self.resource.plural}.{self.resource.group}" if self.resource.group else self.resource.plural
        where = "service cluster" if self.side is Side.LOCAL else f"workspace {self.cluster or '*'}"
        return Operation(verb=verb, resource=label, namespace=namespace, name=name, where=where)


@frozen
class Change:
    """One entry of the history: a watch event as the server would send it."""

    version: int
    key: WorldKey
    type: str
    object: Object


def failure(kind: type[ApiFailure], operation: Operation, message: str) -> ApiFailure:
    return kind(operation=operation, code=_CODES.get(kind, 500), message=message, reason=kind.__name__)


class MemoryServer:
    """Every object of the service cluster and the workspaces, with a watchable history."""

    def __init__(self, world: World | None = None) -> None:
        self.world = world or World()
        self.history: list[Change] = []
        # Versions at or below this can no longer be watched from (410 Gone).
        self.compacted_at = 0
        # Failures the next list or watch requests raise instead of answering, in order.
        self.faults: list[ApiFailure] = []
        self._changed = asyncio.Event()
        self._watch_generation = 0

    # -- reading -------------------------------------------------------------------------------

    def read(self, key: WorldKey) -> Object | None:
        found = self.world.get(key)
        return copy.deepcopy(found) if found is not None else None

    def objects(self, place: Place, *, namespace: str = "", selector: str | None = None) -> list[Object]:
        matches = label_matcher(selector, operation=place.operation("list"))
        return [
            copy.deepcopy(obj)
            for key, obj in sorted(self.world.objects.items(), key=lambda item: item[0][3:])
            if place.holds(key)
            and (not namespace or key[4] == namespace)
            and matches(string_map(metadata_of(obj).get("labels")))
        ]

    # -- writing -------------------------------------------------------------------------------

    def create(self, place: Place, obj: Mapping[str, Any], *, cluster: str = "") -> Object:
        """Create `obj`; AlreadyExists when its name is taken. Workspace objects get `kcp.io/cluster`."""
        created = copy.deepcopy(dict(obj))
        created.setdefault("apiVersion", place.resource.api_version)
        created.setdefault("kind", place.resource.kind)
        metadata = created.setdefault("metadata", {})
        key = place.key(namespace=string(metadata.get("namespace")), name=string(metadata.get("name")), cluster=cluster)
        if self.world.get(key) is not None:
            raise failure(
                AlreadyExists,
                place.operation("create", namespace=key[4], name=key[5]),
                f'{place.resource.plural} "{key[5]}" already exists',
            )
        # The server hands these out; whatever a create carries is ignored.
        metadata.pop("resourceVersion", None)
        metadata.pop("uid", None)
        if place.side is Side.REMOTE:
            metadata.setdefault("annotations", {})[CLUSTER_ANNOTATION] = key[3]
        return self._stored(key, lambda: self.world.put(place.side, created))

    def merge_patch(self, place: Place, key: WorldKey, patch: Mapping[str, Any]) -> Object:
        """RFC 7386 merge patch; a resourceVersion or uid in the patch's metadata is a precondition."""
        operation = place.operation("patch", namespace=key[4], name=key[5])
        current = self._existing(key, operation)
        wanted = metadata_of(patch)
        for field in ("resourceVersion", "uid"):
            if field in wanted and wanted[field] != metadata_of(current).get(field):
                raise failure(
                    Conflict,
                    operation,
                    "the object has been modified; please apply your changes to the latest version and try again",
                )
        updated = apply_merge_patch(current, dict(patch))

        def write() -> None:
            self.world.put(place.side, updated)
            if is_deleting(updated) and not metadata_of(updated).get("finalizers"):
                self.world.remove(place.side, updated)  # the deletion completes once no finalizer is left

        return self._stored(key, write)

    def replace(self, place: Place, key: WorldKey, obj: Mapping[str, Any]) -> Object:
        """A PUT: Conflict unless `obj` carries the stored resourceVersion."""
        operation = place.operation("update", namespace=key[4], name=key[5])
        current = self._existing(key, operation)
        if metadata_of(obj).get("resourceVersion") != metadata_of(current).get("resourceVersion"):
            raise failure(
                Conflict,
                operation,
                "the object has been modified; please apply your changes to the latest version and try again",
            )
        return self._stored(key, lambda: self.world.put(place.side, obj))

    def delete(self, place: Place, key: WorldKey, *, uid: str = "") -> Object | None:
        """Delete as the API server does: NotFound when absent, Conflict when `uid` is not the
        object's; an object with finalizers is only marked. The object as it was last seen."""
        operation = place.operation("delete", namespace=key[4], name=key[5])
        current = self._existing(key, operation)
        if uid and uid != metadata_of(current).get("uid"):
            raise failure(
                Conflict,
                operation,
                f"Precondition failed: UID in precondition: {uid}, "
                f"UID in object meta: {metadata_of(current).get('uid')}",
            )
        return self._write(key, lambda: self.world.remove(place.side, current))

    def apply(self, action: Action) -> Object | None:
        """Execute a planned action by the world's rules (see `World.apply`): the object stored
        afterwards, the deleted object, or None when there was nothing to delete."""
        assert action.target is not None, "only actions with a target write"
        target = action.target
        place = Place(target.side, target.resource, target.cluster if target.side is Side.REMOTE else "")
        key = place.key(namespace=target.namespace, name=target.name)
        try:
            return self._write(key, lambda: self.world.apply(action) and None)
        except WriteFailure as refused:
            raise failure(
                _FAILURES.get(refused.reason, Invalid),
                place.operation(action.type, namespace=key[4], name=key[5]),
                str(refused),
            ) from None

    def _existing(self, key: WorldKey, operation: Operation) -> Object:
        current = self.world.get(key)
        if current is None:
            raise failure(NotFound, operation, f'"{key[5]}" not found')
        return current

    def _stored(self, key: WorldKey, write: Callable[[], object]) -> Object:
        written = self._write(key, write)
        assert written is not None, "a write that creates or changes an object leaves one"
        return written

    def _write(self, key: WorldKey, write: Callable[[], object]) -> Object | None:
        """Run one write and record what it changed: a copy of what is stored now, of the object
        the write deleted, or None when there was nothing."""
        before = self.world.get(key)
        before_version = string(metadata_of(before).get("resourceVersion")) if before is not None else ""
        write()
        after = self.world.get(key)
        if after is None and before is not None:
            # A delete gets a version of its own, as on an API server, so a watch can resume past it.
            self.world.version += 1
            gone = copy.deepcopy(before)
            gone["metadata"]["resourceVersion"] = str(self.world.version)
            self._record(key, "DELETED", gone)
            return gone
        if before is not None and after is not None and _same_but_version(before, after):
            # A write that changes nothing is no change: an API server keeps the version, sends no event.
            self.world.objects[key] = before
            self.world.version -= 1
            return copy.deepcopy(before)
        if after is not None and string(metadata_of(after).get("resourceVersion")) != before_version:
            self._record(key, "ADDED" if before is None else "MODIFIED", after)
        return copy.deepcopy(after)

    def _record(self, key: WorldKey, kind: str, obj: Object) -> None:
        self.history.append(Change(version=self.world.version, key=key, type=kind, object=copy.deepcopy(obj)))
        self._changed.set()
        self._changed = asyncio.Event()

    # -- watching ------------------------------------------------------------------------------

    def take_fault(self) -> None:
        """Raise the next injected failure, if any."""
        if self.faults:
            raise self.faults.pop(0)

    def compact(self) -> None:
        """Forget the history so far: a watch from an older version now gets 410 Gone."""
        self.compacted_at = self.world.version
        self.history.clear()

    def end_watches(self) -> None:
        """End every open watch cleanly, as a server-side timeout does."""
        self._watch_generation += 1
        self._changed.set()
        self._changed = asyncio.Event()

    async def changes(self, place: Place, *, since: str, timeout: float) -> AsyncGenerator[Change, None]:
        """The history after version `since` for `place`, then each change as it happens, until
        `end_watches()` or `timeout` seconds."""
        operation = place.operation("watch")
        self.take_fault()
        start = int(since or self.world.version)
        if start < self.compacted_at:
            raise failure(Gone, operation, f"too old resource version: {start} ({self.compacted_at})")
        generation = self._watch_generation
        deadline = asyncio.get_running_loop().time() + timeout
        seen = start
        while generation == self._watch_generation:
            fresh = [change for change in self.history if change.version > seen and place.holds(change.key)]
            seen = self.world.version
            for change in fresh:
                yield change
            changed = self._changed
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0 or generation != self._watch_generation:
                return
            try:
                await asyncio.wait_for(changed.wait(), timeout=remaining)
            except TimeoutError:
                return


def _same_but_version(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    def without_version(obj: Mapping[str, Any]) -> dict[str, Any]:
        metadata = {k: v for k, v in metadata_of(obj).items() if k != "resourceVersion"}
        return {**obj, "metadata": metadata}

    return without_version(before) == without_version(after)


def label_matcher(selector: str | None, *, operation: Operation) -> Callable[[Mapping[str, str]], bool]:
    """The equality-based selectors the servlet sends (`a=b`, `a!=b`, `a`, `!a`, comma-joined)."""
    # (key, wanted value or None for "present", whether the test holds when it matches)
    terms: list[tuple[str, str | None, bool]] = []
    for part in (selector or "").split(","):
        term = part.strip()
        if not term:
            continue
        if " in " in term or " notin " in term or "(" in term:
            raise failure(Invalid, operation, f"set-based selectors are not supported in memory: {term!r}")
        if "!=" in term:
            key, value = term.split("!=", 1)
            terms.append((key.strip(), value.strip(), False))
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            terms.append((key.strip(), value.strip(), True))
        elif term.startswith("!"):
            terms.append((term[1:].strip(), None, False))
        else:
            terms.append((term, None, True))

    def matches(labels: Mapping[str, str]) -> bool:
        for key, value, holds in terms:
            found = key in labels if value is None else labels.get(key) == value
            if found != holds:
                return False
        return True

    return matches
