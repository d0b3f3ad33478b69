from __future__ import annotations

import base64
import json
import zlib
from typing import Any

import pytest

from servlet.core.hashing import canonical_json, sha1_hex
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION, SERVLET_LABEL
from servlet.core.model import Problem
from servlet.core.patch import (
    ANNOTATIONS_LIMIT,
    STATE_COMPRESSION_THRESHOLD,
    ContentPatch,
    annotations_size,
    apply_merge_patch,
    content_patch,
    decode_state,
    encode_state,
    primary_content,
    statuses_differ,
    three_way_patch,
)

# --- last-known-state encoding ---------------------------------------------------------------


def test_small_state_is_canonical_json() -> None:
    assert encode_state({"spec": {"b": 1, "a": "ü"}}) == '{"spec":{"a":"ü","b":1}}'


def test_state_just_at_the_threshold_stays_plain() -> None:
    # '{"s":"' + value + '"}' is 8 bytes of framing
    content = {"s": "x" * (STATE_COMPRESSION_THRESHOLD - 8)}
    assert len(canonical_json(content)) == STATE_COMPRESSION_THRESHOLD
    assert encode_state(content) == canonical_json(content)


def test_state_above_64_kib_is_compressed_and_round_trips() -> None:
    content = {"spec": {"data": "abc" * 30_000}}
    text = encode_state(content)
    assert text.startswith("z:")
    assert len(text) < STATE_COMPRESSION_THRESHOLD
    assert zlib.decompress(base64.b64decode(text[2:])).decode() == canonical_json(content)
    assert decode_state(text) == content


def test_threshold_counts_utf8_bytes_not_characters() -> None:
    content = {"s": "ü" * (STATE_COMPRESSION_THRESHOLD // 2)}  # fewer characters than the limit
    assert encode_state(content).startswith("z:")


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "not json",
        '{"truncated":',
        "[1, 2]",  # not an object
        '"a string"',
        "z:%%%not base64",
        "z:" + base64.b64encode(b"not zlib").decode(),
        "z:" + base64.b64encode(zlib.compress(b"[1]")).decode(),
        "z:" + base64.b64encode(zlib.compress(b"\xff\xfe")).decode(),
        "z:" + base64.b64encode(zlib.compress(b"{}")[:-3]).decode(),  # truncated stream
        "z:" + base64.b64encode(zlib.compress(b"{}") + b"junk").decode(),  # trailing data
        "[" * 100_000,
    ],
)
def test_unreadable_state_decodes_to_none(text: str | None) -> None:
    assert decode_state(text) is None


def test_a_state_that_inflates_beyond_any_real_object_is_refused() -> None:
    bomb = b'{"a":"' + b"x" * (64 * 1024 * 1024) + b'"}'
    assert decode_state("z:" + base64.b64encode(zlib.compress(bomb, 9)).decode()) is None


def test_plain_state_written_by_another_encoder_is_read() -> None:
    assert decode_state(json.dumps({"spec": {"a": 1}}, indent=2)) == {"spec": {"a": 1}}


# --- primary content -------------------------------------------------------------------------


def test_primary_content_is_everything_but_type_metadata_and_status_plus_copied_metadata() -> None:
    remote = {
        "apiVersion": "certificates.example.corp/v1",
        "kind": "Certificate",
        "metadata": {
            "name": "my-cert",
            "namespace": "default",
            "uid": "1234",
            "resourceVersion": "99",
            "finalizers": ["syncer.kdp.k8c.io/cleanup"],
            "labels": {"app": "web", SERVLET_LABEL: "forged"},
            "annotations": {"kcp.io/cluster": "1084s8ceexsehjm2", "team": "payments"},
        },
        "spec": {"dnsNames": ["example.com"]},
        "roleRef": {"name": "admin"},
        "status": {"ready": True},
    }
    assert primary_content(remote) == {
        "spec": {"dnsNames": ["example.com"]},
        "roleRef": {"name": "admin"},
        "metadata": {"labels": {"app": "web"}, "annotations": {"team": "payments"}},
    }


@pytest.mark.parametrize(
    "metadata",
    [
        {"name": "x"},
        {"name": "x", "labels": {}, "annotations": {"kcp.io/cluster": "abc"}},
        {"name": "x", "labels": None},
    ],
)
def test_primary_content_omits_empty_metadata_maps(metadata: dict[str, Any]) -> None:
    assert primary_content({"metadata": metadata, "spec": {"a": 1}}) == {"spec": {"a": 1}}


def test_primary_content_is_a_copy() -> None:
    remote = {"spec": {"list": [1]}, "metadata": {"labels": {"a": "b"}}}
    content = primary_content(remote)
    content["spec"]["list"].append(2)
    content["metadata"]["labels"]["c"] = "d"
    assert remote == {"spec": {"list": [1]}, "metadata": {"labels": {"a": "b"}}}


