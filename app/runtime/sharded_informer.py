"""One cache over several informers: a resource of the VW read from every kcp shard.

A sharded kcp has one VW URL per shard with a bound workspace, each listing only its own
workspaces. The controllers want one view of every workspace, so a `ShardedInformer` runs one
`Informer` per URL and answers as their union. Objects are keyed by logical cluster, which is
unique across shards, so the union has no collisions; events are passed on as each informer
emits them. It is synced once every shard's informer is.

The set of shards is fixed for the life of a `ShardedInformer`: when the endpoint slice's URLs
change, the sync manager stops the workers holding it and starts new ones over the new URLs.

`CacheFeed` is what a cache reads from, filled by both `Informer` and `ShardedInformer`.

Deliberately not here: which URLs there are (the sync manager) and building the informers (the
daemon's informer factory, through the pool).
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from servlet.app.runtime.informer import Informer
from servlet.app.runtime.informer_events import Handler, ObjectKey

Object = dict[str, Any]


class CacheFeed(Protocol):
    """What `Cache` and `InformerPool` need of an informer."""

    @property
    def name(self) -> str: ...

    @property
    def has_synced(self) -> bool: ...

    @property
    def last_error(self) -> BaseException | None: ...

    async def wait_synced(self) -> None: ...

    def is_alive(self) -> bool: ...

    @property
    def catching_up(self) -> bool: ...

    def refilter(self, *, more: bool) -> None: ...

    def pin(self, key: ObjectKey, obj: Object) -> None: ...

    def get(self, key: ObjectKey) -> Object | None: ...

    def reflects(self, version: str) -> bool: ...

    def objects(self) -> list[Object]: ...

    def keys(self) -> list[ObjectKey]: ...

    def add_handler(self, handler: Handler) -> None: ...

    def start(self) -> object: ...

    async def stop(self) -> None: ...

    def retry_now(self) -> None: ...


class ShardedInformer:
    """The union of one informer per VW URL (kcp shard)."""

    def __init__(self, shards: Sequence[Informer], *, name: str) -> None:
        self.shards = tuple(shards)
        self._name = name

    @property
    def name(self) -> str:
        return self._name

    @property
    def has_synced(self) -> bool:
        return all(shard.has_synced for shard in self.shards)

    @property
    def last_error(self) -> BaseException | None:
        return next((shard.last_error for shard in self.shards if shard.last_error is not None), None)

    async def wait_synced(self) -> None:
        await asyncio.gather(*(shard.wait_synced() for shard in self.shards))

    def is_alive(self) -> bool:
        return all(shard.is_alive() for shard in self.shards)

    @property
    def catching_up(self) -> bool:
        return any(shard.catching_up for shard in self.shards)

    def refilter(self, *, more: bool) -> None:
        for shard in self.shards:
            shard.refilter(more=more)

    def pin(self, key: ObjectKey, obj: Object) -> None:
        # Pins hold objects of other shares in the way of a write; an object at a virtual
        # workspace's key is of that key's workspace, so in the share of whoever writes there.
        raise NotImplementedError("the objects of a virtual workspace are kept by key, never pinned")

    def get(self, key: ObjectKey) -> Object | None:
        for shard in self.shards:
            found = shard.get(key)
            if found is not None:
                return found
        return None

    def reflects(self, version: str) -> bool:
        # Each shard counts versions of its own; the one a version came from is among them all.
        return all(shard.reflects(version) for shard in self.shards)

    def objects(self) -> list[Object]:
        return [obj for shard in self.shards for obj in shard.objects()]

    def keys(self) -> list[ObjectKey]:
        return [key for shard in self.shards for key in shard.keys()]

    def add_handler(self, handler: Handler) -> None:
        for shard in self.shards:
            shard.add_handler(handler)

    def start(self) -> None:
        for shard in self.shards:
            shard.start()

    async def stop(self) -> None:
        await asyncio.gather(*(shard.stop() for shard in self.shards))

    def retry_now(self) -> None:
        for shard in self.shards:
            if shard.last_error is not None:
                shard.retry_now()
