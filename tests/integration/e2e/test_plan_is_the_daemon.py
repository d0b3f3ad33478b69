"""The dry run is the daemon: `servlet plan` prints exactly the writes `servlet run` then sends.

Each world is prepared by a first servlet (then stopped) and by the test acting as tenants and as
the service owner. Then the live `servlet plan` reads it, the offline `servlet plan` plans a dump
of it, and a second servlet process runs until quiet. The writes the daemon sent, taken from the
simulator's log of its requests (answer codes included, so a create answered 409 counts), must
be the planned writes: the same requests to the same objects, in the same order per object. A
planned conflict or error writes nothing.
"""

from __future__ import annotations

import base64
import json
import time
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from servlet.app.cli import app
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    CONFIGMAP,
    GROUP,
    REMOTE_WIDGET,
    SECRET,
    SERVLET,
    WIDGET,
    ZERTIFIKAT,
    Resource,
    certificate_crd,
    certificates_with_platform_secret,
    example_local_name,
    published_resource,
    remote_object,
    secret,
    widget_crd,
    zertifikat,
)
from tests.integration.e2e.test_related_types import (
    DATABASE,
    accept_the_servlets_claims,
    database,
    database_crd,
    database_entry,
    provide_databases_in_kcp,
)

pytestmark = pytest.mark.kcpsim_only("compares plans with the writes in kcpsim's request log")

# A write: (side, workspace or "", plural, namespace, name or "" for a create, subresource, method).
Write = tuple[str, str, str, str, str, str, str]
_METHODS = {
    "create": "POST",
    "createNamespace": "POST",
    "createRelated": "POST",
    "deleteLocal": "DELETE",
    "deleteRelated": "DELETE",
}
_NOT_OBJECT_WRITES = ("leases", "publishedresources", "apiresourceschemas", "apiexports", "/events")
QUIET = 3.0


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def _planned(plan: Mapping[str, Any]) -> dict[tuple[str, ...], list[str]]:
    """Per target, the methods the plan's writes send, in order."""
    writes: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for obj in plan["objects"]:
        for action in obj["actions"]:
            if action["type"] in ("conflict", "error"):
                continue
            creates = action["type"].startswith("create")
            plural = action["resource"]
            namespace = "" if plural == "namespaces" else action.get("namespace", "")
            target = (
                action["side"],
                action.get("cluster", ""),
                plural,
                namespace,
                "" if creates else action["name"],
                "status" if action["type"] == "patchRemoteStatus" else "",
            )
            writes[target].append(_METHODS.get(action["type"], "PATCH"))
    for orphan in plan.get("orphans", []):
        assert orphan["action"] == "keep", "this test runs without --delete-orphans"
    return dict(writes)


def _target_of(path: str, *, clusters: Mapping[str, str]) -> tuple[str, ...]:
    """The target of a request path of the service cluster or of the virtual workspace."""
    path = path.split("?", 1)[0]
    side, cluster = "local", ""
    if "/clusters/" in path:
        side = "remote"
        _head, _, path = path.partition("/clusters/")
        name, _, path = path.partition("/")
        cluster = clusters.get(name, name)
        path = "/" + path
    parts = [part for part in path.split("/") if part]
    parts = parts[2:] if parts[0] == "api" else parts[3:]  # /api/v1/... or /apis/group/version/...
    namespace = ""
    if parts[0] == "namespaces" and len(parts) > 2:
        namespace, parts = parts[1], parts[2:]
    plural, name, subresource = ([*parts, "", ""])[:3]
    return side, cluster, plural, namespace, name, subresource


def _daemon_writes(e2e: E2E, token: str) -> dict[tuple[str, ...], list[str]]:
    clusters = {f"root:myorg:{workspace}": e2e.world.cluster(workspace) for workspace in ("team-a", "team-b")}
    writes: dict[tuple[str, ...], list[str]] = defaultdict(list)
    for call in e2e.simulated.callers.writes(token=token, ignore=_NOT_OBJECT_WRITES):
        writes[_target_of(call.path, clusters=clusters)].append(
            call.method if call.status < 300 else f"{call.method} -> {call.status}"
        )
    return dict(writes)