# --- RFC 7386 --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        # The examples of RFC 7386 section 3 (those with an object at the top).
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
        # Our own cases.
        ({"a": 1}, {}, {"a": 1}),
        ({"a": "scalar"}, {"a": {"b": 1, "c": None}}, {"a": {"b": 1}}),
        ({"a": [1, None]}, {"a": [None, 2]}, {"a": [None, 2]}),  # nulls inside lists are values
        ({"a": 1}, {"missing": None}, {"a": 1}),
    ],
)
def test_apply_merge_patch_follows_rfc_7386(
    target: dict[str, Any], patch: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert apply_merge_patch(target, patch) == expected


def test_apply_merge_patch_changes_neither_input() -> None:
    target = {"spec": {"a": {"b": 1}, "list": [1]}}
    patch = {"spec": {"a": {"c": 2}, "list": [2], "gone": None}}
    result = apply_merge_patch(target, patch)
    result["spec"]["a"]["d"] = 3
    result["spec"]["list"].append(3)
    assert target == {"spec": {"a": {"b": 1}, "list": [1]}}
    assert patch == {"spec": {"a": {"c": 2}, "list": [2], "gone": None}}


# --- the three-way rule ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("last_known", "desired", "live", "expected"),
    [
        pytest.param(
            {"spec": {"a": 1, "b": 2}},
            {"spec": {"a": 1}},
            {"spec": {"a": 1, "b": 2}},
            {"spec": {"b": None}},
            id="field-removed-on-the-platform-is-removed-locally",
        ),
        pytest.param(
            {"spec": {"a": 1}},
            {"spec": {"a": 1}},
            {"spec": {"a": 1, "defaulted": "webhook"}},
            {},
            id="webhook-default-survives",
        ),
        pytest.param(
            {"spec": {"list": [1, 2]}},
            {"spec": {"list": [3]}},
            {"spec": {"list": [1, 2, 9]}},
            {"spec": {"list": [3]}},
            id="list-replaced-atomically",
        ),
        pytest.param(
            {"spec": {"a": 1}},
            {"spec": {"a": 2}},
            {"spec": {"a": 1}},
            {"spec": {"a": 2}},
            id="changed-value-is-set",
        ),
        pytest.param(
            {"spec": {"a": 1}},
            {"spec": {"a": 1}},
            {"spec": {"a": 5}},
            {"spec": {"a": 1}},
            id="local-drift-is-reverted",
        ),
        pytest.param(
            None,
            {"spec": {"a": 1}},
            {"spec": {"a": 1, "b": 2}},
            {},
            id="no-state-removes-nothing",
        ),
        pytest.param(
            {"spec": {"a": 1, "gone": 2}},
            {"spec": {"a": 1}},
            {"spec": {"a": 1}},
            {},
            id="removed-field-that-live-no-longer-has-is-a-no-op",
        ),
        pytest.param(
            {"spec": {"a": 1, "gone": 2}},
            {"spec": {"a": 1}},
            {"spec": {"a": 1, "gone": None}},
            {},
            id="removed-field-that-live-holds-as-null-is-a-no-op",
        ),
        pytest.param(
            {"spec": {"a": 1}},
            {"spec": {"a": {"b": 1}}},
            {"spec": {"a": 1}},
            {"spec": {"a": {"b": 1}}},
            id="desired-map-replaces-live-scalar",
        ),
        pytest.param(
            {"spec": {"a": {"b": 1}}},
            {"spec": {"a": "flat"}},
            {"spec": {"a": {"b": 1, "x": 2}}},
            {"spec": {"a": "flat"}},
            id="desired-scalar-replaces-live-map",
        ),
        pytest.param(
            {"spec": {"a": {"b": 1}}},
            {},
            {"spec": {"a": {"b": 1}}, "other": 1},
            {"spec": None},
            id="whole-top-level-field-removed",
        ),
        pytest.param(
            {"spec": {"a": {"b": 1, "c": 2}}},
            {"spec": {"a": {"b": 1}}},
            {"spec": {"a": {"b": 1, "c": 2, "d": 3}}},
            {"spec": {"a": {"c": None}}},
            id="nested-maps-recurse",
        ),
        pytest.param(
            {},
            {"spec": {"a": True}},
            {"spec": {"a": 1}},
            {"spec": {"a": True}},
            id="true-is-not-one",
        ),
        pytest.param(
            {},
            {"spec": {"a": 1}},
            {"spec": {"a": 1.0}},
            {},
            id="json-numbers-compare-by-value",
        ),
        pytest.param(
            {"spec": {"a": 1}},
            {"spec": {"a": None}},
            {"spec": {"a": 1}},
            {"spec": {"a": None}},
            id="desired-null-deletes-the-live-field",
        ),
        pytest.param(
            {},
            {"spec": {"a": None}},
            {"spec": {}},
            {},
            id="desired-null-is-met-by-absence",
        ),
        pytest.param(
            {},
            {"spec": {"a": {"b": None, "c": 1}}},
            {"spec": {}},
            {"spec": {"a": {"c": 1}}},
            id="null-members-of-a-map-set-whole-are-left-out",
        ),
        pytest.param(
            {},
            {"spec": {"a": 1}},
            {},
            {"spec": {"a": 1}},
            id="missing-parent-is-set-whole",
        ),
    ],
)
def test_three_way_patch(
    last_known: dict[str, Any] | None, desired: dict[str, Any], live: dict[str, Any], expected: dict[str, Any]
) -> None:
    assert three_way_patch(last_known=last_known, desired=desired, live=live) == expected


