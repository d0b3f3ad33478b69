"""A tenant cannot grow the servlet's memory with Secrets it has no use for (in-process, on kcpsim).

Related kinds are watched metadata-only; the servlet holds the content of the Secrets primaries
reference, and of nothing else, while those still sync both ways, promptly and at no request
when nothing changed.
"""

from __future__ import annotations

import base64
from pathlib import Path

from kcpsim.waiting import eventually_async
from servlet.core.actions import Side
from tests.integration.controllers_support import RESYNC_PERIOD, TEAM_A, settle, world_and_daemon
from tests.integration.e2e.manifests import (
    EXAMPLE,
    SECRET,
    ZERTIFIKAT,
    certificate_crd,
    certificates_with_platform_secret,
    secret,
    zertifikat,
)

UNRELATED = 30  # per side
BLOB = base64.b64encode(b"\0" * 100_000).decode()


async def test_unrelated_secrets_leave_no_content_in_the_servlet_and_referenced_ones_still_sync(tmp_path: Path) -> None:
    async with world_and_daemon(
        tmp_path, documents=(certificate_crd(), certificates_with_platform_secret()), resync_period=RESYNC_PERIOD
    ) as h:
        await h.wait_condition(EXAMPLE, "Ready")
        worker = h.worker(EXAMPLE)
        remote_secrets = h.world.in_workspace("team-a", SECRET.path(namespace="default"))
        h.world.ensure_namespace(TEAM_A)
        for index in range(UNRELATED):
            h.rest.create(remote_secrets, secret(f"tenant-junk-{index}", namespace="default", data={"x": BLOB}))
            h.rest.create(
                SECRET.path(namespace=TEAM_A), secret(f"local-junk-{index}", namespace=TEAM_A, data={"x": BLOB})
            )

        # Referenced Secrets sync both ways: the CA down, the TLS Secret up.
        h.rest.create(remote_secrets, secret("team-issuer-ca", namespace="default", data={"ca.crt": "Y2E="}))
        h.rest.create(
            h.world.in_workspace("team-a", ZERTIFIKAT.path(namespace="default")),
            zertifikat("web", issuer="team-issuer"),
        )
        local_ca = SECRET.path(namespace=TEAM_A, name="team-issuer-ca")
        await eventually_async(lambda: h.data(local_ca) == {"ca.crt": "Y2E="}, what="the CA Secret down")
        h.world.apply(
            secret("web-tls", namespace=TEAM_A, type_="kubernetes.io/tls", data={"tls.crt": "YQ==", "tls.key": "Yg=="})
        )
        remote_tls = f"{remote_secrets}/web-tls"
        await eventually_async(lambda: h.data(remote_tls).get("tls.key") == "Yg==", what="the TLS Secret up")

        # Changes to them still propagate, on either side.
        h.rest.merge_patch(f"{remote_secrets}/team-issuer-ca", {"data": {"ca.crt": "bmV3"}})
        await eventually_async(lambda: h.data(local_ca).get("ca.crt") == "bmV3", what="the new CA down")
        h.rest.merge_patch(SECRET.path(namespace=TEAM_A, name="web-tls"), {"data": {"tls.key": "Yw=="}})
        await eventually_async(lambda: h.data(remote_tls).get("tls.key") == "Yw==", what="the new key up")
        await settle(h.world)

        cached = [obj for cache in worker.related.caches().values() for obj in cache.objects()]
        assert len(cached) >= 2 * UNRELATED + 4, "every Secret is still known (by its metadata)"
        assert not [obj for obj in cached if set(obj) != {"apiVersion", "kind", "metadata"}], (
            "the caches of related kinds hold no Secret's content"
        )
        assert worker.related.held_names() == [
            (Side.LOCAL.value, "team-issuer-ca"),
            (Side.LOCAL.value, "web-tls"),
            (Side.REMOTE.value, "team-issuer-ca"),
            (Side.REMOTE.value, "web-tls"),
        ]

        # A converged resync reuses what is held: not one request.
        h.set_mark()
        reconciles = h.sync_reconciles()
        worker.queue.resync()
        await eventually_async(lambda: h.sync_reconciles() > reconciles, what="the resync to reconcile")
        await settle(h.world)
        assert h.requests() == []

        # Once nothing references them, their content is let go too.
        h.rest.delete(h.world.in_workspace("team-a", ZERTIFIKAT.path(namespace="default", name="web")))
        await eventually_async(lambda: worker.related.held_names() == [], what="the held Secrets to be let go")
