"""Replicas dividing buckets through Leases on kcpsim, proven from kcpsim's request log.

Each replica is a process (`replica.py`) that writes to the workspaces of the buckets it owns;
its requests carry its name in the User-Agent. Short Lease timings (3 s duration, 2 s renew
deadline) keep the tests quick; the laws are the same at 15 s.

The law checked on the whole log, `assert_one_writer_at_a_time`: every write to a workspace was
begun by the replica whose write to that bucket's Lease came last before it, and at most one
Lease duration after that Lease write. A second writer in overlapping ownership breaks it, since
taking a bucket over is itself a Lease write. What no client-side fence can stop, and the law
therefore allows: a request whose sending a freeze (SIGSTOP) interrupted completes when the
process resumes, after another replica may have taken over (docs/decisions.md).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kcpsim import KcpSim, RequestRecord
from kcpsim.waiting import eventually
from servlet.adapters.kube import resource_class
from servlet.app.runtime.leader import parse_time
from servlet.core.buckets import owned_by
from servlet.core.ports import LEASE_TYPE
from tests.integration.kcpsim.kubectl import kubectl
from tests.integration.replicas.replica import CONFIG_MAP, NAMESPACE, PREFIX, workspace_of

REPO = Path(__file__).resolve().parents[3]
BUCKETS = 8
LEASE_DURATION = 3.0
# A dead replica's buckets: its Leases expire, the others see it gone and campaign (a few rounds).
TAKEOVER_LIMIT = LEASE_DURATION + 3.0

pytestmark = pytest.mark.timeout(90)


class Replicas:
    """Replica processes against one simulator, and what its request log says about them."""

    def __init__(self, sim: KcpSim, directory: Path) -> None:
        self.sim = sim
        self.kubeconfig = sim.write_kubeconfigs(directory)["service"]
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        client = sim.client(sim.service_config())
        for bucket in range(BUCKETS):
            name = workspace_of(bucket, BUCKETS)
            client.create(resource_class(CONFIG_MAP)({"metadata": {"name": name, "namespace": NAMESPACE}}))
            # Free Leases made beforehand, so that every taking of a bucket is an update naming
            # the Lease in its path (a create names it only in its body, which the log does not keep).
            client.create(
                resource_class(LEASE_TYPE)(
                    {"metadata": {"name": f"{PREFIX}-bucket-{bucket}", "namespace": NAMESPACE}, "spec": {}}
                )
            )
        self._client = client

    def start(self, identity: str) -> None:
        self.processes[identity] = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.replicas.replica", str(self.kubeconfig), identity],
            cwd=REPO,
            env={**os.environ, "PYTHONPATH": str(REPO)},
        )

    def signal(self, identity: str, which: signal.Signals) -> None:
        self.processes[identity].send_signal(which)

    def stop_all(self) -> None:
        for process in self.processes.values():
            process.send_signal(signal.SIGCONT)
            process.kill()
            process.wait()
        self._client.close()

    def holders(self) -> dict[int, str]:
        """Who holds each bucket Lease now, by the Leases themselves (unexpired, with a holder)."""
        held: dict[int, str] = {}
        now = time.time()
        for lease in self._client.list(resource_class(LEASE_TYPE), namespace=NAMESPACE):
            spec = dict(lease.spec or {})
            name = lease.metadata.name
            renewed = parse_time(str(spec.get("renewTime") or ""))
            if not name.startswith(f"{PREFIX}-bucket-") or not spec.get("holderIdentity") or renewed is None:
                continue
            if renewed.timestamp() + spec["leaseDurationSeconds"] > now:
                held[int(name.rsplit("-", 1)[1])] = spec["holderIdentity"]
        return held

    def records(self) -> list[RequestRecord]:
        return self.sim.requests.records()

    def writes(self) -> dict[int, list[RequestRecord]]:
        """The successful writes to each bucket's workspace, in the order they were sent."""
        buckets = {workspace_of(bucket, BUCKETS): bucket for bucket in range(BUCKETS)}
        found: dict[int, list[RequestRecord]] = {bucket: [] for bucket in range(BUCKETS)}
        for record in self.records():
            name = record.path.rsplit("/", 1)[-1]
            if record.verb == "patch" and record.resource == "configmaps" and record.status == 200 and name in buckets:
                found[buckets[name]].append(record)
        return {bucket: sorted(records, key=lambda r: r.started) for bucket, records in found.items()}

    def writers_since(self, moment: float) -> dict[int, set[str]]:
        return {
            bucket: {writer(record) for record in records if record.started >= moment}
            for bucket, records in self.writes().items()
        }

    def writing_as(self, held: dict[int, str], since: float) -> bool:
        """Whether every bucket was written since `since` by the replica `held` names."""
        writers = self.writers_since(since)
        assert all(held[bucket] in writers[bucket] for bucket in held), f"writers {writers}, holders {held}"
        return True

    def balanced(self, members: set[str]) -> dict[int, str]:
        """The holders, once every bucket is held by one of `members` and each writes its share."""
        held = self.holders()
        assert set(held) == set(range(BUCKETS)), f"buckets without a holder: {set(range(BUCKETS)) - set(held)}"
        assert set(held.values()) == members, f"holders {held}"
        loads = [len(owned_by(held, member)) for member in members]
        assert max(loads) - min(loads) <= 1, f"unbalanced: {held}"
        return held


