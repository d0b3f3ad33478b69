"""Which primaries a change of an origin-side related object wakes through `spec.related[].watch`.

Without `watch`, a related object wakes only the primaries whose last plan read it. With it:

- `byOwner`: the object's ownerReferences that name the primary's type on the origin side (its
  group and kind; the version is not compared, a type is served in several) are candidates; the
  caller wakes the one primary at the reference's name, in the event's workspace and namespace,
  and only when its uid is the reference's uid, so a reference copied from another workspace
  (or a recreated primary of the same name) wakes nothing.
- `bySelector`: every primary on the origin side whose labels match.

Deliberately not here: the caches and the keys of the primaries found (`app/controllers/related_watch.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from servlet.core.actions import Side
from servlet.core.filtering import selector_matches
from servlet.core.model import LabelSelector, RelatedResource, ResourceType
from servlet.core.related_sides import origin_side, watched_types
from servlet.core.targets import related_resource_type


@frozen
class OwnerReference:
    """An ownerReference as far as waking reads it: the owner's name and uid."""

    name: str
    uid: str


def watching(
    related: Sequence[RelatedResource], *, side: Side, resource: ResourceType
) -> tuple[bool, tuple[LabelSelector, ...]]:
    """For an event of `resource` on `side`: whether an entry of that origin type wakes by owner,
    and the selectors of those that wake by selector (entries of unresolved types have none)."""
    by_owner = False
    selectors: list[LabelSelector] = []
    wanted = related_resource_type(resource)
    for item in related:
        if item.watch is None or origin_side(item) is not side:
            continue
        if (side, wanted) not in ((s, related_resource_type(t)) for s, t in watched_types(item)):
            continue
        by_owner = by_owner or item.watch.by_owner
        if item.watch.selector is not None and item.watch.selector not in selectors:
            selectors.append(item.watch.selector)
    return by_owner, tuple(selectors)


def selectors_of(related: Sequence[RelatedResource], side: Side) -> tuple[LabelSelector, ...]:
    """Every `watch.bySelector` of the entries born on `side`: the primaries to keep indexed."""
    found: list[LabelSelector] = []
    for item in related:
        selector = item.watch.selector if item.watch is not None and origin_side(item) is side else None
        if selector is not None and selector not in found:
            found.append(selector)
    return tuple(found)


def owners_of_type(objects: Iterable[Mapping[str, Any] | None], owner: ResourceType) -> list[OwnerReference]:
    """The ownerReferences of `objects` (an object before and after a change) that name an object
    of `owner`'s group and kind, each once, in order."""
    found: list[OwnerReference] = []
    for obj in objects:
        metadata = obj.get("metadata") if obj is not None else None
        references = metadata.get("ownerReferences") if isinstance(metadata, Mapping) else None
        if not isinstance(references, list):
            continue
        for reference in references:
            if not isinstance(reference, Mapping):
                continue
            api_version, kind = reference.get("apiVersion"), reference.get("kind")
            name, uid = reference.get("name"), reference.get("uid")
            if not all(isinstance(value, str) and value for value in (api_version, kind, name, uid)):
                continue
            group = str(api_version).rpartition("/")[0]
            if (group, kind) != (owner.group, owner.kind):
                continue
            candidate = OwnerReference(name=str(name), uid=str(uid))
            if candidate not in found:
                found.append(candidate)
    return found


def uid_of(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    return str(metadata.get("uid") or "") if isinstance(metadata, Mapping) else ""


def labels_of(obj: Mapping[str, Any]) -> dict[str, str]:
    metadata = obj.get("metadata")
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    if not isinstance(labels, Mapping):
        return {}
    return {str(key): value for key, value in labels.items() if isinstance(value, str)}


def matching(selectors: Iterable[LabelSelector], obj: Mapping[str, Any]) -> list[LabelSelector]:
    """The selectors among `selectors` that a primary's labels match."""
    labels = labels_of(obj)
    return [selector for selector in selectors if selector_matches(selector, labels)]
