"""Related objects of any type (group/version/resource): a Database provided in kcp by another
APIExport, claimed by its identity hash, synced up from the service and down from the workspace,
for namespaced and cluster-scoped primaries."""

from __future__ import annotations

import base64
from typing import Any

from kcpsim.harness.process import ServletProcess
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CONFIGMAP,
    GADGET,
    REMOTE_WIDGET,
    SECRET,
    WIDGET,
    Resource,
    default_local_name,
    gadget_crd,
    link_labels,
    published_resource,
    remote_object,
    widget_crd,
)

DB_GROUP = "databases.example.org"
DATABASE = Resource(DB_GROUP, "v1", "databases")
REMOTE_GADGET = Resource("certificates.example.corp", "v1", "gadgets", namespaced=False)
_DB_SPEC = {
    "type": "object",
    "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": {"engine": {"type": "string"}, "size": {"type": "integer"}}},
        "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
    },
}
_DB_NAMES = {"plural": "databases", "singular": "database", "kind": "Database", "listKind": "DatabaseList"}


def database_crd() -> dict[str, Any]:
    """The service cluster's own Database type (the same group, version and resource as in kcp)."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"databases.{DB_GROUP}"},
        "spec": {
            "group": DB_GROUP,
            "scope": "Namespaced",
            "names": _DB_NAMES,
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": _DB_SPEC}}],
        },
    }


def provide_databases_in_kcp(e2e: E2E, *, status_subresource: bool = False) -> str:
    """Another APIExport in the org serves Databases; team-a binds it. Returns its identity hash."""
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True, "schema": _DB_SPEC}
    if status_subresource:
        version["subresources"] = {"status": {}}
    world = e2e.world
    e2e.rest.create(
        world.in_org("/api/v1/namespaces/kcp-system/secrets"),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "databases", "namespace": "kcp-system"},
            "data": {"key": base64.b64encode(b"databases-identity").decode()},
        },
    )
    schema_name = f"v1.databases.{DB_GROUP}"
    e2e.rest.create(
        world.in_org("/apis/apis.kcp.io/v1alpha1/apiresourceschemas"),
        {
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIResourceSchema",
            "metadata": {"name": schema_name},
            "spec": {
                "group": DB_GROUP,
                "names": _DB_NAMES,
                "scope": "Namespaced",
                "versions": [version],
            },
        },
    )
    export_path = world.in_org("/apis/apis.kcp.io/v1alpha1/apiexports")
    e2e.rest.create(
        export_path,
        {
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIExport",
            "metadata": {"name": DB_GROUP},
            "spec": {
                "identity": {"secretRef": {"namespace": "kcp-system", "name": "databases"}},
                "latestResourceSchemas": [schema_name],
            },
        },
    )
    identity: str = e2e.eventually(
        lambda: ((e2e.rest.get(f"{export_path}/{DB_GROUP}") or {}).get("status") or {}).get("identityHash"),
        what="the Database export's identity hash",
    )
    e2e.rest.create(
        world.in_workspace("team-a", "/apis/apis.kcp.io/v1alpha1/apibindings"),
        {
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIBinding",
            "metadata": {"name": "databases"},
            "spec": {"reference": {"export": {"path": world.org, "name": DB_GROUP}}},
        },
    )
    e2e.wait_served("team-a", DATABASE)
    return identity


def database_entry(identity: str, *, origin: str, **fields: Any) -> dict[str, Any]:
    """A related Database entry; a field given as None is left out."""
    entry = {
        "identifier": "database",
        "origin": origin,
        "group": DB_GROUP,
        "version": "v1",
        "resource": "databases",
        "identityHash": identity,
        "reference": {"name": {"path": "spec.note"}},
        **fields,
    }
    return {key: value for key, value in entry.items() if value is not None}


def serve_with_claims(
    e2e: E2E, identity: str, *documents: dict[str, Any], served: Resource = REMOTE_WIDGET
) -> ServletProcess:
    """`documents` published, the servlet running and `served` in team-a, the servlet's claims accepted there."""
    e2e.publish(*documents)
    servlet = e2e.servlet()
    e2e.wait_served("team-a", served)
    accept_the_servlets_claims(e2e, identity)
    return servlet


