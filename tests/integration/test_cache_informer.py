"""A cache's own writes against a real informer that loses its watch (`Cache` over `Informer`, kcpsim).

A cache shows the answer to an own write until its informer catches up (`caches.py`). What a user
would notice if an answer outlived its object: a deletion that hangs. The servlet deletes a copy
and takes its finalizer off the user's object only once the cache no longer shows the copy; an
answer that the informer never replaces keeps the copy "being deleted" for the cache's whole
time-to-live, here a minute.
"""

from __future__ import annotations

from kcpsim import FaultPlan, KcpSim, LatencyRule
from kcpsim.waiting import eventually_async
from servlet.app.controllers.caches import Cache
from servlet.app.runtime.informer_events import ObjectKey
from tests.integration.test_informer import CONFIGMAPS, Harness, configmap, create, cut_open_watch, delete


async def test_a_copy_created_and_deleted_while_the_watch_is_down_is_gone_once_the_relist_passes_it(
    kcpsim: KcpSim,
) -> None:
    """The informer never held the object: no event will ever name it. The relist's snapshot comes
    after the deletion (the list is held back, as on a busy server), so the cache must see that its
    informer has caught up past the answers and drop them."""
    async with Harness(kcpsim) as h:
        cache = Cache(h.informer)
        await h.synced()
        kcpsim.set_faults(FaultPlan(latency=(LatencyRule(seconds=0.5, verb="list", resource="configmaps", limit=1),)))
        await cut_open_watch(kcpsim, abort=True)
        key = ObjectKey(cluster="", namespace="default", name="copy")
        cache.wrote(key, await create(h.writer, configmap("copy")), created=True)
        while_down = cache.get(key) is not None
        await delete(h.writer, "copy")
        cache.deleting(key)
        deleting = (cache.get(key) or {}).get("metadata", {}).get("deletionTimestamp")
        await eventually_async(lambda: h.informer.relists == 1, what="the relist", timeout=5)
        after_relist = cache.get(key)
        pending = cache.pending_writes
        listed = kcpsim.requests.count(verb="list", resource=CONFIGMAPS.plural)

    assert while_down and deleting is not None
    assert after_relist is None
    assert pending == 0
    assert listed == 2  # one relist, whose request went out before the deletion and was served after it
