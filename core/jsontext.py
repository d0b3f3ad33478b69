"""Fast JSON text for the hot paths: every plan, every watch event, every log line.

msgspec (already required by lightkube) encodes about eight times and decodes about twice as fast
as the standard library here, which is most of what a converged plan costs. Where msgspec refuses
input the standard library takes (lone surrogates, numbers beyond a double), decoding falls back to
the standard library, so nothing that decoded before is refused now.

Names and hashes keep `hashing.canonical_json` (the standard library's spelling): they must never
change between versions. Text written here is only ever read back as JSON, where the spelling of
a number (`1e16` here, `1e+16` there) does not matter.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

_encoder = msgspec.json.Encoder()
_sorted_encoder = msgspec.json.Encoder(order="sorted")
_decoder = msgspec.json.Decoder()
_line_encoder = msgspec.json.Encoder(enc_hook=str)
_ENCODE_ERRORS = (TypeError, ValueError, RecursionError, msgspec.MsgspecError)


def decode(text: str | bytes) -> Any:
    """JSON text as Python values; ValueError (as `json.loads`) when it is not JSON."""
    try:
        return _decoder.decode(text)
    except msgspec.DecodeError:
        return json.loads(text)


def sorted_text(value: Any) -> str:
    """Compact JSON with keys sorted: one spelling per value, so equal strings mean equal values.

    Values msgspec cannot encode (maps with keys other than strings or numbers) take the standard
    library's canonical spelling, or its TypeError.
    """
    try:
        return _sorted_encoder.encode(value).decode("utf-8")
    except _ENCODE_ERRORS:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def same_text(left: Any, right: Any) -> bool:
    """Whether both values encode to the same JSON text (keys in their own order); False if either cannot."""
    try:
        return _encoder.encode(left) == _encoder.encode(right)
    except _ENCODE_ERRORS:
        return False


def copy(value: dict[str, Any] | list[Any]) -> Any:
    """A deep copy of JSON data at C speed: every map and list is new, while strings and numbers,
    which cannot change, are shared. A value JSON cannot hold becomes what msgspec writes for it
    (a date its ISO text, bytes base64 text), as it would reach the API server; ValueError for a
    value it cannot write at all."""
    try:
        return msgspec.to_builtins(value)
    except (TypeError, RecursionError, msgspec.MsgspecError) as error:
        raise ValueError(f"not plain JSON: {error}") from error


def line(value: Any) -> str:
    """Compact JSON in the value's own key order; anything else JSON cannot hold is written as str()."""
    return _line_encoder.encode(value).decode("utf-8")
