"""The chaos scenario (issue 7, item 1) at any scale: the world, the faults, the churn, the check.

`run_chaos` syncs `objects` Widgets spread over `workspaces` workspaces while kcpsim answers a
fifth of the servlet's writes with 500, 429 (Retry-After) or 409, cuts every watch stream after a
few seconds, forces 410 Gone by shrinking the watch history, and the servlet is SIGKILLed `kills`
times mid-sync; meanwhile objects are created, edited and deleted. Then the faults stop and it
measures how long until the world is exactly right: one correct local copy per remote object,
none for deleted ones, no finalizer left behind, no duplicate.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import attrs

from kcpsim import ErrorRule, FaultPlan
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    FINALIZER,
    LINK,
    REMOTE_WIDGET,
    WIDGET,
    default_local_name,
    published_resource,
    remote_object,
    widget_crd,
)

NAMESPACE = "default"
WRITE_VERBS = ("create", "update", "patch", "delete")
# Three rules tried in order at 7% each: about 20% of the servlet's writes fail.
FAULT_STATUSES = (500, 429, 409)
FAULT_RATE = 0.07


def write_faults(*, seed: int, watch_seconds: float) -> FaultPlan:
    """Faults on the servlet's writes only (virtual workspace and service cluster), not the users'."""
    rules = tuple(
        ErrorRule(status=status, rate=FAULT_RATE, verb=verb, target=target, retry_after=1)
        for status in FAULT_STATUSES
        for verb in WRITE_VERBS
        for target in ("vw", "service")
    )
    return FaultPlan(errors=rules, watch_max_seconds=watch_seconds, watch_cut_abort=True, seed=seed)


@attrs.frozen
class ChaosScale:
    workspaces: int
    objects: int
    kills: int
    churn_seconds: float
    converge_timeout: float = 60.0


@attrs.define
class ChaosResult:
    objects: int
    workspaces: int
    kills: int
    created: int = 0
    edited: int = 0
    deleted: int = 0
    faults_fired: int = 0
    relists: int = 0
    converged_after: float = 0.0  # seconds from the end of faults and churn to an exactly right world


def workspace_names(count: int) -> list[str]:
    return ["team-a", "team-b", *(f"chaos-{i:02d}" for i in range(count - 2))][:count]


class Churn:
    """Creates, edits and deletes users' objects in the background while the faults run."""

    def __init__(self, e2e: E2E, *, workspaces: list[str], seed: int) -> None:
        self.e2e = e2e
        self.workspaces = workspaces
        self.random = random.Random(seed)
        self.live: dict[tuple[str, str], int] = {}  # (workspace, name) -> spec.size
        self.deleted: set[tuple[str, str]] = set()
        self.counter = 0
        self.edits = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def create(self, workspace: str) -> None:
        name = f"w-{self.counter:05d}"
        self.counter += 1
        size = self.random.randint(1, 1000)
        self.e2e.create_remote(workspace, REMOTE_WIDGET, remote_object("Widget", name, namespace=NAMESPACE, size=size))
        self.live[(workspace, name)] = size

    def step(self) -> None:
        roll = self.random.random()
        if roll < 0.4 or len(self.live) < 10:
            self.create(self.random.choice(self.workspaces))
        elif roll < 0.75:
            workspace, name = self.random.choice(sorted(self.live))
            size = self.random.randint(1, 1000)
            self.e2e.patch_remote(
                workspace, REMOTE_WIDGET, namespace=NAMESPACE, name=name, patch={"spec": {"size": size}}
            )
            self.live[(workspace, name)] = size
            self.edits += 1
        else:
            workspace, name = self.random.choice(sorted(self.live))
            self.e2e.rest.delete(self.e2e.remote_path(workspace, REMOTE_WIDGET, namespace=NAMESPACE, name=name))
            del self.live[(workspace, name)]
            self.deleted.add((workspace, name))

    def start(self, *, interval: float) -> None:
        def run() -> None:
            while not self._stop.is_set():
                self.step()
                time.sleep(interval)

        self._thread = threading.Thread(target=run, name="churn", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)


