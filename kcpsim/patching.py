"""The four patch types of the apiserver and field ownership for server-side apply.

- JSON merge patch (RFC 7386) and JSON patch (RFC 6902), exact.
- Strategic merge patch: in strategic.py, with the merge keys of the built-in kinds.
- Server-side apply: every manager owns the leaf fields it applied (lists are atomic leaves,
  except `metadata.finalizers`, a set whose items are owned one by one);
  applying a different value to a field another manager owns is a conflict unless `force=true`,
  which takes only the conflicting fields (a field applied with the same value becomes shared);
  fields a manager stops applying are removed if nobody else owns them. Ownership is written to
  `metadata.managedFields` in the FieldsV1 format.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Iterable, Mapping
from typing import Any

from kcpsim.errors import StatusError, bad_request

Path = tuple[str, ...]
JSON = Any

# Fields nobody "owns": identity and server-maintained metadata.
_UNOWNED_META = {
    "name",
    "namespace",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
}


def clone(value: JSON) -> JSON:
    """A deep copy of JSON data, much faster than copy.deepcopy."""
    if isinstance(value, dict):
        return {k: clone(v) for k, v in value.items()}
    if isinstance(value, list):
        return [clone(v) for v in value]
    return value


def merge_patch(target: JSON, patch: JSON) -> JSON:
    """RFC 7386: null deletes, objects merge recursively, everything else replaces."""
    if not isinstance(patch, dict):
        return clone(patch)
    result = clone(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise _patch_error(f'invalid JSON pointer "{path}"')
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _patch_error(message: str) -> StatusError:
    return StatusError(422, "Invalid", f"the server rejected our request due to an error in our request: {message}")


def _walk(doc: JSON, parts: list[str]) -> JSON:
    for part in parts:
        if isinstance(doc, dict) and part in doc:
            doc = doc[part]
        elif isinstance(doc, list) and part.isdigit() and int(part) < len(doc):
            doc = doc[int(part)]
        else:
            raise _patch_error(f'path "/{"/".join(parts)}" does not exist')
    return doc


def _add(doc: JSON, parts: list[str], value: JSON, *, replace: bool) -> JSON:
    if not parts:
        return clone(value)
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict):
        if replace and last not in parent:
            raise _patch_error(f"replace operation does not apply: doc is missing key: /{'/'.join(parts)}")
        parent[last] = clone(value)
    elif isinstance(parent, list):
        if last == "-" and not replace:
            parent.append(clone(value))
        elif last.isdigit() and int(last) <= len(parent) - (1 if replace else 0):
            if replace:
                parent[int(last)] = clone(value)
            else:
                parent.insert(int(last), clone(value))
        else:
            raise _patch_error(f"index out of range: /{'/'.join(parts)}")
    else:
        raise _patch_error(f"cannot add to a scalar at /{'/'.join(parts[:-1])}")
    return doc


def _remove(doc: JSON, parts: list[str]) -> JSON:
    if not parts:
        raise _patch_error("cannot remove the whole document")
    parent = _walk(doc, parts[:-1])
    last = parts[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
    elif isinstance(parent, list) and last.isdigit() and int(last) < len(parent):
        del parent[int(last)]
    else:
        raise _patch_error(f"remove operation does not apply: doc is missing path: /{'/'.join(parts)}")
    return doc


def json_patch(target: JSON, operations: JSON) -> JSON:
    """RFC 6902; a failing operation (including `test`) is a 422, like the apiserver."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    doc = clone(target)
    for op in operations:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request(f"invalid json patch operation: {op!r}")
        kind, parts = op["op"], _pointer(op["path"])
        if kind == "add":
            doc = _add(doc, parts, op.get("value"), replace=False)
        elif kind == "replace":
            doc = _add(doc, parts, op.get("value"), replace=True)
        elif kind == "remove":
            doc = _remove(doc, parts)
        elif kind in ("move", "copy"):
            source = _pointer(op.get("from", ""))
            value = clone(_walk(doc, source))
            if kind == "move":
                doc = _remove(doc, source)
            doc = _add(doc, parts, value, replace=False)
        elif kind == "test":
            if _walk(doc, parts) != op.get("value"):
                raise _patch_error(f"testing value /{'/'.join(parts)} failed")
        else:
            raise bad_request(f'unexpected json patch operation "{kind}"')
    return doc


