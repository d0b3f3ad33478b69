"""The compact store answers every read as the plain store, the rule, does (`app/runtime/stores.py`)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from servlet.app.runtime.stores import CompactStore, PlainStore

KEYS = st.sampled_from(["a", "b", "c", "d"])
# JSON values that tell True from 1, 1 from 1.0, -0.0 from 0, empty from absent; plus what only
# the fallback keeps (integers beyond 64 bits, lone surrogates).
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5)
    | st.sampled_from(["\ud800", "é", ""])
)
VALUES = st.recursive(
    SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
)


@st.composite
def objects(draw: st.DrawFn) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": draw(st.text(max_size=4))}
    if draw(st.booleans()):
        metadata["resourceVersion"] = str(draw(st.integers(min_value=0, max_value=99)))
    return {"metadata": metadata, "spec": draw(VALUES)}


OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["put", "pop", "get"]), KEYS, objects()),
    max_size=25,
)


def _typed(value: Any) -> Any:
    """`value` with every scalar's type spelled out, so True != 1 != 1.0 and -0.0 != 0.0."""
    if isinstance(value, dict):
        return {key: _typed(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_typed(item) for item in value]
    if isinstance(value, float):
        return ("float", value.hex())
    return (type(value).__name__, value)


@settings(max_examples=300)
@given(OPERATIONS)
def test_the_compact_store_reads_as_the_plain_store(operations: list[tuple[str, str, dict[str, Any]]]) -> None:
    plain: PlainStore[str] = PlainStore()
    compact: CompactStore[str] = CompactStore()
    for operation, key, obj in operations:
        if operation == "put":
            plain.put(key, obj)
            compact.put(key, obj)
        elif operation == "pop":
            assert _typed(compact.pop(key)) == _typed(plain.pop(key))
        else:
            assert _typed(compact.get(key)) == _typed(plain.get(key))
        assert compact.version(key) == plain.version(key)
        assert len(compact) == len(plain) and sorted(compact.keys()) == sorted(plain.keys())
        assert (key in compact) == (key in plain)
    assert _typed(dict(compact.items())) == _typed(dict(plain.items()))


def test_a_compact_read_is_a_fresh_copy_so_a_careless_caller_cannot_change_the_store() -> None:
    compact: CompactStore[str] = CompactStore()
    compact.put("a", {"metadata": {"name": "a"}, "spec": {"size": 1}})
    read = compact.get("a")
    assert read is not None
    read["spec"]["size"] = 2
    assert compact.get("a") == {"metadata": {"name": "a"}, "spec": {"size": 1}}
