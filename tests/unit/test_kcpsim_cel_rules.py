"""kcpsim's CEL rules are compiled once per schema, and a schema without rules compiles to
nothing, so the objects of such a schema are written without any CEL work."""

from __future__ import annotations

from typing import Any

from kcpsim.cel_rules import compiled_rules, rule_problems


def _schema(*, with_rule: bool) -> dict[str, Any]:
    spec: dict[str, Any] = {"type": "object", "properties": {"size": {"type": "integer"}}}
    if with_rule:
        spec["properties"]["size"]["x-kubernetes-validations"] = [{"rule": "self < 10", "message": "too big"}]
    return {"type": "object", "properties": {"spec": spec}}


def test_a_schema_without_rules_compiles_to_nothing() -> None:
    assert compiled_rules(_schema(with_rule=False)) is None


def test_a_schema_is_compiled_once_and_its_rules_hold() -> None:
    schema = _schema(with_rule=True)
    first = compiled_rules(schema)
    assert first is not None and compiled_rules(schema) is first
    assert rule_problems(first, {"spec": {"size": 12}}, None, updating=False) == [
        ("spec.size", 'Invalid value: "integer": too big')
    ]
    assert rule_problems(first, {"spec": {"size": 3}}, None, updating=False) == []
    # A schema equal in content but another object (a changed CRD) is compiled anew.
    assert compiled_rules(_schema(with_rule=True)) is not first
