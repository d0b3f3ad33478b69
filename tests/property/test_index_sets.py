"""`IndexSets` answers as the plain `dict[value, set[key]]` it replaces (`app/runtime/index_sets.py`)."""

from __future__ import annotations

from hypothesis import given, strategies as st

from servlet.app.runtime.index_sets import IndexSets

VALUES = st.sampled_from(["x", "y", "z"])
KEYS = st.sampled_from([("a", 1), ("b", 2), ("c", 3), "d"])
CHANGES = st.lists(st.tuples(st.booleans(), VALUES, KEYS), max_size=40)


@given(CHANGES)
def test_index_sets_answer_as_a_dict_of_sets_after_any_changes(changes: list[tuple[bool, str, object]]) -> None:
    compact: IndexSets[str, object] = IndexSets()
    rule: dict[str, set[object]] = {}
    for adding, value, key in changes:
        if adding:
            compact.add(value, key)
            rule.setdefault(value, set()).add(key)
        else:
            compact.discard(value, key)
            keys = rule.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del rule[value]
        for each in ("x", "y", "z"):
            assert compact.get(each) == frozenset(rule.get(each, set()))
        assert len(compact) == len(rule)  # no value is left behind with no keys


@given(CHANGES, st.sets(KEYS))
def test_retain_forgets_exactly_the_refused_keys(changes: list[tuple[bool, str, object]], refused: set[object]) -> None:
    compact: IndexSets[str, object] = IndexSets()
    for adding, value, key in changes:
        if adding:
            compact.add(value, key)
        else:
            compact.discard(value, key)
    before = {each: compact.get(each) for each in ("x", "y", "z")}
    compact.retain(lambda key: key not in refused)
    for each in ("x", "y", "z"):
        assert compact.get(each) == before[each] - refused
    assert len(compact) == sum(1 for keys in before.values() if keys - refused)
