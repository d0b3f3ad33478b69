"""Regex rules that rewrite a value read from a user's object, in time linear in the value.

A related reference's regex (SPEC 8) is written by the service owner but runs on values the
tenant writes, so it runs on RE2, the engine behind Go's regexp that the Go original uses. RE2
never backtracks: no pattern takes more than linear time on any value (Python's `re` needs
2^n steps for `^(a+)+$` on n a's and a "!", and froze the whole servlet for seconds). In
exchange RE2 rejects what only backtracking can do: backreferences, lookarounds, `\\Z`.

Replacements keep the spelling the project documents: `\\1` to `\\99`, `\\g<1>`, `\\g<name>`
(`\\g<0>` is the whole match) and `\\\\` for a backslash. They are parsed here, once per rule,
rather than by the RE2 binding's own expansion, which garbles non-ASCII text.

Deliberately not here: finding the value (`related.py`) or reading the manifest (`parsing.py`).
Both go through `compile_rule`, so a rule that passes validation is exactly the rule that runs.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

import re2
from attrs import frozen

from servlet.core.fields import describe
from servlet.core.model import Problem, RegexRule

# A reference names a Secret, ConfigMap or namespace (at most 253 characters); four times that
# leaves room for values a regex cuts down. RE2 is linear in the value, but the binding spends
# a few microseconds of Python per match, so the length bounds the time of one rewrite too.
MAX_VALUE_LENGTH = 1024

_OPTIONS = re2.Options()
# A rejected pattern is reported as a Problem; RE2 would also print it to stderr.
_OPTIONS.log_errors = False

_GO_STYLE_GROUP = re.compile(r"\$\{?\d")
# Every backslash in a replacement starts one of these; `other` is an escape we do not accept.
_ESCAPE = re.compile(r"\\(?:g<(?P<name>[^>]*)>|(?P<number>[1-9][0-9]?)|(?P<backslash>\\)|(?P<other>.|$))", re.DOTALL)

Template = tuple[str | int, ...]


@frozen
class CompiledRule:
    """A rule ready to run: the RE2 pattern and the replacement as literal text and group numbers."""

    regex: Any  # the binding's compiled pattern (it ships no type hints)
    template: Template


def compile_rule(rule: RegexRule, *, field: str) -> CompiledRule | Problem:
    """`rule` compiled with RE2, or a Problem under `field.pattern` or `field.replacement`."""
    compiled = _compile(rule.pattern, rule.replacement)
    if isinstance(compiled, CompiledRule):
        return compiled
    key, message = compiled
    return Problem(field=f"{field}.{key}", message=message)


def rewrite(rule: RegexRule, value: str, *, field: str) -> str | Problem:
    """`value` with every match of the rule's pattern replaced, as Go's `ReplaceAllString` does.

    One difference, kept from Python's `re.sub`: an empty match right after a match counts too.

    A Problem under `field` when the rule cannot run or the value is longer than
    `MAX_VALUE_LENGTH`: a name that long is not what a reference is for.
    """
    compiled = compile_rule(rule, field=field)
    if isinstance(compiled, Problem):
        return compiled
    if len(value) > MAX_VALUE_LENGTH:
        return Problem(
            field=field,
            message=(
                f"the value found is {len(value)} characters long, {describe(value)}; "
                f"a regex rewrites values of at most {MAX_VALUE_LENGTH} characters"
            ),
        )
    try:
        return _rewrite(compiled, value)
    except UnicodeError:
        # A lone surrogate has no UTF-8 form, which RE2 works on; no API server sends one.
        return Problem(field=field, message=f"the value found, {describe(value)}, is not valid Unicode text")


def replace_all(compiled: CompiledRule, value: str) -> str:
    """`value` with every match of a compiled rule replaced, whatever its length (RE2 is linear);
    UnicodeError for text without a UTF-8 form."""
    return _rewrite(compiled, value)


@functools.lru_cache(maxsize=1024)  # one reconcile resolves each reference several times
def _rewrite(compiled: CompiledRule, value: str) -> str:
    pieces: list[str] = []
    end = 0
    for match in compiled.regex.finditer(value):
        pieces.append(value[end : match.start()])
        pieces.extend(piece if isinstance(piece, str) else match.group(piece) or "" for piece in compiled.template)
        end = match.end()
    pieces.append(value[end:])
    return "".join(pieces)


@functools.lru_cache(maxsize=256)
def _compile(pattern: str, replacement: str) -> CompiledRule | tuple[str, str]:
    """The compiled rule, or the key of the bad field and what is wrong with it."""
    try:
        regex = re2.compile(pattern, _OPTIONS)
    except (re2.error, UnicodeError) as error:
        return "pattern", f"{describe(pattern)} is not a valid RE2 regular expression: {_reason(error)}"
    if _GO_STYLE_GROUP.search(replacement):
        return "replacement", f"{describe(replacement)} refers to a group as $1; write \\1 instead"
    template = parse_replacement(replacement, groups=regex.groups, names=regex.groupindex)
    if isinstance(template, str):
        return "replacement", (
            f"{describe(replacement)} is not a valid replacement for pattern {describe(pattern)}: {template}"
        )
    return CompiledRule(regex=regex, template=template)


def parse_replacement(replacement: str, *, groups: int, names: Mapping[str, int]) -> Template | str:
    """`replacement` as literal text and group numbers, or why it is not valid.

    `groups` is the pattern's number of groups and `names` its named groups' numbers.
    """
    pieces: list[str | int] = []
    end = 0
    for escape in _ESCAPE.finditer(replacement):
        pieces.append(replacement[end : escape.start()])
        end = escape.end()
        if escape["backslash"] is not None:
            pieces.append("\\")
            continue
        if escape["other"] is not None:
            shown = f"\\{escape['other']}" if escape["other"] else "a lone \\ at the end"
            return f"{shown} at position {escape.start()} is not a group reference; write \\\\ for a backslash"
        reference = escape["number"] or escape["name"]
        group = int(reference) if reference.isdecimal() and reference.isascii() else names.get(reference)
        if group is None:
            return f"unknown group name {reference!r} at position {escape.start()}"
        if group > groups:
            return f"invalid group reference {group} at position {escape.start()}"
        pieces.append(group)
    pieces.append(replacement[end:])
    return _joined(pieces)


def _joined(pieces: list[str | int]) -> Template:
    """Adjacent literal text merged, empty text dropped: fewer pieces to join per match."""
    merged: list[str | int] = []
    for piece in pieces:
        if isinstance(piece, str) and merged and isinstance(merged[-1], str):
            merged[-1] += piece
        elif piece != "":
            merged.append(piece)
    return tuple(merged)


def _reason(error: Exception) -> str:
    # The binding's errors carry RE2's message as bytes.
    reason = error.args[0] if error.args else error
    return reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)
