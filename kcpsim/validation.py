"""Structural-schema validation of custom resources, with kube-apiserver's words.

What the apiserver checks of a custom resource against its CRD's (or APIResourceSchema's)
`openAPIV3Schema`, CEL rules aside: `type` (and `x-kubernetes-int-or-string`), `nullable`,
`enum`, `minimum`/`maximum` with their `exclusive*` flags, `multipleOf`, `minLength`/
`maxLength`, `pattern`, `format` (the string formats below), `minItems`/`maxItems`,
`uniqueItems`, `minProperties`/`maxProperties`, `required`, and pruning: fields the schema does
not know are dropped unless `x-kubernetes-preserve-unknown-fields` (or `additionalProperties`)
keeps them.

Each problem is a (field, message) pair as `Status.details.causes` carries it, worded like
kube-openapi's validation errors turned into field errors by apiextensions-apiserver:
`spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10`.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import ipaddress
import json
import re
import uuid
from collections.abc import Callable
from typing import Any

Problem = tuple[str, str]
_ROOT_FIELDS = ("apiVersion", "kind", "metadata")


def show(value: Any) -> str:
    """A value as Go's field errors print it: numbers and booleans bare, strings quoted, else JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return number(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def number(value: float) -> str:
    """A schema bound as Go's %v prints a float64: `10`, `10.5`."""
    if float(value).is_integer() and abs(value) < 1e21:
        return str(int(value))
    return repr(float(value))


def _kind_of(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def _type_ok(value: Any, schema: dict[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))
    expected = schema.get("type")
    if not expected:
        return True
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if expected == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, {"object": dict, "array": list, "string": str, "boolean": bool}.get(expected, object))


# ---- formats ---------------------------------------------------------------------------------------
def _parses(parse: Callable[[str], object]) -> Callable[[str], bool]:
    def check(text: str) -> bool:
        try:
            parse(text)
        except (ValueError, binascii.Error):
            return False
        return True

    return check


_HOSTNAME = re.compile(
    r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$"
)
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_MAC = re.compile(r"^([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_DURATION = re.compile(r"^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h|d|w))+$")
FORMATS: dict[str, Callable[[str], bool]] = {
    "date": _parses(datetime.date.fromisoformat),
    "date-time": lambda text: bool(_DATE_TIME.match(text)) and _parses(datetime.datetime.fromisoformat)(text),
    "uuid": _parses(uuid.UUID),
    "email": lambda text: bool(_EMAIL.match(text)),
    "hostname": lambda text: bool(_HOSTNAME.match(text)),
    "ipv4": _parses(ipaddress.IPv4Address),
    "ipv6": _parses(ipaddress.IPv6Address),
    "cidr": _parses(lambda text: ipaddress.ip_network(text, strict=False)),
    "mac": lambda text: bool(_MAC.match(text)),
    "byte": _parses(lambda text: base64.b64decode(text, validate=True)),
    "duration": lambda text: bool(_DURATION.match(text)),
}


# ---- the walk --------------------------------------------------------------------------------------
def _numeric(value: float, schema: dict[str, Any], name: str) -> list[Problem]:
    problems = []
    if "maximum" in schema:
        bound, exclusive = schema["maximum"], bool(schema.get("exclusiveMaximum"))
        if value > bound or (exclusive and value == bound):
            words = "less than" if exclusive else "less than or equal to"
            problems.append((name, f"Invalid value: {show(value)}: {name} in body should be {words} {number(bound)}"))
    if "minimum" in schema:
        bound, exclusive = schema["minimum"], bool(schema.get("exclusiveMinimum"))
        if value < bound or (exclusive and value == bound):
            words = "greater than" if exclusive else "greater than or equal to"
            problems.append((name, f"Invalid value: {show(value)}: {name} in body should be {words} {number(bound)}"))
    factor = schema.get("multipleOf")
    if factor and (value / factor) != int(value / factor):
        problems.append(
            (name, f"Invalid value: {show(value)}: {name} in body should be a multiple of {number(factor)}")
        )
    return problems


def _string(value: str, schema: dict[str, Any], name: str) -> list[Problem]:
    problems = []
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        problems.append((name, f"Too long: may not be more than {schema['maxLength']} bytes"))
    if "minLength" in schema and len(value) < schema["minLength"]:
        problems.append(
            (name, f"Invalid value: {show(value)}: {name} in body should be at least {schema['minLength']} chars long")
        )
    pattern = schema.get("pattern")
    if pattern is not None and re.search(pattern, value) is None:
        problems.append((name, f"Invalid value: {show(value)}: {name} in body should match '{pattern}'"))
    check = FORMATS.get(str(schema.get("format", "")))
    if check is not None and not check(value):
        problems.append(
            (name, f"Invalid value: {show(value)}: {name} in body must be of type {schema['format']}: {show(value)}")
        )
    return problems


