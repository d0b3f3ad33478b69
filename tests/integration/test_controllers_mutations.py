"""Mutations through the running daemon on kcpsim: spec fields rewritten on the way down (regex,
template, CEL, delete), status fields on the way up, no patch loop, and a failing step reported."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import TEAM_A, Harness, settle, world_and_daemon
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    ZERTIFIKAT,
    certificate_crd,
    example_local_name,
    example_published_resource,
    zertifikat,
)

MUTATION = {
    "spec": [
        {"regex": {"path": "spec.commonName", "pattern": "^(.*)\\.example\\.corp$", "replacement": "\\1.internal"}},
        {"cel": {"path": "spec.duration", "expression": 'value == null ? "2160h" : value'}},
        {"cel": {"path": "spec.issuerRef.name", "expression": '"ca-" + other.metadata.namespace'}},
        {"template": {"path": "spec.renewBefore", "template": "{{ .LocalObject.spec.duration }}"}},
        {"delete": {"path": "spec.privateKey"}},
    ],
    "status": [
        # The day only, still a date-time: the workspace's schema validates the format.
        {"regex": {"path": "status.notAfter", "pattern": "T.*$", "replacement": "T00:00:00Z"}},
        {"cel": {"path": "status.revision", "expression": "value == null ? dyn(null) : value + 100"}},
    ],
}


def published_with(mutation: dict[str, Any]) -> dict[str, Any]:
    published = copy.deepcopy(example_published_resource())
    published["spec"]["mutation"] = mutation
    return published


def workspace_certificates(h: Harness, name: str = "") -> str:
    return h.world.in_workspace("team-a", ZERTIFIKAT.path(namespace="default", name=name))


async def test_a_mutation_rewrites_spec_fields_down_and_status_fields_up_without_a_patch_loop(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=(certificate_crd(), published_with(MUTATION))) as h:
        await h.wait_condition("publish-certmanager-certs", "Ready")
        h.rest.create(workspace_certificates(h), zertifikat("web", privateKey={"rotationPolicy": "Always"}))
        local_path = CERTIFICATE.path(namespace=TEAM_A, name=example_local_name(namespace="default", name="web"))
        local = await eventually_async(lambda: h.rest.get(local_path), what="the local copy of web")

        assert local["spec"]["commonName"] == "web.internal"
        assert local["spec"]["duration"] == "2160h"
        assert local["spec"]["renewBefore"] == "2160h"  # a later step reads what an earlier one wrote
        assert local["spec"]["issuerRef"] == {"name": f"ca-{TEAM_A}", "kind": "ClusterIssuer"}
        assert "privateKey" not in local["spec"]
        remote = h.rest.get(workspace_certificates(h, "web"))
        assert remote["spec"]["commonName"] == "web.example.corp", "the workspace object keeps its own content"

        h.rest.merge_patch(local_path + "/status", {"status": {"notAfter": "2027-03-01T10:00:00Z", "revision": 3}})

        def status_went_up() -> dict[str, Any]:
            status = h.rest.get(workspace_certificates(h, "web")).get("status", {})
            assert status == {"notAfter": "2027-03-01T00:00:00Z", "revision": 103}, status
            return status

        await eventually_async(status_went_up, what="the mutated status in the workspace")
        assert h.rest.get(local_path)["status"]["revision"] == 3, "the local status keeps its own values"

        # A fixed point: once settled, the servlet writes nothing more.
        await settle(h.world)
        h.set_mark()
        await settle(h.world, quiet=1.0)
        assert h.requests(writes_only=True) == []

        # A change in the workspace goes down through the same steps.
        h.rest.merge_patch(workspace_certificates(h, "web"), {"spec": {"commonName": "www.example.corp"}})

        def rewritten() -> bool:
            assert h.rest.get(local_path)["spec"]["commonName"] == "www.internal"
            return True

        await eventually_async(rewritten, what="the changed commonName, rewritten, on the local copy")


async def test_a_step_that_fails_for_an_object_is_reported_by_field_and_nothing_is_written(tmp_path: Path) -> None:
    failing = {"spec": [{"cel": {"path": "spec.duration", "expression": 'self.spec.renewBefore + "0s"'}}]}
    async with world_and_daemon(tmp_path, documents=(certificate_crd(), published_with(failing))) as h:
        await h.wait_condition("publish-certmanager-certs", "Ready")
        h.rest.create(workspace_certificates(h), zertifikat("web"))
        synced = await h.wait_condition("publish-certmanager-certs", "Synced", "False")
        assert "spec.mutation.spec[0].cel.expression" in synced["message"], synced
        assert "web" in synced["message"], synced
        local_path = CERTIFICATE.path(namespace=TEAM_A, name=example_local_name(namespace="default", name="web"))
        assert h.rest.get(local_path) is None
        assert "finalizers" not in h.rest.get(workspace_certificates(h, "web"))["metadata"]

        h.rest.merge_patch(workspace_certificates(h, "web"), {"spec": {"renewBefore": "1h"}})
        local = await eventually_async(lambda: h.rest.get(local_path), what="the copy once the step works")
        assert local["spec"]["duration"] == "1h0s"