_SET_LISTS = {("metadata", "finalizers")}


# ---- field ownership -------------------------------------------------------------------------


def owned_paths(obj: Mapping[str, Any], *, include_status: bool) -> set[Path]:
    """Leaf paths of an object that a manager can own (lists are atomic leaves)."""
    out: set[Path] = set()
    for key, value in obj.items():
        if key in ("apiVersion", "kind") or (key == "status" and not include_status):
            continue
        if key == "metadata" and isinstance(value, dict):
            for meta_key, meta_value in value.items():
                if meta_key in _UNOWNED_META:
                    continue
                if meta_key == "annotations" and isinstance(meta_value, dict) and "kcp.io/cluster" in meta_value:
                    # kcp derives it from the storage key; it is never stored, so never owned.
                    meta_value = {k: v for k, v in meta_value.items() if k != "kcp.io/cluster"}
                if meta_key == "finalizers" and isinstance(meta_value, list):
                    # listType=set: every finalizer is owned on its own, like the apiserver does.
                    out |= {("metadata", "finalizers", _set_item(item)) for item in meta_value}
                    continue
                _leaves(meta_value, ("metadata", meta_key), out)
        else:
            _leaves(value, (key,), out)
    return out


def _leaves(value: JSON, prefix: Path, out: set[Path]) -> None:
    if isinstance(value, dict) and value:
        for key, sub in value.items():
            _leaves(sub, (*prefix, key), out)
    else:
        out.add(prefix)


def changed_paths(old: Mapping[str, Any] | None, new: Mapping[str, Any], *, include_status: bool) -> set[Path]:
    """Leaf paths whose value differs between two versions of an object."""
    before = owned_paths(old or {}, include_status=include_status)
    after = owned_paths(new, include_status=include_status)
    return {p for p in before | after if _get(old or {}, p) != _get(new, p)}


_MISSING = object()


def _set_item(item: JSON) -> str:
    return "v:" + json.dumps(item, separators=(",", ":"))


def _get(obj: JSON, path: Path) -> JSON:
    for part in path:
        if part.startswith("v:") and isinstance(obj, list):
            return True if json.loads(part[2:]) in obj else _MISSING
        if not isinstance(obj, dict) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _delete(obj: JSON, path: Path) -> None:
    for part in path[:-1]:
        if not isinstance(obj, dict) or part not in obj:
            return
        obj = obj[part]
    last = path[-1]
    if last.startswith("v:") and isinstance(obj, list):
        item = json.loads(last[2:])
        if item in obj:
            obj.remove(item)
    elif isinstance(obj, dict):
        obj.pop(last, None)


def _overlaps(a: Path, b: Path) -> bool:
    shorter = min(len(a), len(b))
    return a[:shorter] == b[:shorter]


def fields_v1(paths: Iterable[Path]) -> dict[str, Any]:
    root: dict[str, Any] = {}
    for path in sorted(paths):
        node = root
        for part in path:
            node = node.setdefault(part if part.startswith("v:") else f"f:{part}", {})
    return root


