"""Content sync as data: the last-known-state and kubectl's three-way rule over JSON merge patch.

The servlet owns only what it last wrote. Comparing the desired content with the live object
alone would either wipe fields that webhooks and other controllers add (a two-way "make it equal")
or never remove a field the tenant deleted (a two-way "add what is missing"). The last-known-state
annotation remembers what the servlet wrote, so a field is removed exactly when the servlet put it
there and the tenant has since removed it.

Decisions the rule leaves open, settled here:

- JSON null cannot be written with a merge patch (null means "delete"). A desired `null` is
  therefore realised as "absent": the patch deletes the live field, and a live field that is
  absent or null already counts as converged. For a nullable CRD field both read the same.
- Absent and null are the same on the live side too, so a field removed from the desired content
  that the live object no longer has (or holds as null) costs no write.
- The labels and annotations maps in `metadata` (and `metadata` itself) are shared with the API
  server, webhooks and other controllers, and carry the servlet's own link metadata. The servlet
  owns single keys there, never the map: when the desired content has no such map, the keys it
  last wrote are removed one by one and the map is never nulled.
- Values compare as JSON: `true` differs from `1`, while `1` equals `1.0` (Go writes both as `1`).

This module computes patches; it does not send them, and it does not decide whether content sync
runs at all (the planner does).
"""

from __future__ import annotations

import base64
import binascii
import copy
import zlib
from collections.abc import Mapping
from typing import Any, TypeGuard

from attrs import frozen

from servlet.core import jsontext
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION, copyable
from servlet.core.model import Problem

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["ContentPatch", "apply_merge_patch", "content_patch", "decode_state", "encode_state",
           "primary_content", "three_way_patch"]

STATE_COMPRESSION_THRESHOLD = 64 * 1024
ANNOTATIONS_LIMIT = 256 * 1024

_COMPRESSED_PREFIX = "z:"
# A real state is bounded by what etcd stores for one object (about 1.5 MiB); anything that
# inflates beyond this is not a state the servlet wrote, and must not exhaust memory.
_MAX_DECOMPRESSED_STATE = 8 * 1024 * 1024
_SKIPPED_TOP_LEVEL = frozenset({"apiVersion", "kind", "metadata", "status"})
# Maps owned key by key (see the module docstring), as paths from the object root.
_SHARED_MAPS = frozenset({("metadata",), ("metadata", "labels"), ("metadata", "annotations")})
_SHARED_MAP_PARENTS = frozenset(path[:-1] for path in _SHARED_MAPS)
# The shared maps directly inside each map that holds some: () -> metadata -> labels, annotations.
_SHARED_CHILDREN = {
    parent: frozenset(path[-1] for path in _SHARED_MAPS if path[:-1] == parent) for parent in _SHARED_MAP_PARENTS
}
_METADATA_SHARED_MAPS = _SHARED_CHILDREN[("metadata",)]
_UNCHANGED: Any = object()


def encode_state(content: Mapping[str, Any]) -> str:
    """Compact JSON of `content` with sorted keys; above 64 KiB of UTF-8, zlib-compressed base64 behind `z:`.

    One spelling per value, so a converged object is recognised by comparing strings. JSON of a
    mapping always starts with `{`, so the prefix cannot be mistaken.
    """
    text = jsontext.sorted_text(content)
    raw = text.encode("utf-8")
    if len(raw) <= STATE_COMPRESSION_THRESHOLD:
        return text
    return _COMPRESSED_PREFIX + base64.b64encode(zlib.compress(raw, 9)).decode("ascii")


