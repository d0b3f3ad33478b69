"""The APIExport virtual workspace: which resources it serves and who may do what through it.

`/services/apiexport/<export cluster>/<export name>/clusters/<lc or *>/...` serves the export's
resources (with its identity), its claimed built-in resources (LogicalClusters included), the
resources of other exports it claims by their identity hash, and APIBindings (read-only).
Wildcard requests may only list/watch, across all namespaces; per-cluster requests need a binding
to this export in that cluster, and claimed resources need an accepted claim. Claimed objects
and bindings are filtered by kcp's labels. Request parsing and rendering stay in server.py.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from kcpsim import errors
from kcpsim.kcp import CLAIM_LABEL_PREFIX, EXPORT_LABEL, Kcp, claim_hash, export_hash
from kcpsim.resources import BINDING_KEY, BUILTINS, EXPORT_KEY, KCP_TYPES, SCHEMA_KEY, ResourceDef, def_from_crd_like
from kcpsim.store import Obj

_BINDINGS = next(r for r in KCP_TYPES if r.plural == "apibindings")
# Claimable like a built-in: every workspace has its LogicalCluster `cluster`, with `kcp.io/path`.
_LOGICALCLUSTERS = next(r for r in KCP_TYPES if r.plural == "logicalclusters")
_READ_VERBS = {"get", "list", "watch"}


@attrs.frozen
class Served:
    rdef: ResourceDef
    role: str  # exported | claimed | bindings
    claim: tuple[str, str, str] = ("", "", "")
    verbs: tuple[str, ...] = ("*",)


class VirtualWorkspace:
    def __init__(self, kcp: Kcp, export_cluster: str, export_name: str, *, shard: int = 0) -> None:
        self.kcp = kcp
        self.shard = shard  # the kcp shard whose URL was asked: it serves its own workspaces only
        self.world = kcp.world
        self.export_cluster = export_cluster
        self.export_name = export_name
        self.user = "kcpsim"  # the caller, named in denials (access.py sets it)
        export = self.world.store.get(EXPORT_KEY, export_cluster, "", export_name)
        if export is None or not (export.get("status") or {}).get("identityHash"):
            raise errors.resource_not_served()
        self.export: Obj = export
        self.identity: str = export["status"]["identityHash"]
        self.hash = export_hash(export_cluster, export_name)
        self.served = self._served()

    def _served(self) -> list[Served]:
        out: list[Served] = []
        taken: set[tuple[str, str]] = set()
        spec = self.export.get("spec") or {}
        for res in spec.get("resources") or []:
            schema = self.world.store.get(SCHEMA_KEY, self.export_cluster, "", res.get("schema", ""))
            if schema is None:
                continue
            rdef = def_from_crd_like(schema.get("spec") or {}, identity=self.identity, crd=False)
            out.append(Served(rdef, "exported"))
            taken.add((rdef.group, rdef.plural))
        for claim in spec.get("permissionClaims") or []:
            key = (claim.get("group") or "", claim.get("resource") or "")
            identity = claim.get("identityHash") or ""
            if key in taken:
                continue
            claimed = self._foreign(*key, identity) if identity else None
            if claimed is None and not identity:
                claimed = next((r for r in (*BUILTINS, _LOGICALCLUSTERS) if (r.group, r.plural) == key), None)
            if claimed is not None:
                out.append(Served(claimed, "claimed", (key[0], key[1], identity), tuple(claim.get("verbs") or ["*"])))
                taken.add(key)
        if ("apis.kcp.io", "apibindings") not in taken:
            out.append(Served(_BINDINGS, "bindings"))
        return out

    def _foreign(self, group: str, plural: str, identity: str) -> ResourceDef | None:
        """The resource another export with this identity provides (a claim with `identityHash`)."""
        for cluster in self.world.catalog.kcp_clusters:
            for _, export in self.world.store.iter(EXPORT_KEY, cluster):
                if (export.get("status") or {}).get("identityHash") != identity:
                    continue
                for res in (export.get("spec") or {}).get("resources") or []:
                    schema = self.world.store.get(SCHEMA_KEY, cluster, "", res.get("schema", ""))
                    rdef = None if schema is None else def_from_crd_like(schema["spec"], identity=identity, crd=False)
                    if rdef is not None and (rdef.group, rdef.plural) == (group, plural):
                        return rdef
        return None

    def lookup(self, group: str, version: str, plural: str) -> Served:
        for served in self.served:
            if served.rdef.group == group and served.rdef.plural == plural and version in served.rdef.versions:
                return served
        raise errors.resource_not_served()

    def defs(self) -> list[ResourceDef]:
        return [s.rdef for s in self.served]

    def verbs_for(self, rdef: ResourceDef) -> list[str]:
        if rdef.plural == "apibindings" and rdef.group == "apis.kcp.io":
            return ["get", "list", "watch"]
        return ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]

    def visible(self, served: Served) -> Callable[[Obj], bool]:
        """Which stored objects the VW shows for a resource (on this shard)."""
        shown = self._visible(served)
        if self.kcp.shards.count == 1:
            return shown
        shards, shard = self.kcp.shards, self.shard
        return lambda obj: shards.serves(shard, obj) and shown(obj)

    def _visible(self, served: Served) -> Callable[[Obj], bool]:
        if served.role == "claimed":
            label, value = CLAIM_LABEL_PREFIX + self.hash, claim_hash(*served.claim)
            return lambda obj: (obj["metadata"].get("labels") or {}).get(label) == value
        if served.role == "bindings":
            return lambda obj: (obj["metadata"].get("labels") or {}).get(EXPORT_LABEL) == self.hash
        return lambda obj: True

    def authorize(self, *, cluster: str | None, served: Served, verb: str, namespace: str, name: str) -> None:
        rdef = served.rdef
        if served.role == "bindings" and verb not in _READ_VERBS:
            raise self._forbidden(
                rdef, verb, namespace, name, "write access to APIBinding is not allowed from virtual workspace"
            )
        if cluster is None:
            return
        if self.kcp.shards.shard_of(cluster) != self.shard:
            raise self._forbidden(
                rdef,
                verb,
                namespace,
                name,
                f"logical cluster {cluster} is not served by shard {self.kcp.shards.name(self.shard)}",
            )
        binding = self._binding_in(cluster)
        if binding is None:
            raise self._forbidden(
                rdef, verb, namespace, name, "could not find suitable APIBinding in target logical cluster"
            )
        if served.role == "exported":
            bound = {
                (b.get("group", ""), b.get("resource"))
                for b in (binding.get("status") or {}).get("boundResources") or []
            }
            if (rdef.group, rdef.plural) not in bound:
                raise self._forbidden(
                    rdef, verb, namespace, name, "failed to find suitable reason to allow access in APIBinding"
                )
        elif served.role == "claimed":
            for claim in (binding.get("spec") or {}).get("permissionClaims") or []:
                key = (claim.get("group") or "", claim.get("resource") or "", claim.get("identityHash") or "")
                if key != served.claim or claim.get("state") != "Accepted":
                    continue
                verbs = set(claim.get("verbs") or ["*"])
                if ("*" in verbs or verb in verbs) and ("*" in served.verbs or verb in served.verbs):
                    return
            raise self._forbidden(
                rdef, verb, namespace, name, "failed to find suitable reason to allow access in APIBinding"
            )

    def _binding_in(self, cluster: str) -> Obj | None:
        for _, binding in self.world.store.iter(BINDING_KEY, cluster):
            ref = ((binding.get("spec") or {}).get("reference") or {}).get("export") or {}
            if ref.get("name") != self.export_name:
                continue
            bound_to = (binding.get("status") or {}).get("apiExportClusterName") or ref.get("path")
            if bound_to == self.export_cluster or self.world.resolve(bound_to or "") == self.export_cluster:
                return binding
        return None

    def _forbidden(self, rdef: ResourceDef, verb: str, namespace: str, name: str, why: str) -> errors.StatusError:
        where = f' in the namespace "{namespace}"' if namespace else ""
        group = f'API group "{rdef.group}"'
        return errors.forbidden(
            group=rdef.group,
            plural=rdef.plural,
            name=name,
            why=f'User "{self.user}" cannot {verb} resource "{rdef.plural}" in {group}{where}: {why}',
        )
