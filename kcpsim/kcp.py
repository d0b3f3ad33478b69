"""kcp's APIs on top of the Kubernetes semantics: hashes, version conversion, admission, controllers.

- Hashes and derived values (identity hash, export hash, claim hash) as kcp computes them.
- APIExport and APIBinding are stored as v1alpha2 and converted to/from v1alpha1, keeping
  v1alpha1 claims (`all: true`) in kcp's bookkeeping annotation so v1alpha1 round-trips cleanly.
- Admission: APIResourceSchema naming and immutability, APIExport schema names and claim
  identities, APIBinding export lookup/labels/finalizer/immutable reference, claim labels on
  claimed objects.
- Controllers, made instant: export identity and endpoint slice, binding status, claim labelling,
  binding deletion, LogicalCluster lock annotation, and Workspace -> logical cluster.
The virtual workspace lives in vw.py; authentication and RBAC in auth.py, rbac.py and access.py.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from kcpsim import errors
from kcpsim.patching import clone
from kcpsim.resources import BINDING_KEY, BUILTINS, EXPORT_KEY, SCHEMA_KEY, ResourceDef
from kcpsim.shards import Shards, reconcile_slice, reconcile_slices
from kcpsim.store import Event, Obj
from kcpsim.world import Controller, World, WriteContext, now

CLAIM_LABEL_PREFIX = "claimed.internal.apis.kcp.io/"
EXPORT_LABEL = "internal.apis.kcp.io/export"
PATH_ANNOTATION = "kcp.io/path"
BINDING_FINALIZER = "apis.kcp.io/apibinding-finalizer"
V1_CLAIMS_ANNOTATION = "apis.v1alpha2.kcp.io/v1alpha1-permission-claims"
PARKED_CLAIMS_ANNOTATION = "apis.v1alpha2.kcp.io/permission-claims"
PARKED_BINDING_CLAIMS_ANNOTATION = "apis.v1alpha2.kcp.io/acceptable-permission-claims"
SKIP_SLICE_ANNOTATION = "apiexports.apis.kcp.io/skip-endpointslice"
RESOURCE_BINDINGS_ANNOTATION = "internal.apis.kcp.io/resource-bindings"
SLICE_KEY = "apis.kcp.io/apiexportendpointslices"
LOGICALCLUSTER_KEY = "core.kcp.io/logicalclusters"
WORKSPACE_KEY = "tenancy.kcp.io/workspaces"
SECRET_KEY = "/secrets"
NAMESPACE_KEY = "/namespaces"

_B62 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
CLAIMABLE_BUILTINS = {(r.group, r.plural) for r in BUILTINS if r.plural != "customresourcedefinitions"} | {
    ("apiextensions.k8s.io", "customresourcedefinitions"),
    # kcp's own type every workspace has: claimed to read a workspace's path (`kcp.io/path`).
    ("core.kcp.io", "logicalclusters"),
}
_GROUPS_WITHOUT_DOT = {"apps", "batch", "extensions", "policy", "autoscaling"}


def base62(data: bytes) -> str:
    number = int.from_bytes(data, "big")
    out = ""
    while number:
        number, rest = divmod(number, 62)
        out = _B62[rest] + out
    return out or "0"


def identity_hash(key: bytes) -> str:
    return hashlib.sha256(key).hexdigest()


def export_hash(export_cluster: str, export_name: str) -> str:
    return base62(hashlib.sha224(f"{export_cluster}:{export_name}".encode()).digest())


def claim_hash(group: str, resource: str, identity: str = "") -> str:
    parts = []
    if group:
        parts.append(f'"group":{json.dumps(group)}')
    parts.append(f'"resource":{json.dumps(resource)}')
    parts.append('"verbs":null')
    if identity:
        parts.append(f'"identityHash":{json.dumps(identity)}')
    return base62(hashlib.sha224(("{" + ",".join(parts) + "}").encode()).digest())


def cluster_name_for(path: str) -> str:
    """A deterministic 16-character base36 logical cluster name for a workspace path."""
    number = int.from_bytes(hashlib.sha224(path.encode()).digest(), "big")
    out = ""
    while number and len(out) < 16:
        number, rest = divmod(number, 36)
        out = "0123456789abcdefghijklmnopqrstuvwxyz"[rest] + out
    return out.rjust(16, "0")


def vw_url(base_url: str, export_cluster: str, export_name: str) -> str:
    return f"{base_url}/services/apiexport/{export_cluster}/{export_name}"


def _claim_key(claim: dict[str, Any]) -> tuple[str, str, str]:
    return (claim.get("group") or "", claim.get("resource") or "", claim.get("identityHash") or "")


def _condition(
    conditions: list[dict[str, Any]],
    ctype: str,
    status: str,
    *,
    reason: str = "",
    message: str = "",
    severity: str = "",
) -> list[dict[str, Any]]:
    """Set one kcp condition, keeping lastTransitionTime when the status does not change."""
    out = [c for c in conditions if c.get("type") != ctype]
    previous = next((c for c in conditions if c.get("type") == ctype), None)
    cond: dict[str, Any] = {"type": ctype, "status": status}
    if status == "False":
        cond["severity"] = severity or "Error"
    if reason:
        cond["reason"] = reason
    if message:
        cond["message"] = message
    same = previous is not None and all(
        previous.get(k) == cond.get(k) for k in ("status", "reason", "message", "severity")
    )
    cond["lastTransitionTime"] = previous["lastTransitionTime"] if same and previous else now()
    out.append(cond)
    return sorted(out, key=lambda c: str(c["type"]))


# ---- conversion ------------------------------------------------------------------------------


def _ann(obj: Obj) -> dict[str, str]:
    return dict((obj.get("metadata") or {}).get("annotations") or {})


def _with_ann(obj: Obj, annotations: dict[str, str]) -> Obj:
    meta = dict(obj.get("metadata") or {})
    if annotations:
        meta["annotations"] = annotations
    else:
        meta.pop("annotations", None)
    return {**obj, "metadata": meta}


def _v1_claim_valid(claim: dict[str, Any], index: int, kind: str, name: str) -> None:
    has_all = claim.get("all") is True
    has_selector = bool(claim.get("resourceSelector"))
    if has_all == has_selector:
        raise errors.invalid(
            group="apis.kcp.io",
            kind=kind,
            name=name,
            causes=[
                (
                    f"spec.permissionClaims[{index}]",
                    'Invalid value: "object": either "all" or "resourceSelector" must be set',
                )
            ],
        )


def export_to_v1(rdef: ResourceDef, obj: Obj, version: str) -> Obj:
    if version != "v1alpha1":
        return {**obj, "apiVersion": "apis.kcp.io/v1alpha2"}
    spec2 = obj.get("spec") or {}
    spec1: dict[str, Any] = {}
    schemas = [r["schema"] for r in spec2.get("resources") or [] if "virtual" not in (r.get("storage") or {})]
    if schemas:
        spec1["latestResourceSchemas"] = schemas
    for field in ("identity", "maximalPermissionPolicy"):
        if field in spec2:
            spec1[field] = clone(spec2[field])
    annotations = _ann(obj)
    originals = json.loads(annotations.pop(V1_CLAIMS_ANNOTATION, "[]") or "[]")
    claims = []
    parked = False
    for claim in spec2.get("permissionClaims") or []:
        original = next((o for o in originals if _claim_key(o) == _claim_key(claim)), None)
        converted = {"group": claim.get("group", ""), "resource": claim["resource"]}
        if claim.get("identityHash"):
            converted["identityHash"] = claim["identityHash"]
        if original is not None:
            converted.update({k: v for k, v in original.items() if k in ("all", "resourceSelector")})
        claims.append(converted)
        parked = parked or claim.get("verbs") != ["*"]
    if claims:
        spec1["permissionClaims"] = claims
    if parked:
        annotations[PARKED_CLAIMS_ANNOTATION] = json.dumps(spec2.get("permissionClaims"), separators=(",", ":"))
    return _with_ann({**obj, "apiVersion": "apis.kcp.io/v1alpha1", "spec": spec1}, annotations)


def export_to_storage(rdef: ResourceDef, body: Obj, version: str, old: Obj | None) -> Obj:
    name = (body.get("metadata") or {}).get("name", "")
    body["kind"] = "APIExport"
    if version == "v1alpha2":
        spec = body.get("spec") or {}
        for index, claim in enumerate(spec.get("permissionClaims") or []):
            if not claim.get("verbs"):
                raise errors.invalid(
                    group="apis.kcp.io",
                    kind="APIExport",
                    name=name,
                    causes=[(f"spec.permissionClaims[{index}].verbs", "Required value")],
                )
            claim.setdefault("group", "")
        for index, res in enumerate(spec.get("resources") or []):
            storage = res.setdefault("storage", {"crd": {}})
            if ("crd" in storage) == ("virtual" in storage):
                raise errors.invalid(
                    group="apis.kcp.io",
                    kind="APIExport",
                    name=name,
                    causes=[
                        (
                            f"spec.resources[{index}].storage",
                            'Invalid value: "object": Exactly one of crd or virtual must be set',
                        )
                    ],
                )
        body["apiVersion"] = "apis.kcp.io/v1alpha2"
        return body
    spec1 = body.get("spec") or {}
    annotations = _ann(body)
    parked = {_claim_key(c): c for c in json.loads(annotations.pop(PARKED_CLAIMS_ANNOTATION, "[]") or "[]")}
    resources = []
    for schema in spec1.get("latestResourceSchemas") or []:
        parts = schema.split(".")
        if len(parts) < 3:
            raise errors.StatusError(
                500,
                "InternalError",
                f'Internal error occurred: failed to convert APIExport: invalid schema name "{schema}"',
            )
        group = ".".join(parts[2:])
        resources.append(
            {"group": "" if group == "core" else group, "name": parts[1], "schema": schema, "storage": {"crd": {}}}
        )
    claims2 = []
    originals = []
    seen: set[tuple[str, str, str]] = set()
    for index, claim in enumerate(spec1.get("permissionClaims") or []):
        _v1_claim_valid(claim, index, "APIExport", name)
        key = _claim_key(claim)
        if key in seen:
            raise errors.invalid(
                group="apis.kcp.io",
                kind="APIExport",
                name=name,
                causes=[
                    (
                        f"spec.permissionClaims[{index}]",
                        f'Duplicate value: {{"group":"{key[0]}","resource":"{key[1]}"}}',
                    )
                ],
            )
        seen.add(key)
        converted = {"group": key[0], "resource": key[1], "verbs": (parked.get(key) or {}).get("verbs") or ["*"]}
        if key[2]:
            converted["identityHash"] = key[2]
        claims2.append(converted)
        original = {
            k: v
            for k, v in claim.items()
            if k in ("group", "resource", "identityHash", "all", "resourceSelector") and v not in ("", None)
        }
        originals.append(original)
    spec2: dict[str, Any] = {k: clone(v) for k, v in spec1.items() if k in ("identity", "maximalPermissionPolicy")}
    if resources:
        spec2["resources"] = resources
    if claims2:
        spec2["permissionClaims"] = claims2
        annotations[V1_CLAIMS_ANNOTATION] = json.dumps(originals, separators=(",", ":"))
    return _with_ann({**body, "apiVersion": "apis.kcp.io/v1alpha2", "spec": spec2}, annotations)


def binding_to_v1(rdef: ResourceDef, obj: Obj, version: str) -> Obj:
    if version != "v1alpha1":
        return {**obj, "apiVersion": "apis.kcp.io/v1alpha2"}
    spec2 = obj.get("spec") or {}
    annotations = _ann(obj)
    claims, parked = [], []
    for claim in spec2.get("permissionClaims") or []:
        if claim.get("verbs") == ["*"] and (claim.get("selector") or {}).get("matchAll"):
            converted = {
                "group": claim.get("group", ""),
                "resource": claim["resource"],
                "all": True,
                "state": claim.get("state"),
            }
            if claim.get("identityHash"):
                converted["identityHash"] = claim["identityHash"]
            claims.append(converted)
        else:
            parked.append(claim)
    if parked:
        annotations[PARKED_BINDING_CLAIMS_ANNOTATION] = json.dumps(parked, separators=(",", ":"))
    spec1: dict[str, Any] = {"reference": clone(spec2.get("reference") or {})}
    if claims:
        spec1["permissionClaims"] = claims
    status = clone(obj.get("status") or {})
    if "exportPermissionClaims" in status:
        status["exportPermissionClaims"] = [
            {k: v for k, v in c.items() if k in ("group", "resource", "identityHash")}
            for c in status["exportPermissionClaims"]
        ]
    if "appliedPermissionClaims" in status:
        status["appliedPermissionClaims"] = [
            {**{k: v for k, v in c.items() if k in ("group", "resource", "identityHash")}, "all": True}
            for c in status["appliedPermissionClaims"]
        ]
    out: Obj = {**obj, "apiVersion": "apis.kcp.io/v1alpha1", "spec": spec1}
    if status:
        out["status"] = status
    return _with_ann(out, annotations)


def binding_to_storage(rdef: ResourceDef, body: Obj, version: str, old: Obj | None) -> Obj:
    name = (body.get("metadata") or {}).get("name", "")
    body["kind"] = "APIBinding"
    if version == "v1alpha2":
        for index, claim in enumerate((body.get("spec") or {}).get("permissionClaims") or []):
            claim.setdefault("group", "")
            claim.setdefault("identityHash", "")
            for field in ("verbs", "selector"):
                if not claim.get(field):
                    raise errors.invalid(
                        group="apis.kcp.io",
                        kind="APIBinding",
                        name=name,
                        causes=[(f"spec.permissionClaims[{index}].{field}", "Required value")],
                    )
            if claim.get("state") not in ("Accepted", "Rejected"):
                raise errors.invalid(
                    group="apis.kcp.io",
                    kind="APIBinding",
                    name=name,
                    causes=[
                        (
                            f"spec.permissionClaims[{index}].state",
                            f'Unsupported value: "{claim.get("state", "")}": supported values: "Accepted", "Rejected"',
                        )
                    ],
                )
        body["apiVersion"] = "apis.kcp.io/v1alpha2"
        return body
    spec1 = body.get("spec") or {}
    annotations = _ann(body)
    parked = json.loads(annotations.pop(PARKED_BINDING_CLAIMS_ANNOTATION, "[]") or "[]")
    claims = []
    for index, claim in enumerate(spec1.get("permissionClaims") or []):
        _v1_claim_valid(claim, index, "APIBinding", name)
        claims.append(
            {
                "group": claim.get("group") or "",
                "resource": claim["resource"],
                "identityHash": claim.get("identityHash") or "",
                "verbs": ["*"],
                "selector": {"matchAll": True},
                "state": claim.get("state"),
            }
        )
    claims += [c for c in parked if _claim_key(c) not in {_claim_key(x) for x in claims}]
    spec2: dict[str, Any] = {"reference": clone(spec1.get("reference") or {})}
    if claims:
        spec2["permissionClaims"] = claims
    out: Obj = {**body, "apiVersion": "apis.kcp.io/v1alpha2", "spec": spec2}
    if old is not None and "status" in old:
        out["status"] = clone(old["status"])
    return _with_ann(out, annotations)


# ---- the kcp layer ---------------------------------------------------------------------------


class Kcp:
    """Admission plugins and controllers of one kcp shard, registered on a World."""

    def __init__(
        self,
        world: World,
        *,
        base_url: str = "",
        deprecated_vw_urls: bool = False,
        identity_seed: int = 0,
        shards: int = 1,
    ) -> None:
        self.world = world
        self.shards = Shards(count=shards)
        self.base_url = base_url
        self.deprecated_vw_urls = deprecated_vw_urls
        self._system = 0
        self._identity_counter = identity_seed
        self._claim_labels: dict[str, dict[tuple[str, str, str], dict[str, str]]] = {}
        world.converters[("apis.kcp.io", "apiexports")] = (export_to_v1, export_to_storage)
        world.converters[("apis.kcp.io", "apibindings")] = (binding_to_v1, binding_to_storage)
        world.mutators.append(self.admit)
        world.controllers.append(
            Controller(frozenset({EXPORT_KEY, BINDING_KEY, SCHEMA_KEY, SECRET_KEY}), self.reconcile_exports)
        )
        world.controllers.append(Controller(frozenset({EXPORT_KEY, BINDING_KEY, SCHEMA_KEY}), self.reconcile_bindings))
        world.controllers.append(Controller(frozenset({WORKSPACE_KEY}), self.reconcile_workspaces))
        world.controllers.append(
            Controller(frozenset({SLICE_KEY, EXPORT_KEY, BINDING_KEY}), lambda _: reconcile_slices(self))
        )
        # Deleting bindings wait for objects of any resource to go away, so they watch everything.
        world.controllers.append(Controller(frozenset(), self.finish_binding_deletions))
        self.deleting_bindings: set[tuple[str, str]] = set()

    @contextmanager
    def system(self) -> Iterator[None]:
        """Writes made inside are kcp's own (they may do what users may not)."""
        self._system += 1
        try:
            yield
        finally:
            self._system -= 1

    def path_of(self, cluster: str) -> str:
        info = self.world.clusters.get(cluster)
        return info.path if info and info.path else cluster

    def find_export(self, path_or_name: str, name: str) -> tuple[str, Obj] | None:
        cluster = self.world.resolve(path_or_name)
        if cluster is None:
            return None
        obj = self.world.store.get(EXPORT_KEY, cluster, "", name)
        return (cluster, obj) if obj is not None else None

    def binding_export(self, cluster: str, binding: Obj) -> tuple[str, Obj] | None:
        ref = ((binding.get("spec") or {}).get("reference") or {}).get("export") or {}
        return self.find_export(ref.get("path") or cluster, ref.get("name", ""))

    # ---- admission ---------------------------------------------------------------------------
    def admit(self, ctx: WriteContext) -> None:
        if not self.world.is_kcp(ctx.cluster):
            return
        key = (ctx.rdef.group, ctx.rdef.plural)
        if ctx.operation == "DELETE":
            return
        if key == ("apis.kcp.io", "apiresourceschemas"):
            self._admit_schema(ctx)
        elif key == ("apis.kcp.io", "apiexports"):
            self._admit_export(ctx)
        elif key == ("apis.kcp.io", "apibindings"):
            self._admit_binding(ctx)
        elif key == ("tenancy.kcp.io", "workspaces") and ctx.operation == "CREATE":
            # kcp defaults a workspace's type to its parent type's default child type: the root's
            # children are organizations, an organization's and a universal's are universal.
            spec = ctx.new.setdefault("spec", {})
            if not spec.get("type"):
                spec["type"] = {"name": "organization" if ctx.cluster == "root" else "universal", "path": "root"}
        if key in CLAIMABLE_BUILTINS or ctx.rdef.identity:  # another export's resource is claimed by identity
            self._admit_claim_labels(ctx)
        annotations = ctx.new["metadata"].get("annotations") or {}
        if PATH_ANNOTATION in annotations and ctx.cluster != "root":
            # kcp's path-annotation admission forces a client-supplied path to the canonical one.
            annotations[PATH_ANNOTATION] = self.path_of(ctx.cluster)

    def _forbid(self, ctx: WriteContext, why: str) -> errors.StatusError:
        return errors.forbidden(
            group=ctx.rdef.group, plural=ctx.rdef.plural, name=ctx.new["metadata"].get("name", ""), why=why
        )

    def _admit_schema(self, ctx: WriteContext) -> None:
        name = ctx.new["metadata"]["name"]
        spec = ctx.new.get("spec") or {}
        if ctx.operation == "UPDATE":
            if ctx.old is not None and spec != (ctx.old.get("spec") or {}):
                raise self._forbid(ctx, 'spec: Invalid value: "object": is immutable')
            return
        group = spec.get("group", "")
        names = spec.get("names") or {}
        problems = []
        if group == "core":
            problems.append('spec.group: Invalid value: "core": must be empty string for the core group')
        elif group and "." not in group and group not in _GROUPS_WITHOUT_DOT:
            problems.append(f'spec.group: Invalid value: "{group}": should be a domain with at least one dot')
        for field in ("plural", "singular", "kind", "listKind"):
            if not names.get(field):
                problems.append(f"spec.names.{field}: Required value")
        suffix = f".{names.get('plural', '')}.{group or 'core'}"
        if not name.endswith(suffix):
            problems.append(f'metadata.name: Invalid value: "{name}": must end in {suffix}')
        else:
            import re

            prefix = name[: -len(suffix)]
            if not re.match(r"^[a-z]([-a-z0-9]*[a-z0-9])?$", prefix):
                problems.append(
                    f'metadata.name: Invalid value: "{name}": must match ^[a-z]([-a-z0-9]*[a-z0-9])?$ in front of {suffix}'
                )
        versions = spec.get("versions") or []
        if sum(1 for v in versions if v.get("storage")) != 1:
            problems.append("spec.versions: Invalid value: must have exactly one version marked as storage version")
        if len(versions) > 1 and not spec.get("conversion"):
            # kcp's CEL rule on the schema: several versions need a conversion strategy.
            problems.append(
                "spec.conversion: Required value: conversion is required when more than one version is defined"
            )
        if problems:
            raise self._forbid(ctx, "[" + ", ".join(problems) + "]")

    def _admit_export(self, ctx: WriteContext) -> None:
        meta = ctx.new["metadata"]
        meta["annotations"] = {**(meta.get("annotations") or {}), PATH_ANNOTATION: self.path_of(ctx.cluster)}
        spec = ctx.new.get("spec") or {}
        for index, res in enumerate(spec.get("resources") or []):
            suffix = f".{res.get('name', '')}.{res.get('group') or 'core'}"
            if not str(res.get("schema", "")).endswith(suffix):
                raise self._forbid(
                    ctx,
                    f'spec.resources[{index}].schema: Invalid value: "{res.get("schema", "")}": must end in {suffix}',
                )
        for index, claim in enumerate(spec.get("permissionClaims") or []):
            key = (claim.get("group") or "", claim.get("resource") or "")
            if not claim.get("identityHash") and key not in CLAIMABLE_BUILTINS and key[0] != "apis.kcp.io":
                raise self._forbid(
                    ctx,
                    f'spec.permissionClaims[{index}].identityHash: Invalid value: "": identityHash is required for API types that are not built-in',
                )

    def _admit_binding(self, ctx: WriteContext) -> None:
        meta = ctx.new["metadata"]
        name = meta.get("name", "")
        ref = ((ctx.new.get("spec") or {}).get("reference") or {}).get("export") or {}
        if ctx.operation == "CREATE":
            found = self.binding_export(ctx.cluster, ctx.new)
            if found is None:
                path = ref.get("path") or self.path_of(ctx.cluster)
                raise self._forbid(
                    ctx, f"unable to create APIBinding: no permission to bind to export {path}:{ref.get('name', '')}"
                )
            export_cluster, _ = found
        else:
            assert ctx.old is not None
            if (ctx.old.get("spec") or {}).get("reference") != (ctx.new.get("spec") or {}).get("reference"):
                raise errors.invalid(
                    group="apis.kcp.io",
                    kind="APIBinding",
                    name=name,
                    causes=[("spec.reference", 'Invalid value: "object": APIExport reference must not be changed')],
                )
            old_status = ctx.old.get("status") or {}
            new_status = ctx.new.get("status") or {}
            if old_status.get("phase") and not new_status.get("phase") and ctx.subresource == "status":
                raise self._forbid(ctx, f'cannot transition from "{old_status.get("phase")}" to ""')
            export_cluster = (
                old_status.get("apiExportClusterName") or (self.binding_export(ctx.cluster, ctx.new) or ("", {}))[0]
            )
        labels = {**(meta.get("labels") or {})}
        if export_cluster:
            wanted = export_hash(export_cluster, ref.get("name", ""))
            if (
                EXPORT_LABEL in labels
                and labels[EXPORT_LABEL] != wanted
                and not self._system
                and (
                    ctx.old is None
                    or (ctx.old["metadata"].get("labels") or {}).get(EXPORT_LABEL) != labels[EXPORT_LABEL]
                )
            ):
                raise self._forbid(
                    ctx,
                    f'metadata.labels[{EXPORT_LABEL}]: Invalid value: "{labels[EXPORT_LABEL]}": must be set to "{wanted}"',
                )
            labels[EXPORT_LABEL] = wanted
        meta["labels"] = labels
        meta["annotations"] = {**(meta.get("annotations") or {}), PATH_ANNOTATION: self.path_of(ctx.cluster)}
        finalizers = list(meta.get("finalizers") or [])
        deleting = ctx.old is not None and ctx.old["metadata"].get("deletionTimestamp")
        if BINDING_FINALIZER not in finalizers:
            if deleting and not self._system:
                raise self._forbid(ctx, f"removing the finalizer {BINDING_FINALIZER} is forbidden")
            if not deleting:
                finalizers.append(BINDING_FINALIZER)
        meta["finalizers"] = finalizers

    def expected_claim_labels(self, cluster: str, group: str, plural: str, identity: str = "") -> dict[str, str]:
        if cluster not in self._claim_labels:
            self._claim_labels[cluster] = self._compute_claim_labels(cluster)
        return self._claim_labels[cluster].get((group, plural, identity), {})

    def _compute_claim_labels(self, cluster: str) -> dict[tuple[str, str, str], dict[str, str]]:
        out: dict[tuple[str, str, str], dict[str, str]] = {}
        for _, binding in self.world.store.iter(BINDING_KEY, cluster):
            found = self.binding_export(cluster, binding)
            if found is None:
                continue
            export_cluster, export = found
            exported = {_claim_key(c) for c in (export.get("spec") or {}).get("permissionClaims") or []}
            for claim in (binding.get("spec") or {}).get("permissionClaims") or []:
                key = _claim_key(claim)
                if claim.get("state") == "Accepted" and key in exported:
                    label = CLAIM_LABEL_PREFIX + export_hash(export_cluster, export["metadata"]["name"])
                    out.setdefault(key, {})[label] = claim_hash(*key)
        return out

    def _admit_claim_labels(self, ctx: WriteContext) -> None:
        expected = self.expected_claim_labels(ctx.cluster, ctx.rdef.group, ctx.rdef.plural, ctx.rdef.identity)
        meta = ctx.new["metadata"]
        labels = dict(meta.get("labels") or {})
        old_labels = (ctx.old or {}).get("metadata", {}).get("labels") or {}
        for key, value in labels.items():
            if not key.startswith(CLAIM_LABEL_PREFIX) or old_labels.get(key) == value or self._system:
                continue
            if key not in expected:
                raise self._forbid(ctx, f"metadata.labels[{key}]: Forbidden: must not be set")
            if value != expected[key]:
                raise self._forbid(ctx, f'metadata.labels[{key}]: Invalid value: "{value}": must be "{expected[key]}"')
        labels = {k: v for k, v in labels.items() if not k.startswith(CLAIM_LABEL_PREFIX)} | expected
        if labels:
            meta["labels"] = labels
        else:
            meta.pop("labels", None)

    # ---- controllers -------------------------------------------------------------------------
    def _write(
        self, rdef_key: tuple[str, str], cluster: str, obj: Obj, *, old: Obj | None, status: bool = False
    ) -> Obj:
        rdef = self._rdef(cluster, *rdef_key)
        with self.system():
            if old is None:
                return self.world.create(
                    rdef, cluster, obj["metadata"].get("namespace", ""), obj, version=rdef.versions[0], manager="kcp"
                )
            return self.world.update(
                rdef,
                cluster,
                obj["metadata"].get("namespace", ""),
                obj["metadata"]["name"],
                obj,
                version=rdef.versions[0],
                manager="kcp",
                subresource="status" if status else "",
                old=old,
            )

    def write_status(self, rdef_key: tuple[str, str], cluster: str, obj: Obj, status: dict[str, Any]) -> Obj:
        """kcp's own write of `obj`'s status."""
        return self._write(rdef_key, cluster, {**obj, "status": status}, old=obj, status=True)

    def _rdef(self, cluster: str, group: str, plural: str) -> ResourceDef:
        for rdef in self.world.catalog.served(cluster):
            if rdef.group == group and rdef.plural == plural:
                return rdef
        raise KeyError((group, plural))

    def reconcile_exports(self, events: list[Event]) -> None:
        kcp_clusters = self.world.catalog.kcp_clusters
        for (cluster, _, _), export in list(self.world.store.iter(EXPORT_KEY, None)):
            if cluster in kcp_clusters:
                self._reconcile_export(cluster, export)

    def _reconcile_export(self, cluster: str, export: Obj) -> None:
        name = export["metadata"]["name"]
        spec = export.get("spec") or {}
        if not (spec.get("identity") or {}).get("secretRef"):
            self._ensure_identity_secret(cluster, name)
            updated = clone(export)
            updated.setdefault("spec", {})["identity"] = {"secretRef": {"namespace": "kcp-system", "name": name}}
            self._write(("apis.kcp.io", "apiexports"), cluster, updated, old=export)
            return
        status = export.get("status") or {}
        ref = spec["identity"]["secretRef"]
        secret = self.world.store.get(SECRET_KEY, cluster, ref.get("namespace", ""), ref.get("name", ""))
        if secret is not None and not status.get("identityHash"):
            key = base64.b64decode((secret.get("data") or {}).get("key", ""))
            new_status = {**clone(status), "identityHash": identity_hash(key)}
            new_status["conditions"] = _condition(new_status.get("conditions") or [], "IdentityValid", "True")
            export = self._write(
                ("apis.kcp.io", "apiexports"), cluster, {**export, "status": new_status}, old=export, status=True
            )
            status = new_status
        if not status.get("identityHash"):
            return
        if self.deprecated_vw_urls:  # kcp <= 0.27 listed every shard's URL, bound or not
            shards = self.shards
            wanted = [{"url": vw_url(shards.base_url(self.base_url, i), cluster, name)} for i in range(shards.count)]
            if status.get("virtualWorkspaces") != wanted:
                new_status = {**clone(status), "virtualWorkspaces": wanted}
                new_status["conditions"] = _condition(
                    new_status.get("conditions") or [], "VirtualWorkspaceURLsReady", "True"
                )
                self._write(
                    ("apis.kcp.io", "apiexports"), cluster, {**export, "status": new_status}, old=export, status=True
                )
        if SKIP_SLICE_ANNOTATION in _ann(export):
            return
        slice_obj = self.world.store.get(SLICE_KEY, cluster, "", name)
        if slice_obj is None:
            slice_obj = self._write(
                ("apis.kcp.io", "apiexportendpointslices"),
                cluster,
                {
                    "apiVersion": "apis.kcp.io/v1alpha1",
                    "kind": "APIExportEndpointSlice",
                    "metadata": {
                        "name": name,
                        "ownerReferences": [
                            {
                                "apiVersion": "apis.kcp.io/v1alpha1",
                                "kind": "APIExport",
                                "name": name,
                                "uid": export["metadata"]["uid"],
                            }
                        ],
                    },
                    "spec": {"export": {"path": self.path_of(cluster), "name": name}},
                },
                old=None,
            )
        reconcile_slice(self, cluster, slice_obj)

    def _ensure_identity_secret(self, cluster: str, name: str) -> None:
        if self.world.store.get(NAMESPACE_KEY, cluster, "", "kcp-system") is None:
            self._write(
                ("", "namespaces"),
                cluster,
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kcp-system"}},
                old=None,
            )
        if self.world.store.get(SECRET_KEY, cluster, "kcp-system", name) is None:
            self._identity_counter += 1
            raw = base64.urlsafe_b64encode(
                hashlib.sha256(f"{cluster}/{name}/{self._identity_counter}".encode()).digest()
            )[:43]
            self._write(
                ("", "secrets"),
                cluster,
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "Opaque",
                    "metadata": {"name": name, "namespace": "kcp-system"},
                    "data": {"key": base64.b64encode(raw).decode()},
                },
                old=None,
            )

    def reconcile_bindings(self, events: list[Event]) -> None:
        before = self._claim_labels
        clusters = self._clusters_to_rebind(events)
        self._claim_labels = dict(before)  # a copy in C: a comprehension over every cluster was not
        for cluster in clusters:
            self._claim_labels.pop(cluster, None)
        for cluster in clusters:
            for _, binding in list(self.world.store.iter(BINDING_KEY, cluster)):
                self._reconcile_binding(cluster, binding)
            self._update_lock_annotation(cluster)
        for cluster in clusters:
            old_map = before.get(cluster) if cluster in before else None
            new_map = self._claim_labels.get(cluster) or self._compute_claim_labels(cluster)
            self._claim_labels[cluster] = new_map
            if old_map is None or old_map != new_map:
                for group, plural, identity in set(new_map) | set(old_map or {}):
                    self._relabel(cluster, group, plural, identity)

    def _clusters_to_rebind(self, events: list[Event]) -> list[str]:
        """Every cluster when an export or schema changed; else only those whose bindings changed.

        A binding depends on its own workspace and the export it names, so a new workspace's
        binding need not re-check the other thousand (that made adding workspaces quadratic).
        """
        relevant = [e for e in events if e.storage_key in (EXPORT_KEY, BINDING_KEY, SCHEMA_KEY)]
        if all(e.storage_key == BINDING_KEY for e in relevant):
            return sorted({e.cluster for e in relevant} & set(self.world.catalog.kcp_clusters))
        return sorted(self.world.catalog.kcp_clusters)

    def _reconcile_binding(self, cluster: str, binding: Obj) -> None:
        meta = binding["metadata"]
        if meta.get("deletionTimestamp"):
            self.deleting_bindings.add((cluster, meta["name"]))
            self._delete_binding(cluster, binding)
            return
        status = clone(binding.get("status") or {})
        conditions = list(status.get("conditions") or [])
        found = self.binding_export(cluster, binding)
        ref = ((binding.get("spec") or {}).get("reference") or {}).get("export") or {}
        if found is None:
            status["phase"] = status.get("phase") or "Binding"
            path = ref.get("path") or self.path_of(cluster)
            conditions = _condition(
                conditions,
                "APIExportValid",
                "False",
                reason="APIExportNotFound",
                message=f"APIExport {path}|{ref.get('name', '')} not found",
            )
        else:
            export_cluster, export = found
            identity = (export.get("status") or {}).get("identityHash", "")
            if not identity:
                status["phase"] = status.get("phase") or "Binding"
                conditions = _condition(
                    conditions,
                    "APIExportValid",
                    "False",
                    reason="MissingIdentityHash",
                    message=f"APIExport {ref.get('name', '')} is missing status.identityHash",
                )
            else:
                status["phase"] = "Bound"
                status["apiExportClusterName"] = export_cluster
                bound = {(b.get("group"), b.get("resource")): b for b in status.get("boundResources") or []}
                for res in (export.get("spec") or {}).get("resources") or []:
                    schema = self.world.store.get(SCHEMA_KEY, export_cluster, "", res.get("schema", ""))
                    if schema is None:
                        continue
                    versions = (schema.get("spec") or {}).get("versions") or []
                    bound[(res.get("group", ""), res.get("name"))] = {
                        "group": res.get("group", ""),
                        "resource": res.get("name"),
                        "schema": {
                            "name": schema["metadata"]["name"],
                            "UID": schema["metadata"]["uid"],
                            "identityHash": identity,
                        },
                        "storageVersions": [v["name"] for v in versions if v.get("storage")],
                    }
                status["boundResources"] = list(bound.values())
                export_claims = (export.get("spec") or {}).get("permissionClaims") or []
                status["exportPermissionClaims"] = [
                    {k: v for k, v in c.items() if k in ("group", "resource", "verbs", "identityHash")}
                    for c in export_claims
                ]
                exported = {_claim_key(c) for c in export_claims}
                accepted = [
                    c for c in (binding.get("spec") or {}).get("permissionClaims") or [] if c.get("state") == "Accepted"
                ]
                status["appliedPermissionClaims"] = [
                    {
                        k: v
                        for k, v in c.items()
                        if k in ("group", "resource", "verbs", "selector", "identityHash") and v != ""
                    }
                    | {"group": c.get("group", "")}
                    for c in accepted
                    if _claim_key(c) in exported
                ]
                invalid = [
                    c
                    for c in (binding.get("spec") or {}).get("permissionClaims") or []
                    if _claim_key(c) not in exported
                ]
                conditions = _condition(conditions, "APIExportValid", "True")
                conditions = _condition(conditions, "InitialBindingCompleted", "True")
                conditions = _condition(conditions, "BindingUpToDate", "True")
                conditions = _condition(conditions, "PermissionClaimsApplied", "True")
                if invalid:
                    conditions = _condition(
                        conditions,
                        "PermissionClaimsValid",
                        "False",
                        reason="InvalidPermissionClaims",
                        message=f"Invalid APIBinding permission claims: {len(invalid)} claim(s) not exported",
                    )
                else:
                    conditions = _condition(conditions, "PermissionClaimsValid", "True")
                conditions = _condition(conditions, "Ready", "True")
        status["conditions"] = conditions
        if status != (binding.get("status") or {}):
            self._write(
                ("apis.kcp.io", "apibindings"), cluster, {**binding, "status": status}, old=binding, status=True
            )

    def finish_binding_deletions(self, events: list[Event]) -> None:
        for cluster, name in list(self.deleting_bindings):
            binding = self.world.store.get(BINDING_KEY, cluster, "", name)
            if binding is None:
                self.deleting_bindings.discard((cluster, name))
            elif not any(e.storage_key == BINDING_KEY and e.cluster == cluster for e in events):
                self._delete_binding(cluster, binding)

    def _delete_binding(self, cluster: str, binding: Obj) -> None:
        remaining = 0
        for rdef in self.world.catalog.bound_defs(binding):
            for (_, ns, name), obj in list(self.world.store.iter(rdef.storage_key, cluster)):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    with self.system():
                        self.world.delete(rdef, cluster, ns, name)
                if self.world.store.get(rdef.storage_key, cluster, ns, name) is None:
                    remaining -= 1
        if remaining:
            status = clone(binding.get("status") or {})
            status["conditions"] = _condition(
                status.get("conditions") or [],
                "BindingResourceDeleteSuccess",
                "False",
                reason="SomeFinalizersRemain",
                severity="Info",
                message=f"finalizers in {remaining} resource instances remaining",
            )
            if status != binding.get("status"):
                self._write(
                    ("apis.kcp.io", "apibindings"), cluster, {**binding, "status": status}, old=binding, status=True
                )
            return
        current = self.world.store.get(BINDING_KEY, cluster, "", binding["metadata"]["name"]) or binding
        updated = clone(current)
        updated["metadata"]["finalizers"] = [
            f for f in updated["metadata"].get("finalizers") or [] if f != BINDING_FINALIZER
        ]
        self._write(("apis.kcp.io", "apibindings"), cluster, updated, old=current)

    def _update_lock_annotation(self, cluster: str) -> None:
        lc = self.world.store.get(LOGICALCLUSTER_KEY, cluster, "", "cluster")
        if lc is None:
            return
        locks: dict[str, Any] = {}
        for _, binding in self.world.store.iter(BINDING_KEY, cluster):
            for bound in (binding.get("status") or {}).get("boundResources") or []:
                locks[f"{bound['resource']}.{bound['group']}"] = {"n": binding["metadata"]["name"]}
        annotations = _ann(lc)
        value = json.dumps(locks, separators=(",", ":"), sort_keys=True)
        if not locks and RESOURCE_BINDINGS_ANNOTATION not in annotations:
            return
        if annotations.get(RESOURCE_BINDINGS_ANNOTATION) != value:
            annotations[RESOURCE_BINDINGS_ANNOTATION] = value
            self._write(("core.kcp.io", "logicalclusters"), cluster, _with_ann(clone(lc), annotations), old=lc)

    def _relabel(self, cluster: str, group: str, plural: str, identity: str = "") -> None:
        expected = self.expected_claim_labels(cluster, group, plural, identity)
        try:
            rdef = self._rdef(cluster, group, plural)
        except KeyError:
            return
        if rdef.identity != identity:
            return  # the claim names another export's resource than the one bound here
        for (_, _ns, _name), obj in list(self.world.store.iter(rdef.storage_key, cluster)):
            labels = obj["metadata"].get("labels") or {}
            current = {k: v for k, v in labels.items() if k.startswith(CLAIM_LABEL_PREFIX)}
            if current != expected:
                updated = clone(obj)
                new_labels = {k: v for k, v in labels.items() if not k.startswith(CLAIM_LABEL_PREFIX)} | expected
                updated["metadata"]["labels"] = new_labels
                self._write((group, plural), cluster, updated, old=obj)

    def reconcile_workspaces(self, events: list[Event]) -> None:
        for event in events:
            if event.storage_key != WORKSPACE_KEY or event.type != "ADDED":
                continue
            workspace = event.obj
            if (workspace.get("spec") or {}).get("cluster"):
                continue
            parent = event.cluster
            path = f"{self.path_of(parent)}:{workspace['metadata']['name']}"
            from kcpsim.topology import add_workspace_cluster

            name = add_workspace_cluster(self, path=path, parent=parent, owner=workspace)
            current = self.world.store.get(WORKSPACE_KEY, parent, "", workspace["metadata"]["name"])
            if current is None:
                continue
            updated = clone(current)
            updated.setdefault("spec", {})["cluster"] = name
            updated["spec"]["URL"] = f"{self.base_url}/clusters/{path}"
            updated = self._write(("tenancy.kcp.io", "workspaces"), parent, updated, old=current)
            self._write(
                ("tenancy.kcp.io", "workspaces"),
                parent,
                {**updated, "status": {"phase": "Ready"}},
                old=updated,
                status=True,
            )
