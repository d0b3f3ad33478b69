"""The apiextensions controllers, made instant: a new CRD becomes Established, a deleted one
takes its custom resources with it (the `customresourcecleanup` finalizer).

Served resources are derived from CRDs by `resources.Catalog`; this module only maintains CRD
status and cleanup. Of CRD (and APIResourceSchema) specs it validates what the catalog needs and
that every `x-kubernetes-validations` rule compiles, as the apiserver refuses a CRD whose rule
does not.
"""

from __future__ import annotations

from kcpsim import errors
from kcpsim.cel_rules import check_definition
from kcpsim.patching import clone
from kcpsim.resources import CRD_KEY, SCHEMA_KEY, def_from_crd_like
from kcpsim.store import Event, Obj
from kcpsim.world import Controller, World, WriteContext, now

CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def install(world: World) -> None:
    world.controllers.append(Controller(frozenset({CRD_KEY}), lambda events: _reconcile(world, events)))
    world.mutators.append(_check_rules_compile)


def _check_rules_compile(ctx: WriteContext) -> None:
    if ctx.rdef.storage_key not in (CRD_KEY, SCHEMA_KEY) or ctx.subresource:
        return
    spec = ctx.new.get("spec") or {}
    if ctx.old is not None and spec == (ctx.old.get("spec") or {}):
        return  # the finalizer and status writes of the controllers above recompile nothing
    problems = check_definition(spec.get("versions") or [], crd=ctx.rdef.storage_key == CRD_KEY)
    if problems:
        name = (ctx.new.get("metadata") or {}).get("name", "")
        raise errors.invalid(group=ctx.rdef.group, kind=ctx.rdef.kind, name=name, causes=problems)


def _crd_rdef(world: World, cluster: str):  # type: ignore[no-untyped-def]
    return next(r for r in world.catalog.served(cluster) if r.storage_key == CRD_KEY)


def _reconcile(world: World, events: list[Event]) -> None:
    for event in events:
        if event.storage_key != CRD_KEY or event.type == "DELETED":
            continue
        crd = world.store.get(CRD_KEY, event.cluster, "", event.obj["metadata"]["name"])
        if crd is None:
            continue
        if crd["metadata"].get("deletionTimestamp"):
            _cleanup(world, event.cluster, crd)
            continue
        rdef = _crd_rdef(world, event.cluster)
        if CLEANUP_FINALIZER not in (crd["metadata"].get("finalizers") or []):
            updated = clone(crd)
            updated["metadata"]["finalizers"] = [*(crd["metadata"].get("finalizers") or []), CLEANUP_FINALIZER]
            crd = world.update(
                rdef,
                event.cluster,
                "",
                crd["metadata"]["name"],
                updated,
                version="v1",
                manager="kube-apiserver",
                old=crd,
            )
        spec = crd.get("spec") or {}
        status = {
            "acceptedNames": clone(spec.get("names") or {}),
            "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
            "conditions": _conditions(crd),
        }
        if crd.get("status") != status:
            world.update(
                rdef,
                event.cluster,
                "",
                crd["metadata"]["name"],
                {**crd, "status": status},
                version="v1",
                manager="kube-apiserver",
                subresource="status",
                old=crd,
            )


def _conditions(crd: Obj) -> list[dict[str, str]]:
    previous = {c.get("type"): c for c in (crd.get("status") or {}).get("conditions") or []}
    out = []
    for ctype, reason, message in (
        ("NamesAccepted", "NoConflicts", "no conflicts found"),
        ("Established", "InitialNamesAccepted", "the initial names have been accepted"),
    ):
        old = previous.get(ctype)
        stamp = old["lastTransitionTime"] if old and old.get("status") == "True" else now()
        out.append({"type": ctype, "status": "True", "reason": reason, "message": message, "lastTransitionTime": stamp})
    return out


def _cleanup(world: World, cluster: str, crd: Obj) -> None:
    rdef = def_from_crd_like(crd.get("spec") or {}, crd=True)
    remaining = 0
    for (_, ns, name), obj in list(world.store.iter(rdef.storage_key, cluster)):
        if not obj["metadata"].get("deletionTimestamp"):
            world.delete(rdef, cluster, ns, name)
        if world.store.get(rdef.storage_key, cluster, ns, name) is not None:
            remaining += 1
    if remaining == 0 and CLEANUP_FINALIZER in (crd["metadata"].get("finalizers") or []):
        updated = clone(crd)
        updated["metadata"]["finalizers"] = [f for f in crd["metadata"]["finalizers"] if f != CLEANUP_FINALIZER]
        world.update(
            _crd_rdef(world, cluster),
            cluster,
            "",
            crd["metadata"]["name"],
            updated,
            version="v1",
            manager="kube-apiserver",
            old=crd,
        )
