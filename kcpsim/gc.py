"""The garbage collector, made instant: dependents go when their owner is gone, as the three
propagation policies say.

- Background (the default): the owner goes at once; then objects whose
  `metadata.ownerReferences` name its uid are deleted (dependents with finalizers get a
  deletionTimestamp).
- Foreground: the owner stays with a deletionTimestamp and the `foregroundDeletion` finalizer
  (world.py sets both); its dependents are deleted (in the foreground themselves when they have
  dependents of their own), and once no dependent whose reference says `blockOwnerDeletion: true`
  is left, the finalizer is removed and the owner goes.
- Orphan: the owner stays with the `orphan` finalizer until the reference to it is removed from
  every dependent; then the finalizer is removed and the owner goes.

Owners are looked up by uid within the same logical cluster.
"""

from __future__ import annotations

from typing import Any

from kcpsim.patching import clone
from kcpsim.resources import ResourceDef
from kcpsim.store import Event, Obj
from kcpsim.world import Controller, World

__all__ = ["FOREGROUND", "ORPHAN", "GarbageCollector"]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"

DependentKey = tuple[str, str, str, str]  # (storage key, cluster, namespace, name)


class GarbageCollector:
    def __init__(self, world: World) -> None:
        self.world = world
        self._dependents: dict[tuple[str, str], set[DependentKey]] = {}  # (cluster, owner uid) -> dependents
        self._waiting: dict[tuple[str, str], DependentKey] = {}  # owners in foreground deletion, by uid
        world.controllers.append(Controller(frozenset(), self.run))

    @staticmethod
    def _owners(event_obj: dict[str, object] | None) -> set[str]:
        meta = (event_obj or {}).get("metadata") or {}
        refs = meta.get("ownerReferences") if isinstance(meta, dict) else None
        return {str(r.get("uid")) for r in refs or [] if isinstance(r, dict) and r.get("uid")}

    def run(self, events: list[Event]) -> None:
        for event in events:
            key = (event.storage_key, event.cluster, event.namespace, event.obj["metadata"]["name"])
            before, after = self._owners(event.old), self._owners(event.obj if event.type != "DELETED" else None)
            for uid in before - after:
                self._dependents.get((event.cluster, uid), set()).discard(key)
            for uid in after:
                self._dependents.setdefault((event.cluster, uid), set()).add(key)
            uid = str(event.obj["metadata"].get("uid", ""))
            if event.type == "DELETED":
                self._waiting.pop((event.cluster, uid), None)
                self._collect(event.cluster, uid)
            else:
                self._finalize(key, event.obj)
            for owner_uid in before - after:  # a dependent went (or let go): its owner may be free
                owner = self._waiting.get((event.cluster, owner_uid))
                if owner is not None:
                    self._finish_foreground(owner)

    def _rdef(self, cluster: str, storage_key: str) -> ResourceDef | None:
        return next((r for r in self.world.catalog.served(cluster) if r.storage_key == storage_key), None)

    def _live_dependents(self, cluster: str, owner_uid: str) -> list[tuple[DependentKey, Obj, ResourceDef]]:
        """The owner's dependents as stored now, those that still name it."""
        found = []
        for dep in sorted(self._dependents.get((cluster, owner_uid), set())):
            storage_key, dep_cluster, namespace, name = dep
            obj = self.world.store.get(storage_key, dep_cluster, namespace, name)
            rdef = self._rdef(dep_cluster, storage_key)
            if obj is not None and rdef is not None and owner_uid in self._owners(obj):
                found.append((dep, obj, rdef))
        return found

    def _collect(self, cluster: str, owner_uid: str) -> None:
        """Background propagation, once the owner is gone."""
        dependents = self._live_dependents(cluster, owner_uid)
        self._dependents.pop((cluster, owner_uid), None)
        for (_, dep_cluster, namespace, name), obj, rdef in dependents:
            if not obj["metadata"].get("deletionTimestamp"):
                self.world.delete(rdef, dep_cluster, namespace, name)

    def _finalize(self, key: DependentKey, obj: Obj) -> None:
        meta = obj["metadata"]
        finalizers = meta.get("finalizers") or []
        if not meta.get("deletionTimestamp") or not (ORPHAN in finalizers or FOREGROUND in finalizers):
            return
        cluster = key[1]
        uid = str(meta.get("uid", ""))
        if ORPHAN in finalizers:
            for (_, dep_cluster, dep_ns, dep_name), dep, rdef in self._live_dependents(cluster, uid):
                updated = clone(dep)
                refs = [r for r in updated["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
                if refs:
                    updated["metadata"]["ownerReferences"] = refs
                else:
                    updated["metadata"].pop("ownerReferences", None)
                self._write(rdef, dep_cluster, dep_ns, dep_name, updated, dep)
            self._drop_finalizer(key, ORPHAN)
            return
        if (cluster, uid) in self._waiting:
            return
        self._waiting[(cluster, uid)] = key
        for (_, dep_cluster, dep_ns, dep_name), dep, rdef in self._live_dependents(cluster, uid):
            if not dep["metadata"].get("deletionTimestamp"):
                has_own = bool(self._dependents.get((dep_cluster, str(dep["metadata"].get("uid", "")))))
                self.world.delete(rdef, dep_cluster, dep_ns, dep_name, propagation="Foreground" if has_own else None)
        self._finish_foreground(key)

    def _finish_foreground(self, key: DependentKey) -> None:
        storage_key, cluster, namespace, name = key
        owner = self.world.store.get(storage_key, cluster, namespace, name)
        if owner is None:
            return
        uid = str(owner["metadata"].get("uid", ""))
        blocking = [
            dep
            for _, dep, _ in self._live_dependents(cluster, uid)
            if any(r.get("uid") == uid and r.get("blockOwnerDeletion") for r in dep["metadata"]["ownerReferences"])
        ]
        if not blocking:
            self._waiting.pop((cluster, uid), None)
            self._drop_finalizer(key, FOREGROUND)

    def _drop_finalizer(self, key: DependentKey, finalizer: str) -> None:
        storage_key, cluster, namespace, name = key
        obj = self.world.store.get(storage_key, cluster, namespace, name)
        rdef = self._rdef(cluster, storage_key)
        if obj is None or rdef is None or finalizer not in (obj["metadata"].get("finalizers") or []):
            return
        updated = clone(obj)
        updated["metadata"]["finalizers"] = [f for f in obj["metadata"]["finalizers"] if f != finalizer]
        self._write(rdef, cluster, namespace, name, updated, obj)

    def _write(self, rdef: ResourceDef, cluster: str, namespace: str, name: str, new: Obj, old: Any) -> None:
        self.world.update(
            rdef, cluster, namespace, name, new, version=rdef.versions[0], manager="garbage-collector", old=old
        )
