"""The benchmark world: kcpsim with N workspaces, Widgets published, objects seeded, requests read.

Built from the end-to-end harness (its `start_world`, `E2E` and manifests), so the servlet runs
exactly as in the e2e suite: `servlet run` as a real subprocess against an in-process kcpsim.
The schema is published by one servlet run that is stopped again before the objects are seeded,
so a measured run starts with a backlog of objects that already exist. It measures nothing.
"""

from __future__ import annotations

import copy
import json
import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs

from kcpsim import Topology
from kcpsim.harness.world import World, start_world
from kcpsim.requestlog import RequestRecord
from kcpsim.topology import create
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import GROUP, REMOTE_WIDGET, WIDGET, published_resource, widget_crd

NAMESPACE = "default"  # kcp creates it in every workspace
REMOTE = REMOTE_WIDGET
LOCAL = WIDGET
SEEDED_WORKSPACES = 100


@attrs.frozen
class Scale:
    objects: int
    workspaces: int
    shards: int = 1  # kcp shards the workspaces are spread over (by a hash of their logical cluster)
    padding: int = 0  # characters added to each Widget's spec, for objects of a realistic size

    def __str__(self) -> str:
        over = f" over {self.shards} shards" if self.shards > 1 else ""
        padded = f", {self.padding} more bytes each" if self.padding else ""
        return f"{self.objects} objects{padded} in {self.workspaces} workspaces{over}"


@attrs.frozen
class RemoteObject:
    workspace: str  # short name, team-N
    cluster: str  # logical cluster name
    name: str


def widget_crd_with_status() -> dict[str, Any]:
    """The e2e Widget CRD with a status subresource, so status flows up as for real operators."""
    crd = copy.deepcopy(widget_crd())
    for version in crd["spec"]["versions"]:
        version["subresources"] = {"status": {}}
    return crd


def widget(name: str, *, index: int, padding: int = 0) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": "bench", "shard": str(index % 10)}},
        "spec": {"size": index, "color": "blue", "note": f"widget number {index}" + "." * padding},
    }


def prepared_world(directory: Path, scale: Scale) -> E2E:
    """kcpsim with `scale.workspaces` bound workspaces and Widgets served in them (no objects yet)."""
    # kcpsim seeds its topology within a 30 s start-up limit; more workspaces are added afterwards.
    seeded = min(scale.workspaces, SEEDED_WORKSPACES)
    # The servlet reads the kubeconfig files the e2e world writes, as a user's would be: no CA and
    # no `insecure-skip-tls-verify` (TLS setup happens once per target, not once per workspace).
    world = start_world(directory, topology=Topology.with_workspaces(seeded, with_schema=False), shards=scale.shards)
    env = E2E(world)
    try:
        env.publish(widget_crd_with_status(), published_resource("widgets", kind="Widget"))
        servlet = env.servlet(token="publisher")
        env.wait_served("team-1", REMOTE, timeout=60)
        servlet.stop()
        env.processes.clear()
        # The rest bind an export that has its schema already, so kcpsim settles each new binding
        # alone: a schema added to the export re-reconciles every binding at once, which blocked
        # kcpsim for longer than a request's timeout with 10,000 workspaces.
        for number in range(seeded + 1, scale.workspaces + 1):
            world.sim.add_workspace(f"team-{number}")
        env.wait_served(f"team-{scale.workspaces}", REMOTE, timeout=60)
    except BaseException:
        env.stop_all()
        world.stop()
        raise
    return env


def seed_objects(world: World, scale: Scale) -> list[RemoteObject]:
    """`scale.objects` Widgets spread evenly over the workspaces, written straight into the store."""
    sim = world.sim
    clusters = {f"team-{w}": world.cluster(f"team-{w}") for w in range(1, scale.workspaces + 1)}
    objects = [
        RemoteObject(
            workspace=f"team-{i % scale.workspaces + 1}",
            cluster=clusters[f"team-{i % scale.workspaces + 1}"],
            name=f"widget-{i}",
        )
        for i in range(scale.objects)
    ]

    def run(batch: list[tuple[int, RemoteObject]]) -> None:
        for index, obj in batch:
            create(sim.kcp, obj.cluster, GROUP, REMOTE.plural, widget(obj.name, index=index, padding=scale.padding))

    numbered = list(enumerate(objects))
    for start in range(0, len(numbered), 500):  # batches keep the simulator's loop responsive
        sim.call(run, numbered[start : start + 500])
    return objects


