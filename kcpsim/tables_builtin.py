"""The columns kube-apiserver prints for the built-in kinds kcpsim serves (`kubectl get`).

Each kind has the column set of Kubernetes' printers: `kubectl get configmaps` shows NAME DATA
AGE, secrets NAME TYPE DATA AGE, namespaces NAME STATUS AGE, roles NAME CREATED AT, and so on.
The server prints every column, `priority: 1` ones included (kubectl shows those with `-o
wide`), and ages as text (`5m`), as the apiserver's table convertor does for built-ins.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

from kcpsim.tables import NAME_DESCRIPTION, human_duration

Cells = Callable[[dict[str, Any]], list[Any]]
_AGE = "CreationTimestamp is a timestamp representing the server time when this object was created."


def _column(name: str, *, kind: str = "string", priority: int = 0, description: str = "") -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "format": "name" if name == "Name" else "",
        "description": NAME_DESCRIPTION if name == "Name" else description or name,
        "priority": priority,
    }


def since(stamp: Any) -> str:
    """An age as the apiserver prints it; `<unknown>` without a timestamp."""
    if not isinstance(stamp, str) or not stamp:
        return "<unknown>"
    try:
        when = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return "<unknown>"
    return human_duration(int((datetime.datetime.now(datetime.UTC) - when).total_seconds()))


def _meta(obj: dict[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def _name(obj: dict[str, Any]) -> str:
    return str(_meta(obj).get("name", ""))


def _age(obj: dict[str, Any]) -> str:
    return since(_meta(obj).get("creationTimestamp"))


def _created_at(obj: dict[str, Any]) -> str:
    return str(_meta(obj).get("creationTimestamp") or "")


def _event(obj: dict[str, Any]) -> list[Any]:
    first = since(obj.get("firstTimestamp")) if obj.get("firstTimestamp") else since(obj.get("eventTime"))
    last = since(obj["lastTimestamp"]) if obj.get("lastTimestamp") else first
    count = obj.get("count") or 0
    series = obj.get("series")
    if series:
        last, count = since(series.get("lastObservedTime")), series.get("count") or 0
    elif not count:
        count = 1  # a singleton event of the events.k8s.io API sets no count
    involved = obj.get("involvedObject") or {}
    target = str(involved.get("kind", "")).lower()
    if involved.get("name"):
        target = f"{target}/{involved['name']}"
    source = obj.get("source") or {}
    component = source.get("component") or obj.get("reportingComponent") or ""
    instance = source.get("host") or obj.get("reportingInstance") or ""
    origin = f"{component}, {instance}" if instance else component
    message = str(obj.get("message") or "").strip()
    kind, reason, subobject = obj.get("type", ""), obj.get("reason", ""), involved.get("fieldPath", "")
    return [last, kind, reason, target, subobject, origin, message, first, int(count), _name(obj)]


def _binding(obj: dict[str, Any]) -> list[Any]:
    role = obj.get("roleRef") or {}
    subjects = obj.get("subjects") or []

    def named(kind: str) -> str:
        return ", ".join(s.get("name", "") for s in subjects if s.get("kind") == kind)

    accounts = ", ".join(
        f"{s.get('namespace', '')}/{s.get('name', '')}" for s in subjects if s.get("kind") == "ServiceAccount"
    )
    return [
        _name(obj),
        f"{role.get('kind', '')}/{role.get('name', '')}",
        _age(obj),
        named("User"),
        named("Group"),
        accounts,
    ]


_NAME_AGE = [_column("Name"), _column("Age", description=_AGE)]
_CREATED = [_column("Name"), _column("Created At", kind="date", description=_AGE)]
_BINDING_COLUMNS = [
    _column("Name"),
    _column("Role"),
    _column("Age", description=_AGE),
    _column("Users", priority=1),
    _column("Groups", priority=1),
    _column("ServiceAccounts", priority=1),
]
_EVENT_COLUMNS = [
    _column("Last Seen"),
    _column("Type"),
    _column("Reason"),
    _column("Object"),
    _column("Subobject", priority=1),
    _column("Source", priority=1),
    _column("Message"),
    _column("First Seen", priority=1),
    _column("Count", priority=1),
    _column("Name", priority=1),
]
_EVENT_COLUMNS[-1]["format"] = "name"

# (group, kind): (columns, cells of one object)
PRINTERS: dict[tuple[str, str], tuple[list[dict[str, Any]], Cells]] = {
    ("", "ConfigMap"): (
        [_column("Name"), _column("Data"), _column("Age", description=_AGE)],
        lambda o: [_name(o), len(o.get("data") or {}) + len(o.get("binaryData") or {}), _age(o)],
    ),
    ("", "Secret"): (
        [_column("Name"), _column("Type"), _column("Data"), _column("Age", description=_AGE)],
        lambda o: [_name(o), o.get("type", ""), len(o.get("data") or {}), _age(o)],
    ),
    ("", "Namespace"): (
        [_column("Name"), _column("Status"), _column("Age", description=_AGE)],
        lambda o: [_name(o), (o.get("status") or {}).get("phase", ""), _age(o)],
    ),
    ("", "ServiceAccount"): (
        [_column("Name"), _column("Secrets"), _column("Age", description=_AGE)],
        lambda o: [_name(o), len(o.get("secrets") or []), _age(o)],
    ),
    ("", "Event"): (_EVENT_COLUMNS, _event),
    ("coordination.k8s.io", "Lease"): (
        [_column("Name"), _column("Holder"), _column("Age", description=_AGE)],
        lambda o: [_name(o), (o.get("spec") or {}).get("holderIdentity") or "", _age(o)],
    ),
    ("rbac.authorization.k8s.io", "Role"): (_CREATED, lambda o: [_name(o), _created_at(o)]),
    ("rbac.authorization.k8s.io", "ClusterRole"): (_CREATED, lambda o: [_name(o), _created_at(o)]),
    ("rbac.authorization.k8s.io", "RoleBinding"): (_BINDING_COLUMNS, _binding),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (_BINDING_COLUMNS, _binding),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (_CREATED, lambda o: [_name(o), _created_at(o)]),
}