def _run_until_quiet(e2e: E2E, token: str, *, at_least: int) -> dict[tuple[str, ...], list[str]]:
    e2e.servlet(token=token)
    deadline, last, since = time.monotonic() + 60, -1, time.monotonic()
    while time.monotonic() < deadline:
        count = len(e2e.simulated.callers.writes(token=token, ignore=_NOT_OBJECT_WRITES))
        if count != last:
            last, since = count, time.monotonic()
        elif count >= at_least and time.monotonic() - since > QUIET:
            break
        time.sleep(0.1)
    return _daemon_writes(e2e, token)


def _plan(e2e: E2E, *args: str) -> dict[str, Any]:
    result = CliRunner().invoke(
        app, ["plan", "--name", SERVLET, "--api-group", GROUP, "--apiexport", GROUP, "-o", "json", *args]
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    plan: dict[str, Any] = json.loads(result.stdout)
    return plan


def _live_plan(e2e: E2E) -> dict[str, Any]:
    service, kcp = e2e.world.kubeconfigs("plan")
    return _plan(e2e, "--kubeconfig", str(service), "--kcp-kubeconfig", str(kcp))


def _offline_plan(e2e: E2E, documents: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    path = e2e.world.directory / "world.yaml"
    path.write_text(yaml.safe_dump_all(list(documents), sort_keys=False))
    return _plan(e2e, "-f", str(path))


def _dump(
    e2e: E2E, *, remote: Sequence[tuple[str, Resource, str]], local: Sequence[tuple[Resource, str]]
) -> list[dict[str, Any]]:
    """The world as `kubectl get -o yaml` would save it: what the offline plan needs."""
    rest, org = e2e.rest, e2e.world.in_org("/apis/apis.kcp.io/v1alpha1")
    documents: list[dict[str, Any]] = []

    def items(path: str, api_version: str, kind: str) -> list[dict[str, Any]]:
        return [{"apiVersion": api_version, "kind": kind, **item} for item in rest.list(path)]

    documents += items(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "apiextensions.k8s.io/v1", "CustomResourceDefinition"
    )
    documents += items(
        "/apis/services.kdp.k8c.io/v1alpha1/publishedresources", "services.kdp.k8c.io/v1alpha1", "PublishedResource"
    )
    documents += items(f"{org}/apiresourceschemas", "apis.kcp.io/v1alpha1", "APIResourceSchema")
    documents += [
        {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", **(rest.get(f"{org}/apiexports/{GROUP}") or {})}
    ]
    documents += items("/api/v1/namespaces", "v1", "Namespace")
    for resource, kind in local:
        documents += items(resource.path(), _api_version(resource), kind)
    for workspace, resource, kind in remote:
        documents += items(e2e.remote_path(workspace, resource), _api_version(resource), kind)
    return documents


def _api_version(resource: Resource) -> str:
    return f"{resource.group}/{resource.version}" if resource.group else resource.version


def _assert_same(planned: Mapping[tuple[str, ...], list[str]], done: Mapping[tuple[str, ...], list[str]]) -> None:
    assert done == planned, "the daemon's writes differ from the plan\n" + "\n".join(
        f"  {target}: planned {planned.get(target)}, sent {done.get(target)}"
        for target in sorted(set(planned) | set(done))
        if planned.get(target) != done.get(target)
    )


def test_the_plan_of_a_world_in_every_state_is_what_the_daemon_writes(e2e: E2E) -> None:
    # Local names are the remote names, so two objects of one workspace can collide on one name.
    e2e.publish(
        widget_crd(),
        published_resource(
            "widgets",
            kind="Widget",
            naming={"namespace": "$remoteClusterName", "name": "$remoteName"},
            filter={"resource": {"matchLabels": {"sync": "yes"}}},
        ),
    )
    first = e2e.servlet(token="first")
    e2e.wait_served("team-a", REMOTE_WIDGET)
    team_a = e2e.world.cluster("team-a")
    synced = ("converged", "changed", "deleting", "drifted", "leaving")
    for name in synced:
        e2e.create_remote(
            "team-a", REMOTE_WIDGET, remote_object("Widget", name, namespace="default", labels={"sync": "yes"}, size=1)
        )
    for name in synced:
        e2e.wait_local(WIDGET, namespace=team_a, name=name)
        e2e.wait_finalizer("team-a", REMOTE_WIDGET, namespace="default", name=name)
    first.stop()

    # Tenants and the service owner change the world while no servlet runs.
    e2e.patch_remote("team-a", REMOTE_WIDGET, namespace="default", name="changed", patch={"spec": {"size": 5}})
    e2e.rest.delete(e2e.remote_path("team-a", REMOTE_WIDGET, namespace="default", name="deleting"))
    e2e.rest.merge_patch(WIDGET.path(namespace=team_a, name="drifted"), {"spec": {"size": 42}})
    e2e.patch_remote(
        "team-a", REMOTE_WIDGET, namespace="default", name="leaving", patch={"metadata": {"labels": {"sync": "no"}}}
    )
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "fresh", namespace="default", labels={"sync": "yes"}, size=1)
    )
    # A foreign object of the service owner holds the computed name of `taken`.
    e2e.rest.create(
        WIDGET.path(namespace=team_a),
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "taken", "namespace": team_a},
            "spec": {"size": 7},
        },
    )
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "taken", namespace="default", labels={"sync": "yes"}, size=1)
    )
    # Two fresh objects of one workspace whose local names collide; `default` comes first.
    for namespace in ("default", "other"):
        e2e.create_remote(
            "team-a",
            REMOTE_WIDGET,
            remote_object("Widget", "twin", namespace=namespace, labels={"sync": "yes"}, size=1),
        )
    # A fresh object in a workspace whose local namespace does not exist yet.
    e2e.wait_served("team-b", REMOTE_WIDGET)
    e2e.create_remote(
        "team-b", REMOTE_WIDGET, remote_object("Widget", "fresh", namespace="default", labels={"sync": "yes"}, size=1)
    )

    live = _live_plan(e2e)
    offline = _offline_plan(
        e2e,
        _dump(
            e2e,
            remote=[("team-a", REMOTE_WIDGET, "Widget"), ("team-b", REMOTE_WIDGET, "Widget")],
            local=[(WIDGET, "Widget")],
        ),
    )
    planned = _planned(live)
    assert _planned(offline) == planned, "the offline plan of the same objects plans other writes"
    kinds = {
        obj["remote"]["name"] + "@" + obj["remote"]["namespace"]: [a["type"] for a in obj["actions"]]
        for obj in live["objects"]
        if obj["remote"]["cluster"] == team_a
    }
    assert kinds["converged@default"] == []
    assert kinds["taken@default"] == ["conflict"], "a conflict writes nothing, not even the finalizer"
    assert kinds["twin@default"] == ["addFinalizer", "create"]
    assert kinds["twin@other"] == ["conflict"]

    done = _run_until_quiet(e2e, "second", at_least=sum(len(methods) for methods in planned.values()))
    _assert_same(planned, done)
    assert e2e.local(WIDGET, namespace=team_a, name="taken")["spec"] == {"size": 7}, "a foreign object was written"


