"""Built-in types the PublishedResources name, described as CRDs for the catalog.

A PublishedResource naming a type with no CRD on the service cluster (a Role, a ConfigMap, an
aggregated API's kind) is resolved against the CRD that type would have: this keeps those,
read from the service cluster's discovery and OpenAPI v3 documents whenever the set of such
types changes (a PublishedResource or a CRD came or went). Each change reaches subscribers as a
CRD event, so the controllers treat a described type exactly like a CRD appearing.

Built-in types change only with the service cluster's version; they are read again when the
servlet restarts, or when a failed read is retried (after `RETRY_SECONDS`).

Deliberately not here: the HTTP reads (`adapters/builtin_discovery.py`) and the conversion
(`core/builtin_types.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from servlet.app.controllers.caches import Cache, subscription
from servlet.app.observability.logs import FieldLogger
from servlet.app.runtime.informer_events import Event, EventType, Handler, ObjectKey
from servlet.core.errors import ApiFailure
from servlet.core.hashing import canonical_json, sha1_hex
from servlet.core.model import Problem
from servlet.core.resolution import crd_identity, published_identity

RETRY_SECONDS = 10.0

Identity = tuple[str, str]
Describe = Callable[[Iterable[Identity]], Awaitable[tuple[tuple[dict[str, Any], ...], tuple[Problem, ...]]]]


class BuiltinTypes:
    """The CRDs of the built-in types PublishedResources name, kept up to date with them."""

    def __init__(self, *, published: Cache, crds: Cache, describe: Describe, log: FieldLogger) -> None:
        self._published = published
        self._crds = crds
        self._describe = describe
        self._log = log
        self._described: dict[Identity, dict[str, Any]] = {}
        self._asked: frozenset[Identity] = frozenset()
        self._subscribers: list[Handler] = []
        self._wake = asyncio.Event()
        published.subscribe(lambda _: self._wake.set())
        crds.subscribe(lambda _: self._wake.set())

    def crds(self) -> list[dict[str, Any]]:
        """The described types' CRD manifests (a real CRD of the same group and kind wins)."""
        return list(self._described.values())

    def subscribe(self, handler: Handler) -> Callable[[], None]:
        """Call `handler` for every change of the described types; returns the function that unsubscribes."""
        return subscription(self._subscribers, handler)

    def wanted(self) -> frozenset[Identity]:
        """The (group, kind)s named by a PublishedResource that no CRD on the service cluster serves."""
        with_crd = {crd_identity(crd) for crd in self._crds.objects()}
        named = {published_identity(obj) for obj in self._published.objects()}
        return frozenset(identity for identity in named if identity not in with_crd and identity[1])

    async def run(self) -> None:
        """Describe what is wanted, again on every change of it, until cancelled."""
        self._wake.set()
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.refresh()
            except ApiFailure as exc:
                self._log.warning("reading built-in types failed", error=str(exc), retry_seconds=RETRY_SECONDS)
                await asyncio.sleep(RETRY_SECONDS)
                self._asked = frozenset()
                self._wake.set()

    async def refresh(self) -> None:
        wanted = self.wanted()
        if wanted == self._asked:
            return
        crds, problems = await self._describe(sorted(wanted))
        for problem in problems:
            self._log.warning("built-in type described in part", field=problem.field, problem=problem.message)
        self._asked = wanted
        described = {crd_identity(crd): _versioned(crd) for crd in crds}
        for identity in sorted(described.keys() | self._described.keys()):
            old, new = self._described.get(identity), described.get(identity)
            if old == new:
                continue
            if new is None and old is not None:
                self._emit(Event(type=EventType.DELETED, key=ObjectKey.of(old), obj=old))
            elif new is not None:
                kind = EventType.ADDED if old is None else EventType.MODIFIED
                self._described[identity] = new
                self._emit(Event(type=kind, key=ObjectKey.of(new), obj=new, old=old))
                self._log.info("built-in type described", group=identity[0], kind=identity[1])
        for identity in self._described.keys() - described.keys():
            del self._described[identity]

    def _emit(self, event: Event) -> None:
        for handler in list(self._subscribers):
            handler(event)


def _versioned(crd: Mapping[str, Any]) -> dict[str, Any]:
    """The manifest with a resourceVersion that changes with its spec, as the catalog's memo needs."""
    metadata = {**dict(crd.get("metadata") or {}), "resourceVersion": "described-" + sha1_hex(canonical_json(crd))[:12]}
    return {**crd, "metadata": metadata}