LIVE_METADATA = {
    "name": "abc",
    "namespace": "1084s8ceexsehjm2",
    "labels": {SERVLET_LABEL: "tom", "app": "web", "added-by": "other-controller"},
    "annotations": {"team": "payments", LAST_KNOWN_STATE_ANNOTATION: "{}"},
}


@pytest.mark.parametrize(
    ("last_known", "desired", "expected"),
    [
        pytest.param(
            {"metadata": {"labels": {"app": "web"}}},
            {"metadata": {"labels": {"app": "web"}}},
            {},
            id="label-added-by-another-controller-survives",
        ),
        pytest.param(
            {"metadata": {"labels": {"app": "web"}, "annotations": {"team": "payments"}}},
            {"metadata": {"annotations": {"team": "payments"}}},
            {"metadata": {"labels": {"app": None}}},
            id="label-removed-on-the-platform-is-removed-locally",
        ),
        pytest.param(
            {"metadata": {"labels": {"app": "web"}, "annotations": {"team": "payments"}}},
            {},
            {"metadata": {"labels": {"app": None}, "annotations": {"team": None}}},
            id="all-copied-metadata-removed-keeps-the-maps-and-link-keys",
        ),
        pytest.param(
            {"metadata": {"labels": {"app": "web"}}},
            {"metadata": {"labels": {"app": "api"}}},
            {"metadata": {"labels": {"app": "api"}}},
            id="changed-label-is-set",
        ),
        pytest.param(
            {},
            {"metadata": {"labels": {"new": "x"}}},
            {"metadata": {"labels": {"new": "x"}}},
            id="new-label-is-added",
        ),
    ],
)
def test_three_way_patch_owns_metadata_keys_not_maps(
    last_known: dict[str, Any], desired: dict[str, Any], expected: dict[str, Any]
) -> None:
    live = {"metadata": LIVE_METADATA, "spec": {}}
    assert three_way_patch(last_known=last_known, desired=desired, live=live) == expected


def test_metadata_map_removed_from_desired_is_not_created_when_live_has_none() -> None:
    live = {"metadata": {"name": "abc"}, "spec": {}}
    assert three_way_patch(last_known={"metadata": {"labels": {"a": "b"}}}, desired={}, live=live) == {}


# --- content patch ---------------------------------------------------------------------------


def _live(spec: dict[str, Any], *, state: str | None, labels: dict[str, str] | None = None) -> dict[str, Any]:
    annotations = {} if state is None else {LAST_KNOWN_STATE_ANNOTATION: state}
    return {
        "apiVersion": "certificates.example.corp/v1",
        "kind": "Certificate",
        "metadata": {"name": "abc", "labels": labels or {}, "annotations": annotations},
        "spec": spec,
    }


def test_content_patch_of_a_converged_object_is_empty() -> None:
    desired = {"spec": {"a": 1}}
    live = _live({"a": 1, "defaulted": True}, state=encode_state(desired))
    assert content_patch(desired=desired, live=live) == ContentPatch(patch={})


def test_content_patch_carries_the_new_state_with_the_change() -> None:
    old = {"spec": {"a": 1, "b": 2}}
    desired = {"spec": {"a": 1}}
    live = _live({"a": 1, "b": 2}, state=encode_state(old))
    assert content_patch(desired=desired, live=live) == ContentPatch(
        patch={"spec": {"b": None}, "metadata": {"annotations": {LAST_KNOWN_STATE_ANNOTATION: '{"spec":{"a":1}}'}}}
    )


@pytest.mark.parametrize("state", [None, "garbage", '{"spec":{"a":0}}'])
def test_content_patch_rewrites_a_missing_unreadable_or_stale_state_alone(state: str | None) -> None:
    desired = {"spec": {"a": 1}}
    live = _live({"a": 1}, state=state)
    assert content_patch(desired=desired, live=live) == ContentPatch(
        patch={"metadata": {"annotations": {LAST_KNOWN_STATE_ANNOTATION: '{"spec":{"a":1}}'}}}
    )


