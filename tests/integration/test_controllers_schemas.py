"""The apiresourceschema controller against kcpsim, in-process: schemas, Valid and SchemaPublished."""

from __future__ import annotations

from pathlib import Path

from kcpsim.harness.world import World
from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import TEAM_A, settle, world_and_daemon
from tests.integration.e2e.manifests import (
    REMOTE_WIDGET,
    WIDGET,
    default_local_name,
    gadget_crd,
    published_resource,
    remote_object,
    widget_crd,
)

SCHEMAS = "/apis/apis.kcp.io/v1alpha1/apiresourceschemas"


async def test_a_bad_published_resource_is_reported_by_field_while_a_good_one_is_published(tmp_path: Path) -> None:
    documents = (
        widget_crd(),
        gadget_crd(),
        published_resource("widgets-typo", kind="Widget", naming={"name": "$remoteNme"}),
        published_resource("gadgets", kind="Gadget"),
    )
    async with world_and_daemon(tmp_path, documents=documents) as h:
        valid = await h.wait_condition("widgets-typo", "Valid", "False")
        assert valid["reason"] == "InvalidSpec"
        assert "spec.naming.name" in valid["message"] and "$remoteNme" in valid["message"], valid
        assert (await h.wait_condition("widgets-typo", "SchemaPublished", "False"))["reason"] == "NotPublished"
        ready = await h.wait_condition("widgets-typo", "Ready", "False")
        assert ready["message"].startswith("Valid: spec.naming.name")

        published = await h.wait_condition("gadgets", "SchemaPublished")
        status = (h.rest.get("/apis/services.kdp.k8c.io/v1alpha1/publishedresources/gadgets") or {})["status"]
        assert status["resourceSchemaName"] in published["message"]
        schemas = [s["metadata"]["name"] for s in h.rest.list(h.world.in_org(SCHEMAS))]
        assert schemas == [status["resourceSchemaName"]], "only the valid PublishedResource gets a schema"
        await h.wait_condition("gadgets", "Ready")


async def test_a_missing_crd_is_reported_until_it_appears(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=(published_resource("widgets", kind="Widget"),)) as h:
        valid = await h.wait_condition("widgets", "Valid", "False")
        assert valid["reason"] == "CRDNotFound"
        assert valid["message"].startswith("spec.resource: ") and "'Widget'" in valid["message"], valid

        h.world.apply(widget_crd())
        await h.wait_condition("widgets", "Ready")
        assert (await h.wait_condition("widgets", "Valid"))["observedGeneration"] == 1
        h.rest.create(
            h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default")),
            remote_object("Widget", "late", namespace="default", size=1),
        )
        local = WIDGET.path(namespace=TEAM_A, name=default_local_name(namespace="default", name="late"))
        await eventually_async(lambda: h.rest.get(local), what="the first object's local copy")


async def test_a_published_schema_costs_nothing_later_and_comes_back_when_deleted(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=(widget_crd(), published_resource("widgets", kind="Widget"))) as h:
        await h.wait_condition("widgets", "Ready")
        await settle(h.world)
        h.set_mark()
        for queue in h.controllers.queues:
            queue.resync()
        await settle(h.world)
        assert h.requests() == [], "a resync of a published, exported PublishedResource must send nothing"

        name = (h.rest.get("/apis/services.kdp.k8c.io/v1alpha1/publishedresources/widgets") or {})["status"][
            "resourceSchemaName"
        ]
        h.rest.delete(h.world.in_org(f"{SCHEMAS}/{name}"))
        await eventually_async(
            lambda: h.rest.get(h.world.in_org(f"{SCHEMAS}/{name}")), what="the schema to be recreated"
        )
        await settle(h.world)
        assert h.requests() == ["POST org apiresourceschemas"]


def _without_immutability_rule(world: World) -> None:
    """The PublishedResource CRD as on a cluster that does not enforce its CEL rule."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/publishedresources.services.kdp.k8c.io"
    crd = world.rest.get(path) or {}
    spec_schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec_schema.pop("x-kubernetes-validations")
    world.rest._send("PUT", path, crd)


async def test_a_changed_spec_is_reported_and_the_first_spec_keeps_being_served(tmp_path: Path) -> None:
    async with world_and_daemon(
        tmp_path,
        documents=(widget_crd(), published_resource("widgets", kind="Widget")),
        prepare=_without_immutability_rule,
    ) as h:
        await h.wait_condition("widgets", "Ready")
        first = h.worker("widgets")
        h.rest.merge_patch(
            "/apis/services.kdp.k8c.io/v1alpha1/publishedresources/widgets",
            {"spec": {"naming": {"name": "$remoteName"}}},
        )
        valid = await h.wait_condition("widgets", "Valid", "False")
        assert valid["reason"] == "SpecChanged" and valid["message"].startswith("spec: was changed"), valid
        assert valid["observedGeneration"] == 2
        await settle(h.world)
        assert h.worker("widgets") is first, "a changed spec must not restart syncing with new instructions"
        assert first.context.published.spec.naming.name is None


async def test_only_published_resources_the_selector_admits_are_served(tmp_path: Path) -> None:
    chosen = published_resource("widgets", kind="Widget")
    chosen["metadata"]["labels"] = {"team": "certs"}
    other = published_resource("gadgets", kind="Gadget")
    async with world_and_daemon(
        tmp_path,
        documents=(widget_crd(), gadget_crd(), chosen, other),
        published_resource_selector="team in (certs,ops)",
    ) as h:
        await h.wait_condition("widgets", "Ready")
        await settle(h.world)
        assert h.condition("gadgets", "Valid") is None, "a PublishedResource outside the selector got a status"
        schemas = [s["metadata"]["name"] for s in h.rest.list(h.world.in_org(SCHEMAS))]
        assert len(schemas) == 1 and ".widgets." in schemas[0]
        assert list(h.controllers.manager.workers) == ["widgets"]
