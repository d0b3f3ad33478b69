"""Structural-schema validation and pruning of custom resources, as the apiserver does it.

Covers `type`, `properties`, `required`, `items`, `enum`, `additionalProperties` and
`x-kubernetes-preserve-unknown-fields`; unknown fields are pruned silently, type and required
errors become 422 causes. CEL rules, formats, defaults and numeric limits are not evaluated.
"""

from __future__ import annotations

import json
from typing import Any

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "integer": (int,),
    "number": (int, float),
}


def _type_ok(value: Any, expected: str) -> bool:
    if expected in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES.get(expected, (object,)))


def validate_and_prune(value: Any, schema: dict[str, Any] | None, path: str = "") -> tuple[Any, list[tuple[str, str]]]:
    """Return the pruned value and a list of (field, message) errors."""
    if not schema:
        return value, []
    errors: list[tuple[str, str]] = []
    expected = schema.get("type")
    if value is None and schema.get("nullable"):
        return value, errors
    if expected and not _type_ok(value, expected):
        shown = json.dumps(value)
        errors.append(
            (
                path or "<root>",
                f'Invalid value: "{_kind_of(value)}": {path or "body"} in body must be of type {expected}: {shown}',
            )
        )
        return value, errors
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v) for v in schema["enum"])
        errors.append((path, f"Unsupported value: {json.dumps(value)}: supported values: {allowed}"))
    if isinstance(value, dict):
        props: dict[str, Any] = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields", False)
        out: dict[str, Any] = {}
        for key, sub in value.items():
            sub_path = f"{path}.{key}" if path else key
            if key in props:
                out[key], sub_errors = validate_and_prune(sub, props[key], sub_path)
                errors += sub_errors
            elif isinstance(additional, dict):
                out[key], sub_errors = validate_and_prune(sub, additional, sub_path)
                errors += sub_errors
            elif (
                preserve
                or additional is True
                or (not props and expected != "object")
                or (not props and not additional and preserve is False and expected == "object" and path == "")
            ):
                out[key] = sub
        for key in schema.get("required") or []:
            if key not in value:
                errors.append((f"{path}.{key}" if path else key, "Required value"))
        return out, errors
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        items = []
        for index, item in enumerate(value):
            pruned, sub_errors = validate_and_prune(item, schema["items"], f"{path}[{index}]")
            items.append(pruned)
            errors += sub_errors
        return items, errors
    return value, errors


def _kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def validate_custom_resource(
    obj: dict[str, Any], schema: dict[str, Any] | None
) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """Validate everything but apiVersion/kind/metadata (which the apiserver handles itself)."""
    if not schema:
        return obj, []
    body = {k: v for k, v in obj.items() if k not in ("apiVersion", "kind", "metadata")}
    props = {k: v for k, v in (schema.get("properties") or {}).items() if k not in ("apiVersion", "kind", "metadata")}
    root = {
        **schema,
        "properties": props,
        "required": [r for r in schema.get("required") or [] if r not in ("apiVersion", "kind", "metadata")],
    }
    pruned, errors = validate_and_prune(body, root)
    return {**{k: obj[k] for k in ("apiVersion", "kind", "metadata") if k in obj}, **pruned}, errors


_IMMUTABLE_RULES = {"self == oldSelf", "oldSelf == self"}


def transition_problems(old: Any, new: Any, schema: dict[str, Any] | None, path: str = "") -> list[tuple[str, str]]:
    """Evaluate the one CEL transition rule CRDs use most, `self == oldSelf` (immutability).

    Other `x-kubernetes-validations` rules are ignored; a real apiserver would evaluate them.
    """
    if not schema or old is None or new is None:
        return []
    problems = []
    for rule in schema.get("x-kubernetes-validations") or []:
        if str(rule.get("rule", "")).strip() in _IMMUTABLE_RULES and old != new:
            problems.append(
                (path or "<root>", f'Invalid value: "object": {rule.get("message") or "failed rule: " + rule["rule"]}')
            )
    if isinstance(old, dict) and isinstance(new, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if path == "" and key in ("apiVersion", "kind", "metadata", "status"):
                continue
            problems += transition_problems(old.get(key), new.get(key), sub, f"{path}.{key}" if path else key)
    return problems
