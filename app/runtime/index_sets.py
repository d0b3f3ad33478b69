"""Keys by index value, for indexes where nearly every value has exactly one key.

A sync worker indexes every object it caches: local copies by their link labels, remote objects by
their computed local name. Unless names collide, each value has one key, and a one-element `set`
costs about 216 bytes, more than the key itself. `IndexSets` keeps a lone key as itself and makes a
set from the second key on. `dict[value, set[key]]` is the rule; a property test proves the two
answer the same after any sequence of changes. A key is hashable, so it is never a `set`, which is
how a lone key is told from several.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

Value = TypeVar("Value", bound=Hashable)
Key = TypeVar("Key", bound=Hashable)


class IndexSets(Generic[Value, Key]):
    def __init__(self) -> None:
        self._entries: dict[Value, Key | set[Key]] = {}

    def add(self, value: Value, key: Key) -> None:
        entry = self._entries.get(value)
        if entry is None:
            self._entries[value] = key
        elif isinstance(entry, set):
            entry.add(key)
        elif entry != key:
            self._entries[value] = {entry, key}

    def discard(self, value: Value, key: Key) -> None:
        entry = self._entries.get(value)
        if isinstance(entry, set):
            entry.discard(key)
            if len(entry) == 1:
                self._entries[value] = next(iter(entry))
        elif entry is not None and entry == key:
            del self._entries[value]

    def retain(self, keep: Callable[[Key], bool]) -> None:
        """Forget every key `keep` refuses."""
        for value, entry in list(self._entries.items()):
            for key in [key for key in (entry if isinstance(entry, set) else (entry,)) if not keep(key)]:
                self.discard(value, key)

    def get(self, value: Value) -> frozenset[Key]:
        """The keys indexed under `value` (empty when none)."""
        entry = self._entries.get(value)
        if entry is None:
            return frozenset()
        return frozenset(entry) if isinstance(entry, set) else frozenset((entry,))

    def __len__(self) -> int:
        """How many values have keys."""
        return len(self._entries)
