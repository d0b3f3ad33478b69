"""Safety rules of planning that an adversarial review found missing, each as the scenario that broke.

Planned on the in-memory world (`core.world`, `core.dryrun`), which answers the same reads
(`core.gather`) the daemon answers from its caches.
"""

from __future__ import annotations

import copy
from typing import Any

import attrs
import pytest

from servlet.core.actions import Adopt, Side
from servlet.core.dryrun import plan_once, plan_world, settle
from servlet.core.gather import Answer, Read, gather
from servlet.core.hashing import sha1_hex
from servlet.core.metadata import FINALIZER, REMOTE_NAME_ANNOTATION, REMOTE_RESOURCE_LABEL
from servlet.core.model import Naming, RemoteKey, ResourceType
from servlet.core.orphans import find_orphans
from servlet.core.plan import SyncContext, plan_object
from servlet.core.world import World, WriteFailure
from tests.unit.test_plan import CLUSTER, created_local, make_context, make_remote, types


def _twin(kind: str, plural: str) -> SyncContext:
    """A PublishedResource projecting the one local Certificate type under another remote kind."""
    context = make_context()
    remote = ResourceType("certificates.example.corp", "v1beta1", kind, plural, True)
    return attrs.evolve(context, projected=attrs.evolve(context.projected, remote=remote))


def _as(obj: dict[str, Any], context: SyncContext) -> dict[str, Any]:
    typed = copy.deepcopy(obj)
    typed["apiVersion"], typed["kind"] = context.projected.remote.api_version, context.projected.remote.kind
    return typed


def test_a_foreign_object_at_the_computed_name_is_a_conflict_that_writes_nothing() -> None:
    context = make_context()
    remote = make_remote(finalizers=())
    foreign = created_local(context, remote)
    foreign["metadata"]["labels"] = {"team": "service-owner"}
    foreign["metadata"]["annotations"] = {}

    (plan,) = plan_world(contexts=[context], remote_objects=[remote], local_objects=[foreign])

    assert types(plan) == ["conflict"]
    assert not plan.writes


def test_a_conflict_takes_off_a_finalizer_an_earlier_attempt_left() -> None:
    context = make_context()
    remote = make_remote(finalizers=("other", FINALIZER))
    foreign = created_local(context, remote)
    foreign["metadata"]["labels"] = {}

    (plan,) = plan_world(contexts=[context], remote_objects=[remote], local_objects=[foreign])

    assert types(plan) == ["conflict", "removeFinalizer"]
    assert plan.actions[1].to_dict()["patch"]["metadata"]["finalizers"] == ["other"]


@pytest.mark.parametrize("order", [("default", "other"), ("other", "default")])
def test_two_fresh_objects_on_one_local_name_the_first_by_key_gets_it_whatever_the_order(
    order: tuple[str, str],
) -> None:
    context = make_context(naming=Naming(namespace="$remoteClusterName", name="$remoteName"))
    remotes = [make_remote(name="twin", namespace=namespace, finalizers=()) for namespace in order]

    plans = {
        plan.remote.namespace: plan for plan in plan_world(contexts=[context], remote_objects=remotes, local_objects=[])
    }

    assert types(plans["default"]) == ["addFinalizer", "createNamespace", "create"]
    assert set(types(plans["other"])) == {"conflict"}, "the second object writes nothing, not even a finalizer"


def test_a_freed_name_goes_to_the_object_that_waited_for_it() -> None:
    context = make_context(naming=Naming(namespace="$remoteClusterName", name="$remoteName"))
    world = World(
        remote=[make_remote(name="twin", namespace=namespace, finalizers=()) for namespace in ("default", "other")]
    )
    settle(world, [context])
    first = world.listed(Side.REMOTE)[0]
    world.remove(Side.REMOTE, first)  # the tenant deletes the winner: its copy goes, then its finalizer
    settle(world, [context])
    (left,) = world.listed(Side.REMOTE)
    plan = plan_once(world, context, left)

    assert left["metadata"]["namespace"] == "other" and FINALIZER in left["metadata"]["finalizers"]
    assert types(plan) == [], "the copy of the object that waited exists and is in sync"


