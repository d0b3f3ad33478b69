"""Seeding a kcp topology: root, an org workspace with an APIExport, consumer workspaces bound to it.

The default is the fixture set of the kcp reference (section 7): org `root:myorg` = logical
cluster `abc123xyz`, export `certificates.example.corp` claiming namespaces and secrets,
workspaces team-a (`k7v2m9x4q1w8z3r5`) and team-b (`p4n8c2l6t0y9h1j3`). Names are configurable;
other workspaces get deterministic 16-character cluster names. Seeding goes through the same
admission and controllers as API calls, so seeded objects look like kcp-made ones.
"""

from __future__ import annotations

import base64
from typing import TYPE_CHECKING, Any

import attrs

from kcpsim.kcp import Kcp, cluster_name_for
from kcpsim.resources import ResourceDef
from kcpsim.store import Obj

if TYPE_CHECKING:
    from kcpsim.world import World

FIXTURE_CLUSTERS = {
    "root:myorg": "abc123xyz",
    "root:myorg:team-a": "k7v2m9x4q1w8z3r5",
    "root:myorg:team-b": "p4n8c2l6t0y9h1j3",
}


@attrs.frozen
class WorkspaceSpec:
    name: str
    cluster: str = ""  # logical cluster name; derived from the path when empty
    shard: int | None = None  # the kcp shard serving it (0 is root); None: by a hash of its cluster


@attrs.frozen
class Topology:
    org: str = "root:myorg"
    export: str = "certificates.example.corp"
    workspaces: tuple[WorkspaceSpec, ...] = (WorkspaceSpec("team-a"), WorkspaceSpec("team-b"))
    claims: tuple[str, ...] = ("namespaces", "secrets")  # core resources the export claims at start
    with_schema: bool = True  # an APIResourceSchema for `certificates` in the export's group
    with_samples: bool = False  # sample Certificates and Secrets in the first two workspaces
    identity_key: str = "fixture-identity-key-certificates-example-corp"
    org_cluster: str = ""

    @classmethod
    def with_workspaces(cls, count: int, **kwargs: Any) -> Topology:
        """N consumer workspaces named team-1 ... team-N."""
        return cls(workspaces=tuple(WorkspaceSpec(f"team-{i}") for i in range(1, count + 1)), **kwargs)

    @classmethod
    def reference(cls) -> Topology:
        """The full fixture of the kcp reference, sample objects included."""
        return cls(with_samples=True)

    def org_cluster_name(self) -> str:
        return self.org_cluster or FIXTURE_CLUSTERS.get(self.org) or cluster_name_for(self.org)

    def workspace_path(self, ws: WorkspaceSpec) -> str:
        return f"{self.org}:{ws.name}"

    def workspace_cluster(self, ws: WorkspaceSpec) -> str:
        path = self.workspace_path(ws)
        return ws.cluster or FIXTURE_CLUSTERS.get(path) or cluster_name_for(path)

    @property
    def group(self) -> str:
        return self.export


def _rdef(world: World, cluster: str, group: str, plural: str) -> ResourceDef:
    return next(r for r in world.catalog.served(cluster) if r.group == group and r.plural == plural)


def create(kcp: Kcp, cluster: str, group: str, plural: str, body: Obj, *, version: str | None = None) -> Obj:
    world = kcp.world
    rdef = _rdef(world, cluster, group, plural)
    with kcp.system():
        return world.create(
            rdef,
            cluster,
            body["metadata"].get("namespace", ""),
            body,
            version=version or rdef.versions[0],
            manager="kcp",
        )


def add_workspace_cluster(
    kcp: Kcp,
    *,
    path: str,
    parent: str | None,
    owner: Obj | None = None,
    name: str = "",
    workspace_type: str = "root:universal",
) -> str:
    """Register a logical cluster for `path` and create its `LogicalCluster` named `cluster`."""
    world = kcp.world
    name = name or FIXTURE_CLUSTERS.get(path) or cluster_name_for(path)
    world.add_cluster(name, path)
    shard = kcp.shards.name(kcp.shards.shard_of(name))
    annotations = {"core.kcp.io/shard": shard, "internal.tenancy.kcp.io/type": workspace_type}
    if path != "root":
        annotations["kcp.io/path"] = path
    spec: dict[str, Any] = {}
    if parent is not None:
        spec["owner"] = {
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "resource": "workspaces",
            "name": path.rsplit(":", 1)[-1],
            "cluster": parent,
            "uid": (owner or {}).get("metadata", {}).get("uid", world.new_uid()),
        }
    obj = create(
        kcp,
        name,
        "core.kcp.io",
        "logicalclusters",
        {
            "apiVersion": "core.kcp.io/v1alpha1",
            "kind": "LogicalCluster",
            "metadata": {
                "name": "cluster",
                "annotations": annotations,
                "finalizers": ["core.kcp.io/logicalcluster-deletion"],
            },
            "spec": spec,
        },
    )
    _namespace(kcp, name, "default")  # kcp creates `default` in every workspace
    rdef = _rdef(world, name, "core.kcp.io", "logicalclusters")
    with kcp.system():
        world.update(
            rdef,
            name,
            "",
            "cluster",
            {**obj, "status": {"URL": f"{kcp.base_url}/clusters/{name}", "phase": "Ready", "conditions": []}},
            version="v1alpha1",
            manager="kcp",
            subresource="status",
        )
    return name