def decode_state(text: str | None) -> dict[str, Any] | None:
    """The content stored by `encode_state`, or None when absent or unreadable.

    An unreadable state (edited by hand, truncated) is treated like no state: the next patch is
    computed two-way and a fresh state is written, which is the best the servlet can do.
    """
    if not text:
        return None
    try:
        if text.startswith(_COMPRESSED_PREFIX):
            packed = base64.b64decode(text[len(_COMPRESSED_PREFIX):], validate=True)
            inflater = zlib.decompressobj()
            raw = inflater.decompress(packed, _MAX_DECOMPRESSED_STATE)
            if inflater.unconsumed_tail or inflater.unused_data or not inflater.eof:
                return None
            text = raw.decode("utf-8")
        value = jsontext.decode(text)
    except (ValueError, binascii.Error, zlib.error, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def primary_content(remote: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a remote primary that is synced down: content fields and copied metadata."""
    return _json_copy(primary_content_view(remote))  # type: ignore[no-any-return]


def primary_content_view(remote: Mapping[str, Any]) -> dict[str, Any]:
    """`primary_content` without copying the content fields: they are the remote's own values.

    For the planner, which only reads it: every plan computes this, and the copy was a fifth of
    a converged plan. Patches and objects built from it copy what they take; never change it.
    """
    content = {key: value for key, value in remote.items() if key not in _SKIPPED_TOP_LEVEL}
    metadata = remote.get("metadata")
    if is_mapping(metadata):
        copied: dict[str, Any] = {}
        for name in ("labels", "annotations"):
            values = metadata.get(name)
            kept = copyable(values) if is_mapping(values) else {}
            if kept:
                copied[name] = kept
        if copied:
            content["metadata"] = copied
    return content


def apply_merge_patch(target: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 7386: null deletes, an object merges, anything else replaces. Inputs are not changed."""
    merged = {key: _json_copy(value) for key, value in target.items()}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif is_mapping(value):
            current = merged.get(key)
            # A map patched onto anything but a map starts from an empty map (RFC 7386).
            merged[key] = apply_merge_patch(current if is_mapping(current) else {}, value)
        else:
            merged[key] = _json_copy(value)
    return merged


def merge_owned_patch(target: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """`apply_merge_patch` into `target` itself, taking the patch's values without copying them.

    Only for a target and a patch the caller just built and nobody else holds (a new object and
    its first content patch): copying both again would be wasted work on every create.
    """
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif is_mapping(value):
            current = target.get(key)
            if type(current) is dict:
                target[key] = merge_owned_patch(current, value)
            elif type(value) is dict:
                # A map patched onto anything but a map starts from an empty map (RFC 7386): the
                # result is the patch's own map without its null members.
                _drop_null_members(value)
                target[key] = value
            else:
                target[key] = merge_owned_patch({}, value)
        else:
            target[key] = value
    return target


def created_object(*, skeleton: dict[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | Problem:
    """A new object: `skeleton` (apiVersion, kind, name, link metadata) carrying `desired` and its state.

    The same object as the first content patch against the skeleton merged into it. In the usual
    case the two share nothing but `metadata`, whose copied labels and annotations never use a link
    key; the patch is then the content itself, so the object is built from one copy instead of a
    walk (every create pays this). Anything else takes the general path. `skeleton` is taken over.
    """
    built = _created_directly(skeleton=skeleton, desired=desired)
    if built is not None:
        return built
    initial = content_patch(desired=desired, live=skeleton)
    if isinstance(initial, Problem):
        return initial
    return merge_owned_patch(skeleton, initial.patch)


def _created_directly(*, skeleton: dict[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | Problem | None:
    """`created_object` without a patch, or None when its preconditions do not hold."""
    meta = skeleton.get("metadata")
    copied_meta = desired.get("metadata", {})
    if type(meta) is not dict or type(copied_meta) is not dict or type(desired) is not dict:
        return None
    if not (skeleton.keys() & desired.keys()) <= {"metadata"}:
        return None
    for section, values in copied_meta.items():
        if section not in _METADATA_SHARED_MAPS or type(values) is not dict or type(meta.get(section)) is not dict:
            return None
        if not meta[section].keys().isdisjoint(values):
            return None
    annotations = meta.get("annotations", {})
    if type(annotations) is not dict or LAST_KNOWN_STATE_ANNOTATION in annotations:
        return None  # a skeleton with a state is a live object: the three-way rule applies
    state = encode_state(desired)
    try:
        content = jsontext.copy(desired)
    except ValueError:
        return None
    if state.startswith(_COMPRESSED_PREFIX) or "null" in state:  # no null anywhere spares the walk
        _drop_null_members(content)
    for section, values in content.pop("metadata", {}).items():
        meta[section].update(values)
    skeleton.update(content)
    annotations = meta.setdefault("annotations", {})
    annotations[LAST_KNOWN_STATE_ANNOTATION] = state
    problem = _annotations_problem(annotations, state=state)
    return skeleton if problem is None else problem


def three_way_patch(
    *, last_known: Mapping[str, Any] | None, desired: Mapping[str, Any], live: Mapping[str, Any]
) -> dict[str, Any]:
    """The merge patch that makes `live` carry `desired` by kubectl's three-way rule; {} if none.

    A field in `last_known` but not in `desired` is deleted; a desired field whose live value
    differs is set; a live field in neither is left alone; maps recurse; lists and scalars are
    replaced whole. `last_known` None (first sync, unreadable state) removes nothing.
    """
    return _diff(last=last_known, desired=desired, live=live, path=())


def _diff(
    *, last: Mapping[str, Any] | None, desired: Mapping[str, Any], live: Mapping[str, Any], path: tuple[str, ...]
) -> dict[str, Any]:
    if last is None and path not in _SHARED_MAP_PARENTS and type(desired) is dict and live.keys().isdisjoint(desired):
        # Nothing live to compare with and nothing to remove (a new object): the patch is the
        # desired map itself, copied, without null members (absent and null are the same).
        return _without_null_members(desired)  # type: ignore[no-any-return]
    patch: dict[str, Any] = {}
    removed = [key for key in (last or {}) if key not in desired]
    for key in [*desired, *removed]:
        change = _change(
            previous=last.get(key) if last is not None else None,
            wanted=desired.get(key),
            current=live.get(key),
            path=path + (key,),
        )
        if change is not _UNCHANGED:
            patch[key] = change
    return patch


def _change(*, previous: Any, wanted: Any, current: Any, path: tuple[str, ...]) -> Any:
    """The patch value for one field, or _UNCHANGED. `wanted` None: removed from desired, or null."""
    if path in _SHARED_MAPS:
        # Owned key by key: a missing desired map removes the keys last written, never the map.
        wanted = wanted if is_mapping(wanted) else {}
        if not is_mapping(current):
            return _without_null_members(wanted) if wanted else _UNCHANGED
    if wanted is None:
        # Absent and null are the same on both sides (module docstring).
        return None if current is not None else _UNCHANGED
    if is_mapping(wanted) and is_mapping(current):
        if _json_equal(wanted, current) or _already_holds(previous=previous, wanted=wanted, current=current):
            # Equal maps need no walk: every key is equal and every removed key already absent.
            return _UNCHANGED
        nested = _diff(
            last=previous if is_mapping(previous) else None, desired=wanted, live=current, path=path
        )
        return nested if nested else _UNCHANGED
    if _json_equal(wanted, current):
        return _UNCHANGED
    return _without_null_members(wanted)


def _already_holds(*, previous: Any, wanted: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Whether the live map has every wanted member and none removed since `previous`: no patch.

    The walk would find the same, one member at a time; this is the common case of a converged
    object, whose live maps (metadata, labels) carry more than the servlet wants, checked at C
    speed. False means only "walk to find out".
    """
    if type(wanted) is not dict or type(current) is not dict or not wanted.items() <= current.items():
        return False
    if is_mapping(previous) and any(key not in wanted and current.get(key) is not None for key in previous):
        return False
    # Python's equality let `True` stand for `1`: equal texts rule that out, as in _json_equal.
    return jsontext.same_text(wanted, {key: current[key] for key in wanted})


def _without_null_members(value: Any) -> Any:
    """A copy of a map set whole, without null members: they would mean "delete" in the patch."""
    if type(value) is not dict and is_mapping(value):  # a Mapping that is not a dict: walked
        return {key: _without_null_members(item) for key, item in value.items() if item is not None}
    copied = _json_copy(value)
    if type(copied) is dict:
        _drop_null_members(copied)
    return copied


def _drop_null_members(value: dict[str, Any]) -> None:
    """Remove null members from a freshly copied map and the maps inside it (lists are values)."""
    nulls = []
    for key, item in value.items():
        if item is None:
            nulls.append(key)
        elif type(item) is dict:
            _drop_null_members(item)
    for key in nulls:
        del value[key]


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


def _json_copy(value: Any) -> Any:
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


def _json_equal(left: Any, right: Any) -> bool:
    """Equality of JSON values: Python's `True == 1` must not hide a changed boolean."""
    kind, other = type(left), type(right)
    if kind is not other:
        if kind in _JSON_TYPES and other in _JSON_TYPES:
            # Of two different JSON types only an integer and a float can be equal (1 and 1.0).
            return kind in _NUMBERS and other in _NUMBERS and bool(left == right)
        return _json_equal_walk(left, right)
    if kind in _SCALARS or left is None:
        return bool(left == right)
    if kind is dict or kind is list:
        # Python's equality (at C speed) is looser than JSON's only where a bool meets a number;
        # equal texts rule that out. This runs for every object on every reconcile. Keys are not
        # sorted: equal objects from the API server or the servlet list them in the same order,
        # and any other order only falls back to the walk (as does a tuple inside).
        if left == right and jsontext.same_text(left, right):
            return True
    return _json_equal_walk(left, right)


def _json_equal_walk(left: Any, right: Any) -> bool:
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if is_mapping(left) and is_mapping(right):
        return left.keys() == right.keys() and all(_json_equal(left[key], right[key]) for key in left)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(_json_equal(a, b) for a, b in zip(left, right))
    if isinstance(left, (Mapping, list, tuple)) or isinstance(right, (Mapping, list, tuple)):
        return False
    return bool(left == right)


@frozen
class ContentPatch:
    """The merge patch for a local copy: {} when converged, else it carries the new state."""

    patch: dict[str, Any]


def content_patch(*, desired: Mapping[str, Any], live: Mapping[str, Any]) -> ContentPatch | Problem:
    """The three-way patch against the state stored on `live`, with the new state added.

    The state is rewritten also when only it is stale (an old or unreadable annotation), so the
    next removal is computed against what the object really carries. A patch that would push the
    live object's annotations past the API's 256 KiB limit is a Problem: the API server would
    reject it, and a half-written state would be worse than none.
    """
    annotations = _live_annotations(live)
    stored = annotations.get(LAST_KNOWN_STATE_ANNOTATION)
    state = encode_state(desired)
    # The stored state is normally the very text encode_state gives for `desired` (one spelling per
    # value): then it is `desired` and needs no decoding. Any other text is decoded and compared.
    unchanged = stored == state
    if unchanged and _carries_exactly(desired=desired, live=live, state=state):
        return ContentPatch(patch={})
    last_known = desired if unchanged else decode_state(stored if isinstance(stored, str) else None)
    patch = three_way_patch(last_known=last_known, desired=desired, live=live)
    if not patch and last_known is not None and (unchanged or _json_equal(last_known, desired)):
        return ContentPatch(patch={})

    # The patch was just built here and holds copies only: add the state to it in place. Its
    # metadata and annotations are maps or absent, never null (they are owned key by key).
    patch_metadata = patch.setdefault("metadata", {})
    patch_metadata.setdefault("annotations", {})[LAST_KNOWN_STATE_ANNOTATION] = state
    problem = _annotations_problem(apply_merge_patch(annotations, patch["metadata"]["annotations"]), state=state)
    return ContentPatch(patch=patch) if problem is None else problem


def _annotations_problem(annotations: Mapping[str, Any], *, state: str) -> Problem | None:
    """A Problem when `annotations` (carrying `state`) exceed what the API server accepts."""
    size = annotations_size(annotations)
    if size <= ANNOTATIONS_LIMIT:
        return None
    return Problem(
        field="metadata.annotations",
        message=(
            f"the object is too large for its last-known-state: the annotations would take {size} "
            f"bytes (the state alone {len(state.encode('utf-8'))} bytes), "
            f"more than the limit of {ANNOTATIONS_LIMIT} bytes"
        ),
    )


def _carries_exactly(*, desired: Mapping[str, Any], live: Mapping[str, Any], state: str) -> bool:
    """Whether `live` holds every desired value spelled as `state` spells it: then nothing to patch.

    For a live object whose stored state is `state`, so nothing is to be removed: one encoding of
    the live values settles the usual converged object. Shared maps are compared on the wanted
    keys only, anything else whole. False means only "walk to find out".
    """
    if state.startswith(_COMPRESSED_PREFIX):
        return False
    view = _owned_view(wanted=desired, live=live)
    try:
        return view is not None and jsontext.sorted_text(view) == state
    except (TypeError, ValueError):  # not JSON: the walk will tell
        return False


def _owned_view(*, wanted: Mapping[str, Any], live: Mapping[str, Any], path: tuple[str, ...] = ()
                ) -> dict[str, Any] | None:
    """The members of `live` that `wanted` names, None if one is missing; shared maps (module
    docstring) only by their wanted keys, any other value whole."""
    view: dict[str, Any] = {}
    shared = _SHARED_CHILDREN.get(path, frozenset())
    for key, value in wanted.items():
        current = live.get(key, _UNCHANGED)
        if current is _UNCHANGED:
            return None
        if key in shared and type(value) is dict and type(current) is dict:
            current = _owned_view(wanted=value, live=current, path=(*path, key))
            if current is None:
                return None
        view[key] = current
    return view


def _live_annotations(live: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = live.get("metadata")
    annotations = metadata.get("annotations") if is_mapping(metadata) else None
    return annotations if is_mapping(annotations) else {}


def annotations_size(annotations: Mapping[str, Any]) -> int:
    """The size the API server checks: UTF-8 bytes of every key plus every value."""
    text = "".join([*annotations, *(str(value) for value in annotations.values())])
    # isascii() reads a flag CPython keeps: ASCII text (the usual case) is counted without encoding.
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def statuses_differ(local_status: Any, remote_status: Any) -> bool:
    """Whether the remote status must be rewritten from the local one, compared as JSON values.

    None (absent) and `{}` both mean "no status": copying one over the other would be a write
    that changes nothing a reader can see.
    """
    return not _json_equal({} if local_status is None else local_status, {} if remote_status is None else remote_status)
