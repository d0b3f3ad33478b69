"""The direct build of a new object: its content copied once into the skeleton, no patch walk.

By the rule (`core/patch_rule.py`) a new object is its skeleton (apiVersion, kind, name, link
metadata) with the first content patch merged in. In the usual case the two share nothing but
`metadata`, whose copied labels and annotations never use a key the skeleton has, and the
skeleton carries no state: the patch is then the content itself without null members, plus the
state. Every create pays this, so it is built from one copy instead. Anything else returns None
and takes the general path; the differential property test proves both give the same object,
key order included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core import jsontext
from servlet.core.json_values import drop_null_members
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION
from servlet.core.model import Problem
from servlet.core.patch_rule import SHARED_MAPS
from servlet.core.patch_state import COMPRESSED_PREFIX, annotations_problem, encode_state

_METADATA_SHARED_MAPS = frozenset(path[-1] for path in SHARED_MAPS if path[:-1] == ("metadata",))


def created_directly(*, skeleton: dict[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | Problem | None:
    """The new object built in `skeleton` itself, or None when the preconditions above do not hold."""
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
    if state.startswith(COMPRESSED_PREFIX) or "null" in state:  # no null anywhere spares the walk
        drop_null_members(content)
    for section, values in content.pop("metadata", {}).items():
        meta[section].update(values)
    skeleton.update(content)
    annotations = meta.setdefault("annotations", {})
    annotations[LAST_KNOWN_STATE_ANNOTATION] = state
    problem = annotations_problem(annotations, state=state)
    return skeleton if problem is None else problem
