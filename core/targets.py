"""Where an action writes: the two sides, the built-in types the planner writes, and object references.

Kept apart from `actions.py` so that modules which only name a target (the gatherer, the world
snapshot, the adapters) need not know every action.
"""

from __future__ import annotations

import enum
from typing import Any

from attrs import frozen

from servlet.core.model import RelatedKind, RelatedResource, ResourceType


class Side(enum.Enum):
    """Which cluster an action touches: the service cluster or the remote object's workspace."""

    LOCAL = "local"
    REMOTE = "remote"


class Write(enum.Enum):
    """The kind of write an action is: all an executor needs to know to send it.

    Each action class declares its kind as a literal, so a `match` on `action.write` narrows the
    action to the classes of that kind and mypy proves every kind is handled (`assert_never`)."""

    NOTHING = "nothing"  # a report (Conflict, Error): it explains a refusal and sends nothing
    CREATE = "create"  # the planned object, as it is
    CREATE_NAMESPACE = "createNamespace"  # a namespace: one that exists already is as good
    DELETE = "delete"  # with the planned uid as precondition: an object already gone is as good
    FINALIZERS = "finalizers"  # the complete finalizer list, failing if the object changed since read
    STATUS = "status"  # a merge patch through the status subresource
    PATCH = "patch"  # a merge patch of the object


NAMESPACE_TYPE = ResourceType(group="", version="v1", kind="Namespace", plural="namespaces", namespaced=False)
SECRET_TYPE = ResourceType(group="", version="v1", kind="Secret", plural="secrets", namespaced=True)
CONFIGMAP_TYPE = ResourceType(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)


def related_resource_type(kind: RelatedKind | ResourceType) -> ResourceType:
    """The type a related kind names; a type is its own answer (keys accept either)."""
    if isinstance(kind, ResourceType):
        return kind
    return SECRET_TYPE if kind is RelatedKind.SECRET else CONFIGMAP_TYPE


def related_type(item: RelatedResource) -> ResourceType | None:
    """The type of a related entry's objects, None while an `api` type is not resolved."""
    return related_resource_type(item.kind) if item.kind is not None else item.resolved


@frozen
class ObjectRef:
    """One object on one side. `cluster` is the logical cluster for the remote side, "" locally;
    `namespace` is "" for cluster-scoped objects."""

    side: Side
    resource: ResourceType
    namespace: str
    name: str
    cluster: str = ""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "side": self.side.value,
            "apiVersion": self.resource.api_version,
            "kind": self.resource.kind,
            "resource": self.resource.plural,
        }
        if self.cluster:
            data["cluster"] = self.cluster
        if self.namespace:
            data["namespace"] = self.namespace
        data["name"] = self.name
        return data
