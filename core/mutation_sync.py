"""The mutation steps of a primary object: which objects they see, and what comes out of them.

Spec steps (`spec.mutation.spec`) change the workspace object before its content is taken
down; status steps (`spec.mutation.status`) change the local copy before its status goes up.
The planner calls this module for both, once per plan, so the daemon and `servlet plan` sync
the same mutated content, and the three-way patch and the last-known-state are computed on it.

What the steps see is chosen so that a synced object is a fixed point: no write the servlet
makes changes what a step reads, so planning again after the writes plans nothing.

- A spec step's `self` is the workspace object without its `status` (which the servlet writes)
  and without `metadata.resourceVersion` and `metadata.managedFields` (which every write
  changes). Its `other` is the local copy's identity: apiVersion, kind, name and namespace, the
  same before the copy exists and after, rather than the live copy, whose content the servlet
  itself writes.
- A status step's `self` is the local copy, without those two metadata fields; its `other` is
  the workspace object as the spec steps left it (so without its status).

Only what the planner takes from a result counts: the content fields and copied labels and
annotations of the workspace object (never its name, which naming decides), and the status of
the local copy.

Deliberately not here: the steps themselves (`mutation.py`), what content and status are
(`patch.py`), and the order of writes (`plan.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from servlet.core.actions import Action, Error, ObjectRef
from servlet.core.context import SyncContext
from servlet.core.json_values import is_mapping, without_null_members
from servlet.core.model import LocalKey, Problem, ResourceType
from servlet.core.mutation import apply_mutation
from servlet.core.mutation_steps import MutationStep
from servlet.core.patch import content_patch, created_object, primary_content_view

__all__ = [
    "MUTATION_FIELD",
    "ContentChange",
    "MutatedSides",
    "content_change",
    "created_copy",
    "desired_content",
    "mutated_sides",
    "unless_mutation_failed",
]

MUTATION_FIELD = "spec.mutation"
# Metadata every write changes: a step reading it would see its own writes.
_VOLATILE_METADATA = ("resourceVersion", "managedFields")


@frozen
class MutatedSides:
    """What a plan syncs once the local copy exists: the content down and the local copy whose status goes up."""

    content: Mapping[str, Any]
    local: Mapping[str, Any]


@frozen
class ContentChange:
    """The content patch for a live copy, and the local copy whose status goes up (after the status steps)."""

    patch: dict[str, Any]
    local: Mapping[str, Any]


def content_change(
    context: SyncContext, *, remote: Mapping[str, Any], local: Mapping[str, Any], local_ref: ObjectRef
) -> ContentChange | Problem:
    """The three-way patch of the mutated content against `local`, or the Problem of a step or of the patch."""
    sides = mutated_sides(context, remote=remote, local=local, local_ref=local_ref)
    if isinstance(sides, Problem):
        return sides
    change = content_patch(desired=sides.content, live=local)
    if isinstance(change, Problem):
        return change
    return ContentChange(patch=change.patch, local=sides.local)


def created_copy(
    context: SyncContext, *, remote: Mapping[str, Any], local_ref: ObjectRef, skeleton: dict[str, Any]
) -> dict[str, Any] | Problem:
    """A new local copy: `skeleton` carrying the mutated content and its state, or a Problem."""
    desired = desired_content(context, remote=remote, local_ref=local_ref)
    return desired if isinstance(desired, Problem) else created_object(skeleton=skeleton, desired=desired)


def desired_content(
    context: SyncContext, *, remote: Mapping[str, Any], local_ref: ObjectRef
) -> Mapping[str, Any] | Problem:
    """The content synced down: the workspace object's after the spec steps, or the first step's Problem."""
    mutated = _mutated_remote(context, remote=remote, local_ref=local_ref)
    return mutated if isinstance(mutated, Problem) else primary_content_view(mutated)


def mutated_sides(
    context: SyncContext, *, remote: Mapping[str, Any], local: Mapping[str, Any], local_ref: ObjectRef
) -> MutatedSides | Problem:
    """The content down and the local copy with the status that goes up, or the first failing step's Problem."""
    mutated = _mutated_remote(context, remote=remote, local_ref=local_ref)
    if isinstance(mutated, Problem):
        return mutated
    status_source = _mutated_local(context, local=local, remote=mutated)
    if isinstance(status_source, Problem):
        return status_source
    return MutatedSides(content=primary_content_view(mutated), local=status_source)


def _mutated_remote(
    context: SyncContext, *, remote: Mapping[str, Any], local_ref: ObjectRef
) -> Mapping[str, Any] | Problem:
    steps = context.published.spec.mutation.spec
    if not steps:
        return remote
    other = local_identity(context.projected.local, LocalKey(local_ref.namespace, local_ref.name))
    return apply_mutation(steps, stable_view(remote, drop=("status",)), other=other, field=f"{MUTATION_FIELD}.spec")


def _mutated_local(
    context: SyncContext, *, local: Mapping[str, Any], remote: Mapping[str, Any]
) -> Mapping[str, Any] | Problem:
    steps = context.published.spec.mutation.status
    if not steps or not context.projected.has_status_subresource:
        return local
    # The workspace object without what the servlet writes there, whether or not spec steps ran.
    other = stable_view(remote, drop=("status",))
    return with_mutated_status(steps, local, other=other, field=f"{MUTATION_FIELD}.status")


def with_mutated_status(
    steps: tuple[MutationStep, ...], obj: Mapping[str, Any], *, other: Mapping[str, Any], field: str
) -> Mapping[str, Any] | Problem:
    """`obj` with the status `steps` leave on its stable view; the rest of `obj` is kept as it is."""
    mutated = apply_mutation(steps, stable_view(obj), other=other, field=field)
    if isinstance(mutated, Problem):
        return mutated
    with_status = {key: value for key, value in obj.items() if key != "status"}
    if "status" in mutated:
        # A null a step leaves means "absent", as in the content: a merge patch cannot write one.
        with_status["status"] = without_null_members(mutated["status"])
    return with_status


def local_identity(local_type: ResourceType, key: LocalKey) -> dict[str, Any]:
    """What a spec step knows of the local copy: `other` in CEL, `.RemoteObject` in templates."""
    metadata = {"name": key.name} | ({"namespace": key.namespace} if key.namespace else {})
    return {"apiVersion": local_type.api_version, "kind": local_type.kind, "metadata": metadata}


def unless_mutation_failed(first: list[Action], synced: list[Action]) -> list[Action]:
    """`first` then `synced`, unless a mutation step failed in `synced`: then its Error alone,
    so an object whose steps fail gets no write at all (not even a finalizer or a repair)."""
    failed: list[Action] = [
        action for action in synced if isinstance(action, Error) and action.field.startswith(MUTATION_FIELD)
    ]
    return failed or [*first, *synced]


def stable_view(obj: Mapping[str, Any], *, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    view = {key: value for key, value in obj.items() if key not in drop}
    metadata = view.get("metadata")
    if is_mapping(metadata) and any(key in metadata for key in _VOLATILE_METADATA):
        view["metadata"] = {key: value for key, value in metadata.items() if key not in _VOLATILE_METADATA}
    return view
