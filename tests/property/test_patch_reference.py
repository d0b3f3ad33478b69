"""The fast paths of the content patch equal the plain rule of `core/patch_rule.py`, for generated inputs.

Each test runs the planner's function and the reference on the same input and asks for the same
result, compared by `repr` as well as `==`: Python's equality says `True == 1`, `1 == 1.0` and
`-0.0 == 0` and ignores key order, and a fast path must not get away with any of those.

The generators mix the values that JSON tells apart and Python does not (`True`, `1`, `1.0`,
`-0.0`, `0`), nulls, empty maps and lists next to missing keys, nested maps and lists, and label and
annotation maps with the servlet's link keys and its last-known-state annotation. Live objects are
also built by patching and then changing them (drift), so the converged check and the walk's
shortcuts see objects they settle, and objects they must not.

The suite runs a few hundred examples per test. To search longer, say for 20,000:

    PATCH_REFERENCE_EXAMPLES=20000 python -m pytest tests/property/test_patch_reference.py
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

from hypothesis import given, settings, strategies as st

from servlet.core import patch, patch_rule
from servlet.core.json_values import json_copy, json_equal
from servlet.core.merge_patch import apply_merge_patch, merge_owned_patch
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION, REMOTE_NAME_ANNOTATION, SERVLET_LABEL
from servlet.core.patch_state import encode_state

EXAMPLES = settings(max_examples=int(os.environ.get("PATCH_REFERENCE_EXAMPLES", "300")))

# Values JSON tells apart that Python's equality does not, side by side so they meet often.
SCALARS = st.sampled_from([True, False, 1, 0, -1, 1.0, 0.0, -0.0, 2.5, 2**70, "", "1", "true", "x"])
# Content keys; "metadata" and "labels" also appear below the root, where they are not shared maps.
KEYS = st.sampled_from(["a", "b", "c", "metadata", "labels"])
VALUES = st.recursive(
    st.none() | SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=3),
    max_leaves=8,
)
METADATA_KEYS = st.sampled_from(["app", "team", SERVLET_LABEL, REMOTE_NAME_ANNOTATION, LAST_KNOWN_STATE_ANNOTATION])
# Label and annotation maps, empty ones included, with the odd null or non-string a malformed object holds.
METADATA_MAPS = st.dictionaries(METADATA_KEYS, st.sampled_from(["1", "2", ""]) | st.none() | SCALARS, max_size=3)
# What a shared map may be: a map, or something a malformed object holds in its place.
SHARED_MAP_VALUES = METADATA_MAPS | st.none() | SCALARS | st.just([])


@st.composite
def contents(draw: st.DrawFn) -> dict[str, Any]:
    """Desired (or last-known) content: fields, maybe copied metadata, maybe a type or kind of its own."""
    content: dict[str, Any] = draw(st.dictionaries(KEYS.filter(lambda key: key != "metadata"), VALUES, max_size=4))
    shape = draw(st.sampled_from(["none", "maps", "odd"]))
    if shape == "maps":
        content["metadata"] = draw(
            st.fixed_dictionaries({}, optional={"labels": METADATA_MAPS, "annotations": METADATA_MAPS})
        )
    elif shape == "odd":
        # Desired labels and annotations are maps (the planner copies only those), maybe empty.
        content["metadata"] = draw(
            st.none()
            | SCALARS
            | st.fixed_dictionaries(
                {}, optional={"labels": METADATA_MAPS, "annotations": METADATA_MAPS, "name": SHARED_MAP_VALUES}
            )
        )
    if draw(st.integers(0, 9)) == 0:
        content[draw(st.sampled_from(["kind", "apiVersion"]))] = "Other"
    return content


@st.composite
def live_objects(draw: st.DrawFn, desired: dict[str, Any]) -> dict[str, Any]:
    """A live copy: any content, its own metadata (link keys, other writers' keys) and some stored state."""
    live: dict[str, Any] = draw(st.dictionaries(KEYS.filter(lambda key: key != "metadata"), VALUES, max_size=4))
    if draw(st.integers(0, 9)) == 0:
        live["metadata"] = draw(st.none() | SCALARS)
        return live
    metadata: dict[str, Any] = {"name": "abc"}
    for section in ("labels", "annotations"):
        if draw(st.booleans()):
            metadata[section] = draw(SHARED_MAP_VALUES)
    stored = draw(st.sampled_from(["none", "desired", "other", "unsorted", "garbage", "not text"]))
    if stored != "none":
        state: Any = {
            "desired": lambda: encode_state(desired),
            "other": lambda: encode_state(draw(contents())),
            "unsorted": lambda: json.dumps(desired, sort_keys=False),  # an older spelling of a state
            "garbage": lambda: "{not json",
            "not text": lambda: 1,
        }[stored]()
        annotations = metadata.get("annotations")
        metadata["annotations"] = {
            **(annotations if isinstance(annotations, dict) else {}),
            LAST_KNOWN_STATE_ANNOTATION: state,
        }
    live["metadata"] = metadata
    return live


def python_equal_twin(value: Any) -> Any:
    """`value` with every scalar swapped for one Python calls equal: `1` for `True`, `False` for `0`, `1.0` for `-1`."""
    if type(value) is bool:
        return int(value)
    if type(value) is int:
        if value in (0, 1):
            return bool(value)
        return float(value) if abs(value) < 2**53 else value
    if type(value) is float:
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {key: python_equal_twin(item) for key, item in value.items()}
    if isinstance(value, list):
        return [python_equal_twin(item) for item in value]
    return value


@st.composite
def drifted(draw: st.DrawFn, live: dict[str, Any]) -> dict[str, Any]:
    """`live` as someone else may have changed it: members set, replaced or deleted, at the top or in maps."""
    changed = copy.deepcopy(live)
    for _ in range(draw(st.integers(1, 3))):
        target = changed
        for step in draw(
            st.sampled_from([(), ("metadata",), ("metadata", "labels"), ("metadata", "annotations"), ("a",), ("b",)])
        ):
            nested = target.get(step)
            target = nested if isinstance(nested, dict) else {}
        # Mostly a member the object has: that is where a change can go unnoticed.
        key = draw(st.sampled_from(sorted(target)) if target and draw(st.booleans()) else KEYS | METADATA_KEYS)
        change = draw(st.sampled_from(["set", "delete", "twin"]))
        if change == "delete":
            target.pop(key, None)
        elif change == "twin" and key in target:
            # Equal for Python, not for JSON: the change a check by `==` alone would miss.
            target[key] = python_equal_twin(target[key])
        else:
            target[key] = draw(VALUES)
    return changed


def assert_same(fast: Any, reference: Any) -> None:
    """Equal, and equal as JSON sees it: `True` is not `1`, `1` is not `1.0`, `-0.0` is not `0`, key order counts."""
    assert fast == reference
    assert repr(fast) == repr(reference)


@EXAMPLES
@given(last=st.none() | contents(), desired=contents(), data=st.data())
def test_the_walk_gives_the_rules_patch(
    last: dict[str, Any] | None, desired: dict[str, Any], data: st.DataObject
) -> None:
    live = data.draw(live_objects(desired))
    shape = data.draw(st.sampled_from(["drawn", "patched", "twin"]))
    if shape != "drawn":
        # An object the rule has already patched, then changed: where the shortcuts settle maps.
        live = apply_merge_patch(live, patch_rule.three_way_patch(last_known=last, desired=desired, live=live))
        live = data.draw(drifted(live)) if shape == "patched" else python_equal_twin(live)
    fast = patch.three_way_patch(last_known=last, desired=desired, live=live)
    assert_same(fast, patch_rule.three_way_patch(last_known=last, desired=desired, live=live))


@EXAMPLES
@given(desired=contents(), data=st.data())
def test_the_content_patch_and_its_converged_check_give_the_rules_patch(
    desired: dict[str, Any], data: st.DataObject
) -> None:
    live = data.draw(live_objects(desired))
    candidates = [live]
    first = patch_rule.content_patch(desired=desired, live=live)
    if isinstance(first, patch_rule.ContentPatch):
        patched = apply_merge_patch(live, first.patch)
        candidates += [patched, data.draw(drifted(patched))]
    for candidate in candidates:
        assert_same(
            patch.content_patch(desired=desired, live=candidate),
            patch_rule.content_patch(desired=desired, live=candidate),
        )


@st.composite
def skeletons(draw: st.DrawFn) -> dict[str, Any]:
    """A new object before its content, in the shapes callers build, and some they do not."""
    metadata: dict[str, Any] = {"name": "abc"}
    if draw(st.booleans()):
        metadata["namespace"] = "team-a"
    for section in ("labels", "annotations"):
        if draw(st.booleans()):
            metadata[section] = {SERVLET_LABEL: "tom", **draw(METADATA_MAPS)}
    return {"apiVersion": "v1", "kind": "Widget", "metadata": metadata}


@EXAMPLES
@given(skeleton=skeletons(), desired=contents())
def test_a_directly_built_object_is_the_rules_object(skeleton: dict[str, Any], desired: dict[str, Any]) -> None:
    reference = patch_rule.created_object(skeleton=skeleton, desired=desired)
    assert_same(patch.created_object(skeleton=copy.deepcopy(skeleton), desired=desired), reference)


@EXAMPLES
@given(left=VALUES, right=VALUES, twin=st.booleans())
def test_fast_json_equality_is_the_rules_equality(left: Any, right: Any, twin: bool) -> None:
    if twin:
        right = python_equal_twin(left)
    assert json_equal(left, right) is patch_rule.json_equal(left, right)


@EXAMPLES
@given(target=st.dictionaries(KEYS, VALUES, max_size=4), merge=st.dictionaries(KEYS, VALUES, max_size=4))
def test_merging_in_place_gives_the_copying_merge(target: dict[str, Any], merge: dict[str, Any]) -> None:
    expected = apply_merge_patch(target, merge)
    assert_same(merge_owned_patch(json_copy(target), json_copy(merge)), expected)