def accept_the_servlets_claims(e2e: E2E, identity: str) -> None:
    """Wait for the export to claim Databases (by identity), then accept every claim in team-a."""
    export_path = e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{e2e.world.export}")

    def claimed() -> list[dict[str, Any]] | None:
        claims: list[dict[str, Any]] = ((e2e.rest.get(export_path) or {}).get("spec") or {}).get(
            "permissionClaims"
        ) or []
        wanted = {"group": DB_GROUP, "resource": "databases", "identityHash": identity}
        found = [{k: c.get(k) for k in wanted} for c in claims]
        return claims if wanted in found else None

    claims = e2e.eventually(claimed, what="the APIExport to claim databases with the identity hash")
    e2e.rest.merge_patch(
        e2e.world.in_workspace("team-a", f"/apis/apis.kcp.io/v1alpha1/apibindings/{e2e.world.export}"),
        {"spec": {"permissionClaims": [{**c, "state": "Accepted"} for c in claims]}},
    )


def database(name: str, *, namespace: str, engine: str, size: int) -> dict[str, Any]:
    return {
        "apiVersion": f"{DB_GROUP}/v1",
        "kind": "Database",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"engine": engine, "size": size},
    }


def test_a_service_database_goes_up_follows_changes_and_goes_with_its_primary(e2e: E2E) -> None:
    identity = provide_databases_in_kcp(e2e)
    serve_with_claims(
        e2e,
        identity,
        widget_crd(),
        database_crd(),
        published_resource("widgets", kind="Widget", related=[database_entry(identity, origin="service")]),
    )
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", note="db-w"))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w"))

    # The operator creates the Database next to the local Widget.
    e2e.rest.create(DATABASE.path(namespace=cluster), database("db-w", namespace=cluster, engine="postgres", size=1))
    remote = e2e.eventually(
        lambda: e2e.remote("team-a", DATABASE, namespace="default", name="db-w"),
        what="the Database copy in the workspace",
    )
    assert remote["spec"] == {"engine": "postgres", "size": 1}

    e2e.rest.merge_patch(DATABASE.path(namespace=cluster, name="db-w"), {"spec": {"size": 3}})
    e2e.eventually(
        lambda: (
            (e2e.remote("team-a", DATABASE, namespace="default", name="db-w") or {}).get("spec", {}).get("size") == 3
        ),
        what="the resized Database in the workspace",
    )

    # The copy goes with its primary (cleanup); the service's own Database stays.
    e2e.rest.delete(e2e.remote_path("team-a", REMOTE_WIDGET, namespace="default", name="w"))
    e2e.eventually(
        lambda: e2e.remote("team-a", DATABASE, namespace="default", name="db-w") is None,
        what="the workspace copy of the Database to be deleted with its Widget",
    )
    assert e2e.local(DATABASE, namespace=cluster, name="db-w") is not None


def test_a_workspace_database_comes_down_to_a_linked_copy(e2e: E2E) -> None:
    identity = provide_databases_in_kcp(e2e)
    serve_with_claims(
        e2e,
        identity,
        widget_crd(),
        database_crd(),
        published_resource("widgets", kind="Widget", related=[database_entry(identity, origin="platform")]),
    )
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", DATABASE, database("mine", namespace="default", engine="mysql", size=2))
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", note="mine"))

    local = e2e.wait_local(DATABASE, namespace=cluster, name="mine")
    assert local["spec"] == {"engine": "mysql", "size": 2}
    expected = link_labels(cluster=cluster, namespace="default", name="mine")
    assert {k: (local["metadata"].get("labels") or {}).get(k) for k in expected} == expected

    e2e.patch_remote("team-a", DATABASE, namespace="default", name="mine", patch={"spec": {"engine": "postgres"}})
    e2e.eventually(
        lambda: (e2e.local(DATABASE, namespace=cluster, name="mine") or {}).get("spec", {}).get("engine") == "postgres",
        what="the tenant's change on the local copy",
    )