def _array(value: list[Any], schema: dict[str, Any], name: str) -> list[Problem]:
    problems = []
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        noun = "item" if schema["maxItems"] == 1 else "items"
        problems.append((name, f"Too many: {len(value)}: must have at most {schema['maxItems']} {noun}"))
    if "minItems" in schema and len(value) < schema["minItems"]:
        problems.append(
            (name, f"Invalid value: {len(value)}: {name} in body should have at least {schema['minItems']} items")
        )
    if schema.get("uniqueItems") and len({json.dumps(item, sort_keys=True) for item in value}) < len(value):
        problems.append((name, f"Duplicate value: {show(value)}"))
    return problems


def validate(value: Any, schema: dict[str, Any] | None, name: str = "") -> tuple[Any, list[Problem]]:
    """The pruned value and the problems of `value` against `schema`, `name` its field path."""
    if not schema:
        return value, []
    field = name or "<root>"
    if value is None and schema.get("nullable"):
        return value, []
    if not _type_ok(value, schema):
        expected = schema.get("type", "")
        kind = _kind_of(value)
        return value, [
            (field, f'Invalid value: "{kind}": {name or "body"} in body must be of type {expected}: "{kind}"')
        ]
    problems: list[Problem] = []
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(json.dumps(v if isinstance(v, str) else json.dumps(v)) for v in schema["enum"])
        problems.append((field, f"Unsupported value: {show(value)}: supported values: {allowed}"))
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        problems += _numeric(value, schema, field)
    elif isinstance(value, str):
        problems += _string(value, schema, field)
    elif isinstance(value, list):
        problems += _array(value, schema, field)
        items = schema.get("items")
        if isinstance(items, dict):
            pruned_items = []
            for index, item in enumerate(value):
                pruned, item_problems = validate(item, items, f"{name}[{index}]")
                pruned_items.append(pruned)
                problems += item_problems
            value = pruned_items
    elif isinstance(value, dict):
        value, object_problems = _object(value, schema, name)
        problems += object_problems
    return value, problems


def _object(value: dict[str, Any], schema: dict[str, Any], name: str) -> tuple[dict[str, Any], list[Problem]]:
    properties: dict[str, Any] = schema.get("properties") or {}
    additional = schema.get("additionalProperties")
    # Without properties an object keeps what it holds only when told to (structural schemas).
    keep_unknown = bool(schema.get("x-kubernetes-preserve-unknown-fields")) or additional is True
    problems: list[Problem] = []
    out: dict[str, Any] = {}
    for key, sub in value.items():
        child = f"{name}.{key}" if name else key
        if key in properties:
            out[key], sub_problems = validate(sub, properties[key], child)
            problems += sub_problems
        elif isinstance(additional, dict):
            out[key], sub_problems = validate(sub, additional, child)
            problems += sub_problems
        elif keep_unknown or (name == "" and key in _ROOT_FIELDS):
            out[key] = sub
    for key in schema.get("required") or []:
        if key not in value:
            problems.append((f"{name}.{key}" if name else key, "Required value"))
    field = name or "<root>"
    if "maxProperties" in schema and len(value) > schema["maxProperties"]:
        problems.append((field, f"Too many: {len(value)}: must have at most {schema['maxProperties']} items"))
    if "minProperties" in schema and len(value) < schema["minProperties"]:
        problems.append(
            (
                field,
                f"Invalid value: {len(value)}: {field} in body should have at least {schema['minProperties']} properties",
            )
        )
    return out, problems


def validate_custom_resource(
    obj: dict[str, Any], schema: dict[str, Any] | None
) -> tuple[dict[str, Any], list[Problem]]:
    """Validate and prune everything but apiVersion, kind and metadata (the apiserver's own)."""
    if not schema:
        return obj, []
    root = {
        **schema,
        "properties": {k: v for k, v in (schema.get("properties") or {}).items() if k not in _ROOT_FIELDS},
        "required": [r for r in schema.get("required") or [] if r not in _ROOT_FIELDS],
    }
    body = {k: v for k, v in obj.items() if k not in _ROOT_FIELDS}
    pruned, problems = validate(body, root)
    return {**{k: obj[k] for k in _ROOT_FIELDS if k in obj}, **pruned}, problems