def test_the_plan_of_related_objects_of_both_origins_and_a_status_is_what_the_daemon_writes(e2e: E2E) -> None:
    e2e.publish(certificate_crd(), certificates_with_platform_secret())
    first = e2e.servlet(token="first")
    e2e.wait_served("team-a", ZERTIFIKAT)
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", SECRET, secret("team-issuer-ca", namespace="default", data={"ca.crt": _b64("ca")}))
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web", issuer="team-issuer"))
    local_name = example_local_name(namespace="default", name="web")
    e2e.wait_local(CERTIFICATE, namespace=cluster, name=local_name)
    e2e.wait_local(SECRET, namespace=cluster, name="team-issuer-ca")
    first.stop()

    # While no servlet runs: cert-manager issues (status and TLS Secret, both up), the tenant
    # rotates its CA (down) and asks for another certificate with its own CA (all new).
    e2e.rest.merge_patch(
        CERTIFICATE.path(namespace=cluster, name=local_name) + "/status",
        {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
    )
    e2e.world.apply(
        secret(
            "web-tls",
            namespace=cluster,
            type_="kubernetes.io/tls",
            data={"tls.crt": _b64("crt"), "tls.key": _b64("key")},
        )
    )
    e2e.patch_remote(
        "team-a", SECRET, namespace="default", name="team-issuer-ca", patch={"data": {"ca.crt": _b64("rotated")}}
    )
    e2e.create_remote("team-a", SECRET, secret("api-issuer-ca", namespace="default", data={"ca.crt": _b64("api")}))
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("api", issuer="api-issuer"))

    live = _live_plan(e2e)
    offline = _offline_plan(
        e2e,
        _dump(
            e2e,
            remote=[("team-a", ZERTIFIKAT, "Zertifikat"), ("team-a", SECRET, "Secret")],
            local=[(CERTIFICATE, "Certificate"), (SECRET, "Secret")],
        ),
    )
    planned = _planned(live)
    assert _planned(offline) == planned, "the offline plan of the same objects plans other writes"
    types = {action["type"] for obj in live["objects"] for action in obj["actions"]}
    assert {"patchRemoteStatus", "createRelated", "patchRelated", "recordRelatedState", "create"} <= types, types

    done = _run_until_quiet(e2e, "second", at_least=sum(len(methods) for methods in planned.values()))
    _assert_same(planned, done)


