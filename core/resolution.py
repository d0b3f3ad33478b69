"""What a PublishedResource comes to against the CRDs at hand: its CRD, and its projection or why not.

The daemon's catalog, `servlet plan` (offline and live) and the library must give the same answer
for the same PublishedResource and CRDs, so the lookup and the verdict are made here, once.

Deliberately not here: parsing (`parsing.py`), projecting (`projection.py`), and remembering the
spec a PublishedResource was first seen with (the daemon's catalog does that).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from attrs import frozen

from servlet.core.model import Problem, PublishedResource
from servlet.core.parsing import ParseResult
from servlet.core.projection import Projected, project
from servlet.core.related_types import resolve_related_types

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = [
    "CRD_NOT_FOUND",
    "INVALID_PROJECTION",
    "INVALID_SPEC",
    "Resolution",
    "crd_identity",
    "find_crd",
    "published_identity",
    "resolve",
]

# Reasons of a `Valid=False` condition, one per way a PublishedResource can fail to resolve.
INVALID_SPEC = "InvalidSpec"
CRD_NOT_FOUND = "CRDNotFound"
INVALID_PROJECTION = "InvalidProjection"

Manifest = Mapping[str, Any]
CRD = TypeVar("CRD", bound=Manifest)


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def crd_identity(crd: Manifest) -> tuple[str, str]:
    """(group, kind) of a CRD, as a PublishedResource names it."""
    spec = _mapping(crd.get("spec"))
    return str(spec.get("group") or ""), str(_mapping(spec.get("names")).get("kind") or "")


def published_identity(manifest: Manifest) -> tuple[str, str]:
    """(group, kind) of the CRD a PublishedResource manifest names, read without parsing it."""
    resource = _mapping(_mapping(manifest.get("spec")).get("resource"))
    return str(resource.get("apiGroup") or ""), str(resource.get("kind") or "")


def find_crd(crds: Iterable[CRD], published: PublishedResource) -> CRD | None:
    """The CRD among `crds` that `published` names (by group and kind), or None."""
    wanted = (published.spec.resource.api_group, published.spec.resource.kind)
    return next((crd for crd in crds if crd_identity(crd) == wanted), None)


@frozen
class Resolution:
    """A PublishedResource resolved: `projected` when it can be published, else `problems` and `reason`."""

    published: PublishedResource | None
    projected: Projected | None
    problems: tuple[Problem, ...] = ()
    reason: str = ""  # one of the reasons above, empty when it resolved


def resolve(
    *, parsed: ParseResult, crd: Manifest | None, api_group: str, crds_from: str, crds: Iterable[Manifest] = ()
) -> Resolution:
    """Resolve a parsed PublishedResource against the CRD it names (`find_crd`), None when there is none.

    A CRD being deleted counts as gone: its objects are going, and new ones are refused.
    `crds_from` says where the CRDs were looked for ("on the service cluster"), for the message.
    `crds`, all the CRDs at hand, resolve the types of related entries (`related_types.py`).
    """
    published = parsed.value
    if published is not None:
        published = resolve_related_types(published, crds)
    if published is None:
        return Resolution(published=None, projected=None, problems=parsed.problems, reason=INVALID_SPEC)
    if crd is None or _mapping(crd.get("metadata")).get("deletionTimestamp"):
        resource = published.spec.resource
        where = f"kind {resource.kind!r} in group {resource.api_group!r}"
        message = (
            f"there is no CustomResourceDefinition for {where} {crds_from}"
            if crd is None
            else f"the CustomResourceDefinition for {where} {crds_from} is being deleted"
        )
        return Resolution(
            published=published,
            projected=None,
            problems=(Problem(field="spec.resource", message=message),),
            reason=CRD_NOT_FOUND,
        )
    result = project(crd=crd, published=published, api_group=api_group)
    if not isinstance(result, Projected):
        return Resolution(published=published, projected=None, problems=result, reason=INVALID_PROJECTION)
    return Resolution(published=published, projected=result)
