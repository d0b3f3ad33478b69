"""An informer that keeps a share of the objects (`keep`, a replica's buckets) against kcpsim.

With `--buckets`, a replica's caches of the virtual workspace hold only the workspaces of its
buckets. What a user would notice if this broke: a replica that caches everything (memory not
divided), a replica that takes over a bucket and never syncs its objects (no relist), or copies
deleted as orphans because a bucket's objects were not listed yet (`catching_up` says so).
The share here is by object name, on the service cluster's ConfigMaps: the informer only asks
`keep(key)`, whatever the key's parts mean.
"""

from __future__ import annotations

from kcpsim import FaultPlan, KcpSim
from kcpsim.faults import ErrorRule
from kcpsim.waiting import eventually_async
from servlet.app.runtime.informer_events import ObjectKey
from tests.integration.test_informer import Harness, configmap, create, delete


async def test_only_kept_objects_are_stored_and_told_and_a_reshare_finds_or_drops_them_silently(
    kcpsim: KcpSim,
) -> None:
    kept = {"a"}
    async with Harness(kcpsim, keep=lambda key: key.name in kept) as h:
        for name in ("a", "b", "c"):
            await create(h.writer, configmap(name))
        await h.synced()
        first = h.names()
        kept.add("b")  # a bucket got
        h.informer.refilter(more=True)
        catching_up = h.informer.catching_up
        await eventually_async(lambda: h.names() == ["a", "b"], what="b found by a relist")
        await eventually_async(lambda: not h.informer.catching_up, what="the relist finished")
        kept.discard("a")  # a bucket handed over
        h.informer.refilter(more=False)
        after_hand_over = h.names()
        kept.add("d")
        await create(h.writer, configmap("d"))  # the watch runs again after the relist
        await delete(h.writer, "c")  # not kept: nothing to tell
        await eventually_async(lambda: h.names() == ["b", "d"], what="d seen by the watch")
        gone = h.informer.get(ObjectKey(cluster="", namespace="default", name="a"))
        seen = h.recorder.seen()

    assert first == ["a"]
    assert catching_up
    assert after_hand_over == ["b"]
    assert gone is None
    # No DELETED for "a" (it still exists; another replica holds it) nor for "c" (never kept).
    assert seen == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "d")]


async def test_a_relist_for_a_reshare_that_fails_keeps_catching_up_until_one_succeeds(kcpsim: KcpSim) -> None:
    kept = {"a"}
    async with Harness(kcpsim, keep=lambda key: key.name in kept) as h:
        for name in ("a", "b"):
            await create(h.writer, configmap(name))
        await h.synced()
        kcpsim.set_faults(FaultPlan(errors=(ErrorRule(status=500, verb="list", resource="configmaps", limit=3),)))
        kept.add("b")
        h.informer.refilter(more=True)
        await eventually_async(
            lambda: kcpsim.requests.count(verb="list", status=500) == 2, what="two of three lists refused"
        )
        while_failing = (h.informer.catching_up, h.names())
        await eventually_async(lambda: h.names() == ["a", "b"], what="b found by the relist that succeeded")
        caught_up = h.informer.catching_up

    assert while_failing == (True, ["a"])
    assert not caught_up
