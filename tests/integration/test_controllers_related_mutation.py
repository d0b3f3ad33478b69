"""Mutations of related objects through the running daemon on kcpsim (`spec.related[].mutation`):
the operator's TLS Secret goes up changed, the tenant's ConfigMap comes down changed, a no-op
resync writes nothing, and a failing step is reported by field while the object stays as it was."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import RESYNC_PERIOD, TEAM_A, Harness, settle, world_and_daemon
from tests.integration.e2e.manifests import (
    CONFIGMAP,
    EXAMPLE,
    SECRET,
    ZERTIFIKAT,
    certificate_crd,
    example_published_resource,
    secret,
    zertifikat,
)


def published_with_mutations(settings_steps: list[dict[str, Any]]) -> dict[str, Any]:
    """The example: its TLS Secret goes up without the CA and labelled with its workspace name;
    plus a workspace ConfigMap `<issuer>-settings` that comes down through `settings_steps`."""
    published = copy.deepcopy(example_published_resource())
    (tls,) = published["spec"]["related"]
    tls["mutation"] = {
        "spec": [
            {"delete": {"path": "data.ca\\.crt"}},
            {"cel": {"path": "metadata.labels.copy-of", "expression": "other.metadata.name"}},
        ]
    }
    published["spec"]["related"].append(
        {
            "identifier": "settings",
            "origin": "platform",
            "kind": "ConfigMap",
            "reference": {
                "name": {"path": "spec.issuerRef.name", "regex": {"pattern": "^(.*)$", "replacement": "\\1-settings"}}
            },
            "mutation": {"spec": settings_steps},
        }
    )
    return published


UPPER_REGION = [
    {"template": {"path": "data.region", "template": "{{ .Value.String | upper }}"}},
    {"cel": {"path": "data.copied-to", "expression": "other.metadata.namespace + '/' + other.metadata.name"}},
]


async def accept_the_configmap_claim(h: Harness) -> None:
    """The export claims ConfigMaps for the new entry; team-a accepts every claim, as its user would."""
    export_path = h.world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{h.world.export}")

    def claims() -> list[dict[str, Any]]:
        found = ((h.rest.get(export_path) or {}).get("spec") or {}).get("permissionClaims") or []
        assert any(claim.get("resource") == "configmaps" for claim in found), found
        return list(found)

    accepted = [{**claim, "state": "Accepted"} for claim in await eventually_async(claims, what="a ConfigMap claim")]
    h.rest.merge_patch(
        h.world.in_workspace("team-a", f"/apis/apis.kcp.io/v1alpha1/apibindings/{h.world.export}"),
        {"spec": {"permissionClaims": accepted}},
    )


async def start_with_settings(h: Harness, data: dict[str, str]) -> tuple[str, str]:
    """Once Ready, team-a accepts the claims and creates `team-issuer-settings` with `data` and a
    Certificate of that issuer; the workspace's ConfigMaps and the local settings' paths."""
    await h.wait_condition(EXAMPLE, "Ready")
    await accept_the_configmap_claim(h)
    remote_configmaps = h.world.in_workspace("team-a", CONFIGMAP.path(namespace="default"))
    h.rest.create(
        remote_configmaps,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "team-issuer-settings", "namespace": "default"},
            "data": data,
        },
    )
    h.rest.create(
        h.world.in_workspace("team-a", ZERTIFIKAT.path(namespace="default")),
        zertifikat("web", issuer="team-issuer"),
    )
    return remote_configmaps, CONFIGMAP.path(namespace=TEAM_A, name="team-issuer-settings")


async def test_related_objects_sync_mutated_both_ways_and_a_noop_resync_writes_nothing(tmp_path: Path) -> None:
    documents = (certificate_crd(), published_with_mutations(UPPER_REGION))
    async with world_and_daemon(tmp_path, documents=documents, resync_period=RESYNC_PERIOD) as h:
        remote_configmaps, local_settings = await start_with_settings(h, {"region": "eu"})
        await eventually_async(
            lambda: h.data(local_settings) == {"region": "EU", "copied-to": f"{TEAM_A}/team-issuer-settings"},
            what="the ConfigMap down, mutated",
        )
        assert h.data(f"{remote_configmaps}/team-issuer-settings") == {"region": "eu"}, "the origin is unchanged"

        h.world.apply(
            secret("web-tls", namespace=TEAM_A, data={"tls.crt": "YQ==", "tls.key": "Yg==", "ca.crt": "Yw=="})
        )
        remote_tls = h.world.in_workspace("team-a", SECRET.path(namespace="default", name="web-tls"))
        copied = await eventually_async(lambda: h.rest.get(remote_tls), what="the TLS Secret up")
        assert copied["data"] == {"tls.crt": "YQ==", "tls.key": "Yg=="}
        assert copied["metadata"]["labels"]["copy-of"] == "web-tls"

        # The tenant edits the origin: the change comes down through the same steps.
        h.rest.merge_patch(f"{remote_configmaps}/team-issuer-settings", {"data": {"region": "us"}})
        await eventually_async(lambda: h.data(local_settings).get("region") == "US", what="the new region down")

        # A fixed point: a resync of everything finds nothing to write.
        assert await h.writes_of_a_resync(EXAMPLE) == []


async def test_a_failing_related_step_is_reported_by_field_and_the_copy_is_left_as_it_was(tmp_path: Path) -> None:
    failing = [{"cel": {"path": "data.tier", "expression": "self.data.tier + '-copy'"}}]
    async with world_and_daemon(tmp_path, documents=(certificate_crd(), published_with_mutations(failing))) as h:
        remote_configmaps, local_settings = await start_with_settings(h, {"tier": "a"})
        await eventually_async(lambda: h.data(local_settings) == {"tier": "a-copy"}, what="the ConfigMap down")

        # The tenant removes what the step reads: the step fails, and the copy keeps what it had.
        h.rest.merge_patch(f"{remote_configmaps}/team-issuer-settings", {"data": {"tier": None, "other": "x"}})
        synced = await h.wait_condition(EXAMPLE, "Synced", "False")
        assert "spec.related[1].mutation.spec[0].cel.expression" in synced["message"], synced
        await settle(h.world)
        assert h.data(local_settings) == {"tier": "a-copy"}