def writer(record: RequestRecord) -> str:
    return record.user_agent.removeprefix("replica/")


def assert_one_writer_at_a_time(records: list[RequestRecord]) -> None:
    lease_writes: dict[int, list[RequestRecord]] = {}
    for record in records:
        name = record.path.rsplit("/", 1)[-1]
        taken = record.resource == "leases" and record.verb == "update" and record.status == 200
        if taken and name.startswith(f"{PREFIX}-bucket-"):
            lease_writes.setdefault(int(name.rsplit("-", 1)[1]), []).append(record)
    workspaces = {workspace_of(bucket, BUCKETS): bucket for bucket in range(BUCKETS)}
    checked = 0
    for record in records:
        name = record.path.rsplit("/", 1)[-1]
        if record.resource != "configmaps" or record.verb != "patch" or record.status != 200:
            continue
        bucket = workspaces[name]
        before = [lease for lease in lease_writes.get(bucket, []) if lease.started < record.started]
        assert before, f"{writer(record)} wrote to bucket {bucket} before anyone held its Lease"
        last = max(before, key=lambda lease: lease.started)
        assert writer(last) == writer(record), (
            f"{writer(record)} wrote to bucket {bucket} at {record.started:.3f} after {writer(last)} "
            f"wrote its Lease at {last.started:.3f}"
        )
        assert record.started - last.started <= LEASE_DURATION, (
            f"{writer(record)} wrote to bucket {bucket} {record.started - last.started:.1f} s after its last "
            "Lease write, past the Lease's duration"
        )
        checked += 1
    assert checked > 0, "no write to check"


@pytest.fixture
def replicas(kcpsim: KcpSim, tmp_path: Path) -> Iterator[Replicas]:
    group = Replicas(kcpsim, tmp_path)
    try:
        yield group
    finally:
        group.stop_all()


def test_replicas_share_the_buckets_and_a_killed_ones_are_taken_over_in_time(replicas: Replicas) -> None:
    for identity in ("r1", "r2", "r3"):
        replicas.start(identity)
    held = eventually(
        lambda: replicas.balanced({"r1", "r2", "r3"}), what="three replicas sharing 8 buckets", timeout=20
    )
    victim = owned_by(held, "r2")

    killed_at = time.time()
    replicas.signal("r2", signal.SIGKILL)

    def taken_over() -> float:
        replicas.balanced({"r1", "r3"})
        writers = replicas.writers_since(killed_at)
        firsts = []
        for bucket in victim:
            new = [r for r in replicas.writes()[bucket] if r.started >= killed_at and writer(r) != "r2"]
            assert new, f"bucket {bucket} of the killed replica not written since (writers: {writers[bucket]})"
            firsts.append(new[0].started)
        return max(firsts) - killed_at

    takeover = eventually(taken_over, what="the killed replica's buckets written by the others", timeout=20)
    print(f"buckets of a killed replica taken over after {takeover:.1f} s")
    assert takeover <= TAKEOVER_LIMIT, f"took {takeover:.1f} s, more than {TAKEOVER_LIMIT} s"
    assert_one_writer_at_a_time(replicas.records())


