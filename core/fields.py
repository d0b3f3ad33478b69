"""Reading typed fields out of untrusted manifest data, reporting every problem instead of raising.

Shared by `parsing.py` and `filtering.py`, which read the parts of a PublishedResource. Each
reader takes the parent map and its path, appends Problems to the caller's list and returns the
value or None. A field set to null counts as absent, as it does for the API server.

Deliberately not here: what the fields mean or which values are allowed beyond their type.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from servlet.core.model import Problem

E = TypeVar("E", bound=enum.Enum)

_SHOWN_MAX = 80


def describe(value: Any) -> str:
    """A bad value as a message shows it: strings quoted, containers by their kind."""
    if isinstance(value, str):
        shown = value if len(value) <= _SHOWN_MAX else value[: _SHOWN_MAX - 3] + "..."
        return f'"{shown}"'
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Mapping):
        return "a map"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def as_mapping(data: object, *, path: str, problems: list[Problem]) -> Mapping[str, Any] | None:
    if isinstance(data, Mapping):
        return data
    problems.append(Problem(field=path, message=f"must be a map, not {describe(data)}"))
    return None


def report_unknown(data: Mapping[Any, Any], *, path: str, known: Iterable[str], problems: list[Problem]) -> None:
    """A typo such as `namming` must not be silently ignored."""
    allowed = tuple(known)
    problems.extend(
        Problem(field=f"{path}.{key}", message=f"unknown field (known fields: {', '.join(allowed)})")
        for key in data
        if key not in allowed
    )


def one_form(data: Mapping[str, Any], forms: tuple[str, ...], *, path: str, problems: list[Problem]) -> str | None:
    """The one of `forms` that `data` sets; none or several is a problem naming the forms set."""
    given = [form for form in forms if data.get(form) is not None]
    if len(given) == 1:
        return given[0]
    choices = f"{', '.join(forms[:-1])} and {forms[-1]}"
    found = f" (found: {', '.join(given)})" if given else ""
    problems.append(Problem(field=path, message=f"set exactly one of {choices}{found}"))
    return None


def read_string(
    data: Mapping[str, Any],
    key: str,
    *,
    path: str,
    problems: list[Problem],
    required: bool = False,
) -> str | None:
    """A non-empty string at `path.key`; None when absent (a problem if required) or bad."""
    value = data.get(key)
    field = f"{path}.{key}"
    if value is None:
        if required:
            problems.append(Problem(field=field, message="is required"))
        return None
    if not isinstance(value, str):
        problems.append(Problem(field=field, message=f"must be a string, not {describe(value)}"))
        return None
    if not value:
        problems.append(Problem(field=field, message="must not be empty"))
        return None
    return value


def read_string_list(
    data: Mapping[str, Any],
    key: str,
    *,
    path: str,
    problems: list[Problem],
) -> tuple[str, ...] | None:
    """A list of strings at `path.key`; None when absent or bad, `()` for an explicit `[]`."""
    value = data.get(key)
    field = f"{path}.{key}"
    if value is None:
        return None
    if not isinstance(value, list):
        problems.append(Problem(field=field, message=f"must be a list of strings, not {describe(value)}"))
        return None
    bad = [
        Problem(field=f"{field}[{index}]", message=f"must be a string, not {describe(item)}")
        for index, item in enumerate(value)
        if not isinstance(item, str)
    ]
    problems.extend(bad)
    return None if bad else tuple(value)


def read_enum(
    data: Mapping[str, Any],
    key: str,
    choices: type[E],
    *,
    path: str,
    problems: list[Problem],
    required: bool = False,
) -> E | None:
    """One of the enum's values at `path.key`, spelled exactly as the API spells it."""
    value = data.get(key)
    field = f"{path}.{key}"
    if value is None:
        if required:
            problems.append(Problem(field=field, message=f"is required: {_spelled(choices)}"))
        return None
    for choice in choices:
        if value == choice.value and isinstance(value, str):
            return choice
    problems.append(Problem(field=field, message=f"must be {_spelled(choices)}, not {describe(value)}"))
    return None


def _spelled(choices: type[enum.Enum]) -> str:
    names = [str(choice.value) for choice in choices]
    return " or ".join(names) if len(names) <= 2 else ", ".join(names[:-1]) + " or " + names[-1]


_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1035_MAX = 63


def is_dns1035(value: str) -> bool:
    """A DNS-1035 label: what Kubernetes requires of resource and version names."""
    return len(value) <= _DNS1035_MAX and _DNS1035.fullmatch(value) is not None


def check_dns1035(value: str, *, field: str, problems: list[Problem]) -> None:
    if not is_dns1035(value):
        problems.append(
            Problem(
                field=field,
                message=f"must be a lower-case DNS-1035 label (letters, digits and '-', starting with a letter, "
                f"at most 63 characters), not {describe(value)}",
            )
        )
