"""A log of every API request kcpsim answered, for tests and benchmarks that count API calls.

Thread-safe: the server appends from its event loop thread, tests read from theirs. Admin
endpoints (`/_kcpsim/...`) are not logged. Watch requests are logged when the stream ends, with
the stream's lifetime as duration.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import attrs


@attrs.frozen
class RequestRecord:
    method: str
    path: str
    query: str
    verb: str  # get | list | watch | create | update | patch | delete | deletecollection | discovery | other
    resource: str  # plural, "" for discovery
    cluster: str  # logical cluster name, "*" for wildcard, "" for the service cluster
    virtual_workspace: bool
    status: int
    duration: float
    started: float
    fault: str = ""  # which injected fault answered, if any
    user_agent: str = ""  # tells apart the clients (replicas) sharing one server

    def as_dict(self) -> dict[str, Any]:
        return attrs.asdict(self)


class RequestLog:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._records: list[RequestRecord] = []

    def append(self, record: RequestRecord) -> None:
        with self._lock:
            self._records.append(record)

    def records(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._records)

    def records_since(self, start: int) -> list[RequestRecord]:
        """The records from position `start` on (positions count from the last `clear`)."""
        with self._lock:
            return self._records[start:]

    def clear(self) -> None:
        with self._lock:
            self._records.clear()

    def count(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        cluster: str | None = None,
        status: int | None = None,
        where: Callable[[RequestRecord], bool] | None = None,
    ) -> int:
        return len(self.matching(verb=verb, resource=resource, cluster=cluster, status=status, where=where))

    def matching(
        self,
        *,
        verb: str | None = None,
        resource: str | None = None,
        cluster: str | None = None,
        status: int | None = None,
        where: Callable[[RequestRecord], bool] | None = None,
    ) -> list[RequestRecord]:
        return [
            r
            for r in self.records()
            if (verb is None or r.verb == verb)
            and (resource is None or r.resource == resource)
            and (cluster is None or r.cluster == cluster)
            and (status is None or r.status == status)
            and (where is None or where(r))
        ]