def test_copies_of_two_resources_sharing_a_local_type_never_meet() -> None:
    twin_a, twin_b = _twin("TwinA", "twinas"), _twin("TwinB", "twinbs")
    world = World(remote=[_as(make_remote(finalizers=()), twin_a), _as(make_remote(finalizers=()), twin_b)])

    plans = {plan.remote_type.kind if plan.remote_type else "": plan for plan in settle(world, [twin_a, twin_b])}
    assert set(plans) == {"TwinA", "TwinB"}, plans

    assert types(plans["TwinA"]) == ["addFinalizer", "createNamespace", "create"]
    assert types(plans["TwinB"]) == ["conflict"], "TwinB must not share TwinA's copy"
    # TwinB's deletion leaves TwinA's copy alone.
    world.remove(Side.REMOTE, world.listed(Side.REMOTE)[1])
    settle(world, [twin_a, twin_b])
    (copy_of_a,) = [obj for obj in world.listed(Side.LOCAL) if obj["kind"] == "Certificate"]
    assert copy_of_a["metadata"]["labels"][REMOTE_RESOURCE_LABEL] == sha1_hex("twinas.certificates.example.corp")


def test_copies_of_another_projection_of_a_recreated_published_resource_are_no_orphans() -> None:
    old, new = _twin("Zertifikat", "zertifikate"), _twin("Certificate", "certificates")
    copy_of_old = created_local(old, make_remote())

    assert (
        find_orphans(
            servlet_name="tom", remote_resource=new.projected.remote, local_objects=[copy_of_old], remote_keys=[]
        )
        == ()
    )
    assert [
        orphan.local.name
        for orphan in find_orphans(
            servlet_name="tom", remote_resource=old.projected.remote, local_objects=[copy_of_old], remote_keys=[]
        )
    ] == [copy_of_old["metadata"]["name"]], "a copy of this resource whose remote object is gone is an orphan"
    assert (
        find_orphans(
            servlet_name="tom",
            remote_resource=old.projected.remote,
            local_objects=[copy_of_old],
            remote_keys=[RemoteKey(CLUSTER, "prod", "api")],
        )
        == ()
    )


def test_a_removed_link_annotation_is_restored_on_the_next_reconcile() -> None:
    context = make_context()
    remote = make_remote()
    local = created_local(context, remote)
    del local["metadata"]["annotations"][REMOTE_NAME_ANNOTATION]

    (plan,) = plan_world(contexts=[context], remote_objects=[remote], local_objects=[local])

    assert types(plan) == ["adopt"]
    assert isinstance(plan.actions[0], Adopt)
    assert plan.actions[0].patch == {"metadata": {"annotations": {REMOTE_NAME_ANNOTATION: "api"}}}


def test_a_copy_someone_else_is_deleting_is_left_alone_until_gone_then_created_again() -> None:
    context = make_context()
    remote = make_remote(spec={"secretName": "changed"})
    local = created_local(context, make_remote())
    local["metadata"]["deletionTimestamp"] = "2026-11-20T10:00:00Z"
    local["metadata"]["finalizers"] = ["service-owner/backup"]
    world = World(remote=[remote], local=[local])

    (plan,) = settle(world, [context])
    assert types(plan) == [] and "being deleted" in plan.waiting, "no content patch into a copy in deletion"

    world.objects = {
        key: obj for key, obj in world.objects.items() if not (key[0] is Side.LOCAL and key[2] == "Certificate")
    }  # its finalizer went
    (plan,) = settle(world, [context])
    assert types(plan) == ["create"]


def test_a_superset_of_link_labels_is_not_a_copy_in_any_plan() -> None:
    context = make_context(remote_namespaced=False)
    remote = make_remote(namespace="")
    local = created_local(context, remote)
    # A namespace hash on the copy of a cluster-scoped object names a namespaced object instead.
    local["metadata"]["labels"]["syncer.kdp.k8c.io/remote-object-namespace-hash"] = sha1_hex("prod")
    local["metadata"]["annotations"]["syncer.kdp.k8c.io/remote-object-namespace"] = "prod"

    (plan,) = plan_world(contexts=[context], remote_objects=[remote], local_objects=[local])

    assert types(plan)[0] == "conflict", "the object at the computed name names another remote object"
    assert "create" not in types(plan) and "patch" not in types(plan)


