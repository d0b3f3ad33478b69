"""Laws of the last-known-state and the three-way patch, over generated JSON-like content.

Keys come from a small alphabet so that last-known, desired and live overlap often; that is where
the three-way rule has something to decide. Floats are left out of the patch laws because the
patch compares numbers as JSON does (`1 == 1.0`) while the laws below compare with canonical JSON,
which tells them apart; unit tests cover number equality.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Mapping
from typing import Any
from unittest import mock

from hypothesis import given, strategies as st

from servlet.core import patch as patch_module
from servlet.core.hashing import canonical_json
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION, SERVLET_LABEL
from servlet.core.patch import (
    STATE_COMPRESSION_THRESHOLD,
    ContentPatch,
    apply_merge_patch,
    content_patch,
    created_object,
    decode_state,
    encode_state,
    merge_owned_patch,
    three_way_patch,
)

KEYS = st.sampled_from(["a", "b", "c", "d"])
SCALARS = st.booleans() | st.integers(min_value=-3, max_value=3) | st.sampled_from(["", "x", "y"])
SCALARS_OR_NULL = st.none() | SCALARS

# Any JSON value, nulls included: what a live object or an old state may hold.
ANY_JSON = st.recursive(
    SCALARS_OR_NULL,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=10,
)
# Desired values without null map members: a merge patch cannot write a null (null means
# "delete"), so the servlet realises a desired null as an absent field and "the result equals the
# desired content" is only a true statement without them. Nulls inside lists are plain values of
# an atomic list and stay in.
DESIRED_JSON = st.recursive(
    SCALARS | st.lists(ANY_JSON, max_size=3),
    lambda children: st.dictionaries(KEYS, children, max_size=4),
    max_leaves=10,
)
DESIRED_JSON_WITH_NULLS = st.recursive(
    SCALARS_OR_NULL | st.lists(ANY_JSON, max_size=3),
    lambda children: st.dictionaries(KEYS, children, max_size=4),
    max_leaves=10,
)

STRING_MAPS = st.dictionaries(st.sampled_from(["app", "team", "tier"]), st.sampled_from(["1", "2"]), max_size=3)
# primary_content leaves empty label/annotation maps out, so desired content never has one.
COPIED_METADATA = st.fixed_dictionaries(
    {}, optional={"labels": STRING_MAPS.filter(bool), "annotations": STRING_MAPS.filter(bool)}
).filter(bool)


@st.composite
def contents(draw: st.DrawFn, values: st.SearchStrategy[Any] = DESIRED_JSON) -> dict[str, Any]:
    """Desired (or last-known) primary content: content fields plus, maybe, copied metadata."""
    content: dict[str, Any] = draw(st.dictionaries(KEYS, values, max_size=4))
    if draw(st.booleans()):
        content["metadata"] = draw(COPIED_METADATA)
    return content


@st.composite
def live_objects(draw: st.DrawFn) -> dict[str, Any]:
    """A local object: its own metadata (link label, other controllers' keys) and any content."""
    live: dict[str, Any] = draw(st.dictionaries(KEYS, ANY_JSON, max_size=4))
    metadata: dict[str, Any] = {"name": "abc", "resourceVersion": draw(st.sampled_from(["1", "2"]))}
    if draw(st.booleans()):
        metadata["labels"] = {SERVLET_LABEL: "tom", **draw(STRING_MAPS)}
    if draw(st.booleans()):
        metadata["annotations"] = draw(STRING_MAPS)
    live["metadata"] = metadata
    return live


def same(left: Any, right: Any) -> bool:
    return canonical_json(left) == canonical_json(right)


def assert_realised(result: Mapping[str, Any], desired: Mapping[str, Any]) -> None:
    """Every desired field is in the result (maps may carry more keys); a desired null is absent."""
    for key, wanted in desired.items():
        if wanted is None:
            assert result.get(key) is None, key
        elif isinstance(wanted, Mapping):
            assert isinstance(result.get(key), Mapping), key
            assert_realised(result[key], wanted)
        else:
            assert key in result and same(result[key], wanted), key


def with_metadata_maps(content: Mapping[str, Any]) -> dict[str, Any]:
    """The servlet owns metadata keys, not maps: a missing desired map reads as an empty one."""
    metadata = content.get("metadata") or {}
    return {**content, "metadata": {"labels": {}, "annotations": {}, **metadata}}


def assert_removed(result: Mapping[str, Any], last: Mapping[str, Any], desired: Mapping[str, Any]) -> None:
    """What the last state had and the desired content no longer has is gone (or null) in the result."""
    for key, previous in last.items():
        if key not in desired:
            assert result.get(key) is None, key
        elif isinstance(previous, Mapping) and isinstance(desired[key], Mapping):
            # a result without the map has none of the keys to remove
            assert_removed(result.get(key) or {}, previous, desired[key])


def assert_kept(
    result: Mapping[str, Any], live: Mapping[str, Any], last: Mapping[str, Any], desired: Mapping[str, Any]
) -> None:
    """A live field neither in the last state nor desired is untouched, at every depth."""
    for key, current in live.items():
        if key not in last and key not in desired:
            assert key in result and same(result[key], current), key
        elif isinstance(desired.get(key), Mapping) and isinstance(current, Mapping):
            previous = last.get(key)
            assert_kept(result[key], current, previous if isinstance(previous, Mapping) else {}, desired[key])


@given(last=st.none() | contents(ANY_JSON), desired=contents(), live=live_objects())
def test_three_way_patch_realises_desired_removes_dropped_and_keeps_foreign_fields(
    last: dict[str, Any] | None, desired: dict[str, Any], live: dict[str, Any]
) -> None:
    result = apply_merge_patch(live, three_way_patch(last_known=last, desired=desired, live=live))
    assert_realised(result, desired)
    assert_removed(result, with_metadata_maps(last or {}), with_metadata_maps(desired))
    assert_kept(result, live, with_metadata_maps(last or {}), with_metadata_maps(desired))
    assert result["metadata"]["name"] == "abc"
    if SERVLET_LABEL in live["metadata"].get("labels", {}):
        assert result["metadata"]["labels"][SERVLET_LABEL] == "tom"


@given(last=st.none() | contents(ANY_JSON), desired=contents(DESIRED_JSON_WITH_NULLS), live=live_objects())
def test_desired_nulls_are_realised_as_absent_fields_and_converge(
    last: dict[str, Any] | None, desired: dict[str, Any], live: dict[str, Any]
) -> None:
    result = apply_merge_patch(live, three_way_patch(last_known=last, desired=desired, live=live))
    assert_realised(result, desired)
    assert three_way_patch(last_known=desired, desired=desired, live=result) == {}


@given(last=st.none() | contents(ANY_JSON), desired=contents(), live=live_objects())
def test_a_patched_object_needs_no_second_patch(
    last: dict[str, Any] | None, desired: dict[str, Any], live: dict[str, Any]
) -> None:
    patched = apply_merge_patch(live, three_way_patch(last_known=last, desired=desired, live=live))
    assert three_way_patch(last_known=desired, desired=desired, live=patched) == {}


@given(value=st.dictionaries(KEYS, ANY_JSON))
def test_an_empty_merge_patch_is_the_identity(value: dict[str, Any]) -> None:
    assert apply_merge_patch(value, {}) == value


@given(
    desired=contents(),
    live=live_objects(),
    stored=st.none() | st.just("garbage") | contents(ANY_JSON).map(encode_state),
)
def test_content_patch_of_a_patched_object_is_empty(
    desired: dict[str, Any], live: dict[str, Any], stored: str | None
) -> None:
    if stored is not None:
        live["metadata"].setdefault("annotations", {})[LAST_KNOWN_STATE_ANNOTATION] = stored
    first = content_patch(desired=desired, live=live)
    assert isinstance(first, ContentPatch)
    patched = apply_merge_patch(live, first.patch)
    assert decode_state(patched["metadata"]["annotations"][LAST_KNOWN_STATE_ANNOTATION]) == desired
    assert content_patch(desired=desired, live=patched) == ContentPatch(patch={})


JSON_WITH_FLOATS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=20,
)


