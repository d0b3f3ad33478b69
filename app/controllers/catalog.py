"""What the servlet makes of each PublishedResource right now: parsed, validated, projected.

Every controller needs the same answer to "what does this PublishedResource ask for, and can it be
done": the schema controller to publish its schema, the export controller to list it, the sync
manager to run a worker for it. The catalog computes that once from the PublishedResource and CRD
caches (memoised per resourceVersion) so they never disagree.

A PublishedResource's spec is immutable (SPEC 2). The CRD enforces it with a CEL rule; should a
change get through anyway, the catalog keeps serving the spec it saw first (since this process
started) and reports the change as a problem, never as a new instruction.

Deliberately not here: status writes and API requests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from servlet.app.controllers.caches import Cache, resource_version
from servlet.core.apiexport import SchemaClaim, schema_taken_by as core_schema_taken_by
from servlet.core.hashing import canonical_json
from servlet.core.model import Problem, PublishedResource, ServletIdentity
from servlet.core.parsing import ParseResult, parse_published_resource
from servlet.core.plan import SyncContext
from servlet.core.projection import Projected
from servlet.core.related_types import related_crds
from servlet.core.resolution import crd_identity, find_crd, published_identity, resolve

# The reason of a `Valid=False` condition besides those of `core.resolution` (CRD_NOT_FOUND, ...).
SPEC_CHANGED = "SpecChanged"


@frozen
class Entry:
    """One PublishedResource as the controllers see it.

    `problems` non-empty means `Valid=False` (with `reason`); `projected` is None when nothing can
    be published. A PublishedResource whose spec changed keeps its first spec's projection (so it
    keeps working) and still reports the change as a problem.
    """

    name: str
    uid: str
    generation: int
    published: PublishedResource | None
    projected: Projected | None
    problems: tuple[Problem, ...] = ()
    reason: str = ""
    created: str = ""  # metadata.creationTimestamp: which of two identical projections is older

    @property
    def valid(self) -> bool:
        return not self.problems

    def context(self, servlet: ServletIdentity) -> SyncContext | None:
        if self.published is None or self.projected is None:
            return None
        return SyncContext(servlet=servlet, published=self.published, projected=self.projected)


def schema_taken_by(entries: Iterable[Entry]) -> dict[str, str]:
    """For each entry whose schema an older PublishedResource publishes: that one's name (`core.apiexport`)."""
    return core_schema_taken_by(
        SchemaClaim(published_resource=entry.name, schema_name=entry.projected.schema_name, created=entry.created)
        for entry in entries
        if entry.projected is not None
    )


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return _mapping(obj.get("metadata"))


class Catalog:
    """Entries for every PublishedResource in the cache, computed from the PublishedResource and CRD caches."""

    def __init__(
        self,
        *,
        published: Cache,
        crds: Cache,
        servlet: ServletIdentity,
        described: Callable[[], Sequence[dict[str, Any]]] = list,
    ) -> None:
        self._published = published
        self._crds = crds
        # CRDs of built-in types (`builtins.py`), after the real ones: a real CRD wins.
        self._described = described
        self.servlet = servlet
        self._first: dict[str, tuple[str, ParseResult]] = {}  # uid -> the spec seen first, parsed
        self._memo: dict[str, tuple[tuple[str, ...], Entry]] = {}

    def names(self) -> list[str]:
        return sorted(str(_metadata(obj).get("name") or "") for obj in self._published.objects())

    def entries(self) -> list[Entry]:
        crds = self._all_crds()
        entries = [self._entry(obj, crds) for obj in self._published.objects()]
        return sorted(entries, key=lambda entry: entry.name)

    def entry(self, name: str) -> Entry | None:
        obj = self._published.get(self._published.key(name))
        return None if obj is None else self._entry(obj, self._all_crds())

    def names_for_crd(self, crd: Mapping[str, Any]) -> list[str]:
        """The PublishedResources that name this CRD (by group and kind)."""
        identity = crd_identity(crd)
        return sorted(
            str(_metadata(obj).get("name") or "")
            for obj in self._published.objects()
            if published_identity(obj) == identity
        )

    def forget(self, name: str, uid: str = "") -> None:
        self._memo.pop(name, None)
        if uid:
            self._first.pop(uid, None)

    # -- internals -----------------------------------------------------------------------------

    def _all_crds(self) -> list[dict[str, Any]]:
        return [*self._crds.objects(), *self._described()]

    def _entry(self, obj: Mapping[str, Any], crds: Sequence[dict[str, Any]]) -> Entry:
        meta = _metadata(obj)
        name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
        parsed, changed = self._parse(obj, uid)
        crd = None if parsed.value is None else find_crd(crds, parsed.value)
        # The CRDs of related types count too: one created later resolves its entries then.
        related = [] if parsed.value is None else related_crds(parsed.value, crds)
        version = (resource_version(dict(obj)), resource_version(crd), *(resource_version(dict(c)) for c in related))
        memo = self._memo.get(name)
        if memo is not None and memo[0] == version:
            return memo[1]
        entry = self._compute(obj, parsed, changed=changed, crd=crd, crds=related)
        self._memo[name] = (version, entry)
        return entry

    def _parse(self, obj: Mapping[str, Any], uid: str) -> tuple[ParseResult, bool]:
        spec_text = canonical_json(obj.get("spec"))
        first = self._first.get(uid) if uid else None
        if first is None:
            parsed = parse_published_resource(obj)
            if uid:
                self._first[uid] = (spec_text, parsed)
            return parsed, False
        return first[1], first[0] != spec_text

    def _compute(
        self,
        obj: Mapping[str, Any],
        parsed: ParseResult,
        *,
        changed: bool,
        crd: Mapping[str, Any] | None,
        crds: Sequence[Mapping[str, Any]] = (),
    ) -> Entry:
        meta = _metadata(obj)
        name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
        generation = meta.get("generation")
        generation = generation if isinstance(generation, int) else 0
        created = str(meta.get("creationTimestamp") or "")
        change_problems: tuple[Problem, ...] = ()
        if changed:
            change_problems = (
                Problem(
                    field="spec",
                    message="was changed after the PublishedResource was created; the servlet keeps "
                    "serving the spec it saw first (delete and re-create the PublishedResource to publish something else)",
                ),
            )
        resolution = resolve(
            parsed=parsed, crd=crd, api_group=self.servlet.api_group, crds_from="on the service cluster", crds=crds
        )
        reason = resolution.reason or (SPEC_CHANGED if change_problems else "")
        return Entry(
            name=name,
            uid=uid,
            generation=generation,
            created=created,
            published=resolution.published,
            projected=resolution.projected,
            problems=(*resolution.problems, *change_problems),
            reason=reason,
        )
