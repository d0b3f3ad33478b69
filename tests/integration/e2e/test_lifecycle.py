"""Lifecycle of a synced object: filters, release, deletion with cleanup, orphans (SPEC 7, 8)."""

from __future__ import annotations

import base64

import pytest

from tests.integration.e2e.env import E2E
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
    published_resource,
    remote_object,
    secret,
    widget_crd,
    zertifikat,
)


def test_filters_choose_what_is_synced_and_objects_that_leave_are_released(e2e: E2E) -> None:
    e2e.publish(
        widget_crd(),
        published_resource(
            "prod-widgets", kind="Widget", filter={"namespace": "prod", "resource": {"matchLabels": {"sync": "yes"}}}
        ),
    )
    e2e.servlet()
    e2e.wait_served("team-a", REMOTE_WIDGET)
    cluster = e2e.world.cluster("team-a")

    outside = [("default", "wrong-namespace", {"sync": "yes"}), ("prod", "unlabelled", {})]
    for namespace, name, labels in outside:
        e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", name, namespace=namespace, labels=labels))
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "inside", namespace="prod", labels={"sync": "yes"})
    )
    inside_local = default_local_name(namespace="prod", name="inside")
    e2e.wait_local(WIDGET, namespace=cluster, name=inside_local)
    e2e.wait_finalizer("team-a", REMOTE_WIDGET, namespace="prod", name="inside")

    def outsiders_untouched() -> bool:
        for namespace, name, _ in outside:
            assert not e2e.has_finalizer("team-a", REMOTE_WIDGET, namespace=namespace, name=name), (
                f"{name} got a finalizer"
            )
            assert (
                e2e.local(WIDGET, namespace=cluster, name=default_local_name(namespace=namespace, name=name)) is None
            ), f"{name} was synced"
        return True

    e2e.consistently(outsiders_untouched, what="objects outside the filter staying unsynced")

    # The user takes the label away: the servlet lets go (no finalizer) but keeps the local copy.
    e2e.patch_remote(
        "team-a", REMOTE_WIDGET, namespace="prod", name="inside", patch={"metadata": {"labels": {"sync": None}}}
    )
    e2e.eventually(
        lambda: not e2e.has_finalizer("team-a", REMOTE_WIDGET, namespace="prod", name="inside"),
        what="the finalizer to be removed from the released object",
    )
    e2e.consistently(
        lambda: e2e.local(WIDGET, namespace=cluster, name=inside_local) is not None,
        what="the released object's local copy to be kept",
    )

    # And an object that enters the filter is picked up.
    e2e.patch_remote(
        "team-a", REMOTE_WIDGET, namespace="prod", name="unlabelled", patch={"metadata": {"labels": {"sync": "yes"}}}
    )
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="prod", name="unlabelled"))


def test_deleting_the_remote_object_cleans_up_local_and_related_copies_before_the_finalizer_goes(e2e: E2E) -> None:
    e2e.publish(certificate_crd(), certificates_with_platform_secret())
    e2e.servlet()
    e2e.wait_served("team-a", ZERTIFIKAT)
    cluster = e2e.world.cluster("team-a")
    data = {"ca.crt": base64.b64encode(b"ca").decode()}
    e2e.create_remote("team-a", SECRET, secret("team-issuer-ca", namespace="default", data=data))
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web", issuer="team-issuer"))
    local_name = example_local_name(namespace="default", name="web")
    e2e.wait_local(CERTIFICATE, namespace=cluster, name=local_name)
    e2e.wait_local(SECRET, namespace=cluster, name="team-issuer-ca")
    e2e.world.apply(secret("web-tls", namespace=cluster, type_="kubernetes.io/tls", data=data))
    e2e.eventually(
        lambda: e2e.remote("team-a", SECRET, namespace="default", name="web-tls"),
        what="the TLS Secret in the workspace",
    )
    e2e.wait_finalizer("team-a", ZERTIFIKAT, namespace="default", name="web")

    e2e.rest.delete(e2e.remote_path("team-a", ZERTIFIKAT, namespace="default", name="web"))
    e2e.eventually(
        lambda: e2e.remote("team-a", ZERTIFIKAT, namespace="default", name="web") is None,
        what="the remote Zertifikat to be gone (its finalizer removed)",
    )
    # The finalizer goes last, so by now every copy is gone already.
    assert e2e.local(CERTIFICATE, namespace=cluster, name=local_name) is None, (
        "the local copy outlived the remote object"
    )
    assert e2e.local(SECRET, namespace=cluster, name="team-issuer-ca") is None, "the local CA copy was left behind"
    assert e2e.remote("team-a", SECRET, namespace="default", name="web-tls") is None, "the TLS copy was left behind"
    # Origin objects belong to their owners and stay.
    assert e2e.remote("team-a", SECRET, namespace="default", name="team-issuer-ca") is not None
    assert e2e.local(SECRET, namespace=cluster, name="web-tls") is not None


