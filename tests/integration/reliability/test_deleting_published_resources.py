"""Deleting a PublishedResource must not leave the servlet's finalizer on users' objects.

Otherwise a user's later deletion waits forever for a cleanup no worker will do. Decided
behaviour (docs/decisions.md): when a PublishedResource goes away while the servlet runs, its
worker releases every object (finalizer removed, local copies kept, as for an object that leaves
the filter), and from then on users' deletions go through at once.
"""

from __future__ import annotations

import pytest

from kcpsim import ErrorRule, FaultPlan
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    REMOTE_WIDGET,
    WIDGET,
    default_local_name,
    remote_object,
)

# The first releases fail (500, then a 409 for a changed object): they must be retried.
FAILING_RELEASES = FaultPlan(
    errors=(
        ErrorRule(status=500, verb="patch", target="vw", limit=2),
        ErrorRule(status=409, verb="patch", target="vw", limit=1),
    )
)


@pytest.mark.parametrize("faults", [None, FAILING_RELEASES], ids=["plain", "failing-releases-retried"])
def test_deleting_a_published_resource_releases_users_objects(e2e: E2E, faults: FaultPlan | None) -> None:
    servlet, cluster = e2e.serve_widgets()
    names = [f"kept-{i}" for i in range(3)]
    for name in names:
        e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", name, namespace="default", size=1))
    for name in names:
        e2e.wait_finalizer("team-a", REMOTE_WIDGET, namespace="default", name=name)

    if faults is not None:
        e2e.simulated.sim.set_faults(faults)
    e2e.rest.delete("/apis/services.kdp.k8c.io/v1alpha1/publishedresources/widgets")
    for name in names:
        e2e.eventually(
            lambda n=name: not e2e.has_finalizer("team-a", REMOTE_WIDGET, namespace="default", name=n),
            what=f"the servlet's finalizer to leave {name} after its PublishedResource was deleted",
            timeout=20,
        )
    if faults is not None:
        assert e2e.simulated.sim.faults.fired() == 3, "the injected failures did not happen"
    # The servlet logs after its last release is answered, so the log line may trail the patch.
    e2e.eventually(
        lambda: "released the objects of a deleted PublishedResource" in servlet.log_text(),
        what="the servlet to report the released objects",
    )
    # A user's deletion now completes; local copies stay (the operator's to clean up, like orphans).
    e2e.rest.delete(e2e.remote_path("team-a", REMOTE_WIDGET, namespace="default", name=names[0]))
    e2e.eventually(
        lambda: e2e.remote("team-a", REMOTE_WIDGET, namespace="default", name=names[0]) is None,
        what="the user's deletion to complete",
    )
    assert e2e.local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name=names[1]))
