"""A path into a list names several related objects (in-process daemon, on kcpsim): each DNS name
of a Certificate brings a workspace Secret down and an operator's Secret up, paired by position,
and an item removed from the list takes its copies with it."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import RESYNC_PERIOD, TEAM_A, Harness, settle, world_and_daemon
from tests.integration.e2e.manifests import (
    EXAMPLE,
    SECRET,
    ZERTIFIKAT,
    certificate_crd,
    example_published_resource,
    secret,
    zertifikat,
)

NAMES = ["a.example.corp", "b.example.corp"]


def _per_dns_name(identifier: str, origin: str, suffix: str) -> dict[str, Any]:
    """`<first label of each dnsNames item><suffix>`, one Secret per item."""
    return {
        "identifier": identifier,
        "origin": origin,
        "kind": "Secret",
        "object": {
            "reference": {
                "path": "spec.dnsNames[*]",
                "regex": {"pattern": "^([a-z0-9-]+)\\..*$", "replacement": f"\\1{suffix}"},
            }
        },
    }


def published() -> dict[str, Any]:
    resource = copy.deepcopy(example_published_resource())
    resource["spec"]["related"] += [
        _per_dns_name("credentials", "platform", "-cred"),
        _per_dns_name("issued", "service", "-issued"),
    ]
    return resource


def _exists(h: Harness, path: str) -> bool:
    return h.rest.get(path) is not None


async def test_each_list_item_syncs_its_own_secrets_both_ways_and_a_removed_item_takes_them(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=(certificate_crd(), published()), resync_period=RESYNC_PERIOD) as h:
        await h.wait_condition(EXAMPLE, "Ready")
        remote_secrets = h.world.in_workspace("team-a", SECRET.path(namespace="default"))
        for label in ("a", "b"):
            h.rest.create(remote_secrets, secret(f"{label}-cred", namespace="default", data={"who": "dGVuYW50"}))
        zertifikate = h.world.in_workspace("team-a", ZERTIFIKAT.path(namespace="default"))
        h.rest.create(zertifikate, zertifikat("web", dnsNames=NAMES))

        for label in ("a", "b"):
            local_copy = SECRET.path(namespace=TEAM_A, name=f"{label}-cred")
            await eventually_async(lambda path=local_copy: _exists(h, path), what=f"{label}-cred down")
            h.world.apply(secret(f"{label}-issued", namespace=TEAM_A, data={"for": "b3A="}))
        for label in ("a", "b"):
            await eventually_async(
                lambda label=label: _exists(h, f"{remote_secrets}/{label}-issued"), what=f"{label}-issued up"
            )

        # A converged resync writes nothing, whatever the number of items.
        assert await h.writes_of_a_resync(EXAMPLE) == []

        # The tenant drops the second name: its copies go both ways, the first item's stay.
        h.rest.merge_patch(f"{zertifikate}/web", {"spec": {"dnsNames": NAMES[:1]}})
        await eventually_async(
            lambda: not _exists(h, SECRET.path(namespace=TEAM_A, name="b-cred")), what="b-cred's copy gone"
        )
        await eventually_async(lambda: not _exists(h, f"{remote_secrets}/b-issued"), what="b-issued's copy gone")
        await settle(h.world)
        assert _exists(h, SECRET.path(namespace=TEAM_A, name="a-cred"))
        assert _exists(h, f"{remote_secrets}/a-issued")
        assert _exists(h, f"{remote_secrets}/b-cred"), "the tenant's own Secret stays"
        assert _exists(h, SECRET.path(namespace=TEAM_A, name="b-issued")), "the operator's own Secret stays"
        assert h.condition(EXAMPLE, "Synced")["status"] == "True"
