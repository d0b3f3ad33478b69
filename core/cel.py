"""CEL expressions of mutation steps: compiled once, evaluated on JSON values, bounded.

The evaluator is Google's C++ implementation of CEL through its Python binding: it computes and
does nothing else (no I/O, no clock, no randomness), so the core may call it. The environment is
the peer's: the standard library and three dynamic variables, `value`, `self` and `other`.

Work is bounded twice. The expression is at most `EXPRESSION_MAX` characters, which bounds what
it can do without comprehensions; the evaluator stops every evaluation after 10,000 iterations of
its comprehensions (`map`, `filter`, `all`, `exists`, nested ones counted together), its built-in
budget, so an expression over a list of any length fails instead of freezing the servlet
(`tests/unit/test_mutation.py` holds the budget to that). A result must be JSON: null, a boolean, a
number, a string, or lists and maps of those with string keys; anything else (bytes, timestamps,
durations, types, NaN) is an error for the object.

Deliberately not here: where the value comes from and where the result goes (`mutation.py`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from typing import Any

from attrs import frozen
from cel_expr_python import cel

from servlet.core.fields import describe

__all__ = ["EXPRESSION_MAX", "CelError", "CelProgram", "compile_expression", "evaluate"]

EXPRESSION_MAX = 4096
VARIABLES = ("value", "self", "other")

_ENVIRONMENT = cel.NewEnv(variables=dict.fromkeys(VARIABLES, cel.Type.DYN))


# The binding's Python types for CEL values that JSON has no form for, as a CEL user names them.
_CEL_KINDS = {
    "bytearray": "bytes",
    "bytes": "bytes",
    "datetime": "a timestamp",
    "timedelta": "a duration",
    "Type": "a type",
}


class CelError(ValueError):
    """Why an expression does not compile, fails, or gives a value that is not JSON."""


@frozen(eq=False)
class CelProgram:
    source: str
    compiled: Any  # the binding's compiled expression (it ships no type hints)


@functools.lru_cache(maxsize=256)
def compile_expression(source: str) -> CelProgram:
    """`source` compiled for the three variables, or CelError with the compiler's message."""
    if len(source) > EXPRESSION_MAX:
        raise CelError(f"is {len(source)} characters long; an expression may have at most {EXPRESSION_MAX}")
    if not source.strip():
        raise CelError("must not be empty")
    try:
        source.encode("utf-8")
    except UnicodeError:
        raise CelError("is not valid Unicode text") from None
    try:
        compiled = _ENVIRONMENT.compile(source)
    except RuntimeError as error:
        raise CelError(_message(error)) from None
    return CelProgram(source=source, compiled=compiled)


def evaluate(program: CelProgram, *, value: Any, self: Mapping[str, Any], other: Mapping[str, Any] | None) -> Any:
    """The expression's result as a JSON value, or CelError saying why there is none."""
    try:
        result = program.compiled.eval(data={"value": value, "self": self, "other": other})
    except (RuntimeError, TypeError, ValueError, OverflowError) as error:
        raise CelError(_message(error)) from None
    if result.type().name() == "ERROR":
        raise CelError(_message(result.value()))
    return _json(result.plain_value(), where="the result")


def _json(value: Any, *, where: str) -> Any:
    """`value` as plain JSON, checked all the way down (the binding returns Python values)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        raise CelError(f"{where} is {value}, which JSON cannot hold")
    if isinstance(value, list):
        return [_json(item, where=f"{where}[{index}]") for index, item in enumerate(value)]
    if isinstance(value, dict):
        converted: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise CelError(f"{where} has the key {describe(key)}; a JSON map has text keys only")
            converted[key] = _json(item, where=f"{where}.{key}")
        return converted
    kind = _CEL_KINDS.get(type(value).__name__, f"a {type(value).__name__} value")
    raise CelError(f"{where} is {kind}, which has no JSON form; convert it with string()")


def _message(error: object) -> str:
    # The binding prefixes the status code and appends it again in brackets; keep the sentence.
    text = str(error).strip()
    for code in ("INVALID_ARGUMENT: ", "INTERNAL: ", "NOT_FOUND: ", "OUT_OF_RANGE: ", "UNKNOWN: "):
        if text.startswith(code):
            text = text[len(code) :]
    for suffix in (" [INVALID_ARGUMENT]", " [INTERNAL]", " [NOT_FOUND]", " [OUT_OF_RANGE]", " [UNKNOWN]"):
        text = text.replace(suffix, "")
    return " ".join(text.replace("ERROR: <input>:", "at ").split())
