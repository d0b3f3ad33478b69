"""The mutation steps of a related entry (`spec.related[].mutation`): the origin object as it is synced.

A related object's content travels from its origin to its destination: `spec` steps change the
origin before its content is taken. `status` steps change the status `syncStatus` copies: the
origin's, copied with the content (origin service), or the copy's, copied back up to the
workspace object (origin platform), so they run on the object whose status is copied.
The related planner calls this once per related object and plans on the result, so the
three-way patch and the recorded last-known-state hold the mutated content, and the daemon and
`servlet plan` agree.

What the steps see is chosen, as for primaries (`mutation_sync.py`), so that a synced object is
a fixed point: never `metadata.resourceVersion` or `metadata.managedFields` (every write changes
them); a spec step never sees the origin's status (the servlet may write it); `other` is the
destination copy's identity (apiVersion, kind, name, namespace), the same before the copy exists
and after, rather than the copy itself, whose content the servlet writes.

A failing step is a Problem naming its field (`spec.related[0].mutation.spec[1].cel.expression`):
the caller writes nothing of that related object.

Deliberately not here: the steps themselves (`mutation.py`), planning (`related.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core.model import LocalKey, Origin, Problem, RelatedResource, ResourceType
from servlet.core.mutation import apply_mutation
from servlet.core.mutation_sync import local_identity, stable_view, with_mutated_status


def mutation_field(index: int) -> str:
    """Where the steps of the related entry at `index` are written."""
    return f"spec.related[{index}].mutation"


def destination_identity(resource: ResourceType, *, namespace: str, name: str) -> dict[str, Any]:
    """What a step knows of the destination copy: `other` in CEL, `.RemoteObject` in templates."""
    return local_identity(resource, LocalKey(namespace, name))


def mutated_origin(
    item: RelatedResource, *, index: int, source: Mapping[str, Any], destination: Mapping[str, Any]
) -> Mapping[str, Any] | Problem:
    """`source` (the origin object) changed by the entry's spec steps, then (origin service, whose
    status `syncStatus` copies) its status by the status steps.

    `destination` is the copy's identity (`destination_identity`). Without steps, `source` itself.
    """
    steps = item.mutation
    if not steps:
        return source
    mutated: Mapping[str, Any] = source
    if steps.spec:
        changed = apply_mutation(
            steps.spec, stable_view(source, drop=("status",)), other=destination, field=f"{mutation_field(index)}.spec"
        )
        if isinstance(changed, Problem):
            return changed
        mutated = {**changed, "status": source["status"]} if "status" in source else changed
    if item.origin is Origin.SERVICE:
        return mutated_status(item, index=index, obj=mutated, other=destination)
    return mutated


def mutated_status(
    item: RelatedResource, *, index: int, obj: Mapping[str, Any], other: Mapping[str, Any]
) -> Mapping[str, Any] | Problem:
    """`obj`, the object whose status `syncStatus` copies, with its status changed by the status steps.

    That object is the origin for origin service, the copy for origin platform (its status goes up
    to the origin); `other` is the identity of the object the status is written to.
    """
    steps = item.mutation.status
    if not steps:
        return obj
    return with_mutated_status(steps, obj, other=other, field=f"{mutation_field(index)}.status")
