"""Related entries whose name path runs through a list: one related object per list item (SPEC 8).

A name path with one `[*]` (`spec.items[*].secretName`) names a related object for each item of
the list before it, on each side's primary. The objects of the two sides are paired by the
item's position, so each position is a related object of its own, planned exactly as an entry
with a single path: its path is the entry's with `[*]` replaced by the position, and its
identifier (which names its record on the local primary) is the entry's with `.position` added
(a DNS label has no dot, so it never meets another entry's).

Rules, checked on every plan:

- Once the local primary exists, both lists must have the same length: an item added on one
  side only would pair every later item with the wrong object. A mismatch is an Error on the
  primary naming the field, and nothing of the entry is written.
- At most `RELATED_OBJECTS_PER_PRIMARY_MAX` items: the records live in annotations of the local
  primary, and a tenant must not make one primary cost unbounded requests.
- A position the lists no longer reach, whose record is still on the local primary, is
  `dropped`: its copy goes if the servlet owns it, then its record (the planner decides how).

Deliberately not here: planning (`related.py`) or parsing (`parsing_related_extras.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs
from attrs import frozen
from jsonpath_ng.jsonpath import JSONPath
from jsonpath_ng.parser import parse

from servlet.core import metadata
from servlet.core.model import Problem, RelatedResource, ValueReference
from servlet.core.related_objects import metadata_of
from servlet.core.related_types import RELATED_OBJECTS_PER_PRIMARY_MAX

LIST_MARK = "[*]"


@frozen
class RelatedObjectEntry:
    """One related object of a primary: its entry's place in `spec.related` and the entry it is planned
    with (for a list position, the entry narrowed to that position); or the Problem of the entry."""

    index: int
    item: RelatedResource
    problem: Problem | None = None
    dropped: bool = False


def is_list_path(path: str) -> bool:
    return LIST_MARK in path


def base_identifier(identifier: str) -> str:
    """The entry's identifier of a related object's identifier (a position's has `.position` added)."""
    return identifier.split(".", 1)[0]


def related_objects(
    related: Iterable[RelatedResource],
    *,
    remote: Mapping[str, Any],
    local: Mapping[str, Any] | None,
    every_recorded: bool = False,
) -> Iterator[RelatedObjectEntry]:
    """Every related object of a primary pair, entry by entry; a list entry's positions in order.

    `every_recorded`: for the cleanup of a primary being deleted, every position named on the remote
    side or recorded, whatever the counts: each copy is still found by its record.
    """
    for index, item in enumerate(related):
        name = item.reference.name
        if not (isinstance(name, ValueReference) and is_list_path(name.path)):
            yield RelatedObjectEntry(index, item)
        elif every_recorded:
            named = range(min(_length(name.path, remote), RELATED_OBJECTS_PER_PRIMARY_MAX))
            for position in sorted({*named, *_recorded_positions(local, item.identifier)}):
                yield RelatedObjectEntry(index, _at(item, name, position))
        else:
            yield from _positions(index, item, name, remote=remote, local=local)


def _positions(
    index: int,
    item: RelatedResource,
    name: ValueReference,
    *,
    remote: Mapping[str, Any],
    local: Mapping[str, Any] | None,
) -> Iterator[RelatedObjectEntry]:
    field = _path_field(item, index)
    counts = {"remote": _length(name.path, remote)}
    if local is not None:
        counts["local"] = _length(name.path, local)
    for side, count in counts.items():
        if count > RELATED_OBJECTS_PER_PRIMARY_MAX:
            problem = Problem(
                field=field,
                message=f"names {count} objects on the {side} side, more than the {RELATED_OBJECTS_PER_PRIMARY_MAX} "
                "related objects an entry may name per primary; none of them is synced",
            )
            yield RelatedObjectEntry(index, item, problem=problem)
            return
    if local is not None and counts["remote"] != counts["local"]:
        problem = Problem(
            field=field,
            message=f"names {counts['remote']} objects on the remote side and {counts['local']} on the local side; "
            "the counts must agree, as the objects are paired by position, so none of them is synced",
        )
        yield RelatedObjectEntry(index, item, problem=problem)
        return
    count = counts["remote"]
    for position in range(count):
        yield RelatedObjectEntry(index, _at(item, name, position))
    for position in sorted(p for p in _recorded_positions(local, item.identifier) if p >= count):
        yield RelatedObjectEntry(index, _at(item, name, position), dropped=True)


def _at(item: RelatedResource, name: ValueReference, position: int) -> RelatedResource:
    narrowed = attrs.evolve(name, path=name.path.replace(LIST_MARK, f"[{position}]", 1))
    return attrs.evolve(
        item, identifier=f"{item.identifier}.{position}", reference=attrs.evolve(item.reference, name=narrowed)
    )


@functools.lru_cache(maxsize=256)
def _compiled(path: str) -> JSONPath:
    return parse(path)


def _length(path: str, primary: Mapping[str, Any]) -> int:
    """How many items the list before `[*]` has in `primary` (0 while it is missing or not a list)."""
    prefix = path.split(LIST_MARK, 1)[0]
    try:
        matches = _compiled(prefix).find(primary)
    except Exception:  # jsonpath_ng raises several unrelated types; the parser refused such paths
        return 0
    value = matches[0].value if matches else None
    return len(value) if isinstance(value, list) else 0


def _recorded_positions(local: Mapping[str, Any] | None, identifier: str) -> list[int]:
    if local is None:
        return []
    annotations = metadata_of(local).get("annotations")
    prefix = metadata.related_state_annotation(f"{identifier}.")
    found = []
    for key in annotations if isinstance(annotations, Mapping) else ():
        suffix = key[len(prefix) :] if isinstance(key, str) and key.startswith(prefix) else ""
        if suffix.isdigit():
            found.append(int(suffix))
    return found


def _path_field(item: RelatedResource, index: int) -> str:
    where = "object.reference" if item.reference.object_form else "reference.name"
    return f"spec.related[{index}].{where}.path"
