"""JSON values as the planner reads them: recognised, copied and compared by their exact types.

Every plan asks these questions of every value it touches, so each answers the common case (the
types a JSON decoder builds) first and leaves anything else to the general rule beside it:
`is_mapping` to `isinstance(value, Mapping)`, `json_copy` to `copy.deepcopy`, `json_equal` to
`json_equal_walk`. The property tests prove each fast answer equal to its rule.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any, TypeGuard

from servlet.core import jsontext

# Decoded JSON is built from these types: checking them first spares the slower isinstance
# against the Mapping ABC for every value of every plan.
_NOT_MAPPINGS = frozenset({str, int, float, bool, list, type(None)})
_JSON_TYPES = _NOT_MAPPINGS | {dict}
_SCALARS = frozenset({str, int, float, bool})
_NUMBERS = frozenset({int, float})


def is_mapping(value: Any) -> TypeGuard[Mapping[str, Any]]:
    """`isinstance(value, Mapping)` without the ABC check for the JSON types (every plan asks often)."""
    kind = type(value)
    if kind is dict:
        return True
    return kind not in _NOT_MAPPINGS and isinstance(value, Mapping)


def json_copy(value: Any) -> Any:
    """`copy.deepcopy` for decoded JSON, several times faster; other values go to deepcopy."""
    kind = type(value)
    if kind in _SCALARS or value is None:
        return value
    if kind is dict or kind is list:
        try:
            return jsontext.copy(value)
        except ValueError:  # something inside is not data JSON can write (an arbitrary object)
            pass
    return copy.deepcopy(value)


def json_equal(left: Any, right: Any) -> bool:
    """Equality of JSON values: Python's `True == 1` must not hide a changed boolean."""
    kind, other = type(left), type(right)
    if kind is not other:
        if kind in _JSON_TYPES and other in _JSON_TYPES:
            # Of two different JSON types only an integer and a float can be equal (1 and 1.0).
            return kind in _NUMBERS and other in _NUMBERS and bool(left == right)
        return json_equal_walk(left, right)
    if kind in _SCALARS or left is None:
        return bool(left == right)
    if (kind is dict or kind is list) and left == right and jsontext.same_text(left, right):
        # Python's equality (at C speed) is looser than JSON's only where a bool meets a number;
        # equal texts rule that out. This runs for every object on every reconcile. Keys are not
        # sorted: equal objects from the API server or the servlet list them in the same order,
        # and any other order only falls back to the walk (as does a tuple inside).
        return True
    return json_equal_walk(left, right)


def json_equal_walk(left: Any, right: Any) -> bool:
    """The rule `json_equal` answers quickly: booleans only equal booleans, maps by keys, lists by position."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if is_mapping(left) and is_mapping(right):
        return left.keys() == right.keys() and all(json_equal(left[key], right[key]) for key in left)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right))
    if isinstance(left, (Mapping, list, tuple)) or isinstance(right, (Mapping, list, tuple)):
        return False
    return bool(left == right)


def without_null_members(value: Any) -> Any:
    """A copy of a map set whole, without null members: they would mean "delete" in a merge patch."""
    if type(value) is not dict and is_mapping(value):  # a Mapping that is not a dict: walked
        return {key: without_null_members(item) for key, item in value.items() if item is not None}
    copied = json_copy(value)
    if type(copied) is dict:
        drop_null_members(copied)
    return copied


def drop_null_members(value: dict[str, Any]) -> None:
    """Remove null members from a freshly copied map and the maps inside it (lists are values)."""
    nulls = []
    for key, item in value.items():
        if item is None:
            nulls.append(key)
        elif type(item) is dict:
            drop_null_members(item)
    for key in nulls:
        del value[key]
