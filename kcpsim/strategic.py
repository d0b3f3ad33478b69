"""Strategic merge patch for the built-in kinds kcpsim serves, as kube-apiserver applies it.

A strategic merge patch is a JSON merge patch (null deletes, maps merge) in which each list
follows its Go field's `patchStrategy`: kcpsim's built-ins have four merging lists, every other
list is atomic (replaced whole), as RBAC rules and subjects, CRD fields and Secret/ConfigMap data:

- `metadata.finalizers`: merged as a set of strings (existing first, then the new ones);
- `metadata.ownerReferences`: merged by `uid`;
- a ServiceAccount's `secrets`: merged by `name`;
- a Namespace's `status.conditions`: merged by `type`.

The directives: `$patch: replace | delete | merge` on a map, `{"$patch": "delete", <key>: ...}` and
`{"$patch": "replace"}` as items of a merging list, `$deleteFromPrimitiveList/<field>`,
`$setElementOrder/<field>` (the patch's order first, items only the server has keep their place
relative to the others) and `$retainKeys` (keys not listed are cleared). Whether the patch type is
allowed at all (built-in kinds only) is decided by the caller.
"""

from __future__ import annotations

from typing import Any

from kcpsim.errors import StatusError, bad_request
from kcpsim.patching import clone

__all__ = ["strategic_merge_patch", "without_directives"]

Path = tuple[str, ...]
JSON = Any

_SET = ""  # the "merge key" of a merging list of primitives
_COMMON: dict[Path, str] = {("metadata", "finalizers"): _SET, ("metadata", "ownerReferences"): "uid"}
_BY_KIND: dict[tuple[str, str], dict[Path, str]] = {
    ("", "ServiceAccount"): {("secrets",): "name"},
    ("", "Namespace"): {("status", "conditions"): "type"},
}
_ORDER = "$setElementOrder/"
_DELETE_FROM = "$deleteFromPrimitiveList/"


def strategic_merge_patch(target: JSON, patch: JSON, *, group: str = "", kind: str = "") -> JSON:
    """`patch` applied to `target`, an object of the built-in `kind` in API `group`."""
    merging = {**_COMMON, **_BY_KIND.get((group, kind), {})}
    return _merge_value(target, patch, (), merging)


def _merge_value(target: JSON, patch: JSON, path: Path, merging: dict[Path, str]) -> JSON:
    if not isinstance(patch, dict):
        return clone(patch)
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return without_directives(patch)
    if directive not in (None, "merge"):
        raise _error(f"Unknown patch type: {directive} in map: {_go(patch)}")
    result = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if key.startswith("$"):
            continue
        sub = (*path, key)
        if value is None:
            result.pop(key, None)
        elif sub in merging and isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, sub, merging)
        else:
            merged = _merge_value(result.get(key), value, sub, merging)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
    for key, value in patch.items():
        if key.startswith(_DELETE_FROM):
            field = key[len(_DELETE_FROM) :]
            kept = [item for item in result.get(field) or [] if item not in (value or [])]
            if kept or field in result:
                result[field] = kept
    for key, order in patch.items():
        field = key[len(_ORDER) :]
        if key.startswith(_ORDER) and isinstance(result.get(field), list) and (*path, field) in merging:
            original = target.get(field) if isinstance(target, dict) else None
            result[field] = _in_order(result[field], order, original or [], merging[(*path, field)])
    if "$retainKeys" in patch:
        retained = set(patch["$retainKeys"] or [])
        result = {k: v for k, v in result.items() if k in retained}
    return result


def _merge_list(current: JSON, patch: list[Any], path: Path, merging: dict[Path, str]) -> list[Any]:
    """A merging list patched; as in apimachinery, the items the patch names come in its order,
    the server's other items keep their places among them."""
    key = merging[path]
    items = list(current) if isinstance(current, list) else []
    if key == _SET:
        merged: list[Any] = []
        for value in [*items, *patch]:  # duplicates dropped, the first kept
            if value not in merged:
                merged.append(clone(value))
        return _in_order(merged, patch, items, key)
    plain = [item for item in patch if not (isinstance(item, dict) and "$patch" in item)]
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [without_directives(item) for item in plain]
    merged = [clone(item) for item in items]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise _error(f"map: {_go(item)} does not contain declared merge key: {key}")
        position = next(
            (i for i, old in enumerate(merged) if isinstance(old, dict) and old.get(key) == item[key]), None
        )
        if item.get("$patch") == "delete":
            if position is not None:
                del merged[position]
        elif position is None:
            merged.append(without_directives(item))
        else:
            merged[position] = _merge_value(merged[position], item, (*path, "[]"), merging)
    return _in_order(merged, plain, items, key)


def _in_order(merged: list[Any], order: Any, original: list[Any], key: str) -> list[Any]:
    """`merged` sorted as apimachinery sorts by `$setElementOrder`: items the order names in its
    order, the others (the server's alone) in theirs, interleaved where the server had them."""

    def ident(item: Any) -> Any:
        return item.get(key) if key and isinstance(item, dict) else item

    wanted = [ident(item) for item in order or []]
    server = [ident(item) for item in original]
    named = sorted((item for item in merged if ident(item) in wanted), key=lambda item: wanted.index(ident(item)))
    server_only = [item for item in merged if ident(item) not in wanted]
    out: list[Any] = []
    while named or server_only:
        if not named or (
            server_only
            and ident(server_only[0]) in server
            and ident(named[0]) in server
            and server.index(ident(server_only[0])) < server.index(ident(named[0]))
        ):
            out.append(server_only.pop(0))
        else:
            out.append(named.pop(0))
    return out


def without_directives(value: JSON) -> JSON:
    """A strategic merge patch without its `$patch`, `$retainKeys`, `$setElementOrder/...` keys."""
    if isinstance(value, dict):
        return {k: without_directives(v) for k, v in value.items() if not k.startswith("$")}
    if isinstance(value, list):
        return [without_directives(v) for v in value]
    return value


def _go(value: Any) -> str:
    """A map as Go's %v prints it, in the apiserver's patch errors."""
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go(v)}" for k, v in sorted(value.items())) + "]"
    if isinstance(value, list):
        return "[" + " ".join(_go(v) for v in value) + "]"
    return str(value)


def _error(message: str) -> StatusError:
    return bad_request(message)
