"""The namespace label every Kubernetes API server maintains: `kubernetes.io/metadata.name`.

Since Kubernetes 1.22 the namespace strategy sets it to the namespace's name on create and on
every update, whatever the client sent, so selectors can pick namespaces by name.
"""

from __future__ import annotations

from kcpsim.world import World, WriteContext

NAME_LABEL = "kubernetes.io/metadata.name"


def install(world: World) -> None:
    world.mutators.append(_label)


def _label(ctx: WriteContext) -> None:
    if ctx.operation == "DELETE" or (ctx.rdef.group, ctx.rdef.plural) != ("", "namespaces"):
        return
    meta = ctx.new["metadata"]
    meta["labels"] = {**(meta.get("labels") or {}), NAME_LABEL: meta["name"]}
