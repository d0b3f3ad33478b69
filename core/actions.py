"""The typed steps of a sync plan: what to write where, decided completely by the planner.

An action names its target precisely (which side, which logical cluster, the resource type, the
namespace and the name) and carries the exact object or merge patch to send, so an adapter
executes it without deciding anything and the offline `servlet plan` prints it as data
(`to_dict()`, a stable JSON form whose `"type"` names the action).

Deliberately not here: deciding which actions are needed (`plan.py`, `related.py`) and executing
them (adapters). `Conflict` and `Error` are reports, not writes: they explain why the planner
refused to write.
"""

from __future__ import annotations

import typing
from typing import Any, ClassVar, Literal

from attrs import frozen

from servlet.core import redaction
from servlet.core.model import Problem
from servlet.core.redaction import REDACTED as REDACTED
from servlet.core.targets import SECRET_TYPE, ObjectRef, Side, Write

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = [
    "ACTION_TYPES",
    "Action",
    "AddFinalizer",
    "Adopt",
    "Conflict",
    "Create",
    "CreateNamespace",
    "CreateRelated",
    "DeleteLocal",
    "DeleteRelated",
    "Error",
    "ObjectRef",
    "Patch",
    "PatchRelated",
    "PatchRemoteStatus",
    "RecordRelatedState",
    "Release",
    "RemoveFinalizer",
    "Side",
    "Write",
    "redacted",
]


def _preconditions(uid: str) -> dict[str, Any]:
    return {"preconditions": {"uid": uid}} if uid else {}


def _finalizer_patch(finalizers: tuple[str, ...], resource_version: str) -> dict[str, Any]:
    # Finalizers are a list, which a merge patch replaces whole; the resourceVersion makes the
    # write fail instead of dropping a finalizer someone else added since the object was read.
    metadata: dict[str, Any] = {"finalizers": list(finalizers)}
    if resource_version:
        metadata["resourceVersion"] = resource_version
    return {"metadata": metadata}


@frozen
class _FinalizerChange:
    """A merge patch of the remote primary's finalizers; `finalizers` is the complete resulting list."""

    type: ClassVar[str]
    write: ClassVar[Literal[Write.FINALIZERS]] = Write.FINALIZERS
    is_write: ClassVar[bool] = True
    target: ObjectRef
    finalizers: tuple[str, ...]
    resource_version: str = ""

    @property
    def patch(self) -> dict[str, Any]:
        return _finalizer_patch(self.finalizers, self.resource_version)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.target.to_dict(), "patch": self.patch}


@frozen
class AddFinalizer(_FinalizerChange):
    """Put our finalizer on the remote primary."""

    type: ClassVar[str] = "addFinalizer"


@frozen
class RemoveFinalizer(_FinalizerChange):
    """Take our finalizer off the remote primary after its local copy is gone."""

    type: ClassVar[str] = "removeFinalizer"


@frozen
class Release(_FinalizerChange):
    """Take our finalizer off a remote primary that left the filter; its local copy is kept."""

    type: ClassVar[str] = "release"


@frozen
class CreateNamespace:
    """Create a namespace on either side (`target.resource` is always NAMESPACE_TYPE)."""

    type: ClassVar[str] = "createNamespace"
    write: ClassVar[Literal[Write.CREATE_NAMESPACE]] = Write.CREATE_NAMESPACE
    is_write: ClassVar[bool] = True
    target: ObjectRef

    @property
    def object(self) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": self.target.name}}

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.target.to_dict(), "object": self.object}


@frozen
class Create:
    """Create the local primary; `object` is complete, link metadata and last-known-state included."""

    type: ClassVar[str] = "create"
    write: ClassVar[Literal[Write.CREATE]] = Write.CREATE
    is_write: ClassVar[bool] = True
    target: ObjectRef
    object: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.target.to_dict(), "object": self.object}


@frozen
class Adopt:
    """Repair the link labels and annotations of a local object proven to be our copy."""

    type: ClassVar[str] = "adopt"
    write: ClassVar[Literal[Write.PATCH]] = Write.PATCH
    is_write: ClassVar[bool] = True
    target: ObjectRef
    patch: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.target.to_dict(), "patch": self.patch}


@frozen
class Patch:
    """A JSON merge patch (RFC 7386) on the local primary, new last-known-state included."""

    type: ClassVar[str] = "patch"
    write: ClassVar[Literal[Write.PATCH]] = Write.PATCH
    is_write: ClassVar[bool] = True
    target: ObjectRef
    patch: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.target.to_dict(), "patch": self.patch}


@frozen
class PatchRemoteStatus:
    """Make the remote status equal `status` through the status subresource.

    `patch` is the merge patch that does it (`{"status": ...}`, with nulls for fields only the
    remote status has), for adapters that patch rather than replace."""

    type: ClassVar[str] = "patchRemoteStatus"
    write: ClassVar[Literal[Write.STATUS]] = Write.STATUS
    is_write: ClassVar[bool] = True
    target: ObjectRef
    status: Any
    patch: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.target.to_dict(), "status": self.status, "patch": self.patch}


