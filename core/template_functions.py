"""The functions naming templates may call, computing what the peer's functions compute.

The peer (kcp-dev/api-syncagent, `internal/sync/templating/templating.go`) registers the sprig
v3 text functions plus `sha3sum`, `sha3short` and `shortHash`. Here are those a name needs:

| function | computes |
|---|---|
| `sha3sum S` | SHA3-256 of S (UTF-8), 64 lowercase hex characters |
| `sha3short S [N]` | the first N (default 20, at most 64) characters of `sha3sum S`; N <= 0 is an error |
| `shortHash V` | the first 20 hex characters of SHA-1: of S for a string, else of V's JSON and a newline |
| `sha256sum S` | SHA-256 of S, 64 lowercase hex characters (sprig) |
| `lower S`, `upper S`, `trim S` | case mapping; white space trimmed at both ends |
| `trunc N S` | the first N bytes of S; for N < 0 the last -N (sprig) |
| `replace OLD NEW S` | every OLD in S replaced by NEW (sprig's argument order) |
| `default D V` | V, or D when V is empty: missing, null, "", 0, false, an empty list or map (sprig) |
| `printf F V...` | F with `%s`, `%d`, `%v` filled in, `%%` for a percent sign |

A pipeline hands its value to the next function as the *last* argument, so `.X | trunc 5` is
`trunc 5 .X`. Where Go would fail on a value of the wrong type (`lower` of a number, `sha3sum` of a
missing field), evaluation fails too.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence

from attrs import frozen

STR, INT, ANY = "string", "number", "any"
VALUE_MAX = 4096  # longest value a function may produce: a bound on work, far above any name
SHA3_DEFAULT_LENGTH = 20
SHORT_HASH_LENGTH = 20
# Go's unicode.IsSpace, which strings.TrimSpace uses (Python's str.strip() also drops \x1c-\x1f).
GO_SPACE = (
    " \t\n\v\f\r\x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
_PRINTF_VERB_RE = re.compile(r"%(.|$)", re.DOTALL)
_PRINTF_VERBS = frozenset("sdv")


class TemplateError(ValueError):
    """A template refused when parsed, or an action that failed for one object."""


class _Missing:
    """The value of a field the object lacks (Go prints it as "<no value>")."""

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing()


@frozen
class Function:
    params: tuple[str, ...]
    variadic: str | None
    at_most: int | None
    implementation: Callable[..., object]

    def call(self, values: Sequence[object]) -> object:
        converted = [_converted(value, self._kind(index), index=index) for index, value in enumerate(values)]
        return self.implementation(*converted)

    def _kind(self, index: int) -> str:
        kind = self.params[index] if index < len(self.params) else self.variadic
        assert kind is not None  # the parser checked the arity
        return kind


def _converted(value: object, kind: str, *, index: int) -> object:
    if kind == ANY:
        return None if value is MISSING else value  # Go hands a missing value over as nil
    wanted = str if kind == STR else int
    if not isinstance(value, wanted) or isinstance(value, bool):
        raise TemplateError(f"argument {index + 1} must be a {kind}, not {describe_value(value)}")
    return value


class Printed(dict[str, object]):
    """A value with fields that also prints as text, as a Go value with a String method does."""

    def __init__(self, fields: Mapping[str, object], *, text: str) -> None:
        super().__init__(fields)
        self.text = text


def describe_value(value: object) -> str:
    if isinstance(value, Printed):
        return f"a value with the fields {', '.join(sorted(value))} (pick one, such as .String)"
    if value is MISSING:
        return "a missing field"
    if value is None:
        return "null"
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def bounded(name: str, value: object) -> object:
    if isinstance(value, str) and len(value) > VALUE_MAX:
        raise TemplateError(f"{name} produced more than {VALUE_MAX} characters")
    return value


def sha3sum(text: str) -> str:
    return hashlib.sha3_256(text.encode("utf-8")).hexdigest()


def sha3short(text: str, *lengths: int) -> str:
    length = lengths[0] if lengths else SHA3_DEFAULT_LENGTH
    if length <= 0:
        raise TemplateError(f"sha3short: invalid length {length}")
    return sha3sum(text)[:length]


def short_hash(value: object) -> str:
    """The peer's `crypto.ShortHash`: SHA-1 of a string's bytes, else of Go's JSON and a newline."""
    if isinstance(value, str):
        data = value
    elif value is None or isinstance(value, (bool, int)):
        # json.Encoder.Encode writes the value and "\n"; only scalars whose JSON is the same in Go
        # and Python are accepted (floats, maps and lists are not).
        data = _JSON_SCALARS.get(value, str(value)) + "\n" if value is None or isinstance(value, bool) else f"{value}\n"
    else:
        raise TemplateError(f"shortHash of {describe_value(value)} is not supported")
    return hashlib.sha1(data.encode("utf-8")).hexdigest()[:SHORT_HASH_LENGTH]


