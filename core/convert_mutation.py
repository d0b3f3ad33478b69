"""Converting the peer's mutations (`spec.mutation`, `spec.related[].mutation`) into the servlet's.

Called from `convert.py` and `convert_related.py`, with their conventions: every step is carried
over, or named in a note with the reason. The steps have the same shape in both (`delete`,
`regex`, `template`, `cel`, each with a `path`); a regex replacement is respelled, since the
peer expands it as Go does (`$1`) and the servlet writes groups `\\1`. A step that cannot be
carried drops its whole list: the steps after it would see another object than they were
written for.

Deliberately not here: checking the steps (our parser does, in `convert_checked.py`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from servlet.core.convert_notes import Notes
from servlet.core.fields import describe

_FIELDS = {
    "delete": ("path",),
    "regex": ("path", "pattern", "replacement"),
    "template": ("path", "template"),
    "cel": ("path", "expression"),
}
# gjson's modifiers, wildcards and queries; the servlet's paths are keys, numbers and `\.` only.
_GJSON_ONLY = re.compile(r"[#|@*?]")
# `\1` as the servlet reads a converted replacement: Go's literal backslash, doubled.
_LITERAL_GROUP = re.compile(r"\\\\[0-9]")


def convert_mutation(mutation: object, *, path: str, notes: Notes, status_dropped: str = "") -> dict[str, Any] | None:
    """The steps the servlet can run, by direction; None when none is left.

    `status_dropped`: why status steps are not carried over (related entries), "" to carry them.
    """
    if mutation is None:
        return None
    if not isinstance(mutation, Mapping):
        notes.add(path, f"must be a map, not {describe(mutation)}; dropped")
        return None
    carried: dict[str, Any] = {}
    for direction, steps in mutation.items():
        where = f"{path}.{direction}"
        if direction not in ("spec", "status"):
            notes.add(where, "unknown field; dropped")
        elif direction == "status" and status_dropped and steps:
            notes.add(where, status_dropped)
        elif (converted := _steps(steps, path=where, notes=notes)) is not None:
            carried[direction] = converted
    return carried or None


def _steps(steps: object, *, path: str, notes: Notes) -> list[dict[str, Any]] | None:
    if not isinstance(steps, list):
        notes.add(path, f"must be a list of steps, not {describe(steps)}; dropped")
        return None
    converted: list[dict[str, Any]] = []
    for index, step in enumerate(steps):
        result, why_not = _step(step)
        replacement = result.get("regex", {}).get("replacement") if why_not is None else None
        if isinstance(replacement, str) and _LITERAL_GROUP.search(replacement):
            notes.add(
                f"{path}[{index}].regex.replacement",
                "the api-syncagent expands it as Go does, where \\1 is literal text ($1 is the group); carried over "
                "as that literal text. Write \\1 for the group in the servlet",
            )
        if why_not is not None:
            notes.add(
                f"{path}[{index}]",
                f"{why_not}; every step of {path} is dropped, since the steps after it would see another object",
            )
            return None
        converted.append(result)
    return converted or None


def _step(step: object) -> tuple[dict[str, Any], str | None]:
    if not isinstance(step, Mapping) or len(step) != 1:
        return {}, "a step holds exactly one of delete, regex, template and cel"
    ((kind, body),) = step.items()
    if kind not in _FIELDS:
        return {}, f"{describe(kind)} is not a kind of step the servlet knows"
    if not isinstance(body, Mapping):
        return {}, f"{kind} must be a map, not {describe(body)}"
    unknown = sorted(str(key) for key in body if key not in _FIELDS[kind])
    if unknown:
        return {}, f"{kind} has fields the servlet does not know: {', '.join(unknown)}"
    value_path = body.get("path")
    if isinstance(value_path, str) and _GJSON_ONLY.search(value_path):
        return {}, f"path {describe(value_path)}: gjson modifiers, wildcards and queries are not supported"
    converted = dict(body)
    replacement = body.get("replacement")
    if kind == "regex" and body.get("pattern") and isinstance(replacement, str):
        converted["replacement"] = servlet_replacement(replacement)
    return {str(kind): converted}, None


# Go's template variables: `$$`, `${name}`, `$name` (letters, digits and `_`; `$1x` is the name `1x`).
_GO_VARIABLE = re.compile(r"\$(?:(?P<dollar>\$)|\{(?P<braced>[A-Za-z0-9_]+)\}|(?P<bare>[A-Za-z0-9_]+))")


def servlet_replacement(go: str) -> str:
    """A replacement Go's `ReplaceAllString` expands, spelled for the servlet: the same output.

    `$1`, `${1}`, `$name` become `\\g<1>`, `\\g<name>`; `$$` is a `$`; a backslash, literal in Go,
    is doubled. A `$` Go cannot read as a variable is literal in both."""
    pieces: list[str] = []
    end = 0
    for match in _GO_VARIABLE.finditer(go):
        pieces.append(go[end : match.start()].replace("\\", "\\\\"))
        end = match.end()
        name = match["braced"] or match["bare"]
        pieces.append("$" if match["dollar"] else f"\\g<{name}>")
    pieces.append(go[end:].replace("\\", "\\\\"))
    return "".join(pieces)