@frozen
class DeleteLocal:
    """Delete the local primary (its own finalizers may keep it around for a while).

    `uid`: the object planned against, sent as a precondition ("" for none): a delete never hits
    an object that took the name meanwhile."""

    type: ClassVar[str] = "deleteLocal"
    write: ClassVar[Literal[Write.DELETE]] = Write.DELETE
    is_write: ClassVar[bool] = True
    target: ObjectRef
    uid: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, **self.target.to_dict(), **_preconditions(self.uid)}


@frozen
class Conflict:
    """An object is in the way and cannot be proven ours: nothing is written to it."""

    type: ClassVar[str] = "conflict"
    write: ClassVar[Literal[Write.NOTHING]] = Write.NOTHING
    is_write: ClassVar[bool] = False
    target: ObjectRef
    reason: str
    identifier: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type, **self.target.to_dict(), "reason": self.reason}
        if self.identifier:
            data["identifier"] = self.identifier
        return data


@frozen
class Error:
    """The planner cannot continue for this object (or one related resource); `reason` says why.

    `field` names the PublishedResource field at fault when the input is to blame ("" otherwise);
    `reason` is a full sentence that names it too, so it reads well on its own."""

    type: ClassVar[str] = "error"
    write: ClassVar[Literal[Write.NOTHING]] = Write.NOTHING
    is_write: ClassVar[bool] = False
    reason: str
    target: ObjectRef | None = None
    identifier: str = ""
    field: str = ""

    @classmethod
    def of(cls, problem: Problem, *, target: ObjectRef | None = None, identifier: str = "") -> Error:
        return cls(reason=str(problem), target=target, identifier=identifier, field=problem.field)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"type": self.type}
        if self.target is not None:
            data.update(self.target.to_dict())
        if self.identifier:
            data["identifier"] = self.identifier
        if self.field:
            data["field"] = self.field
        data["reason"] = self.reason
        return data


@frozen
class CreateRelated:
    """Create the destination copy of a related object (`target.side` says where)."""

    type: ClassVar[str] = "createRelated"
    write: ClassVar[Literal[Write.CREATE]] = Write.CREATE
    is_write: ClassVar[bool] = True
    identifier: str
    target: ObjectRef
    object: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "identifier": self.identifier, **self.target.to_dict(), "object": self.object}


@frozen
class PatchRelated:
    """A merge patch on the destination copy of a related object."""

    type: ClassVar[str] = "patchRelated"
    write: ClassVar[Literal[Write.PATCH]] = Write.PATCH
    is_write: ClassVar[bool] = True
    identifier: str
    target: ObjectRef
    patch: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "identifier": self.identifier, **self.target.to_dict(), "patch": self.patch}


@frozen
class DeleteRelated:
    """Delete a destination copy the servlet created (its origin or its primary is gone)."""

    type: ClassVar[str] = "deleteRelated"
    write: ClassVar[Literal[Write.DELETE]] = Write.DELETE
    is_write: ClassVar[bool] = True
    identifier: str
    target: ObjectRef
    uid: str = ""  # as for DeleteLocal

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "identifier": self.identifier, **self.target.to_dict(), **_preconditions(self.uid)}


@frozen
class RecordRelatedState:
    """Write (or clear, with a null value) the related-state annotation on the local primary.

    `target` is the local primary; `patch` touches only that one annotation."""

    type: ClassVar[str] = "recordRelatedState"
    write: ClassVar[Literal[Write.PATCH]] = Write.PATCH
    is_write: ClassVar[bool] = True
    identifier: str
    target: ObjectRef
    patch: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "identifier": self.identifier, **self.target.to_dict(), "patch": self.patch}


Action = (
    AddFinalizer
    | RemoveFinalizer
    | Release
    | CreateNamespace
    | Create
    | Adopt
    | Patch
    | PatchRemoteStatus
    | DeleteLocal
    | Conflict
    | Error
    | CreateRelated
    | PatchRelated
    | DeleteRelated
    | RecordRelatedState
)

ACTION_TYPES: tuple[str, ...] = tuple(action.type for action in typing.get_args(Action))


# The sections of an action's printable form that carry an object or a merge patch.
_BODY_SECTIONS = ("object", "patch")


def _targets_secret(action: Action) -> bool:
    return action.target is not None and action.target.resource == SECRET_TYPE


def redacted(action: Action) -> dict[str, Any]:
    """`action.to_dict()` with Secret values hidden, for printing plans where people read them.

    Executing needs the values; showing them does not. What is hidden (a Secret's `data` and
    `stringData`, the content copies in its annotations, related-state annotations on any target)
    is decided in `redaction.py`; keys stay visible, and a null still shows a key being removed.
    """
    data = action.to_dict()
    secret = _targets_secret(action)
    for section in _BODY_SECTIONS:
        body = data.get(section)
        if isinstance(body, dict):
            data[section] = redaction.redact_body(body, secret=secret)
    return data


def secret_spellings(action: Action) -> tuple[str, ...]:
    """The values `redacted` hides, in every spelling a message quoting the action may use."""
    data = action.to_dict()
    secret = _targets_secret(action)
    spellings: set[str] = set()
    for section in _BODY_SECTIONS:
        body = data.get(section)
        if isinstance(body, dict):
            spellings.update(redaction.secret_spellings(body, secret=secret))
    return tuple(sorted(spellings, key=len, reverse=True))
