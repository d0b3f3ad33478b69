"""Planning a world offline, as `servlet plan -f` does: manifests in, the plan's JSON form out.

The fast suites of this package ask the same core the daemon uses what it would do with hostile
or risky input, next to a good PublishedResource that must keep being served. Objects given with
a `cluster` live in that kcp workspace; the rest live on the service cluster.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from servlet.core.inventory import Document, build_inventory
from servlet.core.keys import CLUSTER_ANNOTATION
from servlet.core.model import ServletIdentity
from servlet.core.preview import plan_servlet
from tests.integration.e2e.manifests import GROUP, SERVLET, published_resource, remote_object, widget_crd

IDENTITY = ServletIdentity(name=SERVLET, api_group=GROUP)
GOOD = "widgets"  # the well-behaved PublishedResource every hostile case sits next to
GOOD_CLUSTER = "goodcluster1"


def in_workspace(obj: dict[str, Any], cluster: str) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    metadata = obj["metadata"]
    metadata.setdefault("annotations", {})[CLUSTER_ANNOTATION] = cluster
    metadata.setdefault("uid", f"uid-{cluster}-{metadata.get('namespace', '')}-{metadata['name'][:40]}")
    return obj


def good_world() -> list[dict[str, Any]]:
    """The Widget CRD, a valid PublishedResource for it and one user's Widget to sync."""
    return [
        widget_crd(),
        published_resource(GOOD, kind="Widget"),
        in_workspace(remote_object("Widget", "fine", namespace="default", size=1), GOOD_CLUSTER),
    ]


def plan(documents: Sequence[dict[str, Any]]) -> dict[str, Any]:
    inventory = build_inventory([Document(source=f"doc#{i}", content=d) for i, d in enumerate(documents)])
    return plan_servlet(inventory=inventory, servlet=IDENTITY).to_dict()


def actions_for(result: dict[str, Any], *, name: str, cluster: str | None = None) -> list[str]:
    found = [
        obj
        for obj in result["objects"]
        if obj["remote"]["name"] == name and (cluster is None or obj["remote"]["cluster"] == cluster)
    ]
    assert len(found) == 1, f"expected one plan for remote {name}, found {len(found)}"
    return [action["type"] for action in found[0]["actions"]]


def assert_good_still_served(result: dict[str, Any]) -> None:
    """The good PublishedResource keeps its schema and its user's object is still synced."""
    assert any(step["publishedResource"] == GOOD for step in result["schemas"]), result["schemas"]
    assert not [e for e in result["errors"] if e["object"] == f"PublishedResource {GOOD}"], result["errors"]
    assert "create" in actions_for(result, name="fine", cluster=GOOD_CLUSTER)
