"""The plan of one remote object as a value: its actions, whether it writes, how it prints.

Its own module so that the plan's value (read by the daemon, `servlet plan` and library users)
stays apart from the rules that build it (`plan.py`).
"""

from __future__ import annotations

from typing import Any

from attrs import frozen

from servlet.core.actions import Action, Conflict, Error, redacted
from servlet.core.model import LocalKey, Problem, RemoteKey, ResourceType

__all__ = ["ObjectPlan", "plan_writes"]


@frozen
class ObjectPlan:
    """The ordered actions for one remote object; `local` is None when naming failed."""

    remote: RemoteKey
    local: LocalKey | None
    actions: tuple[Action, ...]
    # The resource types on both sides, for readers of the plan (None when built by hand).
    remote_type: ResourceType | None = None
    local_type: ResourceType | None = None
    # Why the object is not settled although nothing can be written now ("" when it is not
    # waiting): the daemon plans it again later instead of waiting for an event.
    waiting: str = ""

    @property
    def writes(self) -> bool:
        return plan_writes(self)

    @property
    def problems(self) -> tuple[Problem, ...]:
        """The errors and conflicts of the plan as Problems, for reports that list them apart."""
        found: list[Problem] = []
        for action in self.actions:
            if isinstance(action, Error):
                prefix = f"{action.field}: "
                message = action.reason
                if action.field and message.startswith(prefix):
                    message = message[len(prefix) :]
                found.append(Problem(field=action.field, message=message))
            elif isinstance(action, Conflict):
                found.append(Problem(field="", message=action.reason))
        return tuple(found)

    def describe(self) -> str:
        """The remote object as a person finds it: `cluster:namespace/name`."""
        where = f"{self.remote.namespace}/{self.remote.name}" if self.remote.namespace else self.remote.name
        return f"{self.remote.cluster}:{where}" if self.remote.cluster else where

    def to_dict(self) -> dict[str, Any]:
        remote: dict[str, Any] = {
            **_type_dict(self.remote_type),
            "cluster": self.remote.cluster,
            "namespace": self.remote.namespace,
            "name": self.remote.name,
        }
        local: dict[str, Any] | None = None
        if self.local is not None:
            local = {**_type_dict(self.local_type), "namespace": self.local.namespace, "name": self.local.name}
        # Plans are printed for people and tools to read: Secret values never leave in that form.
        printed: dict[str, Any] = {
            "remote": remote,
            "local": local,
            "actions": [redacted(action) for action in self.actions],
        }
        if self.waiting:
            printed["waiting"] = self.waiting
        return printed


def _type_dict(resource: ResourceType | None) -> dict[str, str]:
    return {} if resource is None else {"apiVersion": resource.api_version, "kind": resource.kind}


def plan_writes(plan: ObjectPlan) -> bool:
    """Whether executing the plan would write anything (conflicts and errors are only reports)."""
    return any(action.is_write for action in plan.actions)
