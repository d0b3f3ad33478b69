"""Structured logging for the daemon: one JSON object per line, or a readable console line.

Log records carry structured fields (object, workspace, action, published_resource, controller,
...) next to the message, so an operator can filter by them. `get_logger(...)` returns a
`FieldLogger` that takes those fields as keyword arguments; plain stdlib loggers with `extra=`
work too.

Secret data is never logged: every field value (and every %-argument of a message) goes through
`redact` before it is rendered. Redaction can only see structured values, so objects must be
passed as fields, never formatted into the message text by the caller.

Deliberately not here: deciding what to log (controllers do) and log shipping (stdout/stderr only).
"""

from __future__ import annotations

import enum
import functools
import json
import logging
import re
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

import attrs

from servlet.core import jsontext, redaction
from servlet.core.redaction import REDACTED as REDACTED

_MAX_DEPTH = 32
# Attribute on the LogRecord holding a FieldLogger's fields: passing them one by one as `extra`
# would crash logging for a field called `name`, `msg` or `filename`.
_FIELDS_ATTRIBUTE = "servlet_fields"
# Marks the handler `configure_logging` installed, so configuring again replaces only that one.
_HANDLER_MARK = "servlet_handler"
# A record's own attributes; everything else on a record came in through `extra=`.
_RECORD_ATTRIBUTES = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
    _FIELDS_ATTRIBUTE,
}
_RESERVED_KEYS = ("time", "level", "logger", "message", "exception", "stack")

# Field names whose values are credentials, compared without case, '-', '_' and '.'.
_SENSITIVE_NAME = re.compile(
    r"token|passw|passphrase|credential|apikey|privatekey|clientkey|keydata|secretkey|accesskey"
    r"|authorization|cookie",
)


class LogFormat(enum.Enum):
    JSON = "json"
    CONSOLE = "console"


@functools.lru_cache(maxsize=1024)  # field names repeat on every line
def _is_sensitive_name(name: str) -> bool:
    return _SENSITIVE_NAME.search(re.sub(r"[-_.\s]", "", name.lower())) is not None


def redact(value: object) -> object:
    """`value` as plain JSON-like data with Secret data and credentials replaced by `REDACTED`.

    Secret-shaped maps keep the keys but lose the values of `data`, `stringData` and their
    content-copy annotations, exactly as printed plans do (`servlet.core.redaction`); any map entry
    whose key names a credential (token, password, client key, ...) loses its value. Models with
    `to_dict()` (lightkube) and attrs values are converted first, so their repr cannot leak.
    """
    return _redact(value, depth=0)


_PLAIN_TYPES = frozenset({str, int, float, bool, type(None)})


def _redact(value: object, *, depth: int) -> object:
    if type(value) in _PLAIN_TYPES:  # most values of most lines: decided without further checks
        return value
    if depth > _MAX_DEPTH:
        return "<nested too deep>"
    if isinstance(value, enum.Enum):
        return _redact(value.value, depth=depth + 1)
    if isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (bytes, bytearray)):
        return f"<{len(value)} bytes>"
    to_dict = getattr(value, "to_dict", None)
    if callable(to_dict):
        return _redact(to_dict(), depth=depth + 1)
    if attrs.has(type(value)):
        return _redact(attrs.asdict(value, recurse=False), depth=depth + 1)  # type: ignore[arg-type]
    if isinstance(value, Mapping):
        return _redact_mapping(value, depth=depth)
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_redact(item, depth=depth + 1) for item in value]
    return str(value)


def _redact_mapping(value: Mapping[Any, Any], *, depth: int) -> dict[str, object]:
    # What a Secret-shaped map hides is decided in the core, as for printed plans; a bare
    # annotation map (a field called `annotations`) still hides its related-state copies.
    shown = redaction.redact_body(value, secret=redaction.looks_like_secret(value))
    result: dict[str, object] = {}
    for raw_key, item in shown.items():
        key = str(raw_key)
        if _is_sensitive_name(key):
            result[key] = REDACTED
        elif key == "annotations" and isinstance(item, Mapping):
            result[key] = _redact_mapping(redaction.redact_annotations(item, of_secret=False), depth=depth + 1)
        else:
            result[key] = _redact(item, depth=depth + 1)
    return result


