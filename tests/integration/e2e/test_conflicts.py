"""A local name held by something else: a conflict that writes nothing, retried until the name is free."""

from __future__ import annotations

from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import REMOTE_WIDGET, WIDGET, default_local_name, remote_object

# Held long enough for the retry backoff to grow past this: only the wake-up on the name meets it.
CONFLICT_HELD = 7.0
FREED_NAME_TAKEN_WITHIN = 2.5


def test_a_conflict_writes_nothing_and_a_freed_name_is_taken_within_seconds(e2e: E2E) -> None:
    servlet, cluster = e2e.serve_widgets()
    name = default_local_name(namespace="default", name="w")
    e2e.world.ensure_namespace(cluster)
    foreign = e2e.rest.create(
        WIDGET.path(namespace=cluster),
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": name, "namespace": cluster},
            "spec": {"size": 99},
        },
    )
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "w", namespace="default", size=1))

    e2e.eventually(lambda: "conflict: not writing" in servlet.log_text(), what="the conflict to be reported")
    e2e.consistently(
        lambda: (
            not e2e.has_finalizer("team-a", REMOTE_WIDGET, namespace="default", name="w")
            and e2e.local(WIDGET, namespace=cluster, name=name) == foreign
        ),
        what="no finalizer on the workspace object and the object in the way untouched",
        duration=CONFLICT_HELD,
    )

    # The service owner removes its object: the name is free, and the copy takes it promptly
    # (not at the next resync, and not after a backoff grown while the name was held).
    e2e.rest.delete(WIDGET.path(namespace=cluster, name=name))
    copy = e2e.eventually(
        lambda: (
            (e2e.local(WIDGET, namespace=cluster, name=name) or {}).get("spec") == {"size": 1}
            and e2e.local(WIDGET, namespace=cluster, name=name)
        ),
        what="the copy at the freed name",
        timeout=FREED_NAME_TAKEN_WITHIN,
    )
    assert copy["metadata"]["labels"]["syncer.kdp.k8c.io/servlet"] == "tom"
    e2e.wait_finalizer("team-a", REMOTE_WIDGET, namespace="default", name="w")