def paths_from_fields_v1(fields: Mapping[str, Any], prefix: Path = ()) -> set[Path]:
    out: set[Path] = set()
    for key, sub in fields.items():
        if not key.startswith(("f:", "v:")):
            continue
        path = (*prefix, key if key.startswith("v:") else key[2:])
        if sub:
            out |= paths_from_fields_v1(sub, path)
        else:
            out.add(path)
    return out


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _entries(obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [clone(e) for e in (obj.get("metadata") or {}).get("managedFields") or []]


def _entry_paths(entry: Mapping[str, Any]) -> set[Path]:
    return paths_from_fields_v1(entry.get("fieldsV1") or {})


def _set_entry(
    entries: list[dict[str, Any]], *, manager: str, operation: str, api_version: str, paths: set[Path], subresource: str
) -> list[dict[str, Any]]:
    kept = [
        e
        for e in entries
        if not (
            e.get("manager") == manager and e.get("operation") == operation and e.get("subresource", "") == subresource
        )
    ]
    if paths:
        entry: dict[str, Any] = {
            "manager": manager,
            "operation": operation,
            "apiVersion": api_version,
            "time": _now(),
            "fieldsType": "FieldsV1",
            "fieldsV1": fields_v1(paths),
        }
        if subresource:
            entry["subresource"] = subresource
        kept.append(entry)
    return kept


def record_update(old: Mapping[str, Any] | None, new: dict[str, Any], *, manager: str, subresource: str = "") -> None:
    """Give `manager` the fields an update changed and take them from everybody else (in place)."""
    include_status = subresource == "status"
    changed = changed_paths(old, new, include_status=include_status or subresource == "")
    entries = _entries(old or {})
    if not changed and old is not None:
        new.setdefault("metadata", {})["managedFields"] = entries
        return
    updated: list[dict[str, Any]] = []
    mine: set[Path] = set()
    for entry in entries:
        paths = _entry_paths(entry)
        if (
            entry.get("manager") == manager
            and entry.get("operation") == "Update"
            and entry.get("subresource", "") == subresource
        ):
            mine = paths
            continue
        remaining = {p for p in paths if not any(_overlaps(p, c) for c in changed)}
        if remaining:
            entry["fieldsV1"] = fields_v1(remaining)
            updated.append(entry)
    present = owned_paths(new, include_status=True)
    mine = {p for p in (mine | changed) if p in present}
    new.setdefault("metadata", {})["managedFields"] = _set_entry(
        updated,
        manager=manager,
        operation="Update",
        api_version=new.get("apiVersion", ""),
        paths=mine,
        subresource=subresource,
    )


def _deep_merge(live: JSON, config: JSON, path: Path = ()) -> JSON:
    if isinstance(live, dict) and isinstance(config, dict):
        out = clone(live)
        for key, value in config.items():
            out[key] = _deep_merge(live.get(key), value, (*path, key))
        return out
    if path in _SET_LISTS and isinstance(live, list) and isinstance(config, list):
        return clone(live) + [item for item in config if item not in live]
    return clone(config)


def apply(
    live: Mapping[str, Any] | None, config: Mapping[str, Any], *, manager: str, force: bool, subresource: str = ""
) -> dict[str, Any]:
    """Server-side apply of `config` by `manager` onto `live` (None when creating)."""
    include_status = subresource == "status"
    wanted = owned_paths(config, include_status=include_status)
    entries = _entries(live or {})
    conflicts: list[tuple[str, Path]] = []
    for entry in entries:
        if entry.get("manager") == manager:
            continue
        for path in _entry_paths(entry):
            for want in wanted:
                if _overlaps(path, want) and _get(live or {}, want) != _get(config, want):
                    conflicts.append((str(entry.get("manager")), want))
    if conflicts and not force:
        listed = "; ".join(f'conflict with "{who}": .{".".join(path)}' for who, path in sorted(set(conflicts)))
        count = len(set(conflicts))
        raise StatusError(
            409,
            "Conflict",
            f"Apply failed with {count} conflict{'s' if count > 1 else ''}: {listed}",
            details={
                "causes": [
                    {
                        "reason": "FieldManagerConflict",
                        "message": f'conflict with "{who}"',
                        "field": "." + ".".join(path),
                    }
                    for who, path in sorted(set(conflicts))
                ]
            },
        )
    previous: set[Path] = set()
    others: list[dict[str, Any]] = []
    for entry in entries:
        paths = _entry_paths(entry)
        if (
            entry.get("manager") == manager
            and entry.get("operation") == "Apply"
            and entry.get("subresource", "") == subresource
        ):
            previous = paths
            continue
        if force and entry.get("manager") != manager:
            # A forced apply takes only the fields in conflict; a field applied with the value
            # another manager owns stays shared by both, as structured-merge-diff does.
            taken = [want for who, want in conflicts if who == str(entry.get("manager"))]
            paths = {p for p in paths if not any(_overlaps(p, w) for w in taken)}
            if not paths:
                continue
            entry["fieldsV1"] = fields_v1(paths)
        others.append(entry)
    merged: dict[str, Any] = _deep_merge(clone(dict(live or {})), dict(config))
    still_owned = set().union(*(_entry_paths(e) for e in others)) if others else set()
    for path in previous - wanted:
        if not any(_overlaps(path, o) for o in still_owned):
            _delete(merged, path)
    merged.setdefault("metadata", {})["managedFields"] = _set_entry(
        others,
        manager=manager,
        operation="Apply",
        api_version=str(config.get("apiVersion", "")),
        paths=wanted,
        subresource=subresource,
    )
    return merged
