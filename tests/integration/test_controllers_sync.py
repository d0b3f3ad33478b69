"""The sync controller against kcpsim, in-process: the exact API calls of each kind of reconcile.

API economy is behaviour a user pays for: a new object costs the finalizer, the local object and
(once per workspace) its namespace; a converged object costs nothing, not even a GET; a changed
field costs one patch; a deletion costs the deletes and the finalizer. The request lists below
are the servlet's own requests as kcpsim answered them (lease traffic left out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kcpsim.waiting import eventually_async
from servlet.core.metadata import REMOTE_NAME_ANNOTATION, REMOTE_NAMESPACE_ANNOTATION
from tests.integration.controllers_support import (
    RESYNC_PERIOD,
    TEAM_A,
    Harness,
    settle,
    world_and_daemon,
)
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    REMOTE_WIDGET,
    SECRET,
    WIDGET,
    ZERTIFIKAT,
    certificate_crd,
    certificates_with_platform_secret,
    default_local_name,
    example_local_name,
    link_labels,
    published_resource,
    remote_object,
    secret,
    widget_crd,
    zertifikat,
)

WIDGETS = (widget_crd(), published_resource("widgets", kind="Widget"))


def _remote_widgets(h: Harness, name: str = "") -> str:
    return h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default", name=name))


def _local_widget(name: str) -> str:
    return WIDGET.path(namespace=TEAM_A, name=default_local_name(namespace="default", name=name))


async def _measure(h: Harness, *, with_status: bool = False) -> list[str]:
    await settle(h.world)
    found = h.requests(with_status=with_status)
    h.set_mark()
    return found


async def test_api_calls_for_a_new_a_converged_a_changed_and_a_deleted_object(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=WIDGETS, resync_period=RESYNC_PERIOD) as h:
        await h.wait_condition("widgets", "Ready")
        await _measure(h)
        w1 = default_local_name(namespace="default", name="w1")

        h.rest.create(_remote_widgets(h), remote_object("Widget", "w1", namespace="default", size=1))
        await eventually_async(lambda: h.rest.get(_local_widget("w1")), what="the local copy of w1")
        assert await _measure(h) == [
            "PATCH vw:k7v2m9x4q1w8z3r5 widgets default/w1",  # the finalizer
            "POST service namespaces",  # the workspace's namespace, first object only
            "POST service widgets k7v2m9x4q1w8z3r5",
        ]

        h.rest.create(_remote_widgets(h), remote_object("Widget", "w2", namespace="default", size=1))
        await eventually_async(lambda: h.rest.get(_local_widget("w2")), what="the local copy of w2")
        assert await _measure(h) == [
            "PATCH vw:k7v2m9x4q1w8z3r5 widgets default/w2",
            "POST service widgets k7v2m9x4q1w8z3r5",
        ]

        reconciles = h.sync_reconciles()
        h.worker("widgets").queue.resync()
        await eventually_async(lambda: h.sync_reconciles() > reconciles, what="the resync to reconcile")
        assert await _measure(h) == [], "a resync of converged objects must send nothing, not even a GET"

        h.rest.merge_patch(_remote_widgets(h, "w1"), {"spec": {"size": 5}})
        await eventually_async(lambda: (h.rest.get(_local_widget("w1")) or {})["spec"]["size"] == 5, what="size 5")
        assert await _measure(h) == [f"PATCH service widgets {TEAM_A}/{w1}"]

        h.rest.delete(_remote_widgets(h, "w1"))
        await eventually_async(lambda: h.rest.get(_remote_widgets(h, "w1")) is None, what="the remote w1 to go")
        assert await _measure(h, with_status=True) == [
            f"DELETE service widgets {TEAM_A}/{w1} -> 200",
            "PATCH vw:k7v2m9x4q1w8z3r5 widgets default/w1 -> 200",  # the finalizer, once the copy is gone
        ]
        assert h.rest.get(_local_widget("w1")) is None


async def test_the_events_of_its_own_writes_do_not_reconcile_a_new_object_again(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=WIDGETS) as h:
        await h.wait_condition("widgets", "Ready")
        await settle(h.world)
        before = h.sync_reconciles()
        for name in ("w1", "w2", "w3"):
            h.rest.create(_remote_widgets(h), remote_object("Widget", name, namespace="default", size=1))
        for name in ("w1", "w2", "w3"):
            await eventually_async(lambda name=name: h.rest.get(_local_widget(name)), what=f"the local copy of {name}")
        await settle(h.world)
        # One reconcile per object: the watch events of the finalizer and of the local copy
        # carry exactly what the servlet wrote and planned from.
        assert h.sync_reconciles() - before == 3
        # A change made by anyone else is reconciled, also on the service cluster.
        h.rest.merge_patch(_remote_widgets(h, "w1"), {"spec": {"size": 5}})
        await eventually_async(lambda: (h.rest.get(_local_widget("w1")) or {})["spec"]["size"] == 5, what="size 5")
        h.rest.merge_patch(_local_widget("w2"), {"spec": {"size": 9}})
        await eventually_async(
            lambda: (h.rest.get(_local_widget("w2")) or {})["spec"]["size"] == 1,
            what="the servlet to restore w2's size",
        )
        await settle(h.world)
        assert h.sync_reconciles() - before == 5


async def test_status_and_related_objects_cost_one_request_per_change(tmp_path: Path) -> None:
    """Plus one GET for the content of a related object when a primary first reads it or someone
    else changed it: related kinds are watched metadata-only (decisions.md)."""
    async with world_and_daemon(
        tmp_path, documents=(certificate_crd(), certificates_with_platform_secret()), resync_period=RESYNC_PERIOD
    ) as h:
        await h.wait_condition("publish-certmanager-certs", "Ready")
        await _measure(h)
        local = example_local_name(namespace="default", name="web")
        remote_secrets = h.world.in_workspace("team-a", SECRET.path(namespace="default"))

        # The user's CA Secret alone is nobody's related object yet: nothing happens.
        h.rest.create(remote_secrets, secret("team-issuer-ca", namespace="default", data={"ca.crt": "Y2E="}))
        assert await _measure(h) == []

        h.rest.create(
            h.world.in_workspace("team-a", ZERTIFIKAT.path(namespace="default")),
            zertifikat("web", issuer="team-issuer"),
        )
        await eventually_async(
            lambda: h.rest.get(SECRET.path(namespace=TEAM_A, name="team-issuer-ca")),
            what="the local copy of the CA Secret",
        )
        assert await _measure(h) == [
            "PATCH vw:k7v2m9x4q1w8z3r5 zertifikate default/web",
            "POST service namespaces",
            "POST service certificates k7v2m9x4q1w8z3r5",
            "GET vw:k7v2m9x4q1w8z3r5 secrets default/team-issuer-ca",  # its content, once
            "POST service secrets k7v2m9x4q1w8z3r5",  # the platform-origin CA Secret, down
            f"PATCH service certificates {TEAM_A}/{local}",  # then its record, on the local primary
        ]

        h.rest.merge_patch(
            CERTIFICATE.path(namespace=TEAM_A, name=local) + "/status",
            {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
        )
        assert await _measure(h) == ["PATCH vw:k7v2m9x4q1w8z3r5 zertifikate/status default/web"]

        h.world.apply(
            secret("web-tls", namespace=TEAM_A, type_="kubernetes.io/tls", data={"tls.crt": "YQ==", "tls.key": "Yg=="})
        )
        await eventually_async(lambda: h.rest.get(f"{remote_secrets}/web-tls"), what="the TLS Secret in the workspace")
        assert await _measure(h) == [
            f"GET service secrets {TEAM_A}/web-tls",
            "POST vw:k7v2m9x4q1w8z3r5 secrets default",
            f"PATCH service certificates {TEAM_A}/{local}",  # its record once created, on the local primary
        ]

        h.rest.merge_patch(SECRET.path(namespace=TEAM_A, name="web-tls"), {"data": {"tls.key": "Yw=="}})
        assert await _measure(h) == [
            f"GET service secrets {TEAM_A}/web-tls",
            "PATCH vw:k7v2m9x4q1w8z3r5 secrets default/web-tls",
        ]

        reconciles = h.sync_reconciles()
        h.worker("publish-certmanager-certs").queue.resync()
        await eventually_async(lambda: h.sync_reconciles() > reconciles, what="the resync to reconcile")
        assert await _measure(h) == []

        h.rest.delete(h.world.in_workspace("team-a", ZERTIFIKAT.path(namespace="default", name="web")))
        await eventually_async(
            lambda: (
                h.rest.get(h.world.in_workspace("team-a", ZERTIFIKAT.path(namespace="default", name="web"))) is None
            ),
            what="the Zertifikat to go",
        )
        assert await _measure(h) == [
            "DELETE vw:k7v2m9x4q1w8z3r5 secrets default/web-tls",
            f"DELETE service secrets {TEAM_A}/team-issuer-ca",
            f"DELETE service certificates {TEAM_A}/{local}",
            "PATCH vw:k7v2m9x4q1w8z3r5 zertifikate default/web",
        ]
        assert h.rest.get(f"{remote_secrets}/team-issuer-ca") is not None, "an origin object was deleted"


def _occupant(*, name_hash_label: str, annotations: dict[str, str]) -> dict[str, Any]:
    labels = link_labels(cluster=TEAM_A, namespace="default", name="w1")
    labels["syncer.kdp.k8c.io/remote-object-name-hash"] = name_hash_label
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {
            "name": default_local_name(namespace="default", name="w1"),
            "namespace": TEAM_A,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {"size": 99},
    }


@pytest.mark.parametrize(
    "annotations, adopted",
    [
        ({REMOTE_NAME_ANNOTATION: "w1", REMOTE_NAMESPACE_ANNOTATION: "default"}, True),
        ({REMOTE_NAME_ANNOTATION: "someone-else", REMOTE_NAMESPACE_ANNOTATION: "default"}, False),
    ],
    ids=["annotations-name-it-adopted", "names-another-object-conflict"],
)
async def test_an_object_in_the_way_is_known_from_the_cache_and_adopted_only_when_provably_ours(
    tmp_path: Path, annotations: dict[str, str], adopted: bool
) -> None:
    async with world_and_daemon(tmp_path, documents=WIDGETS) as h:
        await h.wait_condition("widgets", "Ready")
        h.world.ensure_namespace(TEAM_A)
        # A copy with a mangled name-hash label: the label index cannot find it.
        h.rest.create(WIDGET.path(namespace=TEAM_A), _occupant(name_hash_label="mangled", annotations=annotations))
        await _measure(h)

        h.rest.create(_remote_widgets(h), remote_object("Widget", "w1", namespace="default", size=1))
        local_name = default_local_name(namespace="default", name="w1")
        if adopted:
            await eventually_async(
                lambda: (h.rest.get(_local_widget("w1")) or {})["spec"].get("size") == 1,
                what="the adopted copy to get the remote content",
            )
        else:
            await eventually_async(
                lambda: b'servlet_sync_conflicts_total{published_resource="widgets"} 1.0' in h.daemon.metrics.render(),
                what="the conflict to be counted",
            )
        requests = await _measure(h, with_status=True)
        # The local cache holds every Widget, so the object in the way is known before any write:
        # no create that fails, no read.
        if adopted:
            assert requests == [
                "PATCH vw:k7v2m9x4q1w8z3r5 widgets default/w1 -> 200",  # the finalizer
                *[f"PATCH service widgets {TEAM_A}/{local_name} -> 200"] * 2,  # links, content
            ]
            labels = (h.rest.get(_local_widget("w1")) or {})["metadata"]["labels"]
            expected = link_labels(cluster=TEAM_A, namespace="default", name="w1")
            assert {key: labels.get(key) for key in expected} == expected
        else:
            assert requests == [], "a conflict writes nothing: no finalizer, no create"
            assert (h.rest.get(_local_widget("w1")) or {})["spec"] == {"size": 99}


@pytest.mark.parametrize("delete_orphans", [False, True], ids=["reported", "deleted"])
async def test_a_copy_whose_remote_object_vanished_is_an_orphan(tmp_path: Path, delete_orphans: bool) -> None:
    async with world_and_daemon(tmp_path, documents=WIDGETS, delete_orphans=delete_orphans) as h:
        await h.wait_condition("widgets", "Ready")
        h.rest.create(_remote_widgets(h), remote_object("Widget", "keep", namespace="default", size=1))
        await eventually_async(lambda: h.rest.get(_local_widget("keep")), what="the copy of a live object")
        h.world.ensure_namespace(TEAM_A)
        # A copy of this servlet whose remote object no longer exists (force-deleted meanwhile).
        orphan = {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {
                "name": "left-behind",
                "namespace": TEAM_A,
                "labels": link_labels(
                    cluster=TEAM_A, namespace="default", name="gone", resource="widgets.certificates.example.corp"
                ),
                "annotations": {REMOTE_NAME_ANNOTATION: "gone", REMOTE_NAMESPACE_ANNOTATION: "default"},
            },
            "spec": {"size": 1},
        }
        h.rest.create(WIDGET.path(namespace=TEAM_A), orphan)
        await eventually_async(
            lambda: "left-behind" in {key.name for key in h.worker("widgets")._local.keys()},
            what="the orphan in the cache",
        )
        h.worker("widgets")._orphan_queue.add("orphans")
        metrics = h.daemon.metrics
        if delete_orphans:
            await eventually_async(
                lambda: h.rest.get(WIDGET.path(namespace=TEAM_A, name="left-behind")) is None,
                what="the orphan to be deleted",
            )
            assert b'servlet_orphans_deleted_total{published_resource="widgets"} 1.0' in metrics.render()
        else:
            await eventually_async(
                lambda: b'servlet_orphaned_objects{published_resource="widgets"} 1.0' in metrics.render(),
                what="the orphan to be counted",
            )
            await settle(h.world)
            assert h.rest.get(WIDGET.path(namespace=TEAM_A, name="left-behind")) is not None
        assert h.rest.get(_local_widget("keep")) is not None, "a live object's copy is no orphan"


async def test_a_burst_from_a_new_workspace_creates_its_namespace_once_and_nothing_twice(tmp_path: Path) -> None:
    async with world_and_daemon(tmp_path, documents=WIDGETS) as h:
        await h.wait_condition("widgets", "Ready")
        await _measure(h)
        remote = h.world.in_workspace("team-b", REMOTE_WIDGET.path(namespace="default"))
        names = [f"burst-{i:02d}" for i in range(20)]
        for name in names:
            h.rest.create(remote, remote_object("Widget", name, namespace="default", size=1))
        await eventually_async(lambda: len(h.rest.list(WIDGET.path())) == len(names), what="every copy")
        requests = await _measure(h, with_status=True)
        assert sorted(requests) == sorted(
            [
                "POST service namespaces -> 201",
                *(["POST service widgets p4n8c2l6t0y9h1j3 -> 201"] * len(names)),
                *(f"PATCH vw:p4n8c2l6t0y9h1j3 widgets default/{name} -> 200" for name in names),
            ]
        )
