"""`syncStatus` for origin platform (`servlet run` on kcpsim): the tenant's Database comes down, and
the status the service's operator writes on the copy goes up to the tenant's Database."""

from __future__ import annotations

from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import REMOTE_WIDGET, published_resource, remote_object, widget_crd
from tests.integration.e2e.test_related_types import (
    DATABASE,
    database,
    database_crd,
    database_entry,
    provide_databases_in_kcp,
    serve_with_claims,
)


def test_with_sync_status_the_status_of_a_workspace_databases_copy_goes_up(e2e: E2E) -> None:
    identity = provide_databases_in_kcp(e2e, status_subresource=True)
    crd = database_crd()
    crd["spec"]["versions"][0]["subresources"] = {"status": {}}
    serve_with_claims(
        e2e,
        identity,
        widget_crd(),
        crd,
        published_resource(
            "widgets", kind="Widget", related=[database_entry(identity, origin="platform", syncStatus=True)]
        ),
    )
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", DATABASE, database("mine", namespace="default", engine="mysql", size=2))
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", note="mine"))
    e2e.wait_local(DATABASE, namespace=cluster, name="mine")

    # The operator works on the copy and reports there; the tenant sees it on its own Database.
    for phase in ("Provisioning", "Ready"):
        e2e.rest.merge_patch(DATABASE.path(namespace=cluster, name="mine") + "/status", {"status": {"phase": phase}})
        e2e.eventually(
            lambda phase=phase: (
                (e2e.remote("team-a", DATABASE, namespace="default", name="mine") or {}).get("status")
                == {"phase": phase}
            ),
            what=f"the copy's status {phase} on the workspace Database",
        )
    assert (e2e.remote("team-a", DATABASE, namespace="default", name="mine") or {})["spec"] == {
        "engine": "mysql",
        "size": 2,
    }, "only the status is written to the tenant's object"
    local = e2e.local(DATABASE, namespace=cluster, name="mine") or {}
    assert local.get("status") == {"phase": "Ready"}, "the copy keeps the operator's status"
