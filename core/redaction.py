"""What is secret in an object or a merge patch, and the form in which people may see it.

One notion for every place people read: printed plans (`actions.redacted`), log lines
(`app/observability/logs.py`) and the messages of failed writes (`adapters/executor.py`). A
Secret's values live in its `data` and `stringData`, and again in annotations that copy content:
the last-known-state and kubectl's last-applied-configuration on the Secret itself, and the
related-state annotations on a primary of any kind (they may remember a related Secret's
content; the annotation does not say which kind it remembers, so its `data` is always hidden).

Keys stay visible, so a reader sees what changes; values become `REDACTED`. A null stays null: it
shows a key being removed and reveals nothing. A content-copy annotation stays readable JSON with
its values hidden, or becomes `REDACTED` whole when it cannot be read.

Deliberately not here: deciding what is printed or logged, credentials named by a field (tokens,
passwords in kubeconfigs, which only logs meet: `logs.py`), and anything the executor sends: the
actions keep the real values, only the forms shown to people are redacted.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from typing import Any

from servlet.core import jsontext
from servlet.core.metadata import KUBECTL_LAST_APPLIED, LAST_KNOWN_STATE_ANNOTATION, related_state_annotation
from servlet.core.patch import decode_state

REDACTED = "<redacted>"

SECRET_DATA_FIELDS = ("data", "stringData")
# Annotations on a Secret that hold a copy of its content.
_CONTENT_COPY_ANNOTATIONS = frozenset({LAST_KNOWN_STATE_ANNOTATION, KUBECTL_LAST_APPLIED})
RELATED_STATE_PREFIX = related_state_annotation("")
# Keys a Secret body or patch may have; a kind-less map with only these keys is taken for a Secret
# (list items and merge patches carry no kind). A ConfigMap shaped like that is hidden as well:
# hiding a ConfigMap's data costs little, leaking a Secret's would not.
_SECRET_BODY_KEYS = frozenset({"apiVersion", "metadata", "data", "stringData", "type", "immutable"})
# Shorter values are not cut out of messages: they would garble every word that contains them.
_MIN_SCRUBBED = 4


def looks_like_secret(body: Mapping[str, Any]) -> bool:
    """Whether a map of unknown origin (a log field, a list item, a patch) is a Secret or its patch."""
    kind: object = body.get("kind")
    if kind is not None:
        return kind == "Secret"
    if "stringData" in body:
        return True
    return "data" in body and set(body) <= _SECRET_BODY_KEYS


def copies_secret_content(annotation: str, *, of_secret: bool) -> bool:
    """Whether the annotation `annotation` may hold Secret values (`of_secret`: it sits on a Secret)."""
    return annotation.startswith(RELATED_STATE_PREFIX) or (of_secret and annotation in _CONTENT_COPY_ANNOTATIONS)


def redact_body(body: Mapping[str, Any], *, secret: bool) -> Mapping[str, Any]:
    """An object or merge patch as people may see it; `secret`: it is a Secret (or its patch).

    `body` itself is never changed; it is returned as it is when it holds nothing to hide.
    """
    return _redact_body(body, secret=secret, hidden=[])


def redact_annotations(annotations: Mapping[str, Any], *, of_secret: bool) -> Mapping[str, Any]:
    """An annotation map with the Secret values of its content copies hidden (see the module doc)."""
    return _redact_annotations(annotations, of_secret=of_secret, hidden=[])


def secret_spellings(body: Mapping[str, Any], *, secret: bool) -> tuple[str, ...]:
    """Every spelling in which a message quoting `body` may carry the values `redact_body` hides.

    Each value as sent, its base64-decoded text and both again as quoted in JSON (once, and twice
    for the JSON text of an annotation inside a JSON message); longest first, for `scrub`.
    """
    hidden: list[str] = []
    _redact_body(body, secret=secret, hidden=hidden)
    spellings: set[str] = set()
    for value in hidden:
        for text in (value, _base64_text(value)):
            if text is None:
                continue
            once = _json_quoted(text)
            spellings.update((text, once, _json_quoted(once)))
    return tuple(sorted((text for text in spellings if len(text) >= _MIN_SCRUBBED), key=len, reverse=True))


def scrub(text: str, spellings: Iterable[str]) -> str:
    """`text` with every occurrence of `spellings` (from `secret_spellings`) replaced by `REDACTED`."""
    for spelling in spellings:
        if spelling in text:
            text = text.replace(spelling, REDACTED)
    return text


def _redact_body(body: Mapping[str, Any], *, secret: bool, hidden: list[str]) -> Mapping[str, Any]:
    shown: dict[str, Any] | None = None
    if secret:
        for name in SECRET_DATA_FIELDS:
            if name in body:
                shown = shown if shown is not None else dict(body)
                shown[name] = _redact_values(body[name], hidden)
    metadata = body.get("metadata")
    annotations = metadata.get("annotations") if isinstance(metadata, Mapping) else None
    if isinstance(metadata, Mapping) and isinstance(annotations, Mapping):
        shown_annotations = _redact_annotations(annotations, of_secret=secret, hidden=hidden)
        if shown_annotations is not annotations:
            shown = shown if shown is not None else dict(body)
            shown["metadata"] = {**metadata, "annotations": shown_annotations}
    return body if shown is None else shown


def _redact_annotations(annotations: Mapping[str, Any], *, of_secret: bool, hidden: list[str]) -> Mapping[str, Any]:
    copies = [key for key in annotations if isinstance(key, str) and copies_secret_content(key, of_secret=of_secret)]
    if not copies:
        return annotations
    shown = dict(annotations)
    for key in copies:
        shown[key] = _redact_content_copy(annotations[key], hidden)
    return shown


def _redact_values(values: object, hidden: list[str]) -> object:
    """A `data` map with its keys kept and its values hidden; anything else hidden whole."""
    if values is None:
        return None
    if not isinstance(values, Mapping):
        _remember(values, hidden)
        return REDACTED
    shown: dict[str, object] = {}
    for key, value in values.items():
        _remember(value, hidden)
        shown[key] = None if value is None else REDACTED
    return shown


def _redact_content_copy(text: object, hidden: list[str]) -> object:
    """A content-copy annotation (JSON text of a Secret's content) with the values inside hidden."""
    if text is None:
        return None
    _remember(text, hidden)
    decoded = decode_state(text) if isinstance(text, str) else None
    if decoded is None:
        return REDACTED
    shown = dict(_redact_body(decoded, secret=True, hidden=hidden))
    content = shown.get("content")  # a related state keeps the content one level down
    if isinstance(content, Mapping):
        shown["content"] = _redact_body(content, secret=True, hidden=hidden)
    return jsontext.sorted_text(shown)


def _remember(value: object, hidden: list[str]) -> None:
    if isinstance(value, str):
        hidden.append(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            _remember(item, hidden)
    elif isinstance(value, list):
        for item in value:
            _remember(item, hidden)


def _base64_text(value: str) -> str | None:
    try:
        return base64.b64decode(value, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None


def _json_quoted(text: str) -> str:
    """`text` as it appears between the quotes of a JSON string."""
    return jsontext.line(text)[1:-1]
