"""Who wrote to which workspace, and when: the replicas' writes read from the `CallerLog`.

Each servlet process has its own token, so the log tells replicas apart; every call carries the
times it arrived and was answered on the server's clock. A write belongs to a workspace when its
path names the workspace's logical cluster: `/clusters/<cluster>/` (the workspace itself or the
virtual workspace) or `/namespaces/<cluster>/` (the local copies of its objects on the service
cluster, in the namespace named after it).

The law replicas sharing workspaces must keep: two writes to one workspace by different replicas
never overlap in time. `overlapping` finds the pairs that break it; `handovers` counts how often
the writer of a workspace changed, which a stable membership keeps to the initial rebalancing.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence

from kcpsim.harness.world import Call

_MARKERS = ("/clusters/", "/namespaces/")
# Paths that are no workspace's work: the Leases replicas coordinate through, and Events.
NOT_WORK = ("/leases", "/events")


def workspace_of(path: str, clusters: Mapping[str, str]) -> str | None:
    """The workspace (a value of `clusters`, keyed by logical cluster) a request path is about."""
    for marker in _MARKERS:
        start = path.find(marker)
        while start >= 0:
            segment = path[start + len(marker) :].split("/", 1)[0]
            if segment in clusters:
                return clusters[segment]
            start = path.find(marker, start + 1)
    return None


def writes_by_workspace(calls: Iterable[Call], clusters: Mapping[str, str]) -> dict[str, list[Call]]:
    """The calls about each workspace of `clusters` (logical cluster -> workspace), in log order."""
    found: dict[str, list[Call]] = {workspace: [] for workspace in clusters.values()}
    for call in calls:
        workspace = workspace_of(call.path, clusters)
        if workspace is not None:
            found[workspace].append(call)
    return found


def overlapping(calls: Sequence[Call]) -> list[tuple[Call, Call]]:
    """Pairs of calls by different tokens that were in flight at the same time (the earlier first)."""
    pairs: list[tuple[Call, Call]] = []
    latest: dict[str, Call] = {}  # per token, its call answered last so far
    for call in sorted(calls, key=lambda c: c.started):
        for token, other in latest.items():
            if token != call.token and other.ended > call.started:
                pairs.append((other, call))
        if call.token not in latest or call.ended > latest[call.token].ended:
            latest[call.token] = call
    return pairs


def handovers(calls: Sequence[Call]) -> int:
    """How many times the writer changed, in order of arrival (0: one writer throughout)."""
    ordered = [call.token for call in sorted(calls, key=lambda c: c.started)]
    return sum(1 for before, after in itertools.pairwise(ordered) if before != after)