def test_the_plan_of_cluster_scoped_workspace_objects_with_namespaced_copies_is_what_the_daemon_writes(
    e2e: E2E,
) -> None:
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget", projection={"scope": "Cluster"}))
    first = e2e.servlet(token="first")
    cluster_widgets = Resource(GROUP, "v1", "widgets", namespaced=False)
    e2e.wait_served("team-a", cluster_widgets)
    e2e.create_remote("team-a", cluster_widgets, remote_object("Widget", "kept", size=1))
    e2e.wait_finalizer("team-a", cluster_widgets, name="kept")
    first.stop()
    e2e.patch_remote("team-a", cluster_widgets, name="kept", patch={"spec": {"size": 2}})
    e2e.create_remote("team-a", cluster_widgets, remote_object("Widget", "fresh", size=1))

    live = _live_plan(e2e)
    offline = _offline_plan(e2e, _dump(e2e, remote=[("team-a", cluster_widgets, "Widget")], local=[(WIDGET, "Widget")]))
    planned = _planned(live)
    assert _planned(offline) == planned
    assert sorted(action["type"] for obj in live["objects"] for action in obj["actions"]) == [
        "addFinalizer",
        "create",
        "patch",
    ]

    done = _run_until_quiet(e2e, "second", at_least=sum(len(methods) for methods in planned.values()))
    _assert_same(planned, done)


def test_the_plan_of_related_objects_of_any_type_is_what_the_daemon_writes(e2e: E2E) -> None:
    identity = provide_databases_in_kcp(e2e)
    e2e.publish(
        widget_crd(),
        database_crd(),
        published_resource(
            "widgets",
            kind="Widget",
            related=[
                database_entry(identity, origin="service"),
                database_entry(
                    identity, origin="platform", identifier="mine", reference={"name": {"path": "spec.color"}}
                ),
                {
                    "identifier": "settings",
                    "origin": "service",
                    "kind": "ConfigMap",
                    "projection": {"resource": "secrets"},
                    "reference": {"name": {"path": "spec.note"}},
                },
                {
                    "identifier": "creds",
                    "origin": "service",
                    "kind": "Secret",
                    "object": {"template": {"template": "{{ .Object.spec.note }}-creds"}},
                },
            ],
        ),
    )
    first = e2e.servlet(token="first")
    e2e.wait_served("team-a", REMOTE_WIDGET)
    accept_the_servlets_claims(e2e, identity)
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", DATABASE, database("mine", namespace="default", engine="mysql", size=1))
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", note="db-w", color="mine")
    )
    e2e.wait_local(DATABASE, namespace=cluster, name="mine")
    first.stop()

    # While no servlet runs: the operator creates its Database (up), the tenant resizes theirs (down).
    e2e.rest.create(DATABASE.path(namespace=cluster), database("db-w", namespace=cluster, engine="postgres", size=1))
    e2e.patch_remote("team-a", DATABASE, namespace="default", name="mine", patch={"spec": {"size": 2}})
    e2e.rest.create(
        CONFIGMAP.path(namespace=cluster),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "db-w", "namespace": cluster},
            "data": {"a": "b"},
        },
    )
    e2e.world.apply(secret("db-w-creds", namespace=cluster, data={"user": _b64("alice")}))

    live = _live_plan(e2e)
    offline = _offline_plan(
        e2e,
        _dump(
            e2e,
            remote=[
                ("team-a", REMOTE_WIDGET, "Widget"),
                ("team-a", DATABASE, "Database"),
                ("team-a", SECRET, "Secret"),
            ],
            local=[(WIDGET, "Widget"), (DATABASE, "Database"), (CONFIGMAP, "ConfigMap"), (SECRET, "Secret")],
        ),
    )
    planned = _planned(live)
    assert _planned(offline) == planned, "the offline plan of the same objects plans other writes"
    related = [
        (action["type"], action["kind"], action["name"])
        for obj in live["objects"]
        for action in obj["actions"]
        if action["type"] in ("createRelated", "patchRelated")
    ]
    assert sorted(related) == [
        ("createRelated", "Database", "db-w"),
        ("createRelated", "Secret", "db-w"),
        ("createRelated", "Secret", "db-w-creds"),
        ("patchRelated", "Database", "mine"),
    ]

    done = _run_until_quiet(e2e, "second", at_least=sum(len(methods) for methods in planned.values()))
    _assert_same(planned, done)