class Requests:
    """Reads kcpsim's request log from a mark on, without copying what came before each time."""

    def __init__(self, world: World) -> None:
        self._log = world.sim.requests
        self._seen: list[RequestRecord] = []

    def mark(self) -> None:
        self._log.clear()
        self._seen = []

    def since_mark(self) -> list[RequestRecord]:
        records = self._log.records()
        self._seen = records
        return records

    def wait_for_counts(
        self,
        tests: tuple[Callable[[RequestRecord], bool], ...],
        at_least: int,
        *,
        timeout: float,
        what: str,
        guard: Callable[[], None] | None = None,
    ) -> list[RequestRecord]:
        """Wait until each test has matched `at_least` records since the mark; returns the records.

        Each record is looked at once: this polls in kcpsim's own process, and rescanning the
        whole log on every poll slowed the simulator down more the longer a run went.
        """
        deadline = time.monotonic() + timeout
        counts = [0] * len(tests)
        looked_at = 0
        while True:
            if guard is not None:
                guard()
            new = self._log.records_since(looked_at)
            looked_at += len(new)
            for record in new:
                for position, test in enumerate(tests):
                    counts[position] += test(record)
            if all(count >= at_least for count in counts):
                return self.since_mark()
            if time.monotonic() > deadline:
                raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
            time.sleep(0.05)


def is_local_create(record: RequestRecord) -> bool:
    return record.verb == "create" and record.resource == LOCAL.plural and record.cluster == "" and record.status == 201


def is_finalizer_patch(record: RequestRecord) -> bool:
    return (
        record.verb == "patch"
        and record.resource == REMOTE.plural
        and record.virtual_workspace
        and not record.path.endswith("/status")
        and record.status == 200
    )


def write_end(record: RequestRecord) -> float:
    return record.started + record.duration


def classify(record: RequestRecord) -> str:
    """`<verb> <resource> (<where>)`, the row a request counts in."""
    where = "VW" if record.virtual_workspace else ("service" if record.cluster == "" else "kcp")
    subresource = "/status" if record.path.endswith("/status") else ""
    return f"{record.verb} {record.resource or '-'}{subresource} ({where})"


def breakdown(records: list[RequestRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        key = classify(record)
        counts[key] = counts.get(key, 0) + 1
    return dict(sorted(counts.items()))


WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def peak_rss_mb(pid: int) -> float:
    """VmHWM of a process (Linux): the most resident memory it ever had."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmHWM for process {pid}")


def chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def cpu_count() -> int:
    return os.cpu_count() or 1


def cached_json_bytes(env: E2E) -> int:
    """Bytes of compact JSON of what the servlet caches of the synced kind: every remote object as
    the virtual workspace serves it and every local copy, without `managedFields` (never cached)."""
    sim = env.world.sim
    objects = [
        *(
            obj
            for url in vw_urls(env.world)
            for obj in env.rest.list(f"{url.removeprefix(sim.base_url)}/clusters/*{REMOTE.path()}")
        ),
        *env.rest.list(LOCAL.path()),
    ]
    for obj in objects:
        obj.get("metadata", {}).pop("managedFields", None)
    return sum(len(json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()) for obj in objects)


def vw_urls(world: World) -> list[str]:
    """The export's virtual workspace URL on every shard (each serves its own workspaces only)."""
    return [world.sim.vw_url(shard=shard) for shard in range(world.sim.kcp.shards.count)]


def object_writes(records: list[RequestRecord]) -> list[RequestRecord]:
    """The writes about objects and workspaces: everything written but the Leases."""
    return [r for r in records if r.verb in WRITE_VERBS and not r.path.endswith("/leases") and "/leases/" not in r.path]