@pytest.mark.parametrize("delete_orphans", [False, True], ids=["kept", "deleted-with-flag"])
def test_a_local_copy_whose_remote_object_was_force_deleted_is_an_orphan(e2e: E2E, delete_orphans: bool) -> None:
    first, cluster = e2e.serve_widgets(leader_election=False)
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "doomed", namespace="default", size=1))
    doomed = default_local_name(namespace="default", name="doomed")
    e2e.wait_local(WIDGET, namespace=cluster, name=doomed)
    e2e.wait_finalizer("team-a", REMOTE_WIDGET, namespace="default", name="doomed")
    first.stop()

    # While no servlet runs, someone deletes the object and forces the finalizer off.
    path = e2e.remote_path("team-a", REMOTE_WIDGET, namespace="default", name="doomed")
    e2e.rest.delete(path)
    e2e.rest.merge_patch(path, {"metadata": {"finalizers": None}})
    assert e2e.rest.get(path) is None

    second = e2e.servlet(leader_election=False, delete_orphans=delete_orphans)
    # A new object being synced proves the restarted servlet has done its rounds.
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "alive", namespace="default", size=2))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="alive"))
    if delete_orphans:
        e2e.eventually(
            lambda: e2e.local(WIDGET, namespace=cluster, name=doomed) is None,
            what="the orphaned local copy to be deleted (--delete-orphans)",
        )
    else:
        e2e.consistently(
            lambda: e2e.local(WIDGET, namespace=cluster, name=doomed) is not None,
            what="the orphaned local copy to be kept (no --delete-orphans)",
        )
        e2e.eventually(
            lambda: sum(second.metric("servlet_orphaned_objects")) >= 1,
            what="the orphan to be counted in servlet_orphaned_objects",
        )


@pytest.mark.kcpsim_only("cuts watches and shrinks the watch history (fault injection)")
def test_broken_watches_and_an_expired_watch_history_lose_no_change(e2e: E2E) -> None:
    servlet, cluster = e2e.serve_widgets()
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "old", namespace="default", size=1))
    old_local = default_local_name(namespace="default", name="old")
    e2e.wait_local(WIDGET, namespace=cluster, name=old_local)
    e2e.wait_finalizer("team-a", REMOTE_WIDGET, namespace="default", name="old")

    # Every open watch breaks mid-stream, and the server keeps too little history to resume:
    # the servlet has to list again and work out what changed in between.
    e2e.simulated.sim.set_history_size(1)
    e2e.simulated.sim.cut_watches(abort=True)
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "new", namespace="default", size=2))
    e2e.patch_remote("team-a", REMOTE_WIDGET, namespace="default", name="old", patch={"spec": {"size": 5}})

    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="new"))
    e2e.eventually(
        lambda: (e2e.local(WIDGET, namespace=cluster, name=old_local) or {}).get("spec", {}).get("size") == 5,
        what="the edit made while the watches were broken to reach the local copy",
    )
    e2e.rest.delete(e2e.remote_path("team-a", REMOTE_WIDGET, namespace="default", name="old"))
    e2e.eventually(
        lambda: (
            e2e.remote("team-a", REMOTE_WIDGET, namespace="default", name="old") is None
            and e2e.local(WIDGET, namespace=cluster, name=old_local) is None
        ),
        what="the deletion to be carried out with a tiny watch history",
    )
    # The operator can see it happened, and the test knows the scenario was not dodged.
    assert sum(servlet.metric("servlet_watch_relists_total")) >= 1
