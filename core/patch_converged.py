"""The converged check: a live object whose stored state is the desired state, settled by one encoding.

When the state stored on the live object is the very text the servlet would write now, the rule
(`core/patch_rule.py`) removes nothing, and the patch is empty exactly when every desired value is
live. The owned view picks those live values (shared maps only by the wanted keys, anything else
whole); when it encodes to the state's text the object is converged. Any other answer only means
"walk to find out". The differential property test proves the check never changes a patch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core import jsontext
from servlet.core.patch_rule import SHARED_MAPS
from servlet.core.patch_state import COMPRESSED_PREFIX

# The shared maps directly inside each map that holds some: () -> metadata -> labels, annotations.
_SHARED_CHILDREN = {
    parent: frozenset(path[-1] for path in SHARED_MAPS if path[:-1] == parent)
    for parent in {path[:-1] for path in SHARED_MAPS}
}
_MISSING: Any = object()


def carries_exactly(*, desired: Mapping[str, Any], live: Mapping[str, Any], state: str) -> bool:
    """Whether `live` holds every desired value spelled as `state` spells it: then nothing to patch.

    Only for a live object whose stored state is `state` (= the encoded `desired`).
    """
    if state.startswith(COMPRESSED_PREFIX):
        return False
    view = owned_view(wanted=desired, live=live)
    try:
        return view is not None and jsontext.sorted_text(view) == state
    except (TypeError, ValueError):  # not JSON: the walk will tell
        return False


def owned_view(
    *, wanted: Mapping[str, Any], live: Mapping[str, Any], path: tuple[str, ...] = ()
) -> dict[str, Any] | None:
    """The members of `live` that `wanted` names, None if one is missing; shared maps only by their
    wanted keys, any other value whole."""
    view: dict[str, Any] = {}
    shared = _SHARED_CHILDREN.get(path, frozenset())
    for key, value in wanted.items():
        current = live.get(key, _MISSING)
        if current is _MISSING:
            return None
        if key in shared and type(value) is dict and type(current) is dict:
            current = owned_view(wanted=value, live=current, path=(*path, key))
            if current is None:
                return None
        view[key] = current
    return view
