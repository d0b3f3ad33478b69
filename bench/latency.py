"""Propagation latency (issue 6, target 4): a remote change to the local copy, a local status back up.

With the objects synced, the harness changes `rate` remote objects per second (a spec field, as a
user would) and writes the status of as many other local copies (as an operator would), for
`seconds`. Each latency is read from kcpsim's request log, server side on one clock: from the end
of the user's (or operator's) write to the end of the servlet's write that carries it. kcpsim's
own write latency is the duration of the harness's writes. It does not measure throughput.
"""

from __future__ import annotations

import statistics
import time
from collections import defaultdict
from typing import Any

from bench.scenario import LOCAL, NAMESPACE, REMOTE, RemoteObject, Requests, write_end
from kcpsim.requestlog import RequestRecord
from servlet.core.metadata import REMOTE_CLUSTER_LABEL, REMOTE_NAME_ANNOTATION, SERVLET_LABEL
from tests.integration.e2e.env import E2E


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def _summary(values: list[float]) -> dict[str, float]:
    if not values:
        return {"count": 0}
    return {
        "count": len(values),
        "p50_ms": percentile(values, 0.5) * 1000,
        "p99_ms": percentile(values, 0.99) * 1000,
        "max_ms": max(values) * 1000,
        "mean_ms": statistics.fmean(values) * 1000,
    }


def local_paths(env: E2E) -> dict[tuple[str, str], str]:
    """(workspace cluster, remote name) -> path of its local copy."""
    found = {}
    for obj in env.rest.list(LOCAL.path() + f"?labelSelector={SERVLET_LABEL}%3Dtom"):
        meta = obj["metadata"]
        key = (meta["labels"][REMOTE_CLUSTER_LABEL], meta["annotations"][REMOTE_NAME_ANNOTATION])
        found[key] = LOCAL.path(namespace=meta["namespace"], name=meta["name"])
    return found


def measure(env: E2E, objects: list[RemoteObject], *, rate: float, seconds: float) -> dict[str, Any]:
    paths = local_paths(env)
    assert len(paths) >= len(objects), f"only {len(paths)} of {len(objects)} objects have a local copy"
    requests = Requests(env.world)
    requests.mark()
    changes: list[tuple[RemoteObject, str]] = []  # (object, what the harness wrote)
    statuses: list[tuple[RemoteObject, str]] = []
    count = int(rate * seconds)
    half = len(objects) // 2
    started = time.monotonic()
    for k in range(count):
        delay = started + k / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        changed = objects[k % len(objects)]
        env.patch_remote(
            changed.workspace, REMOTE, namespace=NAMESPACE, name=changed.name, patch={"spec": {"note": f"change {k}"}}
        )
        changes.append((changed, f"change {k}"))
        operated = objects[(k + half) % len(objects)]
        env.rest.merge_patch(paths[(operated.cluster, operated.name)] + "/status", {"status": {"phase": f"phase-{k}"}})
        statuses.append((operated, f"phase-{k}"))
    behind = time.monotonic() - started - seconds
    expected = len(changes) + len(statuses)

    def is_servlet_write(r: RequestRecord) -> bool:
        return (
            r.verb == "patch"
            and r.resource == REMOTE.plural
            and (
                (r.virtual_workspace and r.path.endswith("/status"))
                or (r.cluster == "" and not r.path.endswith("/status"))
            )
        )

    requests.wait_for_counts((is_servlet_write,), expected, timeout=60, what="every change to propagate")
    records = sorted(requests.since_mark(), key=lambda r: r.started)

    groups: dict[tuple[str, str], list[RequestRecord]] = defaultdict(list)
    for record in records:
        if record.verb != "patch" or record.resource != REMOTE.plural:
            continue
        parts = record.path.split("/")
        if record.virtual_workspace and parts[-1] == "status":
            groups[("lifted", f"{record.cluster}/{parts[-2]}")].append(record)
        elif record.cluster == "" and parts[-1] == "status":
            groups[("operator", record.path.removesuffix("/status"))].append(record)
        elif record.cluster == "":
            groups[("copied", record.path)].append(record)
        elif not record.virtual_workspace:
            groups[("user", f"{record.cluster}/{parts[-1]}")].append(record)

    def latencies(cause: str, effect: str, keys: dict[str, str]) -> list[float]:
        found = []
        for cause_key, effect_key in keys.items():
            effects = groups.get((effect, effect_key), [])
            for write in groups.get((cause, cause_key), []):
                follow = next((r for r in effects if r.started >= write.started), None)
                if follow is not None:
                    found.append(write_end(follow) - write_end(write))
        return found

    user_to_local = {f"{o.cluster}/{o.name}": paths[(o.cluster, o.name)] for o, _ in changes}
    local_to_remote = {paths[(o.cluster, o.name)]: f"{o.cluster}/{o.name}" for o, _ in statuses}
    down = latencies("user", "copied", user_to_local)
    up = latencies("operator", "lifted", local_to_remote)
    own = [r for (kind, _), rs in groups.items() if kind in ("user", "operator") for r in rs]
    return {
        "objects": len(objects),
        "rate_per_second": rate,
        "seconds": seconds,
        "harness_behind_seconds": behind,
        "down": _summary(down),
        "up": _summary(up),
        "kcpsim_write": _summary([r.duration for r in own]),
        "missed": expected - len(down) - len(up),
    }
