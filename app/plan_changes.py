"""What each patch of a plan changes, field by field: `path: old -> new`, for people reading `servlet plan`.

A merge patch says what is written, not what it overwrites. Here each patch is applied to the
object as the plan found it (the inputs, as the plan's earlier writes left them), and deepdiff
compares before and after. A list counts as one value, as a merge patch replaces lists whole, and
the resourceVersion and uid a patch carries are preconditions, not changes. Secret values stay hidden:
the old and new values are read from the redacted forms of both objects (`core.redaction`).

Deliberately not here: planning (the changes describe a plan, they never decide one) and the
text layout (`render.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from deepdiff import DeepDiff

from servlet.core.actions import Action, ObjectRef, Side
from servlet.core.inventory import Inventory
from servlet.core.keys import remote_key_of
from servlet.core.merge_patch import apply_merge_patch
from servlet.core.preview import ServletPlan
from servlet.core.redaction import redact_body

Object = Mapping[str, Any]
_Key = tuple[Side, str, str, str, str, str]  # side, apiVersion, kind, cluster, namespace, name
_DELETES = frozenset({"deleteLocal", "deleteRelated"})
_ABSENT = object()
# A patch may carry these to be refused when the object changed or was replaced; they never change.
_PRECONDITIONS = ["root['metadata']['resourceVersion']", "root['metadata']['uid']"]


def field_changes(before: Object, after: Object, *, secret: bool) -> list[dict[str, Any]]:
    """The fields that differ between `before` and `after`: `path`, and `old`/`new` unless absent.

    `secret`: the object is a Secret, whose values are shown redacted.
    """
    diff = DeepDiff(dict(before), dict(after), view="tree", exclude_paths=_PRECONDITIONS)
    shown_before, shown_after = redact_body(before, secret=secret), redact_body(after, secret=secret)
    paths = {_whole_lists(level.path(output_format="list")) for levels in diff.values() for level in levels}
    changes = []
    for path in sorted(paths):
        change: dict[str, Any] = {"path": dotted(path)}
        for name, shown in (("old", shown_before), ("new", shown_after)):
            value = _at(shown, path)
            if value is not _ABSENT:
                change[name] = value
        changes.append(change)
    return changes


def dotted(path: Iterable[str]) -> str:
    """`metadata.annotations["kcp.io/cluster"]`: plain keys joined by dots, other keys quoted."""
    text = ""
    for key in path:
        plain = key.replace("-", "").replace("_", "").isalnum()
        text += (f".{key}" if text else key) if plain else f"[{_quoted(key)}]"
    return text


def add_field_changes(data: Mapping[str, Any], plan: ServletPlan, inventory: Inventory) -> None:
    """Give each patch in `data` (`plan.to_dict()`) its `changes`, against the objects of `inventory`.

    The writes are replayed in the plan's order, so a patch is compared with the object as the
    plan's earlier writes left it. A patch to an object neither the inputs nor the plan hold gets
    no `changes`: there is nothing to compare it with.
    """
    state: dict[_Key, Object] = {}
    for obj in inventory.remote_objects:
        state[_key_of(Side.REMOTE, obj, cluster=remote_key_of(obj).cluster)] = obj
    for obj in inventory.local_objects:
        state[_key_of(Side.LOCAL, obj, cluster="")] = obj
    for printed, planned in zip(data["objects"], plan.objects):
        for shown, action in zip(printed["actions"], planned.actions):
            _replay(action, shown, state)


def _replay(action: Action, shown: dict[str, Any], state: dict[_Key, Object]) -> None:
    target = action.target
    if target is None or not action.is_write:
        return
    key = _ref_key(target)
    patch, created = getattr(action, "patch", None), getattr(action, "object", None)
    if isinstance(patch, Mapping):
        before = state.get(key)
        if before is None:
            return
        after = apply_merge_patch(before, patch)
        shown["changes"] = field_changes(before, after, secret=target.resource.kind == "Secret")
        state[key] = after
    elif isinstance(created, Mapping):
        state[key] = created
    elif action.type in _DELETES:
        state.pop(key, None)


def _key_of(side: Side, obj: Object, *, cluster: str) -> _Key:
    metadata = obj.get("metadata")
    metadata = metadata if isinstance(metadata, Mapping) else {}
    return (
        side,
        str(obj.get("apiVersion")),
        str(obj.get("kind")),
        cluster,
        str(metadata.get("namespace") or ""),
        str(metadata.get("name") or ""),
    )


def _ref_key(ref: ObjectRef) -> _Key:
    return (ref.side, ref.resource.api_version, ref.resource.kind, ref.cluster, ref.namespace, ref.name)


def _whole_lists(path: list[Any]) -> tuple[str, ...]:
    """The path up to its first list index: a merge patch replaces a list whole."""
    kept: list[str] = []
    for key in path:
        if not isinstance(key, str):
            break
        kept.append(key)
    return tuple(kept)


def _at(obj: Object, path: tuple[str, ...]) -> Any:
    value: Any = obj
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            return _ABSENT
        value = value[key]
    return value


def _quoted(key: str) -> str:
    return '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
