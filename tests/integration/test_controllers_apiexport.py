"""The apiexport controller against kcpsim, in-process: schemas and claims added, nothing removed."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from kcpsim import FaultPlan, Topology
from kcpsim.faults import ErrorRule
from kcpsim.harness.world import World
from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import Harness, settle, world_and_daemon
from tests.integration.e2e.manifests import (
    certificate_crd,
    example_published_resource,
    published_resource,
    widget_crd,
)

EXPORT = "/apis/apis.kcp.io/v1alpha1/apiexports/certificates.example.corp"
SCHEMAS = "/apis/apis.kcp.io/v1alpha1/apiresourceschemas"
WIDGET_CRD = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"


def _export(h: Harness) -> dict[str, Any]:
    found = h.rest.get(h.world.in_org(EXPORT))
    assert found is not None
    return found


def _schema_name(h: Harness, published_resource: str) -> str:
    found = h.rest.get(f"/apis/services.kdp.k8c.io/v1alpha1/publishedresources/{published_resource}") or {}
    return str(found["status"]["resourceSchemaName"])


@pytest.mark.parametrize(
    "claims, expected",
    [
        ((), {"events", "namespaces", "secrets"}),
        (("configmaps",), {"configmaps", "events", "namespaces", "secrets"}),
    ],
    ids=["bare-export", "foreign-claim-kept"],
)
async def test_the_schema_and_the_claims_of_related_resources_are_added_in_one_patch(
    tmp_path: Path, claims: tuple[str, ...], expected: set[str]
) -> None:
    async with world_and_daemon(
        tmp_path,
        topology=Topology(with_schema=False, claims=claims),
        documents=(certificate_crd(), example_published_resource()),
    ) as h:
        exported = await h.wait_condition("publish-certmanager-certs", "Exported")
        schema = _schema_name(h, "publish-certmanager-certs")
        assert schema in exported["message"]
        spec = _export(h)["spec"]
        assert spec["latestResourceSchemas"] == [schema]
        assert {claim["resource"] for claim in spec["permissionClaims"]} == expected
        assert all(claim.get("all") is True for claim in spec["permissionClaims"]), spec["permissionClaims"]
        await settle(h.world)
        assert [r for r in h.requests(since_mark=False) if "apiexports" in r] == [
            "GET org apiexports certificates.example.corp",  # the startup check
            "GET org apiexports",  # the informer's list
            "PATCH org apiexports certificates.example.corp",
        ]


async def test_a_complete_export_is_not_written_and_a_conflicting_write_is_retried(tmp_path: Path) -> None:
    def conflict_once(world: World) -> None:
        world.sim.set_faults(FaultPlan(errors=(ErrorRule(status=409, verb="patch", resource="apiexports", limit=1),)))

    async with world_and_daemon(
        tmp_path, documents=(widget_crd(), published_resource("widgets", kind="Widget")), prepare=conflict_once
    ) as h:
        await h.wait_condition("widgets", "Exported")
        await settle(h.world)
        patches = [r for r in h.requests(since_mark=False, with_status=True) if r.startswith("PATCH org apiexports")]
        assert patches == [
            "PATCH org apiexports certificates.example.corp -> 409",
            "PATCH org apiexports certificates.example.corp -> 200",
        ]
        h.set_mark()
        h.controllers.export_queue.resync()
        await settle(h.world)
        assert h.requests() == []


async def test_a_changed_crd_gets_a_new_schema_that_replaces_the_old_one_in_the_export(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=(widget_crd(), published_resource("widgets", kind="Widget"))) as h:
        await h.wait_condition("widgets", "Ready")
        old = _schema_name(h, "widgets")
        crd = h.rest.get(WIDGET_CRD) or {}
        changed = copy.deepcopy(crd)
        properties = changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        properties["shape"] = {"type": "string"}
        h.rest._send("PUT", WIDGET_CRD, changed)

        await eventually_async(lambda: _schema_name(h, "widgets") != old, what="a new schema name in the status")
        new = _schema_name(h, "widgets")
        await eventually_async(
            lambda: _export(h)["spec"]["latestResourceSchemas"] == [new],
            what="the new schema to replace the old one in the export",
        )
        assert h.rest.get(h.world.in_org(f"{SCHEMAS}/{old}")) is not None, "an old schema must never be deleted"
        await h.wait_condition("widgets", "Ready")
        await eventually_async(
            lambda: h.worker("widgets").context.projected.schema_name == new,
            what="the sync worker to follow the new schema",
        )


async def test_a_schema_for_a_resource_another_published_resource_serves_is_not_exported(tmp_path: Path) -> None:
    documents = (
        widget_crd(),
        certificate_crd(),
        published_resource("widgets", kind="Widget", projection={"plural": "things", "kind": "Thing"}),
        published_resource(
            "certs", kind="Certificate", api_group="cert-manager.io", projection={"plural": "things", "kind": "Thing"}
        ),
    )
    async with world_and_daemon(tmp_path, documents=documents) as h:
        for name in ("widgets", "certs"):
            await h.wait_condition(name, "SchemaPublished")

        def both_settled() -> dict[str, dict[str, Any]]:
            found = {name: h.condition(name, "Exported") for name in ("widgets", "certs")}
            # SchemaNotPublished passes while the export controller has yet to see a new schema.
            assert all(found.values()), found
            assert all(c and c["reason"] != "SchemaNotPublished" for c in found.values()), found
            return {name: condition for name, condition in found.items() if condition}

        conditions = await eventually_async(both_settled, what="Exported settled on both")
        statuses = sorted(condition["status"] for condition in conditions.values())
        assert statuses == ["False", "True"], conditions
        loser = next(condition for condition in conditions.values() if condition["status"] == "False")
        assert loser["reason"] == "ResourceTaken" and "one schema per resource" in loser["message"]
        assert len(_export(h)["spec"]["latestResourceSchemas"]) == 1


async def test_a_deleted_export_is_reported_and_never_recreated(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=(widget_crd(), published_resource("widgets", kind="Widget"))) as h:
        await h.wait_condition("widgets", "Ready")
        h.set_mark()
        h.rest.delete(h.world.in_org(EXPORT))
        exported = await h.wait_condition("widgets", "Exported", "False")
        assert exported["reason"] == "ExportNotFound"
        await settle(h.world)
        assert not [r for r in h.requests() if r.startswith(("POST org apiexports", "PATCH org apiexports"))]