_JSON_SCALARS = {None: "null", True: "true", False: "false"}


def sha256sum(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def trunc(count: int, text: str) -> str:
    # sprig slices Go's bytes; names are ASCII, and a cut inside a character is replaced.
    data = text.encode("utf-8")
    if count < 0 and len(data) + count > 0:
        data = data[len(data) + count :]
    elif 0 <= count < len(data):
        data = data[:count]
    return data.decode("utf-8", errors="replace")


def replace(old: str, new: str, text: str) -> str:
    matches = len(text) + 1 if old == "" else text.count(old)
    if len(text) + matches * (len(new) - len(old)) > VALUE_MAX:
        raise TemplateError(f"replace would produce more than {VALUE_MAX} characters")
    return text.replace(old, new)


def default(fallback: object, *given: object) -> object:
    return fallback if not given or _empty(given[0]) else given[0]


def _empty(value: object) -> bool:
    if value is None:
        return True
    if isinstance(value, (str, Mapping, list, tuple)):
        return len(value) == 0
    if isinstance(value, (bool, int, float)):
        return not value
    return False


def printf_verbs(form: str) -> list[str]:
    """The verbs of a printf format that take a value; TemplateError for what is not supported."""
    verbs = []
    for match in _PRINTF_VERB_RE.finditer(form):
        verb = match.group(1)
        if verb == "%":
            continue
        if verb not in _PRINTF_VERBS:
            shown = f"%{verb}" if verb else "a lone % at the end"
            raise TemplateError(f"printf supports %s, %d, %v and %%, not {shown}")
        verbs.append(verb)
    return verbs


def printf(form: str, *values: object) -> str:
    queue = list(values)

    def fill(match: re.Match[str]) -> str:
        verb = match.group(1)
        if verb == "%":
            return "%"
        value = queue.pop(0)
        if verb == "d" and (not isinstance(value, int) or isinstance(value, bool)):
            raise TemplateError(f"printf %d needs a number, not {describe_value(value)}")
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, (str, int)):
            return str(value)
        raise TemplateError(f"printf cannot format {describe_value(value)}")

    return _PRINTF_VERB_RE.sub(fill, form)


FUNCTIONS: Mapping[str, Function] = {
    "sha3sum": Function((STR,), None, None, sha3sum),
    # Go's sha3short takes `lengths ...int` and fails on more than one.
    "sha3short": Function((STR,), INT, 2, sha3short),
    "shortHash": Function((ANY,), None, None, short_hash),
    "sha256sum": Function((STR,), None, None, sha256sum),
    "lower": Function((STR,), None, None, str.lower),
    "upper": Function((STR,), None, None, str.upper),
    "trim": Function((STR,), None, None, lambda text: text.strip(GO_SPACE)),
    "trunc": Function((INT, STR), None, None, trunc),
    "replace": Function((STR, STR, STR), None, None, replace),
    "default": Function((ANY,), ANY, None, default),
    "printf": Function((STR,), ANY, None, printf),
}