def test_a_cluster_scoped_primary_names_its_database_namespace(e2e: E2E) -> None:
    identity = provide_databases_in_kcp(e2e)
    namespace = {"path": "metadata.name", "regex": {"pattern": "", "replacement": "default"}}
    serve_with_claims(
        e2e,
        identity,
        gadget_crd(),
        database_crd(),
        published_resource(
            "gadgets",
            kind="Gadget",
            related=[
                database_entry(
                    identity,
                    origin="platform",
                    reference={"name": {"path": "spec.note"}, "namespace": namespace},
                )
            ],
        ),
        served=REMOTE_GADGET,
    )
    e2e.create_remote("team-a", DATABASE, database("shared", namespace="default", engine="mysql", size=1))
    e2e.create_remote("team-a", REMOTE_GADGET, remote_object("Gadget", "g", note="shared"))
    e2e.eventually(lambda: e2e.local_objects(GADGET), what="the local Gadget")
    local = e2e.wait_local(DATABASE, namespace="default", name="shared")
    assert local["spec"] == {"engine": "mysql", "size": 1}


def _accept_all_claims(e2e: E2E, resource: str) -> None:
    export_path = e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{e2e.world.export}")

    def claimed() -> list[dict[str, Any]] | None:
        claims: list[dict[str, Any]] = ((e2e.rest.get(export_path) or {}).get("spec") or {}).get(
            "permissionClaims"
        ) or []
        return claims if any(c.get("resource") == resource for c in claims) else None

    claims = e2e.eventually(claimed, what=f"the APIExport to claim {resource}")
    e2e.rest.merge_patch(
        e2e.world.in_workspace("team-a", f"/apis/apis.kcp.io/v1alpha1/apibindings/{e2e.world.export}"),
        {"spec": {"permissionClaims": [{**c, "state": "Accepted"} for c in claims]}},
    )


def _serve_widgets_relating(e2e: E2E, entry: dict[str, Any]) -> str:
    """Widgets published with one related entry and served in team-a; returns team-a's logical cluster."""
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget", related=[entry]))
    e2e.servlet()
    e2e.wait_served("team-a", REMOTE_WIDGET)
    return e2e.world.cluster("team-a")


def test_an_operators_configmap_becomes_a_secret_in_the_workspace(e2e: E2E) -> None:
    cluster = _serve_widgets_relating(
        e2e,
        {
            "identifier": "settings",
            "origin": "service",
            "kind": "ConfigMap",
            "projection": {"resource": "secrets"},
            "reference": {"name": {"path": "spec.note"}},
        },
    )
    _accept_all_claims(e2e, "secrets")
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", note="w-settings"))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w"))
    e2e.rest.create(
        CONFIGMAP.path(namespace=cluster),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "w-settings", "namespace": cluster},
            "data": {"color": "blue"},
        },
    )
    copied = e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="w-settings"),
        what="the ConfigMap as a Secret in the workspace",
    )
    assert copied["data"] == {"color": base64.b64encode(b"blue").decode()}
    assert e2e.remote("team-a", CONFIGMAP, namespace="default", name="w-settings") is None


def test_a_tenants_secret_comes_down_as_a_configmap(e2e: E2E) -> None:
    cluster = _serve_widgets_relating(
        e2e,
        {
            "identifier": "settings",
            "origin": "platform",
            "kind": "Secret",
            "projection": {"resource": "configmaps"},
            "reference": {"name": {"path": "spec.note"}},
        },
    )
    e2e.create_remote(
        "team-a",
        SECRET,
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "default"},
            "data": {"user": base64.b64encode(b"alice").decode()},
        },
    )
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", note="creds"))
    local = e2e.wait_local(CONFIGMAP, namespace=cluster, name="creds")
    assert local["data"] == {"user": "alice"}
    expected = link_labels(cluster=cluster, namespace="default", name="creds")
    assert {k: (local["metadata"].get("labels") or {}).get(k) for k in expected} == expected


def test_a_template_names_the_secret_on_each_side(e2e: E2E) -> None:
    cluster = _serve_widgets_relating(
        e2e,
        {
            "identifier": "creds",
            "origin": "service",
            "kind": "Secret",
            "object": {"template": {"template": "{{ .Object.spec.note }}-creds"}},
        },
    )
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", note="db"))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w"))
    e2e.rest.create(SECRET.path(namespace=cluster), secret_body("db-creds", cluster, user="alice"))
    copied = e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="db-creds"),
        what="the Secret named by the template in the workspace",
    )
    assert copied["data"] == {"user": base64.b64encode(b"alice").decode()}