def test_a_deleted_object_whose_copy_vanished_unseen_loses_its_finalizer() -> None:
    # The informer relisted after a broken watch: no DELETED event for the copy was ever seen.
    context = make_context()
    (plan,) = plan_world(contexts=[context], remote_objects=[make_remote(deleting=True)], local_objects=[])
    assert types(plan) == ["removeFinalizer"]


def test_plans_are_prefix_closed_on_the_example_states() -> None:
    """Executing the first actions of a plan and planning again gives the rest of it."""
    context = make_context()
    fresh, deleting = make_remote(name="fresh", finalizers=()), make_remote(name="gone", deleting=True)
    world = World(remote=[fresh, deleting], local=[created_local(context, make_remote(name="gone"))])
    for remote in (fresh, deleting):
        whole = plan_once(world.copy(), context, remote)
        for cut in range(1, len(whole.actions)):
            after = world.copy()
            for action in whole.actions[:cut]:
                after.apply(action)
            current = after.get(
                (
                    Side.REMOTE,
                    remote["apiVersion"],
                    remote["kind"],
                    CLUSTER,
                    remote["metadata"]["namespace"],
                    remote["metadata"]["name"],
                )
            )
            assert current is not None
            rest = plan_once(after, context, current)
            assert types(rest) == types(whole)[cut:], f"after {types(whole)[:cut]}"


def test_a_plan_from_a_stale_cache_never_writes_into_an_object_that_replaced_the_copy() -> None:
    context = make_context()
    world = World(remote=[make_remote()])
    settle(world, [context])
    stale = world.copy()  # the servlet's caches, before the service owner's changes below
    (copy_key,) = [key for key in world.objects if key[0] is Side.LOCAL and key[2] == "Certificate"]
    foreign = copy.deepcopy(world.objects.pop(copy_key))  # the copy is deleted, a foreign object takes its name
    foreign["metadata"].update(labels={"owner": "service"}, annotations={}, uid="someone-elses")
    world.put(Side.LOCAL, foreign)
    written = copy.deepcopy(world.get(copy_key))
    remote_key = next(key for key in world.objects if key[0] is Side.REMOTE)
    world.objects[remote_key]["spec"] = {"secretName": "changed"}
    stale.objects[remote_key] = copy.deepcopy(world.objects[remote_key])  # the remote informer caught up

    (patch,) = plan_once(stale, context, stale.objects[remote_key]).actions
    assert patch.to_dict()["patch"]["metadata"]["uid"] == stale.objects[copy_key]["metadata"]["uid"]
    with pytest.raises(WriteFailure, match="UID in precondition"):
        world.apply(patch)
    assert world.get(copy_key) == written, "the foreign object was written"


def test_a_name_taken_between_two_rounds_of_reads_is_not_given_twice() -> None:
    # The daemon answers a plan's rounds of reads at different moments: its caches may learn of the
    # winner's copy after the round that found the name free, before the round that reads the
    # copies of the earlier contender.
    context = make_context(naming=Naming(namespace="$remoteClusterName", name="$remoteName"))
    before = World(
        remote=[make_remote(name="twin", namespace=namespace, finalizers=()) for namespace in ("default", "other")]
    )
    after = before.copy()
    settle(after, [context])  # the first by key, twin in default, got the name and its copy
    second = next(remote for remote in before.listed(Side.REMOTE) if remote["metadata"]["namespace"] == "other")
    rounds: list[tuple[Read, ...]] = []

    def answer(reads: tuple[Read, ...]) -> list[Answer]:
        rounds.append(reads)
        return (before if len(rounds) < 3 else after).answer(context, reads)

    plan = plan_object(context=context, inputs=gather(context, second, answer))

    assert len(rounds) == 3, "the third round reads the copies of the earlier contender"
    assert [action.type for action in plan.actions] == ["conflict"]
    assert not plan.writes
