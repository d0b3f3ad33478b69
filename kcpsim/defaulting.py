"""Structural defaulting of custom resources, as the apiserver applies a schema's `default:`.

A field missing from an object gets its schema's default (a copy), and defaulting goes on inside
what was just set; `null` where the schema does not say `nullable: true` is dropped first, so a
default replaces it. Defaults apply to the object of a create or update request, and again
whenever a stored object is read, so objects stored before a default was added show it (without
being written back), as kube-apiserver does with objects read from etcd.
"""

from __future__ import annotations

import copy
from typing import Any

_ROOT_FIELDS = ("apiVersion", "kind", "metadata")
_HAS_DEFAULTS: dict[int, tuple[dict[str, Any], bool]] = {}


def has_defaults(schema: dict[str, Any] | None) -> bool:
    """Whether anything in `schema` has a default (cached: reads must stay cheap)."""
    if not schema:
        return False
    cached = _HAS_DEFAULTS.get(id(schema))
    if cached is not None and cached[0] is schema:
        return cached[1]
    found = '"default"' in _keys(schema)
    if len(_HAS_DEFAULTS) > 1024:  # schemas are replaced when CRDs change: forget the old ones
        _HAS_DEFAULTS.clear()
    _HAS_DEFAULTS[id(schema)] = (schema, found)
    return found


def _keys(schema: Any) -> str:
    # Only the keys of schema nodes matter; an enum value "default" must not count.
    if isinstance(schema, dict):
        parts = []
        for key, value in schema.items():
            if key == "default":
                parts.append('"default"')
            elif key in ("properties", "patternProperties"):
                parts += [_keys(sub) for sub in (value or {}).values()]
            elif key in ("items", "additionalProperties"):
                parts.append(_keys(value))
        return " ".join(parts)
    return ""


def apply_defaults(value: Any, schema: dict[str, Any] | None) -> Any:
    """`value` with the schema's defaults filled in (in place where it is a dict or list)."""
    if not schema:
        return value
    if isinstance(value, dict):
        properties: dict[str, Any] = schema.get("properties") or {}
        for key, sub in properties.items():
            if key in value and value[key] is None and not sub.get("nullable"):
                del value[key]
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
            if key in value:
                value[key] = apply_defaults(value[key], sub)
        additional = schema.get("additionalProperties")
        if isinstance(additional, dict):
            for key in [k for k in value if k not in properties]:
                value[key] = apply_defaults(value[key], additional)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for index, item in enumerate(value):
            value[index] = apply_defaults(item, schema["items"])
    return value


def default_custom_resource(obj: dict[str, Any], schema: dict[str, Any] | None) -> dict[str, Any]:
    """Defaults for everything but apiVersion, kind and metadata; `obj` is changed in place."""
    if not has_defaults(schema) or schema is None:
        return obj
    properties = {k: v for k, v in (schema.get("properties") or {}).items() if k not in _ROOT_FIELDS}
    return dict(apply_defaults(obj, {**schema, "properties": properties}))


def defaulted_for_read(obj: dict[str, Any], schema: dict[str, Any] | None) -> dict[str, Any]:
    """A stored object as a read shows it: a defaulted copy when the schema has defaults."""
    if not has_defaults(schema):
        return obj
    return default_custom_resource(copy.deepcopy(obj), schema)
