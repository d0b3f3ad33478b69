"""The portable lane: the end-to-end suite against a kcp and a service cluster given by kubeconfigs.

With `E2E_KCP_KUBECONFIG` (an identity in the org workspace: its server URL ends in
`/clusters/<org path>`) and `E2E_SERVICE_KUBECONFIG` set, the `e2e` fixture builds an
`ExternalWorld` instead of starting kcpsim. It knows nothing of a simulator: it talks HTTP to the
two servers with the kubeconfigs' credentials, and the servlet runs as a local process
(`servlet run`) with the service kubeconfig's server and a token of the chart's ServiceAccount
(TokenRequest), and the kcp kubeconfig as given. docs/e2e.md lists the prerequisites.

The world is shared by every test, so each test's leftovers are removed after it (best effort):
the PublishedResources and CRDs it applied, the servlet's copies (the namespaces named after the
consumer workspaces' logical clusters), the objects it created in workspaces, new schemas, and
the export's and bindings' specs as they were before the test.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import os
import ssl
from pathlib import Path
from typing import Any

import httpx2
import yaml

from kcpsim.harness.world import PUBLISHED_RESOURCE_CRD, SERVLET_NAMESPACE, Rest, collection_path, load_yaml
from kcpsim.waiting import eventually
from tests.chart.rendering import one
from tests.integration.e2e.identities import chart_rbac

ENV_KCP = "E2E_KCP_KUBECONFIG"
ENV_SERVICE = "E2E_SERVICE_KUBECONFIG"
ENV_APIEXPORT = "E2E_APIEXPORT"  # default certificates.example.corp (also the servlet's API group)
ENV_WORKSPACES = "E2E_WORKSPACES"  # consumer workspaces under the org, default team-a,team-b
SIMULATOR_ONLY = "kcpsim_only"  # the marker of tests that need the simulator's internals
APIS = "/apis/apis.kcp.io/v1alpha1"
PR_PATH = "/apis/services.kdp.k8c.io/v1alpha1/publishedresources"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FINALIZER_PREFIX = "syncer.kdp.k8c.io/"
GONE_TIMEOUT = 60.0


def external_lane() -> bool:
    return bool(os.environ.get(ENV_KCP) or os.environ.get(ENV_SERVICE))


def _current(kubeconfig: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The cluster and user entries of the kubeconfig's current context."""
    name = kubeconfig.get("current-context") or kubeconfig["contexts"][0]["name"]
    context = next(c["context"] for c in kubeconfig["contexts"] if c["name"] == name)
    cluster = next(c["cluster"] for c in kubeconfig["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in kubeconfig["users"] if u["name"] == context["user"])
    return cluster, user


def _http_client(kubeconfig: dict[str, Any], directory: Path) -> tuple[httpx2.Client, str]:
    """A client with the credentials of the kubeconfig's current context, and its server URL.

    Bearer tokens and client certificates (inline or as files) are understood; exec plugins not."""
    cluster, user = _current(kubeconfig)
    context = ssl.create_default_context()
    if cluster.get("certificate-authority-data"):
        context = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
    elif cluster.get("certificate-authority"):
        context = ssl.create_default_context(cafile=cluster["certificate-authority"])
    elif cluster.get("insecure-skip-tls-verify"):
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if user.get("client-certificate-data"):
        pem = base64.b64decode(user["client-certificate-data"]) + b"\n" + base64.b64decode(user["client-key-data"])
        # The ssl module loads client certificates from files only.
        path = directory / f"client-{hashlib.sha1(pem).hexdigest()[:12]}.pem"
        path.write_bytes(pem)
        path.chmod(0o600)
        context.load_cert_chain(str(path))
    elif user.get("client-certificate"):
        context.load_cert_chain(user["client-certificate"], user.get("client-key"))
    headers = {"Authorization": f"Bearer {user['token']}"} if user.get("token") else {}
    client = httpx2.Client(trust_env=False, timeout=10, headers=headers, verify=context)
    return client, str(cluster["server"]).rstrip("/")


class RoutingRest(Rest):
    """`Rest` over two servers: paths under `/clusters/` and `/services/` go to kcp, the rest to
    the service cluster, so the tests' paths mean the same as against kcpsim's single port."""

    def __init__(self, service: httpx2.Client, service_url: str, kcp: httpx2.Client, kcp_url: str) -> None:
        self._client = service
        self._service_url = service_url
        self._kcp = kcp
        self._kcp_url = kcp_url
        self.created: list[str] = []  # every object created through this client, by path

    def create(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        created = super().create(path, body)
        self.created.append(f"{path.partition('?')[0]}/{created['metadata']['name']}")
        return created

    def close(self) -> None:
        self._client.close()
        self._kcp.close()

    def _route(self, path: str) -> tuple[httpx2.Client, str]:
        if path.startswith(("/clusters/", "/services/")):
            return self._kcp, self._kcp_url + path
        return self._client, self._service_url + path


class ExternalWorld:
    """A kcp org workspace and a service cluster that already exist, as the e2e tests see a world."""

    def __init__(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self._service_config = yaml.safe_load(Path(os.environ[ENV_SERVICE]).read_text())
        self._kcp_config = yaml.safe_load(Path(os.environ[ENV_KCP]).read_text())
        service, service_url = _http_client(self._service_config, directory)
        kcp, kcp_url = _http_client(self._kcp_config, directory)
        root, marker, org = kcp_url.partition("/clusters/")
        if not marker:
            raise ValueError(f"{ENV_KCP} must point into the org workspace (its server ends in /clusters/<path>)")
        self.org = org.strip("/")
        self.export = os.environ.get(ENV_APIEXPORT, "certificates.example.corp")
        self.group = self.export
        self.workspaces = tuple(w for w in os.environ.get(ENV_WORKSPACES, "team-a,team-b").split(",") if w)
        self.rest = RoutingRest(service, service_url, kcp, root)
        self._service_url = service_url
        self._tokens: dict[str, str] = {}
        self._prepare()
        self.rest.created.clear()  # what the lane needs stays; what a test creates goes
        self._specs = {path: copy.deepcopy((self.rest.get(path) or {}).get("spec")) for path in self._restorable()}
        self._schemas = {s["metadata"]["name"] for s in self.rest.list(self.in_org(f"{APIS}/apiresourceschemas"))}

    # ---- what the tests call ---------------------------------------------------------------------
    def cluster(self, workspace: str) -> str:
        found = self.rest.get(self.in_workspace(workspace, "/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"))
        assert found is not None, f"workspace {workspace} has no LogicalCluster"
        return str(found["metadata"]["annotations"]["kcp.io/cluster"])

    def in_workspace(self, workspace: str, path: str) -> str:
        return f"/clusters/{self.org}:{workspace}{path}"

    def in_org(self, path: str) -> str:
        return f"/clusters/{self.org}{path}"

    def apply(self, document: dict[str, Any]) -> dict[str, Any]:
        return self.rest.create(collection_path(document), document)

    def ensure_namespace(self, name: str, *, workspace: str | None = None) -> None:
        path = "/api/v1/namespaces" if workspace is None else self.in_workspace(workspace, "/api/v1/namespaces")
        if self.rest.get(f"{path}/{name}") is None:
            self.rest.create(path, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})

    def kubeconfigs(self, token: str, *, kcp_server: str = "", kcp_token: str = "") -> tuple[Path, Path]:
        """The servlet's kubeconfigs: a token of the chart's ServiceAccount on the service cluster
        (one per servlet `token`), and the kcp kubeconfig as given (`kcp_server` replaces its server)."""
        service = copy.deepcopy(self._service_config)
        _, service_user = _current(service)
        for key in ("client-certificate-data", "client-key-data", "client-certificate", "client-key", "exec"):
            service_user.pop(key, None)
        service_user["token"] = self._service_account_token(token)
        kcp = copy.deepcopy(self._kcp_config)
        if kcp_server:
            _current(kcp)[0]["server"] = kcp_server
        paths = []
        for label, config in (("service", service), ("kcp", kcp)):
            path = self.directory / f"{label}-{token}.kubeconfig"
            path.write_text(yaml.safe_dump(config, sort_keys=False))
            path.chmod(0o600)
            paths.append(path)
        return paths[0], paths[1]

    def stop(self) -> None:
        try:
            self._clean_up()
        finally:
            self.rest.close()

    # ---- preparing and cleaning up ---------------------------------------------------------------
    def _prepare(self) -> None:
        """The PublishedResource CRD, the servlet's namespace and the chart's RBAC, when missing."""
        for document in [*load_yaml(PUBLISHED_RESOURCE_CRD)]:
            if self.rest.get(f"{CRD_PATH}/{document['metadata']['name']}") is None:
                self.rest.create(CRD_PATH, document)
        self.ensure_namespace(SERVLET_NAMESPACE)
        for document in chart_rbac():
            self._apply_if_missing(document)

    def _apply_if_missing(self, document: dict[str, Any]) -> None:
        path = collection_path(document)
        if self.rest.get(f"{path}/{document['metadata']['name']}") is None:
            self.rest.create(path, document)

    def _service_account_token(self, token: str) -> str:
        if token not in self._tokens:
            account = one(chart_rbac(), "ServiceAccount")["metadata"]
            review = self.rest.create(
                f"/api/v1/namespaces/{account['namespace']}/serviceaccounts/{account['name']}/token",
                {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
            )
            self.rest.created.pop()  # a TokenRequest is no object to clean up
            self._tokens[token] = str(review["status"]["token"])
        return self._tokens[token]

    def _restorable(self) -> list[str]:
        return [
            self.in_org(f"{APIS}/apiexports/{self.export}"),
            *(self.in_workspace(w, f"{APIS}/apibindings/{self.export}") for w in self.workspaces),
        ]

    def _delete(self, path: str) -> None:
        """Delete, dropping the servlet's finalizers so nothing waits for a servlet that is gone."""
        found = self.rest.get(path)
        if found is None:
            return
        finalizers = found["metadata"].get("finalizers") or []
        if any(f.startswith(FINALIZER_PREFIX) for f in finalizers):
            kept = [f for f in finalizers if not f.startswith(FINALIZER_PREFIX)]
            self.rest.merge_patch(path, {"metadata": {"finalizers": kept or None}})
        self.rest.delete(path)

    def _wait_gone(self, paths: list[str]) -> None:
        def gone() -> bool:
            left = [p for p in paths if self.rest.get(p) is not None]
            assert not left, f"still there: {left}"
            return True

        eventually(gone, timeout=GONE_TIMEOUT, what="the test's objects to be gone", interval=0.2)

    def _clean_up(self) -> None:
        for path in [f"{PR_PATH}/{p['metadata']['name']}" for p in self.rest.list(PR_PATH)]:
            self._delete(path)
        created = list(reversed(self.rest.created))
        for path in created:
            self._delete(path)
        # The servlet's local copies live in namespaces named after the workspaces' logical clusters.
        copies = [f"/api/v1/namespaces/{self.cluster(w)}" for w in self.workspaces]
        for path in copies:
            self._delete(path)
        schemas = self.in_org(f"{APIS}/apiresourceschemas")
        for schema in self.rest.list(schemas):
            if schema["metadata"]["name"] not in self._schemas:
                self.rest.delete(f"{schemas}/{schema['metadata']['name']}")
        for path, spec in self._specs.items():
            current = self.rest.get(path)
            if current is not None and current.get("spec") != spec:
                added = {key: None for key in current.get("spec") or {} if key not in (spec or {})}
                self.rest.merge_patch(path, {"spec": {**added, **(spec or {})}})
        self._wait_gone([*created, *copies])
        self.rest.created.clear()
