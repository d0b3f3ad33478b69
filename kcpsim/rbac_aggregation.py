"""The ClusterRole aggregation controller, made instant: a ClusterRole with an `aggregationRule`
gets, as its `rules`, the rules of every other ClusterRole of its cluster whose labels match one
of its `clusterRoleSelectors` (in name order, duplicates dropped), as kube-controller-manager
writes them. Its own `rules` are overwritten, as there.
"""

from __future__ import annotations

from typing import Any

from kcpsim.patching import clone
from kcpsim.rbac import CLUSTER_ROLES
from kcpsim.selectors import selector_from_label_selector_object
from kcpsim.store import Event
from kcpsim.world import Controller, World

MANAGER = "clusterrole-aggregation-controller"


def install(world: World) -> None:
    world.controllers.append(Controller(frozenset({CLUSTER_ROLES}), lambda events: _aggregate(world, events)))


def _aggregate(world: World, events: list[Event]) -> None:
    for cluster in sorted({e.cluster for e in events if e.storage_key == CLUSTER_ROLES}):
        roles = [obj for _, obj in world.store.sorted_items(CLUSTER_ROLES, cluster)]
        for role in roles:
            selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
            if not selectors:
                continue
            matchers = [selector_from_label_selector_object(s) for s in selectors]
            rules: list[Any] = []
            for other in sorted(roles, key=lambda r: str(r["metadata"]["name"])):
                if other is role or not any(m(other["metadata"].get("labels") or {}) for m in matchers):
                    continue
                rules += [clone(rule) for rule in other.get("rules") or [] if rule not in rules]
            if rules != (role.get("rules") or []):
                rdef = next(r for r in world.catalog.served(cluster) if r.storage_key == CLUSTER_ROLES)
                world.update(
                    rdef,
                    cluster,
                    "",
                    role["metadata"]["name"],
                    {**clone(role), "rules": rules},
                    version="v1",
                    manager=MANAGER,
                    old=role,
                )
