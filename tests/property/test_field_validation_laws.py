"""Laws of kcpsim's server-side field validation over the built-in schemas it publishes: an object
made only of declared fields has no unknown field, and a field added anywhere a schema declares
properties is reported at exactly its path."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from kcpsim.field_validation import field_path, unknown_fields
from kcpsim.openapi_builtin import BUILTIN_SCHEMAS, KIND_DEFINITIONS

_KINDS = sorted(KIND_DEFINITIONS.values())
_UNDECLARED = "undeclaredField"


def _resolve(schema: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in schema:
        schema = BUILTIN_SCHEMAS[schema["$ref"]]
    return schema


def _values(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Values made only of the fields `schema` declares."""
    schema = _resolve(schema)
    if depth > 4:
        return st.none()
    kind = schema.get("type")
    if kind == "object" and schema.get("properties"):
        optional = {key: _values(sub, depth + 1) for key, sub in schema["properties"].items()}
        return st.fixed_dictionaries({}, optional=optional)
    if kind == "object" and isinstance(schema.get("additionalProperties"), dict):
        return st.dictionaries(
            st.text(min_size=1, max_size=4), _values(schema["additionalProperties"], depth + 1), max_size=2
        )
    if kind == "object":  # free-form (fieldsV1, a CRD's status): any content
        return st.dictionaries(st.text(min_size=1, max_size=4), st.integers(), max_size=2)
    if kind == "array":
        return st.lists(_values(schema.get("items") or {}, depth + 1), max_size=2)
    return {"integer": st.integers(), "boolean": st.booleans()}.get(str(kind), st.text(max_size=3))


def _declared_nodes(value: Any, schema: dict[str, Any], path: tuple[str | int, ...] = ()) -> list[tuple[Any, ...]]:
    """The paths of the objects in `value` whose schema declares properties."""
    schema = _resolve(schema)
    if isinstance(value, list):
        items = schema.get("items") or {}
        return [p for i, item in enumerate(value) for p in _declared_nodes(item, items, (*path, i))]
    if not isinstance(value, dict) or not schema.get("properties"):
        return []
    inner = [p for key, item in value.items() for p in _declared_nodes(item, schema["properties"][key], (*path, key))]
    return [path, *inner]


@st.composite
def _objects(draw: st.DrawFn) -> tuple[dict[str, Any], Any]:
    schema = BUILTIN_SCHEMAS[draw(st.sampled_from(_KINDS))]
    return schema, draw(_values(schema))


@given(_objects())
def test_an_object_of_declared_fields_has_no_unknown_field(generated: tuple[dict[str, Any], Any]) -> None:
    schema, value = generated
    assert unknown_fields(value, schema, free_form=True) == []


@given(_objects(), st.data())
def test_an_undeclared_field_is_reported_at_its_path(
    generated: tuple[dict[str, Any], Any], data: st.DataObject
) -> None:
    schema, value = generated
    where = data.draw(st.sampled_from(_declared_nodes(value, schema)))
    node = value
    for step in where:
        node = node[step]
    node[_UNDECLARED] = 1
    found = unknown_fields(value, schema, free_form=True)
    assert [field_path(path) for path in found] == [field_path((*where, _UNDECLARED))]
