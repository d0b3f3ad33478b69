"""Hashes and canonical serialisation shared by naming, projection and last-known-state.

Canonical JSON (sorted keys, no whitespace, UTF-8) makes "same input, same output" hold on every
machine, which schema names and change detection depend on.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

# Built once: json.dumps with options builds a new encoder on every call.
_canonical_encoder = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def canonical_json(value: Any) -> str:
    return _canonical_encoder.encode(value)


def sha1_hex(text: str) -> str:
    """The full 40-character lowercase SHA-1 of `text` encoded as UTF-8."""
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


@functools.lru_cache(maxsize=4096)
def name_sha1(name: str) -> str:
    """`sha1_hex` of an object or namespace name, remembered: naming and link labels hash the
    same few names several times in every reconcile."""
    return sha1_hex(name)