def _workspace_object(kcp: Kcp, parent: str, name: str, cluster: str, path: str, ws_type: tuple[str, str]) -> None:
    obj = create(
        kcp,
        parent,
        "tenancy.kcp.io",
        "workspaces",
        {
            "apiVersion": "tenancy.kcp.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": name, "annotations": {"internal.tenancy.kcp.io/cluster": cluster}},
            "spec": {
                "type": {"name": ws_type[1], "path": ws_type[0]},
                "cluster": cluster,
                "URL": f"{kcp.base_url}/clusters/{path}",
            },
        },
    )
    rdef = _rdef(kcp.world, parent, "tenancy.kcp.io", "workspaces")
    with kcp.system():
        kcp.world.update(
            rdef,
            parent,
            "",
            name,
            {**obj, "status": {"phase": "Ready"}},
            version="v1alpha1",
            manager="kcp",
            subresource="status",
        )


def _namespace(kcp: Kcp, cluster: str, name: str) -> None:
    create(kcp, cluster, "", "namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})


def schema_for(topology: Topology) -> Obj:
    group = topology.group
    return {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {"name": f"v5f2a9c1e.certificates.{group}"},
        "spec": {
            "group": group,
            "names": {
                "plural": "certificates",
                "singular": "certificate",
                "kind": "Certificate",
                "listKind": "CertificateList",
                "shortNames": ["cert"],
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": "v1alpha1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "type": "object",
                        "properties": {
                            "apiVersion": {"type": "string"},
                            "kind": {"type": "string"},
                            "metadata": {"type": "object"},
                            "spec": {
                                "type": "object",
                                "properties": {"commonName": {"type": "string"}, "secretName": {"type": "string"}},
                                "required": ["commonName"],
                            },
                            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                        },
                    },
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
                        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                    ],
                }
            ],
        },
    }


def seed_service_cluster(kcp: Kcp) -> None:
    """The namespaces every Kubernetes cluster starts with."""
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        if kcp.world.store.get("/namespaces", "", "", name) is None:
            _namespace(kcp, "", name)


def seed(kcp: Kcp, topology: Topology) -> None:
    """Create the topology in an empty world (the root workspace is created if missing)."""
    world = kcp.world
    if world.resolve("root") is None:
        add_workspace_cluster(kcp, path="root", parent=None, name="root", workspace_type="root:root")
    org = topology.org_cluster_name()
    parent_path = topology.org.rsplit(":", 1)[0] if ":" in topology.org else None
    parent = world.resolve(parent_path) if parent_path else None
    add_workspace_cluster(kcp, path=topology.org, parent=parent, name=org, workspace_type="root:organization")
    if parent is not None:
        _workspace_object(kcp, parent, topology.org.rsplit(":", 1)[-1], org, topology.org, ("root", "organization"))
    _namespace(kcp, org, "kcp-system")
    create(
        kcp,
        org,
        "",
        "secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": topology.export, "namespace": "kcp-system"},
            "data": {"key": base64.b64encode(topology.identity_key.encode()).decode()},
        },
    )
    spec: dict[str, Any] = {"identity": {"secretRef": {"namespace": "kcp-system", "name": topology.export}}}
    if topology.with_schema:
        schema = create(kcp, org, "apis.kcp.io", "apiresourceschemas", schema_for(topology))
        spec["latestResourceSchemas"] = [schema["metadata"]["name"]]
    if topology.claims:
        spec["permissionClaims"] = [{"group": "", "resource": r, "all": True} for r in topology.claims]
    create(
        kcp,
        org,
        "apis.kcp.io",
        "apiexports",
        {
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIExport",
            "metadata": {"name": topology.export},
            "spec": spec,
        },
        version="v1alpha1",
    )
    for ws in topology.workspaces:
        path = topology.workspace_path(ws)
        cluster = topology.workspace_cluster(ws)
        if ws.shard is not None:
            kcp.shards.assign(cluster, ws.shard)
        add_workspace_cluster(kcp, path=path, parent=org, name=cluster)
        _workspace_object(kcp, org, ws.name, cluster, path, ("root", "universal"))
        bind(kcp, cluster=cluster, org=topology.org, export=topology.export)
    if topology.with_samples and topology.with_schema:
        _samples(kcp, topology)


def bind(kcp: Kcp, *, cluster: str, org: str, export: str, accept_claims: bool = True) -> Obj:
    """An APIBinding as a consumer creates it, accepting the export's current claims (or none)."""
    found = kcp.find_export(org, export)
    claims = []
    if found is not None and accept_claims:
        for claim in (found[1].get("spec") or {}).get("permissionClaims") or []:
            claims.append(
                {"group": claim.get("group", ""), "resource": claim["resource"], "all": True, "state": "Accepted"}
            )
    body: Obj = {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIBinding",
        "metadata": {"name": export},
        "spec": {"reference": {"export": {"path": org, "name": export}}},
    }
    if claims:
        body["spec"]["permissionClaims"] = claims
    return create(kcp, cluster, "apis.kcp.io", "apibindings", body, version="v1alpha1")


def _samples(kcp: Kcp, topology: Topology) -> None:
    samples = [("default", "web"), ("prod", "api")]
    for ws, (namespace, name) in zip(topology.workspaces, samples):
        cluster = topology.workspace_cluster(ws)
        if kcp.world.store.get("/namespaces", cluster, "", namespace) is None:
            _namespace(kcp, cluster, namespace)
        create(
            kcp,
            cluster,
            "",
            "secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "kubernetes.io/tls",
                "metadata": {"name": f"{name}-tls", "namespace": namespace},
                "data": {"tls.crt": base64.b64encode(b"cert").decode(), "tls.key": base64.b64encode(b"key").decode()},
            },
        )
        create(
            kcp,
            cluster,
            topology.group,
            "certificates",
            {
                "apiVersion": f"{topology.group}/v1alpha1",
                "kind": "Certificate",
                "metadata": {"name": name, "namespace": namespace},
                "spec": {"commonName": f"{name}.{ws.name}.example", "secretName": f"{name}-tls"},
            },
        )