def test_the_plan_of_copies_named_from_workspace_paths_is_what_the_daemon_writes(e2e: E2E) -> None:
    naming = {"name": '{{ .ClusterPath | replace ":" "-" }}-{{ .Object.metadata.name }}'}
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget", naming=naming, enableWorkspacePaths=True))
    first = e2e.servlet(token="first")
    export = e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{GROUP}")

    def claims() -> list[dict[str, Any]] | None:
        found = ((e2e.rest.get(export) or {}).get("spec") or {}).get("permissionClaims") or []
        return found if any(claim.get("resource") == "logicalclusters" for claim in found) else None

    accepted = [{**claim, "state": "Accepted"} for claim in e2e.eventually(claims, what="the logicalclusters claim")]
    e2e.rest.merge_patch(
        e2e.world.in_workspace("team-a", f"/apis/apis.kcp.io/v1alpha1/apibindings/{GROUP}"),
        {"spec": {"permissionClaims": accepted}},
    )  # team-b does not accept it: its objects wait for their path
    e2e.wait_served("team-a", REMOTE_WIDGET)
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "synced", namespace="default", size=1))
    team_a = e2e.world.cluster("team-a")
    e2e.wait_local(WIDGET, namespace=team_a, name="root-myorg-team-a-synced")
    first.stop()

    # A copy made before the path was recorded gets it; fresh objects of both workspaces.
    e2e.rest.merge_patch(
        WIDGET.path(namespace=team_a, name="root-myorg-team-a-synced"),
        {"metadata": {"annotations": {"syncer.kdp.k8c.io/remote-object-workspace-path": None}}},
    )
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "fresh", namespace="default", size=1))
    e2e.wait_served("team-b", REMOTE_WIDGET)
    e2e.create_remote("team-b", REMOTE_WIDGET, remote_object("Widget", "waiting", namespace="default", size=1))

    live = _live_plan(e2e)
    logical_clusters = [
        {"apiVersion": "core.kcp.io/v1alpha1", "kind": "LogicalCluster", **found}
        for found in [
            e2e.rest.get(e2e.world.in_workspace("team-a", "/apis/core.kcp.io/v1alpha1/logicalclusters/cluster"))
        ]
        if found is not None
    ]
    documents = _dump(
        e2e,
        remote=[("team-a", REMOTE_WIDGET, "Widget"), ("team-b", REMOTE_WIDGET, "Widget")],
        local=[(WIDGET, "Widget")],
    )
    offline = _offline_plan(e2e, [*documents, *logical_clusters])
    planned = _planned(live)
    assert _planned(offline) == planned, "the offline plan of the same objects plans other writes"
    kinds = {obj["remote"]["name"]: [action["type"] for action in obj["actions"]] for obj in live["objects"]}
    assert kinds == {"synced": ["patch"], "fresh": ["addFinalizer", "create"], "waiting": ["error"]}

    done = _run_until_quiet(e2e, "second", at_least=sum(len(methods) for methods in planned.values()))
    _assert_same(planned, done)
    fresh = e2e.local(WIDGET, namespace=team_a, name="root-myorg-team-a-fresh")
    assert fresh is not None
    assert fresh["metadata"]["annotations"]["syncer.kdp.k8c.io/remote-object-workspace-path"] == "root:myorg:team-a"
