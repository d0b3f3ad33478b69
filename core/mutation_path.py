"""The paths of mutation steps: `spec.containers.0.image`, read, set and deleted on JSON values.

The syntax is the part of the peer's path language that names one value: keys separated by
dots, a backslash making the next character literal (`metadata.annotations.example\\.com/team`),
and a whole number indexing a list. Wildcards, queries, modifiers and pipes select several
values or compute one, which a step cannot write back, so they are refused when the
PublishedResource is validated, as are JSONPath brackets (`containers[0]`), with the dotted
spelling to use instead.

Setting creates missing maps on the way, like the peer; it never turns a value of another type
into a map, and a list index may append (the list's length) but not leave a gap: those are errors
for the object. Every change copies only the maps and lists on the path (the rest is shared
with the input, which is never changed), so a step costs the depth of its path, not the size of
the object.

Deliberately not here: what a step computes (`mutation.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from servlet.core.fields import describe
from servlet.core.template_functions import MISSING

__all__ = ["MISSING", "Path", "delete_value", "parse_path", "read_value", "set_value"]

Path = tuple[str, ...]

# Characters with a meaning of their own in the peer's path language (several values, queries,
# modifiers, multipaths), refused unless escaped.
_SPECIAL = frozenset("*?#|[]{}")


class PathError(ValueError):
    """Why a path is not valid, or why a value cannot be set at a valid one."""


@functools.lru_cache(maxsize=512)
def parse_path(text: str) -> Path:
    """`text` split into its keys, or PathError saying what is wrong where."""
    if not text:
        raise PathError("must name a field, such as spec.secretName")
    keys: list[str] = []
    current: list[str] = []
    escaped = False
    for position, character in enumerate(text):
        if escaped:
            current.append(character)
            escaped = False
        elif character == "\\":
            escaped = True
        elif character == ".":
            keys.append(_key(current, text=text, position=position))
            current = []
        elif character in _SPECIAL or (character == "@" and not current):
            raise PathError(_special_message(text, character, position))
        else:
            current.append(character)
    if escaped:
        raise PathError(f"{describe(text)} ends in a lone \\; write \\\\ for a backslash")
    keys.append(_key(current, text=text, position=len(text)))
    return tuple(keys)


def _key(characters: list[str], *, text: str, position: int) -> str:
    if not characters:
        raise PathError(f"{describe(text)} has an empty key at position {position}; keys are separated by one dot")
    return "".join(characters)


def _special_message(text: str, character: str, position: int) -> str:
    if character in "[]":
        return (
            f"{describe(text)} has {character!r} at position {position}: list items are numbered with dots "
            "(spec.containers.0.image); write \\[ for a literal bracket"
        )
    return (
        f"{describe(text)} has {character!r} at position {position}, which selects or computes values in the "
        f"peer's path language; a step writes one value, so write \\{character} for a literal {character!r}"
    )


def _is_map(value: Any) -> bool:
    # Objects are plain dicts; the ABC check is kept for other mappings, at ten times the cost.
    return type(value) is dict or isinstance(value, Mapping)


def _index(key: str) -> int | None:
    return int(key) if key.isascii() and key.isdecimal() else None


def read_value(obj: Any, path: Path) -> Any:
    """The value at `path`, or MISSING when a key, an index or a container on the way is absent."""
    value = obj
    for key in path:
        if _is_map(value):
            value = value.get(key, MISSING)
        elif isinstance(value, list) and (index := _index(key)) is not None and index < len(value):
            value = value[index]
        else:
            return MISSING
    return value


def set_value(obj: Mapping[str, Any], path: Path, value: Any) -> dict[str, Any]:
    """A copy of `obj` with `value` at `path`; PathError when a value on the way is not a container."""
    return _set(obj, path, value, depth=0)  # type: ignore[no-any-return]


def _set(container: Any, path: Path, value: Any, *, depth: int) -> Any:
    key = path[depth]
    last = depth == len(path) - 1
    if _is_map(container):
        copied = dict(container)
        copied[key] = value if last else _set(container.get(key, MISSING), path, value, depth=depth + 1)
        return copied
    if isinstance(container, list):
        index = _index(key)
        where = _where(path, depth)
        if index is None:
            raise PathError(f"{where} is a list, which has no key {describe(key)}")
        if index > len(container):
            raise PathError(f"{where} has {len(container)} items; an index may append ({len(container)}) but not skip")
        items = list(container)
        inner = items[index] if index < len(items) else MISSING
        changed = value if last else _set(inner, path, value, depth=depth + 1)
        if index == len(items):
            items.append(changed)
        else:
            items[index] = changed
        return items
    if container is MISSING or container is None:  # a null on the way reads as absent, as in the peer
        return {key: value if last else _set(MISSING, path, value, depth=depth + 1)}
    raise PathError(
        f"{_where(path, depth)} is {describe(container)}, not a map or a list, so it has no {describe(key)}"
    )


def delete_value(obj: Mapping[str, Any], path: Path) -> Mapping[str, Any]:
    """A copy of `obj` without the value at `path`; `obj` itself when there is none."""
    return _delete(obj, path, depth=0)  # type: ignore[no-any-return]


def _delete(container: Any, path: Path, *, depth: int) -> Any:
    key = path[depth]
    last = depth == len(path) - 1
    if _is_map(container):
        if key not in container:
            return container
        inner = container[key]
        changed = MISSING if last else _delete(inner, path, depth=depth + 1)
        if changed is inner:
            return container
        copied = dict(container)
        if changed is MISSING:
            del copied[key]
        else:
            copied[key] = changed
        return copied
    if isinstance(container, list) and (index := _index(key)) is not None and index < len(container):
        inner = container[index]
        changed = MISSING if last else _delete(inner, path, depth=depth + 1)
        if changed is inner:
            return container
        items = list(container)
        if changed is MISSING:
            del items[index]  # the peer removes the item, so later items move up
        else:
            items[index] = changed
        return items
    return container


def _where(path: Path, depth: int) -> str:
    return ".".join(key.replace("\\", "\\\\").replace(".", "\\.") for key in path[:depth]) or "the object"
