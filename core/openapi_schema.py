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
__all__ = ["MAX_DEPTH", "MAX_NODES", "REFERENCE_PREFIX", "structural_schema"]

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
# Bounds against a hostile document: references may fan out (each definition naming the next one
# twice doubles the inlined size) and nest without end. Kubernetes' own kinds stay far below both.
MAX_NODES = 50_000
MAX_DEPTH = 100


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
    schema = resolver.definition(name, path=f"{field}.{name}")
    properties = schema.get("properties")
    if isinstance(properties, dict) and "metadata" in properties:
        properties["metadata"] = {"type": "object"}
    return schema, tuple(problems)


class _Resolver:
    """One pass over the definition: each node is merged with what it refers to, then resolved once."""

    def __init__(self, *, definitions: Mapping[str, Any], field: str, problems: list[Problem]) -> None:
        self._definitions = definitions
        self._field = field
        self._problems = problems
        self._nodes = 0
        self._too_big = False

    def definition(self, name: str, *, path: str) -> dict[str, Any]:
        return self.node(_reference(name), path=path, stack=(), depth=0)

    def node(self, raw: Mapping[str, Any], *, path: str, stack: tuple[str, ...], depth: int) -> dict[str, Any]:
        self._nodes += 1
        if self._beyond_limits(path=path, depth=depth):
            return {"x-kubernetes-preserve-unknown-fields": True}
        merged, stack = self._merged(raw, path=path, stack=stack, depth=depth)
        out: dict[str, Any] = {key: value for key, value in merged.items() if key in _KEPT}
        if merged.get("format") == "int-or-string" or _is_int_or_string(merged):
            out.pop("type", None)
            out.pop("format", None)
            out["x-kubernetes-int-or-string"] = True
            return out
        below = depth + 1
        properties = merged.get("properties")
        if isinstance(properties, Mapping):
            out["properties"] = {
                str(key): self.node(_mapping(value), path=f"{path}.properties.{key}", stack=stack, depth=below)
                for key, value in properties.items()
            }
            out.setdefault("type", "object")
        items = merged.get("items")
        if isinstance(items, Mapping):
            out["items"] = self.node(items, path=f"{path}.items", stack=stack, depth=below)
            out.setdefault("type", "array")
        additional = merged.get("additionalProperties")
        if isinstance(additional, Mapping):
            out["additionalProperties"] = self.node(
                additional, path=f"{path}.additionalProperties", stack=stack, depth=below
            )
            out.setdefault("type", "object")
        elif additional is True and "properties" not in out:
            out["x-kubernetes-preserve-unknown-fields"] = True
        if out.get("type") == "array" and "items" not in out:
            out["items"] = {"x-kubernetes-preserve-unknown-fields": True}
        if "type" not in out and not out.get("x-kubernetes-int-or-string"):
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out

    def _beyond_limits(self, *, path: str, depth: int) -> bool:
        """Whether the schema grew past the bounds; the first time, a problem says where."""
        if self._nodes <= MAX_NODES and depth <= MAX_DEPTH:
            return False
        if not self._too_big:
            self._too_big = True
            limit = f"more than {MAX_NODES} nodes" if self._nodes > MAX_NODES else f"deeper than {MAX_DEPTH} levels"
            self._problems.append(Problem(field=path, message=f"the resolved schema would be {limit}"))
        return True

    def _merged(
        self, raw: Mapping[str, Any], *, path: str, stack: tuple[str, ...], depth: int
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        """`raw` with the definitions it refers to (`$ref`, `allOf`) folded in, its own keys winning,
        and the definitions entered on the way (their parts are resolved below them)."""
        if self._beyond_limits(path=path, depth=depth):
            return {}, stack
        merged: dict[str, Any] = {}
        reference = raw.get("$ref")
        if reference is not None:
            merged, stack = self._referenced(reference, path=path, stack=stack, depth=depth)
        for index, part in enumerate(_sequence(raw.get("allOf"))):
            part_path = f"{path}.allOf[{index}]"
            if not isinstance(part, Mapping):
                self._problems.append(Problem(field=part_path, message="is not a schema object"))
                continue
            resolved, stack = self._merged(part, path=part_path, stack=stack, depth=depth + 1)
            merged = _combine(merged, resolved)
        own = {key: value for key, value in raw.items() if key not in ("$ref", "allOf")}
        return _combine(merged, own), stack

    def _referenced(
        self, reference: object, *, path: str, stack: tuple[str, ...], depth: int
    ) -> tuple[dict[str, Any], tuple[str, ...]]:
        where = f"{path}.$ref" if stack else path
        if not isinstance(reference, str) or not reference.startswith(REFERENCE_PREFIX):
            self._problems.append(
                Problem(field=where, message=f"'{reference}' is not a reference to {REFERENCE_PREFIX}NAME")
            )
            return {"x-kubernetes-preserve-unknown-fields": True}, stack
        name = reference.removeprefix(REFERENCE_PREFIX)
        target = self._definitions.get(name)
        if not isinstance(target, Mapping):
            self._problems.append(
                Problem(field=where, message=f"refers to '{name}', which the document does not define")
            )
            return {"x-kubernetes-preserve-unknown-fields": True}, stack
        if name in stack:
            # A recursive definition cannot be inlined: keep what it holds without describing it.
            recursive: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}
            if target.get("type") == "object":
                recursive["type"] = "object"
            return recursive, stack
        return self._merged(target, path=path, stack=(*stack, name), depth=depth + 1)


def _reference(name: str) -> dict[str, str]:
    return {"$ref": REFERENCE_PREFIX + name}


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