def test_content_patch_keeps_annotation_removals_next_to_the_new_state() -> None:
    last = {"spec": {}, "metadata": {"annotations": {"team": "payments"}}}
    live = _live({}, state=encode_state(last))
    live["metadata"]["annotations"]["team"] = "payments"
    result = content_patch(desired={"spec": {}}, live=live)
    assert result == ContentPatch(
        patch={"metadata": {"annotations": {"team": None, LAST_KNOWN_STATE_ANNOTATION: '{"spec":{}}'}}}
    )


def test_content_patch_applied_once_converges() -> None:
    desired = {"spec": {"a": {"b": [1, 2]}}, "metadata": {"labels": {"app": "web"}}}
    live = _live({"x": 1}, state=encode_state({"spec": {"x": 1}}), labels={SERVLET_LABEL: "tom"})
    first = content_patch(desired=desired, live=live)
    assert isinstance(first, ContentPatch)
    patched = apply_merge_patch(live, first.patch)
    assert patched["spec"] == {"a": {"b": [1, 2]}}
    assert patched["metadata"]["labels"] == {SERVLET_LABEL: "tom", "app": "web"}
    assert content_patch(desired=desired, live=patched) == ContentPatch(patch={})


def test_large_content_is_stored_compressed_and_still_converges() -> None:
    desired = {"spec": {"blob": "line of certificate data\n" * 10_000}}
    live = _live({}, state=None)
    first = content_patch(desired=desired, live=live)
    assert isinstance(first, ContentPatch)
    stored = first.patch["metadata"]["annotations"][LAST_KNOWN_STATE_ANNOTATION]
    assert stored.startswith("z:")
    assert content_patch(desired=desired, live=apply_merge_patch(live, first.patch)) == ContentPatch(patch={})


def test_too_large_object_is_a_problem_not_a_write() -> None:
    # hex digests compress to about half; base64 brings the state back to ~0.7 of the content
    blob = "".join(sha1_hex(str(i)) for i in range(10_000))
    result = content_patch(desired={"spec": {"blob": blob}}, live=_live({}, state=None))
    assert isinstance(result, Problem)
    assert result.field == "metadata.annotations"
    assert "too large" in result.message
    assert str(ANNOTATIONS_LIMIT) in result.message


def test_size_check_counts_the_other_annotations_of_the_live_object() -> None:
    desired = {"spec": {"a": 1}}
    live = _live({"a": 1}, state=None)
    live["metadata"]["annotations"]["huge"] = "x" * (ANNOTATIONS_LIMIT - 20)
    result = content_patch(desired=desired, live=live)
    assert isinstance(result, Problem)


def test_size_check_allows_exactly_the_limit() -> None:
    desired = {"spec": {"a": 1}}
    state = encode_state(desired)
    used = len(LAST_KNOWN_STATE_ANNOTATION) + len(state) + len("filler")
    live = _live({"a": 1}, state=None)
    live["metadata"]["annotations"]["filler"] = "x" * (ANNOTATIONS_LIMIT - used)
    assert isinstance(content_patch(desired=desired, live=live), ContentPatch)
    live["metadata"]["annotations"]["filler"] += "x"
    assert isinstance(content_patch(desired=desired, live=live), Problem)


# --- status ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("local", "remote", "differ"),
    [
        (None, None, False),
        ({}, None, False),
        (None, {}, False),
        ({"ready": True}, {"ready": True}, False),
        ({"ready": True}, None, True),
        (None, {"ready": True}, True),
        ({"ready": True}, {"ready": 1}, True),
        ({"n": 1}, {"n": 1.0}, False),
        ({"list": (1, 2)}, {"list": [1, 2]}, False),
        ({"conditions": [{"type": "Ready"}]}, {"conditions": [{"type": "Ready"}, {"type": "X"}]}, True),
        ({"a": {"b": 1}}, {"a": {"b": 1}, "c": 2}, True),
    ],
)
def test_statuses_differ_by_value(local: Any, remote: Any, differ: bool) -> None:
    assert statuses_differ(local, remote) is differ


def test_size_check_counts_utf8_bytes_not_characters() -> None:
    # The API server counts bytes: a two-byte character counts twice, in keys and values alike.
    assert annotations_size({"note": "plain"}) == 9
    assert annotations_size({"note": "caf\u00e9", "\u00e9t\u00e9": "x"}) == 4 + 5 + 5 + 1
    live = _live({"a": 1}, state=None)
    used = len(LAST_KNOWN_STATE_ANNOTATION) + len(encode_state({"spec": {"a": 1}})) + len("filler")
    live["metadata"]["annotations"]["filler"] = "\u00e9" * ((ANNOTATIONS_LIMIT - used) // 2 + 1)
    assert isinstance(content_patch(desired={"spec": {"a": 1}}, live=live), Problem)