def test_a_cluster_scoped_primary_finds_its_configmap_by_reference_in_a_templated_namespace(e2e: E2E) -> None:
    e2e.publish(
        gadget_crd(),
        published_resource(
            "gadgets",
            kind="Gadget",
            related=[
                {
                    "identifier": "settings",
                    "origin": "platform",
                    "kind": "ConfigMap",
                    "object": {
                        "reference": {"path": "spec.note"},
                        "namespace": {"template": {"template": "{{ .Side }}-settings"}},
                    },
                }
            ],
        ),
    )
    e2e.servlet()
    e2e.wait_served("team-a", REMOTE_GADGET)
    _accept_all_claims(e2e, "configmaps")
    e2e.create_remote(
        "team-a",
        CONFIGMAP,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "g-settings", "namespace": "platform-settings"},
            "data": {"color": "green"},
        },
    )
    e2e.create_remote("team-a", REMOTE_GADGET, remote_object("Gadget", "g", note="g-settings"))
    local = e2e.wait_local(CONFIGMAP, namespace="service-settings", name="g-settings")
    assert local["data"] == {"color": "green"}


def secret_body(name: str, namespace: str, **values: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": name, "namespace": namespace},
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in values.items()},
    }


def test_without_cleanup_the_copies_stay_when_their_primary_goes(e2e: E2E) -> None:
    identity = provide_databases_in_kcp(e2e)
    serve_with_claims(
        e2e,
        identity,
        widget_crd(),
        database_crd(),
        published_resource(
            "widgets",
            kind="Widget",
            related=[
                database_entry(identity, origin="service", cleanup=False),
                {
                    "identifier": "settings",
                    "origin": "platform",
                    "kind": "ConfigMap",
                    "cleanup": False,
                    "reference": {"name": {"path": "spec.color"}},
                },
            ],
        ),
    )
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote(
        "team-a",
        CONFIGMAP,
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default"}, "data": {}},
    )
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", note="db-w", color="cfg")
    )
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w"))
    e2e.rest.create(DATABASE.path(namespace=cluster), database("db-w", namespace=cluster, engine="pg", size=1))
    e2e.eventually(lambda: e2e.remote("team-a", DATABASE, namespace="default", name="db-w"), what="the Database copy")
    e2e.wait_local(CONFIGMAP, namespace=cluster, name="cfg")

    e2e.rest.delete(e2e.remote_path("team-a", REMOTE_WIDGET, namespace="default", name="w"))
    e2e.eventually(
        lambda: e2e.remote("team-a", REMOTE_WIDGET, namespace="default", name="w") is None,
        what="the Widget to be gone (its finalizer released)",
    )
    e2e.consistently(
        lambda: (
            e2e.remote("team-a", DATABASE, namespace="default", name="db-w") is not None
            and e2e.local(CONFIGMAP, namespace=cluster, name="cfg") is not None
        ),
        what="both copies to stay",
    )


def test_with_sync_status_the_operators_status_goes_up_with_the_database(e2e: E2E) -> None:
    identity = provide_databases_in_kcp(e2e)
    serve_with_claims(
        e2e,
        identity,
        widget_crd(),
        database_crd(),
        published_resource(
            "widgets", kind="Widget", related=[database_entry(identity, origin="service", syncStatus=True)]
        ),
    )
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", note="db-w"))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w"))
    e2e.rest.create(
        DATABASE.path(namespace=cluster),
        {**database("db-w", namespace=cluster, engine="pg", size=1), "status": {"phase": "Provisioning"}},
    )
    e2e.eventually(
        lambda: (
            (e2e.remote("team-a", DATABASE, namespace="default", name="db-w") or {}).get("status")
            == {"phase": "Provisioning"}
        ),
        what="the operator's status on the workspace copy",
    )
    e2e.rest.merge_patch(DATABASE.path(namespace=cluster, name="db-w"), {"status": {"phase": "Ready"}})
    e2e.eventually(
        lambda: (
            (e2e.remote("team-a", DATABASE, namespace="default", name="db-w") or {}).get("status") == {"phase": "Ready"}
        ),
        what="the new status on the workspace copy",
    )


