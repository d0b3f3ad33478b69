"""The three-way content rule, written plainly: the reference every fast path must equal.

The planner does not call these functions; it calls `core/patch.py`, whose shortcuts
(`core/patch_walk.py`, `core/patch_converged.py`, `core/patch_create.py`) answer the common cases
without walking. A differential property test (`tests/property/test_patch_reference.py`) proves
their results equal to the ones below, so a change of the rule is made here first and read here.

The rule (kubectl's three-way merge over a JSON merge patch, with the decisions of the "Syncing
objects" section of `docs/decisions.md`):

- last-known-state is what the servlet wrote last (None: nothing is known, nothing is removed);
- a field the last state had and the desired content no longer has is deleted;
- a desired field whose live value differs (as JSON: `true` is not `1`, `1` is `1.0`) is set;
- a desired null means absent: it deletes the live field, and an absent or null live field is
  converged; a map set whole carries no null members;
- a live field in neither the last state nor the desired content is left alone;
- maps recurse, lists and scalars are replaced whole;
- `metadata`, `metadata.labels` and `metadata.annotations` are owned key by key: a missing desired
  map means "none of my keys", never "delete the map".
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from attrs import frozen

from servlet.core.merge_patch import apply_merge_patch
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION
from servlet.core.model import Problem
from servlet.core.patch_state import annotations_problem, decode_state, encode_state, live_annotations

# Maps owned key by key, as paths from the object root.
SHARED_MAPS = frozenset({("metadata",), ("metadata", "labels"), ("metadata", "annotations")})
UNCHANGED: Any = object()


@frozen
class ContentPatch:
    """The merge patch for a local copy: {} when converged, else it carries the new state."""

    patch: dict[str, Any]


def three_way_patch(
    *, last_known: Mapping[str, Any] | None, desired: Mapping[str, Any], live: Mapping[str, Any]
) -> dict[str, Any]:
    """The merge patch that makes `live` carry `desired` by the rule above; {} if none."""
    return _diff(last=last_known, desired=desired, live=live, path=())


def _diff(
    *, last: Mapping[str, Any] | None, desired: Mapping[str, Any], live: Mapping[str, Any], path: tuple[str, ...]
) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    removed = [key for key in (last or {}) if key not in desired]
    for key in [*desired, *removed]:
        change = field_change(
            previous=last.get(key) if last is not None else None,
            wanted=desired.get(key),
            current=live.get(key),
            path=(*path, key),
        )
        if change is not UNCHANGED:
            patch[key] = change
    return patch


def field_change(*, previous: Any, wanted: Any, current: Any, path: tuple[str, ...]) -> Any:
    """The patch value for one field, or UNCHANGED. `wanted` None: removed from desired, or null."""
    if path in SHARED_MAPS:
        wanted = wanted if isinstance(wanted, Mapping) else {}
        if not isinstance(current, Mapping):
            return without_nulls(wanted) if wanted else UNCHANGED
    if wanted is None:
        return None if current is not None else UNCHANGED
    if isinstance(wanted, Mapping) and isinstance(current, Mapping):
        nested = _diff(
            last=previous if isinstance(previous, Mapping) else None, desired=wanted, live=current, path=path
        )
        return nested if nested else UNCHANGED
    if json_equal(wanted, current):
        return UNCHANGED
    return without_nulls(wanted)


def content_patch(*, desired: Mapping[str, Any], live: Mapping[str, Any]) -> ContentPatch | Problem:
    """The three-way patch against the state stored on `live`, carrying the new state.

    Nothing to patch and a stored state equal to the desired content: converged, {}. Otherwise
    the state is written too, also when only it is stale, so that the next removal is computed
    against what the object really carries.
    """
    annotations = live_annotations(live)
    stored = annotations.get(LAST_KNOWN_STATE_ANNOTATION)
    last_known = decode_state(stored if isinstance(stored, str) else None)
    patch = three_way_patch(last_known=last_known, desired=desired, live=live)
    if not patch and last_known is not None and json_equal(last_known, desired):
        return ContentPatch(patch={})
    state = encode_state(desired)
    patch.setdefault("metadata", {}).setdefault("annotations", {})[LAST_KNOWN_STATE_ANNOTATION] = state
    problem = annotations_problem(apply_merge_patch(annotations, patch["metadata"]["annotations"]), state=state)
    return ContentPatch(patch=patch) if problem is None else problem


def created_object(*, skeleton: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | Problem:
    """A new object: the first content patch against `skeleton` merged into it."""
    initial = content_patch(desired=desired, live=skeleton)
    if isinstance(initial, Problem):
        return initial
    return apply_merge_patch(skeleton, initial.patch)


def json_equal(left: Any, right: Any) -> bool:
    """Equality of JSON values: booleans equal only booleans (Python says `True == 1`), `1` equals `1.0`."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, Mapping) and isinstance(right, Mapping):
        return left.keys() == right.keys() and all(json_equal(left[key], right[key]) for key in left)
    if isinstance(left, (list, tuple)) and isinstance(right, (list, tuple)):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right))
    if isinstance(left, (Mapping, list, tuple)) or isinstance(right, (Mapping, list, tuple)):
        return False
    return bool(left == right)


def without_nulls(value: Any) -> Any:
    """A copy of a value set whole, without null map members: in a merge patch they mean "delete"."""
    if isinstance(value, Mapping):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    return copy.deepcopy(value)