@given(content=st.dictionaries(st.text(max_size=8), JSON_WITH_FLOATS))
def test_state_round_trips(content: dict[str, Any]) -> None:
    assert decode_state(encode_state(content)) == content


@given(
    content=st.dictionaries(st.text(max_size=8), JSON_WITH_FLOATS, max_size=3),
    filler=st.text(min_size=1, max_size=16),
    seed=st.integers(min_value=0, max_value=2**32),
)
def test_large_state_is_compressed_and_round_trips(content: dict[str, Any], filler: str, seed: int) -> None:
    # Both repetitive text and random-looking hex push the state past the threshold.
    repeated = filler * (STATE_COMPRESSION_THRESHOLD // len(filler) + 1)
    noise = random.Random(seed).randbytes(STATE_COMPRESSION_THRESHOLD // 2 + 1).hex()
    for blob in (repeated, noise):
        large = {**content, "blob": blob}
        text = encode_state(large)
        assert text.startswith("z:")
        assert decode_state(text) == large


@st.composite
def skeletons(draw: st.DrawFn) -> dict[str, Any]:
    """A new object before its content: type, name and link metadata, in any of the shapes callers build."""
    metadata: dict[str, Any] = {"name": "abc"}
    if draw(st.booleans()):
        metadata["namespace"] = "team-a"
    for section in ("labels", "annotations"):
        if draw(st.booleans()):
            metadata[section] = {SERVLET_LABEL: "tom", **draw(STRING_MAPS)}
    return {"apiVersion": "v1", "kind": "Widget", "metadata": metadata}


# Copied metadata as a malformed remote object could hold it too: null values, keys the skeleton uses.
ODD_METADATA = st.dictionaries(
    st.sampled_from(["labels", "annotations", "name"]),
    st.dictionaries(
        st.sampled_from(["app", "team", SERVLET_LABEL]), st.none() | st.sampled_from(["1", "2"]), max_size=3
    ),
    max_size=2,
)


@given(
    skeleton=skeletons(),
    desired=contents(DESIRED_JSON_WITH_NULLS),
    odd=st.none() | ODD_METADATA,
    top_level=st.none() | st.sampled_from(["kind", "apiVersion"]),
)
def test_a_created_object_is_the_first_content_patch_merged_into_its_skeleton(
    skeleton: dict[str, Any], desired: dict[str, Any], odd: dict[str, Any] | None, top_level: str | None
) -> None:
    # The direct construction must give exactly what the general path gives, key order included.
    if odd is not None:
        desired["metadata"] = odd
    if top_level is not None:
        desired[top_level] = "Other"
    initial = content_patch(desired=desired, live=skeleton)
    expected: Any = initial
    if isinstance(initial, ContentPatch):
        expected = merge_owned_patch(copy.deepcopy(skeleton), initial.patch)
    created = created_object(skeleton=copy.deepcopy(skeleton), desired=desired)
    assert created == expected
    assert json.dumps(created, default=repr) == json.dumps(expected, default=repr)


@given(
    desired=contents(DESIRED_JSON_WITH_NULLS),
    live=live_objects(),
    drift=st.none() | st.tuples(st.sampled_from([(), ("metadata", "labels")]), KEYS | st.just("app"), ANY_JSON),
)
def test_the_converged_shortcut_never_changes_a_content_patch(
    desired: dict[str, Any], live: dict[str, Any], drift: tuple[tuple[str, ...], str, Any] | None
) -> None:
    # The object before and after its patch, maybe changed by someone else since (`drift`).
    first = content_patch(desired=desired, live=live)
    assert isinstance(first, ContentPatch)
    patched = apply_merge_patch(live, first.patch)
    if drift is not None:
        path, key, value = drift
        target = patched
        for step in path:
            target = target.setdefault(step, {})
        target[key] = value
    for candidate in (live, patched):
        shortcut = content_patch(desired=desired, live=candidate)
        with mock.patch.object(patch_module, "carries_exactly", return_value=False):
            walked = content_patch(desired=desired, live=candidate)
        assert shortcut == walked