def check_world(e2e: E2E, churn: Churn) -> bool:
    """AssertionError saying what is still wrong, True once the world is exactly right."""
    clusters = {ws: e2e.world.cluster(ws) for ws in churn.workspaces}
    local = e2e.local_objects(WIDGET)
    seen: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for obj in local:
        seen.setdefault((obj["metadata"]["namespace"], obj["metadata"]["name"]), []).append(obj)
    expected = {
        (clusters[ws], default_local_name(namespace=NAMESPACE, name=name)): (ws, name, size)
        for (ws, name), size in churn.live.items()
    }
    missing = sorted(set(expected) - set(seen))
    extra = sorted(set(seen) - set(expected))
    assert not missing, f"{len(missing)} remote objects without a local copy, e.g. {missing[:3]}"
    assert not extra, f"{len(extra)} local copies of deleted or unknown objects, e.g. {extra[:3]}"
    wrong = [
        (key, objs[0].get("spec", {}).get("size"), expected[key][2])
        for key, objs in seen.items()
        if objs[0].get("spec", {}).get("size") != expected[key][2]
    ]
    assert not wrong, f"{len(wrong)} local copies with a stale spec, e.g. {wrong[:3]}"
    hashes = [o["metadata"]["labels"].get(f"{LINK}/remote-object-name-hash") for o in local]
    assert len(local) == len(expected) and len(set(zip(hashes, (o["metadata"]["namespace"] for o in local)))) == len(
        local
    ), "duplicate local copies"
    for ws in churn.workspaces:
        remote = e2e.rest.list(e2e.remote_path(ws, REMOTE_WIDGET, namespace=NAMESPACE))
        for obj in remote:
            name = obj["metadata"]["name"]
            finalizers = obj["metadata"].get("finalizers") or []
            assert (ws, name) not in churn.deleted, f"{ws}/{name} was deleted but is still there ({finalizers})"
            assert finalizers.count(FINALIZER) == 1, f"{ws}/{name} has finalizers {finalizers}"
        assert len(remote) == sum(1 for key in churn.live if key[0] == ws), f"objects lost in {ws}"
    return True


def run_chaos(e2e: E2E, scale: ChaosScale, *, seed: int = 7) -> ChaosResult:
    sim = e2e.simulated.sim
    names = workspace_names(scale.workspaces)
    for name in names[2:]:
        sim.add_workspace(name)
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    servlet = e2e.servlet(leader_election=False)
    for name in names:
        e2e.wait_served(name, REMOTE_WIDGET, timeout=30)
        e2e.world.ensure_namespace(NAMESPACE, workspace=name)

    result = ChaosResult(objects=scale.objects, workspaces=scale.workspaces, kills=scale.kills)
    churn = Churn(e2e, workspaces=names, seed=seed)
    sim.set_faults(write_faults(seed=seed, watch_seconds=2.0))
    # Half the objects exist before the churn starts; the churn brings in the rest.
    for index in range(scale.objects // 2):
        churn.create(names[index % len(names)])
    steps = scale.objects - scale.objects // 2
    # A step creates with 40% odds: enough steps to bring in the other half within the churn time.
    churn.start(interval=scale.churn_seconds * 0.4 / max(1, steps))
    started = time.monotonic()
    kill_times = [scale.churn_seconds * (i + 1) / (scale.kills + 1) for i in range(scale.kills)]
    relists = 0
    for kill_at in kill_times:
        while time.monotonic() - started < kill_at:
            sim.set_history_size(random.Random(seed + int(kill_at)).choice((1, 2, 5)))  # forces 410 Gone on resume
            time.sleep(0.5)
            sim.set_history_size(10_000)
            time.sleep(0.5)
        relists += int(sum(servlet.metric("servlet_watch_relists_total")))
        servlet.kill()
        time.sleep(0.5)  # the world goes on without it for a moment
        servlet = e2e.servlet(leader_election=False, token=f"servlet-{kill_at:.0f}")
    # Churn for the planned time, and until `objects` objects were created in all.
    while time.monotonic() - started < scale.churn_seconds or churn.counter < scale.objects:
        time.sleep(0.2)
    churn.stop()
    result.faults_fired = sim.faults.fired()
    sim.clear_faults()
    sim.set_history_size(10_000)
    faults_stopped = time.monotonic()
    e2e.eventually(lambda: check_world(e2e, churn), timeout=scale.converge_timeout, what="the world to converge")
    result.converged_after = time.monotonic() - faults_stopped
    result.relists = relists + int(sum(servlet.metric("servlet_watch_relists_total")))
    result.created, result.edited, result.deleted = churn.counter, churn.edits, len(churn.deleted)
    return result
