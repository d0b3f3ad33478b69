"""What a sync worker remembers about each remote object, kept together and forgotten in one place.

Per remote object of one PublishedResource:

- the local name it computes and a name refused to it that it waits for (`names.py`);
- the related objects its last plan read, to wake it when one changes (`links.RelatedIndex`);
- the conflicts and errors already reported, so each is logged and counted once;
- the recent corrections of its local copy, to notice a fight (`fights.py`);
- while a reconcile of it runs, the events that arrived meanwhile and the answers to its own
  writes (`Echoes`), to tell whether the events brought anything new.

`gone` drops all of it once the remote object is gone for good.

Deliberately not here: what the sync worker does with any of it.
"""

from __future__ import annotations

from collections.abc import Callable

from attrs import define, field, frozen

from servlet.app.controllers.fights import FightTracker
from servlet.app.controllers.links import RelatedIndex, RelatedObjectKey
from servlet.app.controllers.names import LocalNames
from servlet.core.actions import ObjectRef
from servlet.core.model import LocalKey, RemoteKey


@frozen
class Report:
    """A conflict or error of a plan, as remembered to report it once."""

    type: str
    target: ObjectRef | None
    identifier: str
    reason: str


@define
class Echoes:
    """The events of one remote object that arrived while it was being reconciled, as (cache,
    resourceVersion), and the answers to that reconcile's own writes.

    A watch event of the servlet's own write usually arrives before the write's answer, so it
    cannot be recognised on arrival; once the reconcile is over, an event whose version is one the
    reconcile wrote brought nothing that reconcile did not plan from.
    """

    events: list[tuple[str, str]] = field(factory=list)
    written: set[tuple[str, str]] = field(factory=set)

    def only_own(self) -> bool:
        return all(event in self.written for event in self.events)


class ObjectBook:
    """The per-object memory of one sync worker (see the module's docstring)."""

    def __init__(self, *, compute_name: Callable[[RemoteKey], LocalKey | None], clock: Callable[[], float]) -> None:
        self.names = LocalNames(compute_name)
        self.related = RelatedIndex()
        self.fights = FightTracker(clock=clock)
        self._reports: dict[RemoteKey, frozenset[Report]] = {}
        self._echoes: dict[RemoteKey, Echoes] = {}

    # -- reports -------------------------------------------------------------------------------

    def reported(self, key: RemoteKey) -> frozenset[Report]:
        """The conflicts and errors already reported for `key`."""
        return self._reports.get(key, frozenset())

    def set_reported(self, key: RemoteKey, reports: list[Report]) -> None:
        """What the last plan of `key` reported: a report that went away is reported again if it comes back."""
        if reports:
            self._reports[key] = frozenset(reports)
        else:
            self._reports.pop(key, None)

    # -- a reconcile in progress ---------------------------------------------------------------

    def begin_reconcile(self, key: RemoteKey) -> Echoes:
        echoes = self._echoes[key] = Echoes()
        return echoes

    def end_reconcile(self, key: RemoteKey) -> None:
        del self._echoes[key]

    def echoes(self, key: RemoteKey) -> Echoes | None:
        """The echoes of `key`'s reconcile, while one runs."""
        return self._echoes.get(key)

    # -- forgetting ----------------------------------------------------------------------------

    def keys(self) -> set[RemoteKey]:
        """Every remote object this book remembers something of."""
        return {*self.names.keys(), *self._reports, *self.related.primaries_known()}

    def gone(self, key: RemoteKey) -> list[RelatedObjectKey]:
        """`key` is gone for good: forget it; returns the related objects no remote object reads any more."""
        self._reports.pop(key, None)
        self.fights.forget(key)
        self.names.forget(key)
        return self.related.forget(key)
