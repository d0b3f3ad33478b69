"""Every request the servlet makes to the (simulated) service cluster, as RBAC sees it.

kcpsim's request log knows verbs but not who called; the e2e suite's `CallerLog` knows who called
but not the query (a GET of a collection is a list or a watch only by its query). So this module
starts the e2e suite's world itself (same steps as `start_world`) with one more wrapper around
kcpsim's handler that keeps token, method, path and query of every service-cluster request, and
turns each into the attributes the Kubernetes RBAC authorizer decides on: verb, API group,
resource (with subresource) and namespace.

Deliberately not here: what the servlet is asked to do (the test's scenario) and what RBAC allows
(`rbac.py`).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import attrs

from kcpsim import KcpSim, Topology
from kcpsim.harness.world import World, start_world

# Paths of kcp: workspaces and the APIExport virtual workspace. Everything else is the service cluster.
KCP_PREFIXES = ("/clusters/", "/services/")


@attrs.frozen(order=True)
class ApiRequest:
    """A resource request as the RBAC authorizer sees it; `namespace` "" = cluster-wide."""

    verb: str
    group: str
    resource: str
    namespace: str

    def describe(self) -> str:
        where = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return f"{self.verb} {self.resource}.{self.group or 'core'} {where}"


@attrs.frozen
class RawRequest:
    token: str
    method: str
    path: str
    query: str


def _verb(method: str, *, named: bool, query: str) -> str:
    if method == "GET":
        if named:
            return "get"
        return "watch" if parse_qs(query).get("watch", [""])[0] in ("true", "1") else "list"
    if method == "DELETE":
        return "delete" if named else "deletecollection"
    return {"POST": "create", "PUT": "update", "PATCH": "patch"}.get(method, method.lower())


def as_api_request(method: str, path: str, query: str) -> ApiRequest | None:
    """RBAC attributes of a resource request; None for discovery and other non-resource paths."""
    parts = [p for p in path.split("/") if p]
    if len(parts) >= 3 and parts[0] == "api":
        group, rest = "", parts[2:]
    elif len(parts) >= 4 and parts[0] == "apis":
        group, rest = parts[1], parts[3:]
    else:
        return None
    namespace = ""
    # /namespaces/<ns>/<resource>/... is a namespaced request; /namespaces/<name>[/status] is the
    # Namespace object itself (counted as cluster-wide here, the stricter reading).
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace, rest = rest[1], rest[2:]
    resource = rest[0] if len(rest) < 3 else f"{rest[0]}/{rest[2]}"
    return ApiRequest(
        verb=_verb(method, named=len(rest) >= 2, query=query), group=group, resource=resource, namespace=namespace
    )


class ServiceClusterRecorder:
    """Keeps every service-cluster request kcpsim receives, with the client's bearer token."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._requests: list[RawRequest] = []

    def install(self, sim: KcpSim) -> None:
        """Wrap kcpsim's request handler; must run before `sim.start()` registers it."""
        inner = sim.server.handle

        async def handle(request: Any) -> Any:
            # Kept when it arrives: a watch answers only when its stream ends.
            if not request.path.startswith(KCP_PREFIXES) and not request.path.startswith("/_kcpsim/"):
                token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
                with self._lock:
                    self._requests.append(
                        RawRequest(token=token, method=request.method, path=request.path, query=request.query_string)
                    )
            return await inner(request)

        sim.server.handle = handle  # type: ignore[method-assign]

    def raw(self, *, tokens: set[str]) -> list[RawRequest]:
        with self._lock:
            return [r for r in self._requests if r.token in tokens]

    def api_requests(self, *, tokens: set[str]) -> set[ApiRequest]:
        found = (as_api_request(r.method, r.path, r.query) for r in self.raw(tokens=tokens))
        return {request for request in found if request is not None}

    def non_resource_paths(self, *, tokens: set[str]) -> set[str]:
        return {r.path for r in self.raw(tokens=tokens) if as_api_request(r.method, r.path, r.query) is None}


def start_recorded_world(directory: Path, *, topology: Topology | None = None) -> tuple[World, ServiceClusterRecorder]:
    """The e2e suite's starting world (see `start_world`), recording service-cluster requests."""
    recorder = ServiceClusterRecorder()
    return start_world(directory, topology=topology, before_start=recorder.install), recorder