class FieldLogger:
    """A stdlib logger that takes structured fields as keyword arguments.

    `bind(...)` returns a logger that adds the given fields to every record, for example a
    controller binding `controller=` and `published_resource=` once per worker.
    """

    def __init__(self, logger: logging.Logger, fields: Mapping[str, object] | None = None) -> None:
        self.logger = logger
        self.fields: Mapping[str, object] = dict(fields or {})

    def bind(self, **fields: object) -> FieldLogger:
        return FieldLogger(self.logger, {**self.fields, **fields})

    def debug(self, message: str, /, **fields: object) -> None:
        self._log(logging.DEBUG, message, fields)

    def info(self, message: str, /, **fields: object) -> None:
        self._log(logging.INFO, message, fields)

    def warning(self, message: str, /, **fields: object) -> None:
        self._log(logging.WARNING, message, fields)

    def error(self, message: str, /, **fields: object) -> None:
        self._log(logging.ERROR, message, fields)

    def exception(self, message: str, /, **fields: object) -> None:
        """An error with the current exception's traceback; call it from an `except` block."""
        self._log(logging.ERROR, message, fields, exc_info=True)

    def _log(self, level: int, message: str, fields: Mapping[str, object], *, exc_info: bool = False) -> None:
        if self.logger.isEnabledFor(level):
            # stacklevel 3: the record points at our caller, not at this method or its wrapper.
            self.logger.log(
                level, message, exc_info=exc_info, stacklevel=3, extra={_FIELDS_ATTRIBUTE: {**self.fields, **fields}}
            )


def get_logger(name: str, **fields: object) -> FieldLogger:
    """A FieldLogger for `servlet.<name>` (or `name` when it already starts with `servlet`)."""
    qualified = name if name == "servlet" or name.startswith("servlet.") else f"servlet.{name}"
    return FieldLogger(logging.getLogger(qualified), fields)


def record_fields(record: logging.LogRecord) -> dict[str, object]:
    """A record's structured fields, redacted: FieldLogger fields plus anything from `extra=`."""
    fields: dict[str, object] = {key: value for key, value in record.__dict__.items() if key not in _RECORD_ATTRIBUTES}
    bound = getattr(record, _FIELDS_ATTRIBUTE, None)
    if isinstance(bound, Mapping):
        fields.update(bound)
    redacted = redact(fields)
    assert isinstance(redacted, dict)
    return redacted


def record_message(record: logging.LogRecord) -> str:
    """The message with its %-arguments redacted before they are formatted in."""
    message = str(record.msg)
    if not record.args:
        return message
    args = record.args
    safe: object = redact(args) if isinstance(args, Mapping) else tuple(redact(arg) for arg in args)
    try:
        return message % safe
    except (TypeError, ValueError, KeyError):
        # The redacted values no longer fit the format (e.g. %d for a converted object).
        return f"{message} {json.dumps(safe, ensure_ascii=False, default=str)}"


@functools.lru_cache(maxsize=4)  # lines come many to a second: format each second once
def _second(seconds: int) -> str:
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _timestamp(record: logging.LogRecord) -> str:
    seconds = int(record.created)
    return f"{_second(seconds)}.{int((record.created - seconds) * 1000):03d}Z"


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, then the structured fields."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, object] = {
            "time": _timestamp(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record_message(record),
        }
        for key, value in record_fields(record).items():
            payload[f"field_{key}" if key in _RESERVED_KEYS else key] = value
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        if record.stack_info:
            payload["stack"] = self.formatStack(record.stack_info)
        return jsontext.line(payload)


_BARE_VALUE = re.compile(r"[^\s\"'=\\]+")


def _console_value(value: object) -> str:
    if isinstance(value, str) and _BARE_VALUE.fullmatch(value):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


class ConsoleFormatter(logging.Formatter):
    """`<time> <LEVEL> <logger>: <message> key=value ...`, tracebacks on the following lines."""

    def format(self, record: logging.LogRecord) -> str:
        parts = [_timestamp(record), f"{record.levelname:<7}", f"{record.name}:", record_message(record)]
        parts += [f"{key}={_console_value(value)}" for key, value in record_fields(record).items()]
        line = " ".join(parts)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


def configure_logging(
    *,
    log_format: LogFormat,
    level: int | str = logging.INFO,
    stream: TextIO | None = None,
) -> logging.Handler:
    """Send all logging to `stream` (default stderr) in `log_format`; returns the handler.

    Calling it again replaces the handler installed before instead of adding a second one.
    Handlers installed by others (a test harness, say) are left alone.
    """
    root = logging.getLogger()
    for handler in list(root.handlers):
        if getattr(handler, _HANDLER_MARK, False):
            root.removeHandler(handler)
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    setattr(handler, _HANDLER_MARK, True)
    handler.setFormatter(JsonFormatter() if log_format is LogFormat.JSON else ConsoleFormatter())
    root.addHandler(handler)
    root.setLevel(level)
    # The HTTP client logs every request at INFO; the servlet's own API metrics already count them.
    for noisy in ("httpx2", "httpcore2", "httpx", "httpcore"):
        logging.getLogger(noisy).setLevel(max(root.level, logging.WARNING))
    return handler
