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

This module is what callers import. It wires the parts, each small enough to read alone:

| module | what |
|---|---|
| `core/patch_rule.py` | the rule, written plainly: the reference the fast paths must equal |
| `core/patch_walk.py` | the three-way walk with its shortcuts (new maps, equal maps, maps already held) |
| `core/patch_converged.py` | the converged check: the owned view of a live object encodes to its stored state |
| `core/patch_create.py` | the direct build of a new object from one copy of its content |
| `core/patch_state.py` | the last-known-state text and the annotations' size limit |
| `core/merge_patch.py` | applying a merge patch (RFC 7386), copying or in place |
| `core/json_values.py` | JSON values recognised, copied and compared by their exact types |

This module computes patches; it does not send them, and it does not decide whether content sync
runs at all (the planner does).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core.json_values import is_mapping, json_copy, json_equal
from servlet.core.merge_patch import apply_merge_patch, merge_owned_patch
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION, copyable
from servlet.core.model import Problem
from servlet.core.patch_converged import carries_exactly
from servlet.core.patch_create import created_directly
from servlet.core.patch_rule import ContentPatch
from servlet.core.patch_state import (  # the limits and sizes are re-exported for the planners
    ANNOTATIONS_LIMIT as ANNOTATIONS_LIMIT,
    STATE_COMPRESSION_THRESHOLD as STATE_COMPRESSION_THRESHOLD,
    annotations_problem,
    annotations_size as annotations_size,
    decode_state,
    encode_state,
    live_annotations,
)
from servlet.core.patch_walk import three_way_patch

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = [
    "ContentPatch",
    "apply_merge_patch",
    "content_patch",
    "decode_state",
    "encode_state",
    "primary_content",
    "three_way_patch",
]

_SKIPPED_TOP_LEVEL = frozenset({"apiVersion", "kind", "metadata", "status"})


def primary_content(remote: Mapping[str, Any]) -> dict[str, Any]:
    """The part of a remote primary that is synced down: content fields and copied metadata."""
    return json_copy(primary_content_view(remote))  # type: ignore[no-any-return]


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


def content_patch(*, desired: Mapping[str, Any], live: Mapping[str, Any]) -> ContentPatch | Problem:
    """The three-way patch against the state stored on `live`, with the new state added.

    The state is rewritten also when only it is stale (an old or unreadable annotation), so the
    next removal is computed against what the object really carries. A patch that would push the
    live object's annotations past the API's 256 KiB limit is a Problem: the API server would
    reject it, and a half-written state would be worse than none.
    """
    annotations = live_annotations(live)
    stored = annotations.get(LAST_KNOWN_STATE_ANNOTATION)
    state = encode_state(desired)
    # The stored state is normally the very text encode_state gives for `desired` (one spelling per
    # value): then it is `desired` and needs no decoding. Any other text is decoded and compared.
    unchanged = stored == state
    if unchanged and carries_exactly(desired=desired, live=live, state=state):
        return ContentPatch(patch={})
    last_known = desired if unchanged else decode_state(stored if isinstance(stored, str) else None)
    patch = three_way_patch(last_known=last_known, desired=desired, live=live)
    if not patch and last_known is not None and (unchanged or json_equal(last_known, desired)):
        return ContentPatch(patch={})

    # The patch was just built here and holds copies only: add the state to it in place. Its
    # metadata and annotations are maps or absent, never null (they are owned key by key).
    patch_metadata = patch.setdefault("metadata", {})
    patch_metadata.setdefault("annotations", {})[LAST_KNOWN_STATE_ANNOTATION] = state
    problem = annotations_problem(apply_merge_patch(annotations, patch["metadata"]["annotations"]), state=state)
    return ContentPatch(patch=patch) if problem is None else problem


def created_object(*, skeleton: dict[str, Any], desired: Mapping[str, Any]) -> dict[str, Any] | Problem:
    """A new object: `skeleton` (apiVersion, kind, name, link metadata) carrying `desired` and its state.

    The first content patch against the skeleton merged into it; usually built directly
    (`core/patch_create.py`). `skeleton` is taken over.
    """
    built = created_directly(skeleton=skeleton, desired=desired)
    if built is not None:
        return built
    initial = content_patch(desired=desired, live=skeleton)
    if isinstance(initial, Problem):
        return initial
    return merge_owned_patch(skeleton, initial.patch)


def statuses_differ(local_status: Any, remote_status: Any) -> bool:
    """Whether the remote status must be rewritten from the local one, compared as JSON values.

    None (absent) and `{}` both mean "no status": copying one over the other would be a write
    that changes nothing a reader can see.
    """
    return not json_equal({} if local_status is None else local_status, {} if remote_status is None else remote_status)
