"""What is served per logical cluster: built-in kinds, kcp's own types, CRDs and bound schemas.

A `ResourceDef` is everything the HTTP layer needs to serve one resource: names, scope, versions,
whether it has a status subresource, and where its objects are stored. `Catalog` answers "what
does this cluster serve" from the objects in the store (CRDs, APIBindings, APIExports, schemas)
and caches the answer until one of those objects changes. It does not validate objects.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import attrs

from kcpsim.store import Event, Store

SERVICE_CLUSTER = ""  # the plain Kubernetes cluster served at `/`


@attrs.frozen
class ResourceDef:
    group: str
    versions: tuple[str, ...]  # served versions; the first is the storage version
    plural: str
    singular: str
    kind: str
    namespaced: bool
    status: bool = False
    builtin: bool = False  # built-in kinds accept strategic merge patches; custom resources do not
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    identity: str = ""  # APIExport identity hash for bound resources
    schemas: tuple[tuple[str, Any], ...] = ()  # (version, openAPI schema) for validation
    printer_columns: tuple[tuple[str, Any], ...] = ()  # (version, additionalPrinterColumns) for tables
    generation: bool = True  # built-in core kinds do not track metadata.generation
    unconditional_update: bool = False  # PUT without resourceVersion allowed (built-ins only)
    verbs: tuple[str, ...] = ()  # discovery verbs when not the usual eight (create-only reviews)
    scales: tuple[tuple[str, Any], ...] = ()  # (version, `subresources.scale`) of CRD versions with one

    @property
    def storage_key(self) -> str:
        base = f"{self.group}/{self.plural}"
        return f"{base}:{self.identity}" if self.identity else base

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    def schema_for(self, version: str) -> Any:
        return dict(self.schemas).get(version)

    def scale_for(self, version: str) -> Any:
        """The version's scale subresource (`specReplicasPath`, ...), None without one."""
        return dict(self.scales).get(version)


def _builtin(
    group: str,
    version: str,
    plural: str,
    kind: str,
    *,
    namespaced: bool,
    status: bool = False,
    short: tuple[str, ...] = (),
    generation: bool = False,
) -> ResourceDef:
    return ResourceDef(
        group=group,
        versions=(version,),
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=namespaced,
        status=status,
        builtin=True,
        short_names=short,
        generation=generation,
        unconditional_update=True,
    )


def _review(group: str, kind: str) -> ResourceDef:
    """A create-only review of the caller (answered by kcpsim/access.py, never stored)."""
    plural = f"{kind.lower()}s"
    return ResourceDef(
        group=group,
        versions=("v1",),
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=False,
        builtin=True,
        generation=False,
        verbs=("create",),
    )


BUILTINS: tuple[ResourceDef, ...] = (
    _builtin("", "v1", "namespaces", "Namespace", namespaced=False, status=True, short=("ns",)),
    _builtin("", "v1", "secrets", "Secret", namespaced=True),
    _builtin("", "v1", "configmaps", "ConfigMap", namespaced=True, short=("cm",)),
    _builtin("", "v1", "serviceaccounts", "ServiceAccount", namespaced=True, short=("sa",)),
    _builtin("", "v1", "events", "Event", namespaced=True, short=("ev",)),
    _builtin("coordination.k8s.io", "v1", "leases", "Lease", namespaced=True),
    _builtin("rbac.authorization.k8s.io", "v1", "roles", "Role", namespaced=True),
    _builtin("rbac.authorization.k8s.io", "v1", "rolebindings", "RoleBinding", namespaced=True),
    _builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", namespaced=False),
    _builtin("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", namespaced=False),
    # Answered by kcpsim/access.py, never stored.
    _review("authorization.k8s.io", "SelfSubjectAccessReview"),
    _review("authentication.k8s.io", "SelfSubjectReview"),
    _builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        namespaced=False,
        status=True,
        short=("crd", "crds"),
        generation=True,
    ),
)


def _kcp(
    group: str, versions: tuple[str, ...], plural: str, kind: str, *, status: bool, short: tuple[str, ...] = ()
) -> ResourceDef:
    # kcp's types are CRDs in kcp itself: custom-resource rules apply (no strategic merge).
    return ResourceDef(
        group=group,
        versions=versions,
        plural=plural,
        singular=kind.lower(),
        kind=kind,
        namespaced=False,
        status=status,
        categories=("kcp",),
        short_names=short,
    )


