"""The daemon's sync loop, run on a `World` instead of the clusters: what `servlet plan` prints.

For every remote object the daemon gathers its inputs, plans, executes the plan, and plans again
until a plan writes nothing. `plan_world` does the same on an in-memory world, round by round:
in each round every remote object (in key order) is gathered (`gather.py`) and planned
(`plan.py`), and its writes are applied to the world before the next object is planned, as the
daemon's caches see its own writes. It stops when a round writes nothing, and the plan of each
object lists every write of every round. A world that still writes after `MAX_ROUNDS` does not
settle (a patch loop): each object still writing gets an Error saying so.

A write the world refuses (it would fail on the API server) ends that object's plan with an Error
naming the failure: the daemon would retry it, and the plan cannot know how that ends.

Deliberately not here: which objects exist (the caller's world), and the rules of a single plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import evolve

from servlet.core.actions import Action, Error, Side
from servlet.core.context import SyncContext
from servlet.core.gather import gather
from servlet.core.keys import remote_key_of
from servlet.core.model import RemoteKey
from servlet.core.plan import ObjectPlan, plan_object
from servlet.core.world import World, WriteFailure

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["plan_world", "settle"]

# A fresh object with related resources settles in two rounds and its status in a third; a
# margin on top, then the world is declared unsettled.
MAX_ROUNDS = 6


def _is_of(obj: Mapping[str, Any], context: SyncContext) -> bool:
    remote = context.projected.remote
    return obj.get("apiVersion") == remote.api_version and obj.get("kind") == remote.kind


def context_of(obj: Mapping[str, Any], contexts: Sequence[SyncContext]) -> SyncContext | None:
    """The context that publishes `obj`'s type (the first one, when several claim it)."""
    return next((context for context in contexts if _is_of(obj, context)), None)


def plan_once(world: World, context: SyncContext, remote: Mapping[str, Any]) -> ObjectPlan:
    """One plan of one remote object, from what the world holds now."""
    inputs = gather(context, remote, lambda reads: world.answer(context, reads))
    return plan_object(context=context, inputs=inputs)


def settle(world: World, contexts: Sequence[SyncContext], *, rounds: int = MAX_ROUNDS) -> tuple[ObjectPlan, ...]:
    """Plan and execute every remote object of `world` until nothing is written; the world changes.

    Returns one plan per remote object that was planned, with every action of every round.
    """
    # By type and key: two PublishedResources may publish objects of the same name.
    plans: dict[tuple[str, str, RemoteKey], ObjectPlan] = {}
    still_writing: set[tuple[str, str, RemoteKey]] = set()
    for _ in range(rounds):
        still_writing = set()
        for remote in list(world.listed(Side.REMOTE)):
            context = context_of(remote, contexts)
            key = (str(remote.get("apiVersion")), str(remote.get("kind")), remote_key_of(remote))
            if context is None or world.get(_world_key(remote)) is None:
                continue
            plan = plan_once(world, context, remote)
            executed = _execute(world, plan)
            plans[key] = _joined(plans.get(key), executed)
            if executed.writes:
                still_writing.add(key)
        if not still_writing:
            break
    else:
        for key in still_writing:
            plans[key] = evolve(
                plans[key],
                actions=(
                    *plans[key].actions,
                    Error(reason=f"planning does not settle after {rounds} rounds: every round writes again"),
                ),
            )
    return tuple(plans.values())


def plan_world(
    *,
    contexts: Sequence[SyncContext],
    remote_objects: Iterable[Mapping[str, Any]],
    local_objects: Iterable[Mapping[str, Any]],
    unreadable_remote: Iterable[tuple[str, str, str, str, str]] = (),
) -> tuple[ObjectPlan, ...]:
    """Every write the daemon would send for these objects, per remote object; the inputs stay untouched.

    `unreadable_remote`: workspace objects whose read was refused, as (apiVersion, kind, cluster,
    namespace, name)."""
    unreadable = [(Side.REMOTE, *key) for key in unreadable_remote]
    return settle(World(remote=remote_objects, local=local_objects, unreadable=unreadable), contexts)


def _world_key(remote: Mapping[str, Any]) -> tuple[Side, str, str, str, str, str]:
    key = remote_key_of(remote)
    return (Side.REMOTE, str(remote.get("apiVersion")), str(remote.get("kind")), key.cluster, key.namespace, key.name)


def _execute(world: World, plan: ObjectPlan) -> ObjectPlan:
    """Apply the plan's writes in order; stop at the first the world refuses (with an Error)."""
    done: list[Action] = []
    for action in plan.actions:
        if action.is_write:
            try:
                world.apply(action)
            except WriteFailure as failure:
                done.append(
                    Error(
                        target=action.target,
                        reason=f"{action.type} would fail: {failure.reason}: {failure}; the daemon retries it",
                    )
                )
                return evolve(plan, actions=tuple(done))
        done.append(action)
    return plan


def _joined(earlier: ObjectPlan | None, later: ObjectPlan) -> ObjectPlan:
    """Both rounds' actions; a report (conflict, error) that repeats unchanged is listed once."""
    if earlier is None:
        return later
    repeated = {action for action in earlier.actions if not action.is_write}
    fresh = tuple(action for action in later.actions if action.is_write or action not in repeated)
    return evolve(later, local=later.local or earlier.local, actions=(*earlier.actions, *fresh))