def test_an_unserved_related_type_is_reported_the_others_keep_syncing_and_its_crd_fixes_it(e2e: E2E) -> None:
    identity = provide_databases_in_kcp(e2e)
    servlet = serve_with_claims(
        e2e,
        identity,
        widget_crd(),
        published_resource(
            "widgets",
            kind="Widget",
            related=[
                # No CRD for Databases on the service cluster: this entry cannot sync.
                database_entry(identity, origin="service"),
                {
                    "identifier": "creds",
                    "origin": "service",
                    "kind": "Secret",
                    "reference": {"name": {"path": "spec.color"}},
                },
            ],
        ),
    )
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", note="db-w", color="creds")
    )
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="w"))
    e2e.rest.create(SECRET.path(namespace=cluster), secret_body("creds", cluster, user="alice"))
    e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="creds"),
        what="the Secret of the other entry in the workspace",
    )
    synced = e2e.wait_condition("widgets", "Synced", "False")
    assert "spec.related[0].resource" in synced["message"], synced
    assert "not served on the service cluster" in servlet.log_text()

    def failing_event() -> bool:
        events = e2e.rest.list("/api/v1/namespaces/default/events")
        # The only Widget fails (on its first entry), so the PublishedResource says none syncs.
        assert any(event.get("reason") in ("ObjectsFailing", "NoObjectSyncs") for event in events), [
            (event.get("reason"), (event.get("involvedObject") or {}).get("name")) for event in events
        ]
        return True

    e2e.eventually(failing_event, what="a Warning Event on the PublishedResource")

    # The service owner installs the CRD: the entry resolves and its Database goes up.
    e2e.publish(database_crd())
    e2e.rest.create(DATABASE.path(namespace=cluster), database("db-w", namespace=cluster, engine="pg", size=1))
    e2e.eventually(
        lambda: e2e.remote("team-a", DATABASE, namespace="default", name="db-w"),
        what="the Database copy once its CRD is installed",
        timeout=30,
    )
    e2e.wait_condition("widgets", "Synced", "True", timeout=30)


def test_a_cluster_scoped_primary_gets_service_objects_of_any_type_and_projected(e2e: E2E) -> None:
    identity = provide_databases_in_kcp(e2e)
    serve_with_claims(
        e2e,
        identity,
        gadget_crd(),
        database_crd(),
        published_resource(
            "gadgets",
            kind="Gadget",
            related=[
                database_entry(
                    identity,
                    origin="service",
                    reference=None,
                    object={
                        "template": {"template": "{{ .Object.spec.note }}-db"},
                        "namespace": {"template": {"template": "{{ .Side }}-dbs"}},
                    },
                ),
                {
                    "identifier": "settings",
                    "origin": "service",
                    "kind": "ConfigMap",
                    "projection": {"resource": "secrets"},
                    "reference": {
                        "name": {"path": "spec.note"},
                        "namespace": {"path": "metadata.name", "regex": {"replacement": "settings"}},
                    },
                },
            ],
        ),
        served=REMOTE_GADGET,
    )
    e2e.create_remote("team-a", REMOTE_GADGET, remote_object("Gadget", "g", note="g1"))
    e2e.eventually(lambda: e2e.local_objects(GADGET), what="the local Gadget")
    for namespace in ("service-dbs", "settings"):
        e2e.world.ensure_namespace(namespace)
    e2e.rest.create(
        DATABASE.path(namespace="service-dbs"), database("g1-db", namespace="service-dbs", engine="pg", size=3)
    )
    e2e.rest.create(
        CONFIGMAP.path(namespace="settings"),
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "g1", "namespace": "settings"},
            "data": {"a": "b"},
        },
    )
    copied = e2e.eventually(
        lambda: e2e.remote("team-a", DATABASE, namespace="platform-dbs", name="g1-db"),
        what="the Database in the namespace its template names in the workspace",
    )
    assert copied["spec"] == {"engine": "pg", "size": 3}
    secret = e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="settings", name="g1"),
        what="the ConfigMap as a Secret in the workspace",
    )
    assert secret["data"] == {"a": base64.b64encode(b"b").decode()}