KCP_TYPES: tuple[ResourceDef, ...] = (
    _kcp("core.kcp.io", ("v1alpha1",), "logicalclusters", "LogicalCluster", status=True),
    _kcp("tenancy.kcp.io", ("v1alpha1",), "workspaces", "Workspace", status=True, short=("ws",)),
    _kcp("apis.kcp.io", ("v1alpha1",), "apiresourceschemas", "APIResourceSchema", status=False),
    # Stored as v1alpha2 (the storage version since kcp 0.28), also served as v1alpha1.
    _kcp("apis.kcp.io", ("v1alpha2", "v1alpha1"), "apiexports", "APIExport", status=True),
    _kcp("apis.kcp.io", ("v1alpha1",), "apiexportendpointslices", "APIExportEndpointSlice", status=True),
    _kcp("apis.kcp.io", ("v1alpha2", "v1alpha1"), "apibindings", "APIBinding", status=True),
)

CRD_KEY = "apiextensions.k8s.io/customresourcedefinitions"
BINDING_KEY = "apis.kcp.io/apibindings"
EXPORT_KEY = "apis.kcp.io/apiexports"
SCHEMA_KEY = "apis.kcp.io/apiresourceschemas"
_CATALOG_KEYS = {CRD_KEY, BINDING_KEY, EXPORT_KEY, SCHEMA_KEY}


def def_from_crd_like(spec: dict[str, Any], *, identity: str = "", crd: bool) -> ResourceDef:
    """A ResourceDef from a CRD spec (`crd=True`) or an APIResourceSchema spec."""
    names = spec.get("names") or {}
    versions = [v for v in spec.get("versions") or [] if v.get("served", True)]
    storage = [v["name"] for v in versions if v.get("storage")]
    ordered = tuple(storage + [v["name"] for v in versions if v["name"] not in storage])
    has_status = any("status" in (v.get("subresources") or {}) for v in versions)
    schemas = tuple(
        (v["name"], ((v.get("schema") or {}).get("openAPIV3Schema") if crd else v.get("schema"))) for v in versions
    )
    return ResourceDef(
        group=spec.get("group", ""),
        versions=ordered,
        plural=names.get("plural", ""),
        singular=names.get("singular") or names.get("kind", "").lower(),
        kind=names.get("kind", ""),
        namespaced=spec.get("scope") == "Namespaced",
        status=has_status,
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        identity=identity,
        schemas=schemas,
        printer_columns=tuple((v["name"], tuple(v.get("additionalPrinterColumns") or ())) for v in versions),
        scales=tuple(
            (v["name"], v["subresources"]["scale"])
            for v in versions
            if isinstance((v.get("subresources") or {}).get("scale"), dict)
        ),
    )


class Catalog:
    """Served resources per cluster, recomputed when CRDs, bindings, exports or schemas change."""

    def __init__(self, store: Store, *, kcp_clusters: Iterable[str]) -> None:
        self._store = store
        self.kcp_clusters = set(kcp_clusters)
        self._cache: dict[str, list[ResourceDef]] = {}
        store.listeners.append(self._on_event)

    def _on_event(self, event: Event) -> None:
        if event.storage_key in _CATALOG_KEYS:
            self._cache.clear()

    def invalidate(self) -> None:
        self._cache.clear()

    def served(self, cluster: str) -> list[ResourceDef]:
        if cluster not in self._cache:
            self._cache[cluster] = self._compute(cluster)
        return self._cache[cluster]

    def lookup(self, cluster: str, group: str, version: str, plural: str) -> ResourceDef | None:
        for rdef in self.served(cluster):
            if rdef.group == group and rdef.plural == plural and version in rdef.versions:
                return rdef
        return None

    def _compute(self, cluster: str) -> list[ResourceDef]:
        served = list(BUILTINS)
        if cluster in self.kcp_clusters:
            served += KCP_TYPES
        taken = {(r.group, r.plural) for r in served}
        for _, crd in self._store.iter(CRD_KEY, cluster):
            if crd["metadata"].get("deletionTimestamp") and not crd["metadata"].get("finalizers"):
                continue
            rdef = def_from_crd_like(crd.get("spec") or {}, crd=True)
            if (rdef.group, rdef.plural) not in taken:
                served.append(rdef)
                taken.add((rdef.group, rdef.plural))
        if cluster in self.kcp_clusters:
            for _, binding in self._store.sorted_items(BINDING_KEY, cluster):
                for rdef in self.bound_defs(binding):
                    if (rdef.group, rdef.plural) not in taken:
                        served.append(rdef)
                        taken.add((rdef.group, rdef.plural))
        return served

    def bound_defs(self, binding: dict[str, Any]) -> list[ResourceDef]:
        """The resources a Bound APIBinding serves, from the schemas its status records."""
        status = binding.get("status") or {}
        if status.get("phase") != "Bound":
            return []
        export_cluster = status.get("apiExportClusterName", "")
        out = []
        for bound in status.get("boundResources") or []:
            schema_ref = bound.get("schema") or {}
            schema = self._store.get(SCHEMA_KEY, export_cluster, "", schema_ref.get("name", ""))
            if schema is None:
                continue
            out.append(
                def_from_crd_like(schema.get("spec") or {}, identity=schema_ref.get("identityHash", ""), crd=False)
            )
        return out
