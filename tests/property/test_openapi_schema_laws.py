"""Laws of resolving an OpenAPI v3 definition into a structural schema (`core/openapi_schema.py`).

Definitions are generated as graphs of references of every shape Kubernetes uses (`$ref`, a
one-element `allOf` carrying a description, arrays and maps of references), cycles included.
Whatever the graph: resolving terminates, the result is structural (no reference left, a type or
an extension that stands for one on every node, items on every array), and without cycles each
reference is replaced by exactly what its target resolves to on its own.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from servlet.core.openapi_schema import REFERENCE_PREFIX, structural_schema

_PRIMITIVE = st.sampled_from([{"type": "string"}, {"type": "integer", "format": "int64"}, {"type": "boolean"}])
_FIELD_NAMES = st.sampled_from(["a", "b", "c", "spec", "items", "status"])


def _reference(name: str) -> dict[str, Any]:
    return {"$ref": REFERENCE_PREFIX + name}


def _field(names: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    """A property: a primitive, or a reference to one of `names` in one of the shapes Kubernetes uses."""
    if not names:
        return _PRIMITIVE
    target = st.sampled_from(names)
    return st.one_of(
        _PRIMITIVE,
        target.map(_reference),
        target.map(lambda n: {"allOf": [_reference(n)], "description": "wrapped"}),
        target.map(lambda n: {"type": "array", "items": _reference(n)}),
        target.map(lambda n: {"type": "object", "additionalProperties": _reference(n)}),
        st.just({"description": "untyped"}),
    )


@st.composite
def _graphs(draw: st.DrawFn, *, cyclic: bool) -> dict[str, Any]:
    """Definitions D0..Dn; without cycles Di refers only to Dj with j > i."""
    count = draw(st.integers(min_value=1, max_value=6))
    names = [f"io.example.D{i}" for i in range(count)]
    definitions: dict[str, Any] = {}
    for index, name in enumerate(names):
        targets = names if cyclic else names[index + 1 :]
        fields = draw(st.dictionaries(_FIELD_NAMES, _field(targets), max_size=4))
        definitions[name] = {"type": "object", "properties": fields}
    return definitions


def _assert_structural(schema: Any, path: str = "") -> None:
    assert isinstance(schema, dict), f"{path}: not a schema object"
    for key in ("$ref", "allOf", "oneOf", "anyOf"):
        assert key not in schema, f"{path}: {key} left in the result"
    stands_for_a_type = schema.get("x-kubernetes-int-or-string") or schema.get("x-kubernetes-preserve-unknown-fields")
    assert "type" in schema or stands_for_a_type, f"{path}: no type"
    if schema.get("type") == "array":
        assert "items" in schema, f"{path}: an array without items"
    for name, value in (schema.get("properties") or {}).items():
        _assert_structural(value, f"{path}.{name}")
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), dict):
            _assert_structural(schema[key], f"{path}.{key}")


@given(_graphs(cyclic=True))
def test_any_graph_resolves_to_a_structural_schema_without_problems(definitions: dict[str, Any]) -> None:
    for name in definitions:
        schema, problems = structural_schema(definitions, name)
        assert problems == ()
        _assert_structural(schema)


@given(_graphs(cyclic=False))
def test_without_cycles_a_reference_becomes_what_its_target_resolves_to(definitions: dict[str, Any]) -> None:
    for name, definition in definitions.items():
        schema, _ = structural_schema(definitions, name)
        for field, raw in definition["properties"].items():
            resolved = schema["properties"][field]
            if "$ref" in raw:
                target = raw["$ref"].removeprefix(REFERENCE_PREFIX)
                assert resolved == structural_schema(definitions, target)[0]
            elif "allOf" in raw:
                target = raw["allOf"][0]["$ref"].removeprefix(REFERENCE_PREFIX)
                assert resolved == {**structural_schema(definitions, target)[0], "description": "wrapped"}
            elif "items" in raw:
                target = raw["items"]["$ref"].removeprefix(REFERENCE_PREFIX)
                assert resolved["items"] == structural_schema(definitions, target)[0]


@given(_graphs(cyclic=True), st.integers(min_value=0, max_value=5))
def test_a_definition_reaching_itself_is_cut_where_it_repeats(definitions: dict[str, Any], index: int) -> None:
    name = sorted(definitions)[index % len(definitions)]
    definitions = {**definitions, name: {"type": "object", "properties": {"self": _reference(name)}}}
    schema, problems = structural_schema(definitions, name)
    assert problems == ()
    assert schema["properties"]["self"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
