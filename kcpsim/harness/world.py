"""A simulated world for the servlet: kcpsim with its prerequisites, and a user's view of it.

`start_world` starts kcpsim in-process (default topology, the export without a schema yet), installs
the PublishedResource CRD and creates the servlet's namespace. `World` knows where things live
(workspace paths, logical cluster names, kubeconfigs per client token); `Rest` talks to it as
`kubectl` would for a user; `CallerLog` remembers which client token made each request, which
kcpsim's own request log cannot tell.
"""

from __future__ import annotations

import json
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import attrs
import httpx2
import yaml

from kcpsim import KcpSim, SimConfig, Topology

# The servlet's CRD and examples are read from its repository, next to this package: kcpsim is
# installed editable from a checkout, never on its own.
REPO = Path(__file__).resolve().parents[2]
PUBLISHED_RESOURCE_CRD = REPO / "charts" / "servlet" / "crds" / "publishedresources.yaml"
EXAMPLES = REPO / "examples" / "certificates"
WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
SERVLET_NAMESPACE = "kdp-system"
REST_TOKEN = "e2e-test"  # the test's own requests: an admin


@attrs.frozen
class Call:
    token: str
    method: str
    path: str
    status: int
    message: str = ""  # the Status message of a refusal (403)
    # When the request arrived and when it was answered (time.monotonic()): which writes overlapped.
    started: float = 0.0
    ended: float = 0.0


class CallerLog:
    """Every request kcpsim answered, with the bearer token of the client that made it.

    kcpsim's own request log does not record who called; each servlet process (and each
    `servlet plan`) gets kubeconfigs with its own token, so this log tells replicas apart.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._owners: dict[str, str] = {}

    def alias(self, token: str, *, owner: str) -> None:
        """Record requests carrying `token` as `owner`'s: one client with a credential per API."""
        with self._lock:
            self._owners[token] = owner

    def install(self, sim: KcpSim) -> None:
        """Wrap kcpsim's request handler; must run before `sim.start()` registers it."""
        inner = sim.server.handle

        async def handle(request: Any) -> Any:
            started = time.monotonic()
            response = await inner(request)
            ended = time.monotonic()
            token = request.headers.get("Authorization", "").removeprefix("Bearer ").strip()
            message = _refusal_message(response) if response.status == 403 else ""
            with self._lock:
                token = self._owners.get(token, token)
                self._calls.append(
                    Call(
                        token=token,
                        method=request.method,
                        path=request.path,
                        status=response.status,
                        message=message,
                        started=started,
                        ended=ended,
                    )
                )
            return response

        sim.server.handle = handle  # type: ignore[method-assign]

    def calls(self, *, token: str | None = None) -> list[Call]:
        with self._lock:
            return [c for c in self._calls if token is None or c.token == token]

    def writes(self, *, token: str | None = None, ignore: Iterable[str] = ()) -> list[Call]:
        """Write requests (POST, PUT, PATCH, DELETE), leaving out paths containing any of `ignore`."""
        skipped = tuple(ignore)
        return [
            c
            for c in self.calls(token=token)
            if c.method in WRITE_METHODS and not any(part in c.path for part in skipped)
        ]


def _refusal_message(response: Any) -> str:
    try:
        return str(json.loads(response.body).get("message", ""))
    except (AttributeError, TypeError, ValueError):
        return ""


class ApiCallFailed(AssertionError):
    """A request of the test itself (not of the servlet) was refused by kcpsim."""


class Rest:
    """Plain JSON over HTTP to kcpsim, as `kubectl` would do it for a user; dicts in and out."""

    def __init__(self, base_url: str, *, token: str = REST_TOKEN, verify: ssl.SSLContext | bool = True) -> None:
        self._client = httpx2.Client(
            base_url=base_url,
            trust_env=False,
            timeout=10,
            headers={"Authorization": f"Bearer {token}"},
            verify=verify,
        )

    def close(self) -> None:
        self._client.close()

    def _route(self, path: str) -> tuple[httpx2.Client, str]:
        """The client and URL for `path` (one server here; the portable e2e lane has two)."""
        return self._client, path

    def _send(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        allow: Sequence[int] = (),
    ) -> httpx2.Response:
        content = json.dumps(body) if body is not None else None
        headers = {"Content-Type": content_type} if content is not None else {}
        client, url = self._route(path)
        response = client.request(method, url, content=content, headers=headers)
        if response.status_code >= 400 and response.status_code not in allow:
            raise ApiCallFailed(f"{method} {path} answered {response.status_code}: {response.text[:500]}")
        return response

    def get(self, path: str) -> dict[str, Any] | None:
        """The object, or None when it does not exist (or the resource is not served yet)."""
        response = self._send("GET", path, allow=(403, 404))
        return None if response.status_code in (403, 404) else dict(response.json())

    def list(self, path: str) -> list[dict[str, Any]]:
        response = self._send("GET", path, allow=(403, 404))
        return [] if response.status_code in (403, 404) else list(response.json().get("items") or [])

    def served(self, path: str) -> bool:
        return self._send("GET", path, allow=(403, 404)).status_code == 200

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self._send("POST", path, body).json())

    def merge_patch(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        return dict(self._send("PATCH", path, body, content_type="application/merge-patch+json").json())

    def delete(self, path: str) -> None:
        self._send("DELETE", path, allow=(404,))


def resource_path(*, group: str, version: str, plural: str, namespace: str = "", name: str = "") -> str:
    """`/api/v1/...` or `/apis/<group>/<version>/...`, namespaced when `namespace` is given."""
    path = f"/api/{version}" if group == "" else f"/apis/{group}/{version}"
    if namespace:
        path += f"/namespaces/{namespace}"
    path += f"/{plural}"
    return f"{path}/{name}" if name else path


_PLURALS = {
    ("v1", "Namespace"): "namespaces",
    ("v1", "Secret"): "secrets",
    ("v1", "ConfigMap"): "configmaps",
    ("v1", "ServiceAccount"): "serviceaccounts",
    **{
        ("rbac.authorization.k8s.io/v1", kind): f"{kind.lower()}s"
        for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
    },
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): "customresourcedefinitions",
    ("services.kdp.k8c.io/v1alpha1", "PublishedResource"): "publishedresources",
}


