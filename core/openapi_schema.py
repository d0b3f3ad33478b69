"""A kind's OpenAPI v3 definition, resolved into a structural schema like a CRD version's.

A built-in type has no CRD to copy a schema from; the server's OpenAPI v3 document for its
group-version has it instead, spread over `components.schemas` and joined by `$ref` (often
wrapped in a one-element `allOf` that carries the field's description). kcp only accepts
structural schemas, so references are inlined, `allOf` parts merged, and what a structural
schema cannot say is widened rather than guessed: a definition that refers to itself (such as
JSONSchemaProps) ends in `x-kubernetes-preserve-unknown-fields`, IntOrString and Quantity become
`x-kubernetes-int-or-string`, and any other node without a type keeps unknown fields. The
object's `metadata` becomes `{type: object}`, as in every CRD (the server owns its schema).

Deliberately not here: which kinds and versions there are (`builtin_types.py`) and reading the
document (the adapters and the CLI do that).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from servlet.core.model import Problem

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["REFERENCE_PREFIX", "structural_schema"]

REFERENCE_PREFIX = "#/components/schemas/"

# JSONSchemaProps fields a CRD schema may carry; everything else (patch strategies, the kind's
# group-version-kind, examples) is dropped.
_KEPT = frozenset(
    {
        "type",
        "format",
        "description",
        "required",
        "enum",
        "default",
        "nullable",
        "maximum",
        "minimum",
        "exclusiveMaximum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "maxProperties",
        "minProperties",
        "x-kubernetes-list-type",
        "x-kubernetes-list-map-keys",
        "x-kubernetes-map-type",
        "x-kubernetes-int-or-string",
        "x-kubernetes-embedded-resource",
        "x-kubernetes-preserve-unknown-fields",
        "x-kubernetes-validations",
    }
)
_PRIMITIVES = frozenset({"string", "integer", "number"})


def structural_schema(
    definitions: Mapping[str, Any], name: str, *, field: str = "components.schemas"
) -> tuple[dict[str, Any], tuple[Problem, ...]]:
    """The definition `name` with every reference resolved, and every reference that could not be.

    `field` names where `definitions` came from, for the problems' field paths.
    """
    problems: list[Problem] = []
    definition = definitions.get(name)
    if not isinstance(definition, Mapping):
        return {}, (Problem(field=f"{field}.{name}", message="no such definition in the OpenAPI document"),)
    resolver = _Resolver(definitions=definitions, field=field, problems=problems)
    schema = resolver.definition(name, path=f"{field}.{name}", stack=())
    properties = schema.get("properties")
    if isinstance(properties, dict) and "metadata" in properties:
        properties["metadata"] = {"type": "object"}
    return schema, tuple(problems)


class _Resolver:
    def __init__(self, *, definitions: Mapping[str, Any], field: str, problems: list[Problem]) -> None:
        self._definitions = definitions
        self._field = field
        self._problems = problems

    def definition(self, name: str, *, path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        target = self._definitions.get(name)
        if not isinstance(target, Mapping):
            self._problems.append(
                Problem(field=path, message=f"refers to '{name}', which the document does not define")
            )
            return {"x-kubernetes-preserve-unknown-fields": True}
        if name in stack:
            # A recursive definition cannot be inlined: keep what it holds without describing it.
            recursive: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}
            if target.get("type") == "object":
                recursive["type"] = "object"
            return recursive
        return self.node(target, path=path, stack=(*stack, name))

    def node(self, raw: Mapping[str, Any], *, path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        merged = self._merged(raw, path=path, stack=stack)
        out: dict[str, Any] = {key: value for key, value in merged.items() if key in _KEPT}
        if merged.get("format") == "int-or-string" or _is_int_or_string(merged):
            out.pop("type", None)
            out.pop("format", None)
            out["x-kubernetes-int-or-string"] = True
            return out
        properties = merged.get("properties")
        if isinstance(properties, Mapping):
            out["properties"] = {
                str(key): self.node(_mapping(value), path=f"{path}.properties.{key}", stack=stack)
                for key, value in properties.items()
            }
            out.setdefault("type", "object")
        items = merged.get("items")
        if isinstance(items, Mapping):
            out["items"] = self.node(items, path=f"{path}.items", stack=stack)
            out.setdefault("type", "array")
        additional = merged.get("additionalProperties")
        if isinstance(additional, Mapping):
            out["additionalProperties"] = self.node(additional, path=f"{path}.additionalProperties", stack=stack)
            out.setdefault("type", "object")
        elif additional is True and "properties" not in out:
            out["x-kubernetes-preserve-unknown-fields"] = True
        if out.get("type") == "array" and "items" not in out:
            out["items"] = {"x-kubernetes-preserve-unknown-fields": True}
        if "type" not in out and not out.get("x-kubernetes-int-or-string"):
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out

    def _merged(self, raw: Mapping[str, Any], *, path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        """`raw` with its `$ref` and `allOf` parts folded in; `raw`'s own keys win."""
        merged: dict[str, Any] = {}
        reference = raw.get("$ref")
        if reference is not None:
            merged.update(self._referenced(reference, path=path, stack=stack))
        for index, part in enumerate(_sequence(raw.get("allOf"))):
            part_path = f"{path}.allOf[{index}]"
            if not isinstance(part, Mapping):
                self._problems.append(Problem(field=part_path, message="is not a schema object"))
                continue
            resolved = self._merged(part, path=part_path, stack=stack)
            merged = _combine(merged, resolved)
        own = {key: value for key, value in raw.items() if key not in ("$ref", "allOf")}
        return _combine(merged, own)

    def _referenced(self, reference: object, *, path: str, stack: tuple[str, ...]) -> dict[str, Any]:
        if not isinstance(reference, str) or not reference.startswith(REFERENCE_PREFIX):
            self._problems.append(
                Problem(field=f"{path}.$ref", message=f"'{reference}' is not a reference to {REFERENCE_PREFIX}NAME")
            )
            return {"x-kubernetes-preserve-unknown-fields": True}
        name = reference.removeprefix(REFERENCE_PREFIX)
        return self.definition(name, path=f"{path}.$ref", stack=stack)


def _combine(base: Mapping[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    """`extra` over `base`; properties and required lists are joined rather than replaced."""
    combined = dict(base)
    for key, value in extra.items():
        if key == "properties" and isinstance(combined.get(key), Mapping) and isinstance(value, Mapping):
            combined[key] = {**combined[key], **value}
        elif key == "required" and isinstance(combined.get(key), list) and isinstance(value, list):
            combined[key] = list(dict.fromkeys([*combined[key], *value]))
        else:
            combined[key] = value
    return combined


def _is_int_or_string(schema: Mapping[str, Any]) -> bool:
    """`oneOf`/`anyOf` of a string and a number (IntOrString, Quantity): an int-or-string."""
    for key in ("oneOf", "anyOf"):
        choices = [_mapping(choice).get("type") for choice in _sequence(schema.get(key))]
        if choices and "string" in choices and set(choices) <= _PRIMITIVES:
            return True
    return False


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()
