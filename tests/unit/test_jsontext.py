"""The fast JSON helpers never take less than the standard library did, and never change a value."""

from __future__ import annotations

import datetime
import json
import math

import pytest

from servlet.core import jsontext


@pytest.mark.parametrize("text", ['"\\ud800"', "[1e400]", '{"a": 1, "a": 2}', b'{"n": 123456789012345678901234567890}'])
def test_whatever_the_standard_library_decodes_decodes_to_the_same_value(text: str | bytes) -> None:
    assert repr(jsontext.decode(text)) == repr(json.loads(text))


def test_text_that_is_not_json_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        jsontext.decode(b'{"type": "ADDED", "object": ')


def test_sorted_text_has_one_spelling_per_value_whatever_the_key_order() -> None:
    first = jsontext.sorted_text({"b": [1, {"d": None, "c": True}], "a": "é"})
    second = jsontext.sorted_text({"a": "é", "b": [1, {"c": True, "d": None}]})
    assert first == second == '{"a":"é","b":[1,{"c":true,"d":null}]}'
    assert json.loads(first) == {"a": "é", "b": [1, {"c": True, "d": None}]}


def test_same_text_tells_a_boolean_from_a_number_where_python_does_not() -> None:
    assert {"on": True} == {"on": 1}
    assert not jsontext.same_text({"on": True}, {"on": 1})
    assert jsontext.same_text({"on": True}, {"on": True})


def test_a_copy_is_deep_and_keeps_every_number_exactly() -> None:
    original = {"spec": {"ratio": 0.1, "big": 2**70, "flag": False, "nan": math.nan, "items": [{"x": None}]}}
    copied = jsontext.copy(original)
    copied["spec"]["items"][0]["x"] = "changed"
    copied["spec"]["items"].append("added")
    assert original == {
        "spec": {"ratio": 0.1, "big": 2**70, "flag": False, "nan": original["spec"]["nan"], "items": [{"x": None}]}
    }
    assert copied["spec"]["ratio"] == 0.1 and copied["spec"]["big"] == 2**70
    assert copied["spec"]["flag"] is False and math.isnan(copied["spec"]["nan"])


def test_a_copy_holds_values_as_json_would_carry_them() -> None:
    copied = jsontext.copy({"expires": datetime.date(2026, 11, 21), "blob": b"\x00\x01"})
    assert copied == {"expires": "2026-11-21", "blob": "AAE="}


def test_a_value_json_cannot_write_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="not plain JSON"):
        jsontext.copy({"handle": object()})
