"""What the planner of a primary's related objects may read (`related.py`).

The caller asks `related_reads` which related objects and namespaces to fetch for a primary pair,
reads them, and passes what it found to `plan_related` as a `RelatedSnapshot`; `keys_of` is the
part both share, the objects one entry's plan may look at.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from servlet.core.actions import Side
from servlet.core.model import Origin, Problem, RelatedResource
from servlet.core.related_lists import related_objects
from servlet.core.related_objects import (
    RelatedKey,
    RelatedReads,
    RelatedSnapshot,
    Resolved,
    namespace_of,
    read_platform_state,
    read_service_state,
    resolve,
)
from servlet.core.related_selector import expand
from servlet.core.related_sides import type_on, type_problem

__all__ = ["keys_of", "related_reads"]


def related_reads(
    *,
    related: Iterable[RelatedResource],
    remote: Mapping[str, Any],
    local: Mapping[str, Any] | None,
    matched: Mapping[str, tuple[str, ...] | None] | None = None,
) -> RelatedReads:
    """Which related objects and namespaces the planner may look at for this primary pair.

    Unresolvable coordinates are skipped (nothing to read yet); so are the primaries' own
    namespaces, which exist by definition. `matched`: what the selector entries' lists found
    (`related_selector.selector_queries`, read first).
    """
    objects: dict[RelatedKey, None] = {}
    namespaces: dict[tuple[Side, str], None] = {}
    snapshot = RelatedSnapshot(matched=matched or {})
    expanded = expand(list(related), remote=remote, local=local, snapshot=snapshot).related
    for entry in related_objects(expanded, remote=remote, local=local):
        index, item = entry.index, entry.item
        if entry.problem is not None or type_problem(item, index=index) is not None:
            continue
        resolved = resolve(item, index=index, remote=remote, local=local)
        if isinstance(resolved, Problem):
            continue
        for key in keys_of(item, resolved, local):
            objects[key] = None
        for side, coordinates, primary in ((Side.REMOTE, resolved.remote, remote), (Side.LOCAL, resolved.local, local)):
            if coordinates is not None and primary is not None and coordinates.namespace != namespace_of(primary):
                namespaces[(side, coordinates.namespace)] = None
    return RelatedReads(objects=tuple(objects), namespaces=tuple(namespaces))


def keys_of(item: RelatedResource, resolved: Resolved, local: Mapping[str, Any] | None) -> list[RelatedKey]:
    """The related objects one entry's plan may look at: both sides' objects, and the copy it recorded."""
    keys = [
        RelatedKey.at(side, type_on(item, side), coordinates)
        for side, coordinates in ((Side.REMOTE, resolved.remote), (Side.LOCAL, resolved.local))
        if coordinates is not None and (side is Side.REMOTE or local is not None)
    ]
    if local is not None and item.origin is Origin.SERVICE:
        service = read_service_state(local, item.identifier)
        if service is not None:  # a copy recorded at older coordinates may be due for deletion
            keys.append(RelatedKey.at(Side.REMOTE, type_on(item, Side.REMOTE), service.coordinates))
    elif local is not None:
        platform = read_platform_state(local, item.identifier)
        if platform is not None:
            keys.append(RelatedKey.at(Side.LOCAL, type_on(item, Side.LOCAL), platform.copy))
    return keys
