"""Fights (issue 7, item 3): another writer keeps changing a synced field of a local copy.

The servlet must not spin: it puts the platform value back a few times, then notices the fight,
reports it (a warning log line and `servlet_sync_fights_total`) and backs off. When the platform
value changes, it wins at once, back-off or not.
"""

from __future__ import annotations

import threading
import time

from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import REMOTE_WIDGET, WIDGET, default_local_name, remote_object

FIGHT_SECONDS = 8.0
FIGHTER_INTERVAL = 0.2


def _size(e2e: E2E, *, cluster: str, name: str) -> object:
    return ((e2e.local(WIDGET, namespace=cluster, name=name) or {}).get("spec") or {}).get("size")


def test_a_fight_over_a_local_field_is_reported_and_backed_off_and_the_platform_value_wins(e2e: E2E) -> None:
    servlet, cluster = e2e.serve_widgets()
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "contested", namespace="default", size=1))
    name = default_local_name(namespace="default", name="contested")
    e2e.eventually(lambda: _size(e2e, cluster=cluster, name=name) == 1, what="the local copy with size 1")
    path = WIDGET.path(namespace=cluster, name=name)

    stop = threading.Event()
    fighter_writes = 0

    def fight() -> None:  # another controller on the service cluster insists on size 7
        nonlocal fighter_writes
        while not stop.is_set():
            e2e.rest.merge_patch(path, {"spec": {"size": 7}})
            fighter_writes += 1
            time.sleep(FIGHTER_INTERVAL)

    requests = e2e.simulated.sim.requests
    started = time.time()
    fighter = threading.Thread(target=fight, daemon=True)
    fighter.start()
    try:
        time.sleep(FIGHT_SECONDS)
        servlet_patches = [
            r
            for r in requests.records()
            if r.started >= started
            and r.verb == "patch"
            and r.resource == "widgets"
            and not r.virtual_workspace
            and r.cluster == ""
        ]
        # The fighter's own patches are in the log too; the servlet's are the rest.
        corrections = len(servlet_patches) - fighter_writes
        assert sum(servlet.metric("servlet_sync_fights_total")) >= 1, "the fight was not counted"
        # The fight is counted just before it is logged.
        e2e.eventually(lambda: "another writer keeps changing" in servlet.log_text(), what="the fight to be logged")
        # Without back-off the servlet would answer each of the fighter's writes (~40 here).
        assert corrections <= 12, (
            f"the servlet patched {corrections} times in {FIGHT_SECONDS} s against "
            f"{fighter_writes} writes of the other writer"
        )

        # The platform changes its mind: its value wins within seconds, fight or not.
        e2e.patch_remote("team-a", REMOTE_WIDGET, namespace="default", name="contested", patch={"spec": {"size": 3}})
        changed = time.monotonic()
        stop.set()
        fighter.join(timeout=5)
        e2e.eventually(
            lambda: _size(e2e, cluster=cluster, name=name) == 3,
            timeout=10,
            what="the platform's new value on the local copy",
        )
        took = time.monotonic() - changed
    finally:
        stop.set()
    assert took < 5, f"the platform's change took {took:.1f} s to win"
    print(
        f"\nfight: {fighter_writes} writes of the other writer, {corrections} corrections by the servlet, "
        f"platform change applied after {took:.2f} s"
    )
