"""The objects of a `World`, indexed so that its reads do not scan every object.

An offline plan of 44,000 workspace objects took hours: each object's `LinkedCopies` and
`SameLocalName` reads scanned the whole world, so planning was quadratic. `WorldObjects` is the
world's dict of objects; every key set or deleted through it updates two indexes:

- local objects by type and exact link labels (`LinkedCopies`);
- per PublishedResource, remote objects by the local name they compute (`SameLocalName`), built
  on its first read and kept up to date from then on.

Answers are re-checked against the objects themselves, so an index can only be slow to learn of
an object edited in place or removed with `dict.pop`, never invent one; objects are replaced, not
edited, by the world's writers. Answers list objects in the order the dict holds them, as a scan did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from servlet.core.actions import Side
from servlet.core.context import SyncContext
from servlet.core.gather import computed_local_key
from servlet.core.keys import remote_key_of
from servlet.core.metadata import link_labels_of
from servlet.core.model import LocalKey, ResourceType

WorldKey = tuple[Side, str, str, str, str, str]
Object = dict[str, Any]
_LinkKey = tuple[str, str, frozenset[tuple[str, str]]]


class _Names:
    """The remote objects of one PublishedResource by the local name each computes."""

    def __init__(self, context: SyncContext) -> None:
        self.context = context
        remote = context.projected.remote
        self.type = (remote.api_version, remote.kind)
        self.by_name: dict[LocalKey, set[WorldKey]] = {}
        self.name_of: dict[WorldKey, LocalKey] = {}

    def add(self, key: WorldKey, obj: Mapping[str, Any]) -> None:
        name = computed_local_key(self.context, remote_key_of(obj), remote_object=obj)
        if name is not None:
            self.name_of[key] = name
            self.by_name.setdefault(name, set()).add(key)

    def drop(self, key: WorldKey) -> None:
        name = self.name_of.pop(key, None)
        if name is not None:
            self.by_name[name].discard(key)


class WorldObjects(dict[WorldKey, Object]):
    def __init__(self, items: Iterable[tuple[WorldKey, Object]] = ()) -> None:
        super().__init__()
        self._position: dict[WorldKey, int] = {}
        self._added = 0
        self._linked: dict[_LinkKey, set[WorldKey]] = {}
        self._names: dict[int, _Names] = {}  # by id of the SyncContext the index holds
        for key, obj in items:
            self[key] = obj

    def __setitem__(self, key: WorldKey, obj: Object) -> None:
        old = self.get(key)
        if old is None:
            self._position[key] = self._added
            self._added += 1
        else:
            self._unindex(key, old)
        super().__setitem__(key, obj)
        self._index(key, obj)

    def __delitem__(self, key: WorldKey) -> None:
        old = self[key]
        super().__delitem__(key)
        self._unindex(key, old)

    # -- reads ---------------------------------------------------------------------------------

    def linked_copies(self, resource: ResourceType, labels: Mapping[str, str]) -> list[Object]:
        """The local objects of `resource` whose link labels are exactly `labels`."""
        wanted = dict(labels)
        keys = self._linked.get((resource.api_version, resource.kind, frozenset(wanted.items())), set())
        return [
            found
            for key in self._ordered(keys)
            if (found := self.get(key)) is not None and link_labels_of(found) == wanted
        ]

    def same_local_name(self, context: SyncContext, name: LocalKey) -> list[Object]:
        """The remote objects of `context`'s resource whose computed local name is `name`."""
        names = self._names.get(id(context))
        if names is None:
            names = self._names[id(context)] = _Names(context)
            for key, obj in self.items():
                if key[0] is Side.REMOTE and key[1:3] == names.type:
                    names.add(key, obj)
        return [
            found
            for key in self._ordered(names.by_name.get(name, set()))
            if (found := self.get(key)) is not None
            and computed_local_key(context, remote_key_of(found), remote_object=found) == name
        ]

    def _ordered(self, keys: set[WorldKey]) -> list[WorldKey]:
        return sorted((key for key in keys if key in self), key=self._position.__getitem__)

    # -- upkeep --------------------------------------------------------------------------------

    def _index(self, key: WorldKey, obj: Object) -> None:
        if key[0] is Side.LOCAL:
            self._linked.setdefault((key[1], key[2], frozenset(link_labels_of(obj).items())), set()).add(key)
            return
        for names in self._names.values():
            if key[1:3] == names.type:
                names.add(key, obj)

    def _unindex(self, key: WorldKey, obj: Object) -> None:
        if key[0] is Side.LOCAL:
            self._linked.get((key[1], key[2], frozenset(link_labels_of(obj).items())), set()).discard(key)
            return
        for names in self._names.values():
            names.drop(key)
