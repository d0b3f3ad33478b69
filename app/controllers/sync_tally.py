"""Which objects of one sync worker fail, told as the PublishedResource's `Synced` condition.

Each reconcile notes whether its object syncs or why not (a conflict or error of its plan, or a
write that failed). Writing the status for every such note would cost one status write per
object event; instead the condition is computed from the tally at most once every `interval`
seconds, and the status board writes only when the condition changed.

With `--buckets`, each replica's tally covers its share of the workspaces: `SyncShares` carries
every tally's summary to the other replicas (through the replica's membership Lease) and theirs
to each tally, which then reports the condition over all shares (`core.sync_shares`).

Deliberately not here: what the condition says (`core.conditions.synced_condition`) and writing
the status (`status.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from servlet.app.controllers.caches import Cache
from servlet.app.controllers.status import StatusBoard
from servlet.core.conditions import NAMED_FAILURES, synced_condition
from servlet.core.context import SyncContext
from servlet.core.filtering import count_admitted
from servlet.core.keys import metadata_of, string_map
from servlet.core.model import RemoteKey
from servlet.core.sync_shares import SHARES_ANNOTATION, ShareSummary, decode_shares, encode_shares, synced_of_shares

# At most one Synced report per PublishedResource in this many seconds.
REPORT_INTERVAL = 5.0
# A failure's reason as a Synced message quotes it; the whole reason is in the object's Event.
REASON_LIMIT = 300


def objects_synced(context: SyncContext, remote: Cache) -> int:
    """The objects `spec.filter` admits: the N of "k of N objects fail to sync". Counted from the
    cache's keys every few seconds: decoding every object held the event loop 0.6 s at 100,000."""
    return count_admitted(
        context.published.spec.filter,
        remote.keys(),
        namespace_of=lambda key: key.namespace,
        labels_of=lambda key: string_map(metadata_of(remote.get(key) or {}).get("labels")),
    )


def describe_failure(key: RemoteKey) -> str:
    return "/".join(part for part in (key.cluster, key.namespace, key.name) if part)


class SyncTally:
    """The failing objects of one PublishedResource (`name`), reported to `board` now and then."""

    def __init__(
        self,
        *,
        name: str,
        board: StatusBoard,
        total: Callable[[], int],
        clock: Callable[[], float],
        interval: float = REPORT_INTERVAL,
        shares: SyncShares | None = None,
    ) -> None:
        self._name = name
        self._board = board
        self._total = total
        self._clock = clock
        self._interval = interval
        self._failures: dict[RemoteKey, str] = {}
        self._last: float | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._stopped = False
        self._shares = shares
        #: This worker's objects, how many fail and the first failures, as of the last report
        #: (what the other replicas hear of it).
        self.summary = ShareSummary(total=0, failing=0)
        if shares is not None:
            shares.add(name, self)

    def note(self, key: RemoteKey, failure: str | None) -> None:
        """What the last reconcile of `key` found: None when it syncs, else why it does not."""
        if failure is None:
            self._failures.pop(key, None)
        else:
            self._failures[key] = failure if len(failure) <= REASON_LIMIT else failure[: REASON_LIMIT - 3] + "..."
        self._schedule()

    def forget(self, key: RemoteKey) -> None:
        self._failures.pop(key, None)
        self._schedule()

    @property
    def failing(self) -> int:
        return len(self._failures)

    def report(self) -> None:
        """Report the condition now (the worker does once its caches are synced)."""
        self._timer = None
        if self._stopped:
            return
        self._last = self._clock()
        total = self._total()  # a pass over the cache: at most once per interval
        failures = [(describe_failure(key), reason) for key, reason in sorted(self._failures.items())]
        if self._shares is None:
            self._board.report(self._name, synced_condition(total=total, failures=failures))
            return
        self.summary = ShareSummary(total=total, failing=len(failures), failures=tuple(failures[:NAMED_FAILURES]))
        self._board.report(self._name, synced_of_shares(self.summary, self._shares.others(self._name)))

    def heard(self) -> None:
        """The other replicas' summaries changed: report again (within the interval)."""
        self._schedule()

    def _schedule(self) -> None:
        if self._timer is not None or self._stopped or self._last is None:
            return  # a report is due already, or the first one has not been made
        wait = max(0.0, self._last + self._interval - self._clock())
        self._timer = asyncio.get_running_loop().call_later(wait, self.report)

    def stop(self) -> None:
        self._stopped = True
        if self._shares is not None:
            self._shares.remove(self._name, self)
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class SyncShares:
    """With `--buckets`: this replica's tallies, as the others hear them, and what they tell."""

    def __init__(self) -> None:
        self._tallies: dict[str, SyncTally] = {}
        self._others: dict[str, dict[str, ShareSummary]] = {}  # by replica identity, by name

    def add(self, name: str, tally: SyncTally) -> None:
        self._tallies[name] = tally

    def remove(self, name: str, tally: SyncTally) -> None:
        if self._tallies.get(name) is tally:
            del self._tallies[name]

    def annotations(self) -> dict[str, str]:
        """For this replica's membership Lease: every tally's summary."""
        return {SHARES_ANNOTATION: encode_shares({name: tally.summary for name, tally in self._tallies.items()})}

    def hear(self, members: dict[str, dict[str, str]]) -> None:
        """What the other live replicas' membership Leases carry (identity: annotations)."""
        self._others = {
            identity: decode_shares(annotations.get(SHARES_ANNOTATION, "{}"))
            for identity, annotations in members.items()
        }
        for tally in self._tallies.values():
            tally.heard()

    def others(self, name: str) -> list[ShareSummary]:
        return [shares[name] for _, shares in sorted(self._others.items()) if name in shares]
