"""The three-way walk the planner runs: the rule of `core/patch_rule.py` with three shortcuts.

Each shortcut answers a common case without visiting every field, and gives what the rule's
walk would give there (the differential property test proves it):

- a map with nothing live to compare and nothing to remove (a new object) is the desired map,
  copied without null members;
- a desired map equal to the live one as JSON needs nothing;
- a live map that holds every wanted member and none removed since the last state needs nothing,
  checked at C speed (a converged object's live maps carry more than the servlet wants).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core import jsontext
from servlet.core.json_values import is_mapping, json_equal, without_null_members
from servlet.core.patch_rule import SHARED_MAPS, UNCHANGED

# The maps that hold a shared map; their members follow the shared maps' rule, not the shortcut.
_SHARED_MAP_PARENTS = frozenset(path[:-1] for path in SHARED_MAPS)


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
        # Shortcut: nothing live to compare with and nothing to remove. The rule sets every
        # desired member without its nulls, which is the desired map copied without them.
        return without_null_members(desired)  # type: ignore[no-any-return]
    patch: dict[str, Any] = {}
    removed = [key for key in (last or {}) if key not in desired]
    for key in [*desired, *removed]:
        change = _change(
            previous=last.get(key) if last is not None else None,
            wanted=desired.get(key),
            current=live.get(key),
            path=(*path, key),
        )
        if change is not UNCHANGED:
            patch[key] = change
    return patch


def _change(*, previous: Any, wanted: Any, current: Any, path: tuple[str, ...]) -> Any:
    """The patch value for one field, or UNCHANGED. `wanted` None: removed from desired, or null."""
    if path in SHARED_MAPS:
        # Owned key by key: a missing desired map removes the keys last written, never the map.
        wanted = wanted if is_mapping(wanted) else {}
        if not is_mapping(current):
            return without_null_members(wanted) if wanted else UNCHANGED
    if wanted is None:
        # Absent and null are the same on both sides.
        return None if current is not None else UNCHANGED
    if is_mapping(wanted) and is_mapping(current):
        if json_equal(wanted, current) or _already_holds(previous=previous, wanted=wanted, current=current):
            # Shortcut: every key is equal and every removed key already absent, so no walk.
            return UNCHANGED
        nested = _diff(last=previous if is_mapping(previous) else None, desired=wanted, live=current, path=path)
        return nested if nested else UNCHANGED
    if json_equal(wanted, current):
        return UNCHANGED
    return without_null_members(wanted)


def _already_holds(*, previous: Any, wanted: Mapping[str, Any], current: Mapping[str, Any]) -> bool:
    """Whether the live map has every wanted member and none removed since `previous`: no patch.

    The walk would find the same, one member at a time. False means only "walk to find out".
    """
    if type(wanted) is not dict or type(current) is not dict or not wanted.items() <= current.items():
        return False
    if is_mapping(previous) and any(key not in wanted and current.get(key) is not None for key in previous):
        return False
    # Python's equality let `True` stand for `1`: equal texts rule that out, as in json_equal.
    return jsontext.same_text(wanted, {key: current[key] for key in wanted})
