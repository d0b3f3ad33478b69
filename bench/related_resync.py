"""`python -m bench.related_resync`: what related objects cost a no-op resync, in requests.

Widgets in one workspace, each with five related objects, all synced: a Database going up from
the service (group/version/resource, another export's type claimed by its identity hash), a
Database coming down from the workspace, a Secret going up and a ConfigMap coming down (the
`kind` shorthand), and a ConfigMap going up as a Secret (`projection`). Once converged the
servlet is restarted with a short resync period; every request it sends during the restart's
reconciles and one full resync is counted (the Lease aside). The target is none: a converged related object is neither read again nor written. It
does not judge the figures.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench.scenario import Requests, breakdown
from bench.sync import _reconciles
from kcpsim.harness.world import start_world
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CONFIGMAP,
    REMOTE_WIDGET,
    SECRET,
    WIDGET,
    default_local_name,
    published_resource,
    remote_object,
    secret,
    widget_crd,
)
from tests.integration.e2e.test_related_types import (
    DATABASE,
    accept_the_servlets_claims,
    database,
    database_crd,
    database_entry,
    provide_databases_in_kcp,
)

RESYNC = 3.0


def _entries(identity: str) -> list[dict[str, object]]:
    return [
        database_entry(identity, origin="service", identifier="db-up", reference={"name": {"path": "spec.note"}}),
        database_entry(identity, origin="platform", identifier="db-down", reference={"name": {"path": "spec.color"}}),
        {
            "identifier": "secret-up",
            "origin": "service",
            "kind": "Secret",
            "reference": {"name": {"path": "spec.note"}},
        },
        {
            "identifier": "config-down",
            "origin": "platform",
            "kind": "ConfigMap",
            "reference": {"name": {"path": "spec.color"}},
        },
        {
            "identifier": "config-up-as-secret",
            "origin": "service",
            "kind": "ConfigMap",
            "projection": {"resource": "secrets"},
            "reference": {"name": {"path": "spec.note", "regex": {"pattern": "^(.*)$", "replacement": "\\1-cfg"}}},
        },
    ]


def converge(env: E2E, widgets: int) -> None:
    identity = provide_databases_in_kcp(env)
    env.publish(widget_crd(), database_crd(), published_resource("widgets", kind="Widget", related=_entries(identity)))
    first = env.servlet(token="first")
    env.wait_served("team-a", REMOTE_WIDGET)
    accept_the_servlets_claims(env, identity)
    cluster = env.world.cluster("team-a")
    for index in range(widgets):
        up, down = f"up-{index}", f"down-{index}"
        env.create_remote("team-a", DATABASE, database(down, namespace="default", engine="mysql", size=index))
        env.create_remote(
            "team-a",
            CONFIGMAP,
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": down, "namespace": "default"}, "data": {}},
        )
        env.create_remote(
            "team-a", REMOTE_WIDGET, remote_object("Widget", f"w-{index}", namespace="default", note=up, color=down)
        )
        env.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name=f"w-{index}"))
        env.rest.create(DATABASE.path(namespace=cluster), database(up, namespace=cluster, engine="pg", size=index))
        env.rest.create(SECRET.path(namespace=cluster), secret(up, namespace=cluster, data={"k": "dg=="}))
        env.rest.create(
            CONFIGMAP.path(namespace=cluster),
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": f"{up}-cfg", "namespace": cluster},
                "data": {"k": "v"},
            },
        )
    for index in range(widgets):
        for resource, name in ((DATABASE, f"up-{index}"), (SECRET, f"up-{index}"), (SECRET, f"up-{index}-cfg")):
            env.eventually(
                lambda resource=resource, name=name: env.remote(  # type: ignore[misc]
                    "team-a", resource, namespace="default", name=name
                ),
                what=f"the copy {name} in the workspace",
            )
        env.wait_local(DATABASE, namespace=cluster, name=f"down-{index}")
        env.wait_local(CONFIGMAP, namespace=cluster, name=f"down-{index}")
    time.sleep(2.0)
    first.stop()


def run(*, widgets: int, directory: Path) -> dict[str, dict[str, int]]:
    """Requests per kind of request during the restart's reconciles and during one full resync."""
    env = E2E(start_world(directory / "world"))
    try:
        converge(env, widgets)
        requests = Requests(env.world)
        requests.mark()
        servlet = env.servlet(token="resync", extra=("--resync-period", str(RESYNC)))
        env.eventually(lambda: _reconciles(servlet) >= widgets, what="the restart's reconciles", timeout=60)
        time.sleep(1.0)
        restart = [r for r in requests.since_mark() if "leases" not in r.path]
        requests.mark()
        before = _reconciles(servlet)
        env.eventually(lambda: _reconciles(servlet) >= before + widgets, what="one full resync", timeout=60 + RESYNC)
        resync = [r for r in requests.since_mark() if "leases" not in r.path]
        return {"restart": breakdown(restart), "resync": breakdown(resync)}
    finally:
        env.stop_all()
        env.world.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.related_resync", description=__doc__.split("\n")[0])
    parser.add_argument("--widgets", type=int, default=20, help="Widgets, each with 5 related objects (default 20)")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-related-resync-") as directory:
        counted = run(widgets=options.widgets, directory=Path(directory))
    print(f"{options.widgets} converged Widgets with {5 * options.widgets} related objects:")
    for phase, requests in counted.items():
        print(f"  {phase}: {sum(requests.values())} requests {dict(sorted(requests.items())) or ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
