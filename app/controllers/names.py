"""Which remote objects want which local name: for collisions and for conflicts waiting on a name.

A sync worker keeps two maps over the remote objects of its PublishedResource:

- by computed local name (`holders`): the planner's `SameLocalName` read, so that of two fresh
  objects computing one name the first by key gets it, whatever order they are reconciled in;
- the names refused to an object because something else holds them (`waiting`): any event at
  that local name, or a change of another object wanting it, wakes the refused object at once
  instead of after its retry backoff.

Deliberately not here: computing names (`core.gather.computed_local_key` is passed in) and
deciding who gets a name (the planner).
"""

from __future__ import annotations

from collections.abc import Callable

from servlet.app.runtime.index_sets import IndexSets
from servlet.core.model import LocalKey, RemoteKey


class LocalNames:
    def __init__(self, compute: Callable[[RemoteKey], LocalKey | None]) -> None:
        self._compute = compute
        self._computed: dict[RemoteKey, LocalKey] = {}
        self._by_name: IndexSets[LocalKey, RemoteKey] = IndexSets()
        self._waits_for: dict[RemoteKey, LocalKey] = {}
        self._waiting: IndexSets[LocalKey, RemoteKey] = IndexSets()

    # -- computed names -------------------------------------------------------------------------

    def index(self, key: RemoteKey) -> LocalKey | None:
        """Remember the computed local name of `key` (after a change); returns it."""
        computed = self._compute(key)
        if self._computed.get(key) != computed:
            self.forget(key)
            if computed is not None:
                self._computed[key] = computed
                self._by_name.add(computed, key)
        return computed

    def forget(self, key: RemoteKey) -> None:
        """`key` is gone: it neither holds nor waits for a name any more."""
        _discard(self._by_name, self._computed.pop(key, None), key)
        self.wait(key, None)

    def holders(self, name: LocalKey) -> list[RemoteKey]:
        """The remote objects whose computed local name is `name`, in key order."""
        return sorted(self._by_name.get(name))

    def keys(self) -> list[RemoteKey]:
        """The remote objects whose computed name (or a wait for a name) is remembered."""
        return [*self._computed, *self._waits_for]

    def name_of(self, key: RemoteKey) -> LocalKey | None:
        return self._computed.get(key)

    # -- names refused -------------------------------------------------------------------------

    def wait(self, key: RemoteKey, name: LocalKey | None) -> None:
        """`key` waits for `name` (held by something else), or for nothing (None)."""
        previous = self._waits_for.pop(key, None)
        _discard(self._waiting, previous, key)
        if name is not None:
            self._waits_for[key] = name
            self._waiting.add(name, key)

    def waiting(self, name: LocalKey) -> list[RemoteKey]:
        """The remote objects refused `name`, in key order."""
        return sorted(self._waiting.get(name))


def _discard(index: IndexSets[LocalKey, RemoteKey], name: LocalKey | None, key: RemoteKey) -> None:
    if name is not None:
        index.discard(name, key)
