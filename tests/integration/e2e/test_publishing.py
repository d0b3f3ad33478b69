"""Publishing: a PublishedResource becomes an APIResourceSchema in the APIExport (SPEC 2, 3, 4)."""

from __future__ import annotations

import hashlib
import json
import re

import pytest

from kcpsim import Topology
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    EXAMPLE,
    GROUP,
    REMOTE_WIDGET,
    WIDGET,
    ZERTIFIKAT,
    certificate_crd,
    default_local_name,
    example_local_name,
    example_published_resource,
    published_resource,
    remote_object,
    widget_crd,
    zertifikat,
)


def _canonical_sha1(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha1(text.encode()).hexdigest()


# The export as KDP creates it: no schema and no permission claims yet.
@pytest.mark.parametrize("e2e", [Topology(with_schema=False, claims=())], indirect=True, ids=["bare-export"])
def test_a_published_resource_becomes_a_schema_in_the_export_and_reports_ready(e2e: E2E) -> None:
    e2e.publish(certificate_crd(), example_published_resource())
    e2e.servlet()

    e2e.wait_condition(EXAMPLE, "Ready")
    published = e2e.published_resource(EXAMPLE)
    assert published is not None
    for type_ in ("Valid", "SchemaPublished", "Exported"):
        condition = e2e.condition(EXAMPLE, type_)
        assert condition is not None and condition["status"] == "True", f"{type_}: {condition}"
    schema_name = published["status"]["resourceSchemaName"]
    assert re.fullmatch(r"v[0-9a-f]{8}\.zertifikate\.certificates\.example\.corp", schema_name), schema_name

    schema = e2e.rest.get(e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiresourceschemas/{schema_name}"))
    assert schema is not None, f"{schema_name} is named in the status but does not exist in {e2e.world.org}"
    spec = schema["spec"]
    assert schema_name[1:9] == _canonical_sha1(spec)[:8], "the name's hash is not the SHA-1 of the canonical spec"
    assert spec["group"] == GROUP and spec["scope"] == "Namespaced"
    assert spec["names"] == {
        "kind": "Zertifikat",
        "listKind": "ZertifikatList",
        "singular": "zertifikat",
        "plural": "zertifikate",
        "shortNames": ["zerts"],
        "categories": ["cert-manager"],
    }
    crd_version = certificate_crd()["spec"]["versions"][0]
    (version,) = spec["versions"]
    assert (version["name"], version["served"], version["storage"]) == ("v1beta1", True, True)
    assert version["schema"] == crd_version["schema"]["openAPIV3Schema"]
    assert version["subresources"] == {"status": {}}
    assert version["additionalPrinterColumns"] == crd_version["additionalPrinterColumns"]

    export = e2e.rest.get(e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{e2e.world.export}"))
    assert export is not None
    assert schema_name in export["spec"]["latestResourceSchemas"]
    # The example's related Secret needs the secrets claim, and namespaces to create its namespace;
    # Events on users' objects need events.
    claims = {(c.get("group", ""), c["resource"]): c for c in export["spec"].get("permissionClaims") or []}
    assert set(claims) == {("", "secrets"), ("", "namespaces"), ("", "events")}, sorted(claims)
    assert all(claim.get("all") is True for claim in claims.values()), claims
    for workspace in ("team-a", "team-b"):
        e2e.wait_served(workspace, ZERTIFIKAT)


def test_a_bad_published_resource_is_reported_while_a_good_one_keeps_syncing(e2e: E2E) -> None:
    bad = published_resource("widgets-typo", kind="Widget", naming={"name": "$remoteNme"})
    e2e.publish(certificate_crd(), widget_crd(), bad, example_published_resource())
    e2e.servlet()

    valid = e2e.wait_condition("widgets-typo", "Valid", "False")
    assert "spec.naming.name" in valid.get("message", ""), valid
    assert "$remoteNme" in valid.get("message", ""), valid
    ready = e2e.condition("widgets-typo", "Ready")
    assert ready is None or ready["status"] != "True", ready

    e2e.wait_condition(EXAMPLE, "Ready")
    e2e.wait_served("team-a", ZERTIFIKAT)
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web"))
    cluster = e2e.world.cluster("team-a")
    e2e.wait_local(CERTIFICATE, namespace=cluster, name=example_local_name(namespace="default", name="web"))


def test_a_changed_crd_gets_a_new_schema_that_replaces_the_old_one_in_the_export(e2e: E2E) -> None:
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    e2e.servlet()
    e2e.wait_condition("widgets", "Ready")
    first = (e2e.published_resource("widgets") or {})["status"]["resourceSchemaName"]

    crd = widget_crd()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["shape"] = {
        "type": "string"
    }
    e2e.rest.merge_patch(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
        {"spec": {"versions": crd["spec"]["versions"]}},
    )

    def new_schema() -> str:
        name = str(((e2e.published_resource("widgets") or {}).get("status") or {}).get("resourceSchemaName"))
        assert name != first, f"still {first}"
        return name

    second = e2e.eventually(new_schema, what="a new APIResourceSchema for the changed CRD")
    assert re.fullmatch(r"v[0-9a-f]{8}\.widgets\.certificates\.example\.corp", second), second
    export_path = e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{e2e.world.export}")
    e2e.eventually(
        lambda: (e2e.rest.get(export_path) or {})["spec"]["latestResourceSchemas"] == [second],
        what=f"the export to list {second} instead of {first}",
    )
    schemas = e2e.world.in_org("/apis/apis.kcp.io/v1alpha1/apiresourceschemas")
    assert e2e.rest.get(f"{schemas}/{first}") is not None, "the old schema was deleted"
    new_spec = (e2e.rest.get(f"{schemas}/{second}") or {})["spec"]
    assert "shape" in new_spec["versions"][0]["schema"]["properties"]["spec"]["properties"]


def test_deleting_a_published_resource_stops_its_sync_but_keeps_it_in_the_export(e2e: E2E) -> None:
    servlet, cluster = e2e.serve_widgets()
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "before", namespace="default", size=1))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="before"))
    e2e.wait_condition("widgets", "Ready")
    schema = (e2e.published_resource("widgets") or {})["status"]["resourceSchemaName"]
    # The operator's view of a running sync worker: its series of managed objects.
    series = 'servlet_managed_objects{published_resource="widgets"}'
    e2e.eventually(lambda: series in servlet.metrics(), what=f"{series} to be reported")

    e2e.rest.delete("/apis/services.kdp.k8c.io/v1alpha1/publishedresources/widgets")
    e2e.eventually(
        lambda: series not in servlet.metrics(), what="the sync worker of the deleted PublishedResource to stop"
    )
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "after", namespace="default", size=1))

    def not_synced() -> bool:
        assert not e2e.has_finalizer("team-a", REMOTE_WIDGET, namespace="default", name="after"), "it got a finalizer"
        assert e2e.local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="after")) is None
        return True

    e2e.consistently(not_synced, what="objects of a deleted PublishedResource staying unsynced")
    export = e2e.rest.get(e2e.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{e2e.world.export}")) or {}
    assert schema in export["spec"]["latestResourceSchemas"], "the schema was taken out of the export"
    assert e2e.rest.served(e2e.remote_path("team-a", REMOTE_WIDGET)), "workspaces lost the resource"