def test_a_frozen_replica_writes_nothing_once_the_others_took_its_buckets(replicas: Replicas) -> None:
    for identity in ("r1", "r2", "r3"):
        replicas.start(identity)
    held = eventually(
        lambda: replicas.balanced({"r1", "r2", "r3"}), what="three replicas sharing 8 buckets", timeout=20
    )
    since = time.time()
    eventually(lambda: replicas.writing_as(held, since), what="every replica writing its buckets", timeout=5)
    frozen_at = time.time()
    replicas.signal("r1", signal.SIGSTOP)
    taken = eventually(lambda: replicas.balanced({"r2", "r3"}), what="the others holding every bucket", timeout=15)
    eventually(lambda: replicas.writing_as(taken, frozen_at), what="the frozen replica's buckets written", timeout=5)
    replicas.signal("r1", signal.SIGCONT)
    # Back from the freeze, it rejoins: the balance gives it a share again, handed over cleanly.
    eventually(lambda: replicas.balanced({"r1", "r2", "r3"}), what="the thawed replica back in", timeout=20)
    assert_one_writer_at_a_time(replicas.records())


def test_a_joining_replica_takes_only_its_share_without_double_work(replicas: Replicas) -> None:
    for identity in ("r1", "r2"):
        replicas.start(identity)
    before = eventually(lambda: replicas.balanced({"r1", "r2"}), what="two replicas sharing 8 buckets", timeout=20)
    joined_at = time.time()
    replicas.start("r3")
    after = eventually(lambda: replicas.balanced({"r1", "r2", "r3"}), what="the newcomer holding its share", timeout=20)
    moved = {bucket for bucket in range(BUCKETS) if before[bucket] != after[bucket]}
    assert moved == owned_by(after, "r3"), f"before {before}, after {after}"
    for bucket, writers in replicas.writers_since(joined_at).items():
        expected = {before[bucket], "r3"} if bucket in moved else {before[bucket]}
        assert writers <= expected, f"bucket {bucket} written by {writers}"
    assert_one_writer_at_a_time(replicas.records())

    # A replica stopped with SIGTERM hands its buckets back at once, without waiting for expiry.
    stopped_at = time.time()
    replicas.signal("r3", signal.SIGTERM)
    eventually(lambda: replicas.balanced({"r1", "r2"}), what="r3's buckets back with r1 and r2", timeout=LEASE_DURATION)
    assert time.time() - stopped_at < LEASE_DURATION
    assert_one_writer_at_a_time(replicas.records())


def test_kubectl_shows_who_holds_each_bucket(replicas: Replicas, tmp_path: Path) -> None:
    for identity in ("r1", "r2"):
        replicas.start(identity)
    held = eventually(lambda: replicas.balanced({"r1", "r2"}), what="two replicas sharing 8 buckets", timeout=20)
    template = '{range .items[*]}{.metadata.name}={.spec.holderIdentity}{"\\n"}{end}'
    shown = kubectl(replicas.kubeconfig, "-n", NAMESPACE, "get", "leases", "-o", f"jsonpath={template}", cache=tmp_path)
    assert shown.returncode == 0, shown.stderr
    holders = dict(line.split("=", 1) for line in shown.stdout.splitlines())
    # The holders may move on between the two reads only if a replica died, and none did.
    assert {name: holder for name, holder in holders.items() if "-bucket-" in name} == {
        f"{PREFIX}-bucket-{bucket}": owner for bucket, owner in held.items()
    }
    assert sorted(holder for name, holder in holders.items() if "-member-" in name) == ["r1", "r2"]
