"""Objects, the global resourceVersion counter, watch history and watch subscriptions.

One store backs every logical cluster, like one etcd backs one kcp shard: a single
`resourceVersion` sequence, and objects keyed by (storage key, logical cluster, namespace, name).
The storage key is `<group>/<plural>` plus `:<identity hash>` for resources bound from an
APIExport, so a wildcard list over all clusters finds exactly the objects of one export.
The store does not validate or default anything; callers hand it finished objects. It is used
from the server's event loop thread only.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

import attrs

Obj = dict[str, Any]
ObjKey = tuple[str, str, str]  # (cluster, namespace, name)


@attrs.define
class Event:
    """One change, kept in the history for watches that resume from an older version."""

    rv: int
    storage_key: str
    cluster: str
    namespace: str
    type: str  # ADDED | MODIFIED | DELETED
    obj: Obj
    old: Obj | None
    encoded: dict[tuple[str, str, bool], bytes] = attrs.field(factory=dict)


@attrs.define(eq=False)
class Watcher:
    """A subscription; `cluster`/`namespace` of None mean all."""

    storage_key: str
    cluster: str | None
    namespace: str | None
    queue: asyncio.Queue[Event | None]


class Store:
    def __init__(self, *, history_size: int, start_rv: int = 1000) -> None:
        self.rv = start_rv
        self.history: deque[Event] = deque(maxlen=history_size)
        self.compacted_rv = start_rv  # events with rv <= this are no longer in the history
        self._objects: dict[str, dict[str, dict[tuple[str, str], Obj]]] = {}
        self._watchers: dict[str, list[Watcher]] = {}
        self.listeners: list[Callable[[Event], None]] = []
        self._key_versions: dict[str, int] = {}
        self._sorted: dict[tuple[str, str | None, str | None], tuple[int, list[ObjKey]]] = {}

    def set_history_size(self, size: int) -> None:
        kept = list(self.history)[-size:] if size else []
        dropped = len(self.history) - len(kept)
        if dropped:
            self.compacted_rv = list(self.history)[dropped - 1].rv
        self.history = deque(kept, maxlen=size)

    def next_rv(self) -> int:
        self.rv += 1
        return self.rv

    # ---- reads ---------------------------------------------------------------------------------
    def get(self, storage_key: str, cluster: str, namespace: str, name: str) -> Obj | None:
        return self._objects.get(storage_key, {}).get(cluster, {}).get((namespace, name))

    def iter(self, storage_key: str, cluster: str | None, namespace: str | None = None) -> Iterator[tuple[ObjKey, Obj]]:
        by_cluster = self._objects.get(storage_key, {})
        clusters = [cluster] if cluster is not None else list(by_cluster)
        for name_of_cluster in clusters:
            for (ns, name), obj in by_cluster.get(name_of_cluster, {}).items():
                if namespace is None or ns == namespace:
                    yield (name_of_cluster, ns, name), obj

    def sorted_keys(self, storage_key: str, cluster: str | None, namespace: str | None = None) -> list[ObjKey]:
        """Keys in list order, cached until an object of this storage key is added or removed."""
        version = self._key_versions.get(storage_key, 0)
        cached = self._sorted.get((storage_key, cluster, namespace))
        if cached is not None and cached[0] == version:
            return cached[1]
        keys = sorted(key for key, _ in self.iter(storage_key, cluster, namespace))
        self._sorted[(storage_key, cluster, namespace)] = (version, keys)
        return keys

    def get_by_key(self, storage_key: str, key: ObjKey) -> Obj:
        return self._objects[storage_key][key[0]][(key[1], key[2])]

    def sorted_items(
        self, storage_key: str, cluster: str | None, namespace: str | None = None
    ) -> list[tuple[ObjKey, Obj]]:
        return [(key, self.get_by_key(storage_key, key)) for key in self.sorted_keys(storage_key, cluster, namespace)]

    def clusters_with(self, storage_key: str) -> list[str]:
        return [c for c, objs in self._objects.get(storage_key, {}).items() if objs]

    def storage_keys(self) -> list[str]:
        return list(self._objects)

    # ---- writes --------------------------------------------------------------------------------
    def put(self, storage_key: str, cluster: str, obj: Obj, *, old: Obj | None) -> Obj:
        """Store `obj` (already complete), stamp a new resourceVersion, emit ADDED/MODIFIED."""
        rv = self.next_rv()
        obj["metadata"]["resourceVersion"] = str(rv)
        meta = obj["metadata"]
        namespace = meta.get("namespace") or ""
        bucket = self._objects.setdefault(storage_key, {}).setdefault(cluster, {})
        if old is None:
            self._key_versions[storage_key] = self._key_versions.get(storage_key, 0) + 1
        bucket[(namespace, meta["name"])] = obj
        self._emit(Event(rv, storage_key, cluster, namespace, "MODIFIED" if old is not None else "ADDED", obj, old))
        return obj

    def remove(self, storage_key: str, cluster: str, namespace: str, name: str) -> Obj | None:
        objs = self._objects.get(storage_key, {}).get(cluster, {})
        old = objs.pop((namespace, name), None)
        if old is None:
            return None
        self._key_versions[storage_key] = self._key_versions.get(storage_key, 0) + 1
        rv = self.next_rv()
        # The DELETED event carries the last state with a fresh resourceVersion, as etcd3 does.
        gone = {**old, "metadata": {**old["metadata"], "resourceVersion": str(rv)}}
        self._emit(Event(rv, storage_key, cluster, namespace, "DELETED", gone, old))
        return gone

    def _emit(self, event: Event) -> None:
        if len(self.history) == self.history.maxlen and self.history:
            self.compacted_rv = self.history[0].rv
        self.history.append(event)
        for watcher in self._watchers.get(event.storage_key, ()):
            if watcher.cluster is not None and watcher.cluster != event.cluster:
                continue
            if watcher.namespace is not None and watcher.namespace != event.namespace:
                continue
            watcher.queue.put_nowait(event)
        for listener in self.listeners:
            listener(event)

    # ---- watches -------------------------------------------------------------------------------
    def history_since(self, rv: int) -> list[Event] | None:
        """Events after `rv`, or None when some of them are no longer retained (410 Gone)."""
        if rv < self.compacted_rv:
            return None
        return [e for e in self.history if e.rv > rv]

    def subscribe(self, storage_key: str, cluster: str | None, namespace: str | None) -> Watcher:
        watcher = Watcher(storage_key, cluster, namespace, asyncio.Queue())
        self._watchers.setdefault(storage_key, []).append(watcher)
        return watcher

    def unsubscribe(self, watcher: Watcher) -> None:
        watchers = self._watchers.get(watcher.storage_key, [])
        if watcher in watchers:
            watchers.remove(watcher)

    def all_watchers(self) -> list[Watcher]:
        return [w for ws in self._watchers.values() for w in ws]