def collection_path(document: dict[str, Any]) -> str:
    """Where a manifest of one of the kinds the harness knows is created."""
    group, _, version = document["apiVersion"].rpartition("/")
    plural = _PLURALS[(document["apiVersion"], document["kind"])]
    return resource_path(
        group=group, version=version, plural=plural, namespace=document["metadata"].get("namespace", "")
    )


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


@attrs.define
class World:
    """A running kcpsim with the servlet's prerequisites, and where everything in it lives."""

    sim: KcpSim
    directory: Path
    callers: CallerLog
    rest: Rest

    @property
    def org(self) -> str:
        return self.sim.topology.org

    @property
    def group(self) -> str:
        return self.sim.topology.group

    @property
    def export(self) -> str:
        return self.sim.topology.export

    def cluster(self, workspace: str) -> str:
        """Logical cluster name of a consumer workspace given by short name (`team-a`)."""
        return self.sim.cluster_of(f"{self.org}:{workspace}")

    def in_workspace(self, workspace: str, path: str) -> str:
        return f"/clusters/{self.org}:{workspace}{path}"

    def in_org(self, path: str) -> str:
        return f"/clusters/{self.org}{path}"

    def apply(self, document: dict[str, Any]) -> dict[str, Any]:
        """Create a service-cluster object (CRD, PublishedResource, Namespace, Secret, ...)."""
        return self.rest.create(collection_path(document), document)

    def ensure_namespace(self, name: str, *, workspace: str | None = None) -> None:
        path = "/api/v1/namespaces" if workspace is None else self.in_workspace(workspace, "/api/v1/namespaces")
        if self.rest.get(f"{path}/{name}") is None:
            self.rest.create(path, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def kubeconfigs(self, token: str, *, kcp_server: str = "", kcp_token: str = "") -> tuple[Path, Path]:
        """service and kcp (org workspace, unless `kcp_server`) kubeconfigs whose requests carry `token`
        (`kcp_token` for kcp, when given). A token kcpsim does not know yet becomes an admin's."""
        paths = []
        for label, server, own in (
            ("service", self.sim.base_url, token),
            ("kcp", kcp_server or self.sim.workspace_url(self.org), kcp_token or token),
        ):
            self.sim.call(self.sim.auth.ensure_token, own)
            config = self.sim.kubeconfig_dict(server)
            config["users"][0]["user"]["token"] = own
            path = self.directory / f"{label}-{own}.kubeconfig"
            path.write_text(yaml.safe_dump(config, sort_keys=False))
            paths.append(path)
        return paths[0], paths[1]

    def stop(self) -> None:
        self.rest.close()
        self.sim.stop()


def world_client(sim: KcpSim, *, token: str = REST_TOKEN) -> Rest:
    """A `Rest` client of `sim` that trusts its CA when it serves HTTPS."""
    verify = ssl.create_default_context(cadata=sim.tls.ca_pem.decode()) if sim.tls else True
    return Rest(sim.base_url, token=token, verify=verify)


def start_world(
    directory: Path,
    *,
    topology: Topology | None = None,
    before_start: Callable[[KcpSim], None] | None = None,
    authz: str = "always-allow",
    shards: int = 1,
    tls: bool = False,
) -> World:
    """kcpsim with the default topology but no schema in the export yet (the servlet adds it),
    the PublishedResource CRD installed and the servlet's namespace created.

    `before_start` may hook more observers into the simulator before it serves anything.
    `authz="rbac"` makes kcpsim hold every identity but the admins to the RBAC it stores;
    `shards` spreads the workspaces over that many kcp shards (`WorkspaceSpec.shard` chooses); `tls`
    serves HTTPS (kubectl sends credentials over HTTPS only)."""
    directory.mkdir(parents=True, exist_ok=True)
    sim = KcpSim(SimConfig(topology=topology or Topology(with_schema=False), authz=authz, shards=shards, tls=tls))
    sim.auth.ensure_token(REST_TOKEN)
    callers = CallerLog()
    callers.install(sim)
    if before_start is not None:
        before_start(sim)
    sim.start()
    world = World(sim=sim, directory=directory, callers=callers, rest=world_client(sim))
    try:
        sim.write_kubeconfigs(directory)
        for document in load_yaml(PUBLISHED_RESOURCE_CRD):
            world.apply(document)
        world.ensure_namespace(SERVLET_NAMESPACE)
    except BaseException:
        world.stop()
        raise
    return world
