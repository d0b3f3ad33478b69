"""The last-known-state annotation: how the content the servlet wrote is stored on the copy, and its size limit.

The text is compact JSON with sorted keys, so one value has one spelling and a converged object is
recognised by comparing strings. Large states are compressed; the annotations of an object must
stay within what the API server accepts.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from collections.abc import Mapping
from typing import Any

from servlet.core import jsontext
from servlet.core.json_values import is_mapping
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION
from servlet.core.model import Problem

STATE_COMPRESSION_THRESHOLD = 64 * 1024
ANNOTATIONS_LIMIT = 256 * 1024

COMPRESSED_PREFIX = "z:"
# A real state is bounded by what etcd stores for one object (about 1.5 MiB); anything that
# inflates beyond this is not a state the servlet wrote, and must not exhaust memory.
_MAX_DECOMPRESSED_STATE = 8 * 1024 * 1024


def encode_state(content: Mapping[str, Any]) -> str:
    """Compact JSON of `content` with sorted keys; above 64 KiB of UTF-8, zlib-compressed base64 behind `z:`.

    One spelling per value, so a converged object is recognised by comparing strings. JSON of a
    mapping always starts with `{`, so the prefix cannot be mistaken.
    """
    text = jsontext.sorted_text(content)
    raw = text.encode("utf-8")
    if len(raw) <= STATE_COMPRESSION_THRESHOLD:
        return text
    return COMPRESSED_PREFIX + base64.b64encode(zlib.compress(raw, 9)).decode("ascii")


def decode_state(text: str | None) -> dict[str, Any] | None:
    """The content stored by `encode_state`, or None when absent or unreadable.

    An unreadable state (edited by hand, truncated) is treated like no state: the next patch is
    computed two-way and a fresh state is written, which is the best the servlet can do.
    """
    if not text:
        return None
    try:
        if text.startswith(COMPRESSED_PREFIX):
            packed = base64.b64decode(text[len(COMPRESSED_PREFIX) :], validate=True)
            inflater = zlib.decompressobj()
            raw = inflater.decompress(packed, _MAX_DECOMPRESSED_STATE)
            if inflater.unconsumed_tail or inflater.unused_data or not inflater.eof:
                return None
            text = raw.decode("utf-8")
        value = jsontext.decode(text)
    except (ValueError, binascii.Error, zlib.error, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def live_annotations(live: Mapping[str, Any]) -> Mapping[str, Any]:
    """The annotations of `live`, {} when it has none or they are not a map."""
    metadata = live.get("metadata")
    annotations = metadata.get("annotations") if is_mapping(metadata) else None
    return annotations if is_mapping(annotations) else {}


def stored_state(live: Mapping[str, Any]) -> str | None:
    """The last-known-state text on `live`, None when absent or not a string."""
    stored = live_annotations(live).get(LAST_KNOWN_STATE_ANNOTATION)
    return stored if isinstance(stored, str) else None


def annotations_size(annotations: Mapping[str, Any]) -> int:
    """The size the API server checks: UTF-8 bytes of every key plus every value."""
    text = "".join([*annotations, *(str(value) for value in annotations.values())])
    # isascii() reads a flag CPython keeps: ASCII text (the usual case) is counted without encoding.
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def annotations_problem(annotations: Mapping[str, Any], *, state: str) -> Problem | None:
    """A Problem when `annotations` (carrying `state`) exceed what the API server accepts.

    The API server would reject such a write, and a half-written state would be worse than none.
    """
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
