"""An informer that keeps a share of the objects (`keep`, a replica's buckets) against kcpsim.

With `--buckets`, a replica's caches of the virtual workspace hold only the workspaces of its
buckets. What a user would notice if this broke: a replica that caches everything (memory not
divided), a replica that takes over a bucket and never syncs its objects (no relist), or copies
deleted as orphans because a bucket's objects were not listed yet (`catching_up` says so).
The share here is by object name, or by a ConfigMap's value standing for a copy's workspace
label, on the service cluster's ConfigMaps: the informer only asks `Keep`, whatever it means.
"""

from __future__ import annotations

from typing import Any

from kcpsim import FaultPlan, KcpSim
from kcpsim.faults import ErrorRule
from kcpsim.waiting import eventually_async
from servlet.adapters.kube import merge_patch, resource_class
from servlet.app.runtime.informer_events import Keep, ObjectKey
from tests.integration.test_informer import CONFIGMAPS, Harness, configmap, create, delete


async def test_only_kept_objects_are_stored_and_told_and_a_reshare_finds_or_drops_them_silently(
    kcpsim: KcpSim,
) -> None:
    kept = {"a"}
    async with Harness(kcpsim, keep=Keep(by_key=lambda key: key.name in kept)) as h:
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
    async with Harness(kcpsim, keep=Keep(by_key=lambda key: key.name in kept)) as h:
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


def _key(name: str) -> ObjectKey:
    return ObjectKey(cluster="", namespace="default", name=name)


async def _read(h: Harness, name: str) -> dict[str, Any]:
    """`name` as a direct read returns it (what a pin starts from)."""
    return dict(await h.writer.get(resource_class(CONFIGMAPS), name, namespace="default"))


async def _set_value(h: Harness, name: str, value: str) -> None:
    await merge_patch(h.writer, resource_class(CONFIGMAPS), name, {"data": {"value": value}}, namespace="default")


async def test_a_share_by_content_drops_objects_that_move_out_and_a_pin_follows_one_until_deleted(
    kcpsim: KcpSim,
) -> None:
    """A replica's cache of local copies keeps those whose label names a workspace of its share; an
    object that moves out is gone from its view (DELETED, so indexes forget it). A pinned object (a
    copy of another share in the way of a create) is held and followed until it is deleted."""
    kept = {"mine"}

    def in_share(obj: dict[str, Any]) -> bool:
        return str(obj["data"]["value"]) in kept

    async with Harness(kcpsim, keep=Keep(by_content=in_share)) as h:
        await create(h.writer, configmap("a", value="mine"))
        await create(h.writer, configmap("b", value="theirs"))
        await create(h.writer, configmap("c", value="theirs"))
        await h.synced()
        first = h.names()
        await _set_value(h, "a", "theirs")  # its copy now names another share's workspace
        await eventually_async(lambda: h.names() == [], what="a dropped")
        h.informer.pin(_key("c"), await _read(h, "c"))
        pinned = h.names()
        await _set_value(h, "c", "still theirs")
        await eventually_async(
            lambda: (h.informer.get(_key("c")) or {}).get("data") == {"value": "still theirs"},
            what="the pinned c followed",
        )
        await delete(h.writer, "c")
        await eventually_async(lambda: h.names() == [], what="the pinned c deleted")
        await create(h.writer, configmap("c", value="theirs"))  # no longer pinned: not kept
        kept.add("theirs")  # a bucket got: a relist finds a, b and c
        h.informer.refilter(more=True)
        await eventually_async(lambda: h.names() == ["a", "b", "c"], what="the relist of the new share")
        kept.clear()  # every bucket handed back: dropped without a word
        h.informer.refilter(more=False)
        after_hand_over = h.names()
        seen = h.recorder.seen()

    assert first == ["a"]
    assert pinned == ["c"]
    assert after_hand_over == []
    assert seen[:5] == [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "c"), ("MODIFIED", "c"), ("DELETED", "c")]
    assert sorted(seen[5:]) == [("ADDED", "a"), ("ADDED", "b"), ("ADDED", "c")]
