"""The garbage collector, made instant: dependents go when their owner is gone.

Objects whose `metadata.ownerReferences` name a deleted object's uid are deleted (background
propagation; dependents with finalizers get a deletionTimestamp), unless the owner was deleted
with `propagationPolicy: Orphan`, in which case the reference is removed instead. Owners are
looked up by uid within the same logical cluster. `blockOwnerDeletion` and foreground deletion are
not simulated.
"""

from __future__ import annotations

from kcpsim.patching import clone
from kcpsim.resources import ResourceDef
from kcpsim.store import Event
from kcpsim.world import Controller, World

DependentKey = tuple[str, str, str, str]  # (storage key, cluster, namespace, name)


class GarbageCollector:
    def __init__(self, world: World) -> None:
        self.world = world
        self._dependents: dict[tuple[str, str], set[DependentKey]] = {}  # (cluster, owner uid) -> dependents
        world.controllers.append(Controller(frozenset(), self.run))

    def _owners(self, event_obj: dict[str, object] | None) -> set[str]:
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
            if event.type == "DELETED":
                self._collect(event.cluster, str(event.obj["metadata"].get("uid", "")))

    def _rdef(self, cluster: str, storage_key: str) -> ResourceDef | None:
        return next((r for r in self.world.catalog.served(cluster) if r.storage_key == storage_key), None)

    def _collect(self, cluster: str, owner_uid: str) -> None:
        dependents = self._dependents.pop((cluster, owner_uid), set())
        orphan = owner_uid in self.world.orphan_uids
        self.world.orphan_uids.discard(owner_uid)
        for storage_key, dep_cluster, namespace, name in sorted(dependents):
            obj = self.world.store.get(storage_key, dep_cluster, namespace, name)
            rdef = self._rdef(dep_cluster, storage_key)
            if obj is None or rdef is None:
                continue
            if orphan:
                updated = clone(obj)
                refs = [r for r in updated["metadata"].get("ownerReferences") or [] if r.get("uid") != owner_uid]
                if refs:
                    updated["metadata"]["ownerReferences"] = refs
                else:
                    updated["metadata"].pop("ownerReferences", None)
                self.world.update(
                    rdef,
                    dep_cluster,
                    namespace,
                    name,
                    updated,
                    version=rdef.versions[0],
                    manager="garbage-collector",
                    old=obj,
                )
            elif not obj["metadata"].get("deletionTimestamp"):
                self.world.delete(rdef, dep_cluster, namespace, name)
