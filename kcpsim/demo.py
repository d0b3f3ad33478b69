"""`kcpsim demo`: the servlet at work against kcpsim, narrated for a newcomer.

Starts a simulator in-process, runs the real `servlet run` against it as a subprocess, publishes
the bundled example (`examples/certificates/`), creates the example's Zertifikate in two
workspaces, plays cert-manager on the service cluster, and prints each thing the servlet did as
soon as it can be seen: schema, export, local copies, status up, TLS Secret up. Then it stops the
servlet with SIGTERM and the simulator, and exits 0. Anything that does not happen within the
time limit ends the demo with a message, the servlet's last log lines and exit code 1.

It is a tour, not a test: it checks only what it needs to tell the story (the e2e suite checks
the rest, and runs this demo once to keep it working).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from kcpsim.harness.process import ServletDied, ServletOptions, ServletProcess
from kcpsim.harness.world import (
    EXAMPLES,
    PUBLISHED_RESOURCE_CRD,
    SERVLET_NAMESPACE,
    World,
    load_yaml,
    resource_path,
    start_world,
)
from kcpsim.waiting import eventually

T = TypeVar("T")
LOG_LINES = 20


def add_parser(sub: Any) -> None:
    """Register the `demo` subcommand on `kcpsim`'s subparsers."""
    demo = sub.add_parser("demo", help="run the servlet against an in-process simulator and show what it syncs")
    demo.add_argument("--timeout", type=float, default=60.0, help="give up with exit code 1 after this many seconds")
    demo.add_argument("--dir", type=Path, help="keep kubeconfigs and the servlet's log here (default: a temp dir)")


class Demo:
    def __init__(self, world: World, *, timeout: float) -> None:
        self.world = world
        self.started = time.monotonic()
        self.deadline = self.started + timeout
        self.servlet: ServletProcess | None = None

    def say(self, text: str) -> None:
        print(f"[{time.monotonic() - self.started:5.1f}s] {text}", flush=True)

    def wait(self, check: Callable[[], T | None], what: str) -> T:
        guard = self.servlet.check_alive if self.servlet is not None else None
        return eventually(
            check, timeout=max(self.deadline - time.monotonic(), 0.1), what=what, guard=guard, interval=0.1
        )

    # ---- the story -------------------------------------------------------------------------------
    def run(self) -> None:
        world, rest = self.world, self.world.rest
        for path in (
            EXAMPLES / "crd-certificates.yaml",
            EXAMPLES / "service-cluster.yaml",
            EXAMPLES / "publishedresource.yaml",
        ):
            for document in load_yaml(path):
                world.apply(document)
            self.say(f"applied {path.relative_to(EXAMPLES.parents[1])} to the service cluster")
        (published,) = load_yaml(EXAMPLES / "publishedresource.yaml")
        pr_name = published["metadata"]["name"]
        projection = published["spec"]["projection"]
        plural, version = projection["plural"], projection["version"]

        self.servlet = ServletProcess(world, ServletOptions(token="demo"), label="demo")
        self.say(f"starting: {' '.join(self._shown(self.servlet.command()))}")
        self.servlet.start(ready_timeout=max(self.deadline - time.monotonic(), 0.1))
        self.say(
            f"servlet is up (health http://127.0.0.1:{self.servlet.health_port}/healthz, "
            f"metrics http://127.0.0.1:{self.servlet.metrics_port}/metrics)"
        )

        schema = self.wait(lambda: self._status(pr_name).get("resourceSchemaName"), "the APIResourceSchema")
        self.wait(
            lambda: rest.get(world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiresourceschemas/{schema}")),
            f"APIResourceSchema {schema} in {world.org}",
        )
        self.say(f"schema published: APIResourceSchema {schema} in {world.org}")
        export_path = world.in_org(f"/apis/apis.kcp.io/v1alpha1/apiexports/{world.export}")
        self.wait(
            lambda: schema in ((rest.get(export_path) or {}).get("spec") or {}).get("latestResourceSchemas", []),
            f"{schema} in the APIExport",
        )
        self.say(f"export updated: APIExport {world.export} now offers {plural}.{world.group}")
        self.wait(lambda: self._ready(pr_name), f"PublishedResource {pr_name} to be Ready")
        self.say(f"PublishedResource {pr_name} is Ready")

        remote = resource_path(group=world.group, version=version, plural=plural)
        users = [("team-a", EXAMPLES / "workspace-team-a.yaml"), ("team-b", EXAMPLES / "workspace-team-b.yaml")]
        created: list[tuple[str, dict[str, Any]]] = []
        for workspace, path in users:
            self.wait(
                partial(rest.served, world.in_workspace(workspace, remote)), f"workspace {workspace} to serve {plural}"
            )
            for document in load_yaml(path):
                if "deletionTimestamp" in document["metadata"]:
                    continue  # the example shows one being deleted; a user cannot create that
                body = self._as_created_by_user(document)
                namespace = body["metadata"]["namespace"]
                world.ensure_namespace(namespace, workspace=workspace)
                rest.create(
                    world.in_workspace(
                        workspace, resource_path(group=world.group, version=version, plural=plural, namespace=namespace)
                    ),
                    body,
                )
                created.append((workspace, body))
                self.say(f"a user in {workspace} created {body['kind']} {namespace}/{body['metadata']['name']}")

        for workspace, body in created:
            local = self.wait(partial(self._local_copy, workspace, body), f"the local copy of {workspace}'s object")
            meta = local["metadata"]
            self.say(
                f"local copy: {workspace} {self._key(body)} -> {local['kind']} {meta['namespace']}/{meta['name']} "
                f"on the service cluster"
            )

        self.say("cert-manager (played by the demo) issues each certificate: Ready status and a TLS Secret")
        for workspace, body in created:
            self._issue(self._local_copy(workspace, body) or {})
        for workspace, body in created:
            namespace, name = body["metadata"]["namespace"], body["metadata"]["name"]
            object_path = world.in_workspace(
                workspace,
                resource_path(group=world.group, version=version, plural=plural, namespace=namespace, name=name),
            )
            self.wait(partial(self._remote_ready, object_path), f"status on {workspace} {namespace}/{name}")
            self.say(f"status back up: {workspace} {namespace}/{name} is Ready=True")
            secret_path = world.in_workspace(
                workspace,
                resource_path(
                    group="", version="v1", plural="secrets", namespace=namespace, name=body["spec"]["secretName"]
                ),
            )
            secret = self.wait(partial(rest.get, secret_path), f"the TLS Secret in {workspace}")
            self.say(f"related Secret up: {workspace} {namespace}/{secret['metadata']['name']} ({secret['type']})")

    def stop(self) -> str:
        """SIGTERM the servlet; a problem to report when it did not end cleanly, else ""."""
        if self.servlet is None or not self.servlet.alive():
            return ""
        code = self.servlet.terminate(timeout=10)
        if code is None:
            self.servlet.kill()
            return "the servlet did not stop within 10 s of SIGTERM and was killed"
        self.say(f"servlet stopped (SIGTERM), exit code {code}")
        return "" if code == 0 else f"the servlet exited with code {code} after SIGTERM"

    # ---- helpers ---------------------------------------------------------------------------------
    def _shown(self, command: list[str]) -> list[str]:
        return ["servlet", *command[command.index("run") :]] if "run" in command else command

    def _status(self, name: str) -> dict[str, Any]:
        found = self.world.rest.get(f"/apis/services.kdp.k8c.io/v1alpha1/publishedresources/{name}") or {}
        return dict(found.get("status") or {})

    def _ready(self, name: str) -> bool:
        return any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in self._status(name).get("conditions") or []
        )

    @staticmethod
    def _as_created_by_user(document: dict[str, Any]) -> dict[str, Any]:
        metadata = {k: v for k, v in document["metadata"].items() if k in ("name", "namespace", "labels")}
        return {**{k: v for k, v in document.items() if k != "status"}, "metadata": metadata}

    @staticmethod
    def _key(body: dict[str, Any]) -> str:
        return f"{body['metadata']['namespace']}/{body['metadata']['name']}"

    def _local_copy(self, workspace: str, body: dict[str, Any]) -> dict[str, Any] | None:
        cluster = self.world.cluster(workspace)
        selector = (
            f"syncer.kdp.k8c.io/remote-object-cluster%3D{cluster},"
            f"syncer.kdp.k8c.io/remote-object-name-hash%3D{_sha1(body['metadata']['name'])}"
        )
        found = self.world.rest.list(f"/apis/cert-manager.io/v1/certificates?labelSelector={selector}")
        return found[0] if len(found) == 1 else None

    def _issue(self, local: dict[str, Any]) -> None:
        meta = local["metadata"]
        rest = self.world.rest
        rest.merge_patch(
            resource_path(
                group="cert-manager.io",
                version="v1",
                plural="certificates",
                namespace=meta["namespace"],
                name=meta["name"],
            )
            + "/status",
            {
                "status": {
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "Issued",
                            "message": "Certificate is up to date and has not expired",
                        }
                    ]
                }
            },
        )
        fake = base64.b64encode(f"demo material for {meta['name']}".encode()).decode()
        self.world.apply(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "type": "kubernetes.io/tls",
                "metadata": {"name": local["spec"]["secretName"], "namespace": meta["namespace"]},
                "data": {"tls.crt": fake, "tls.key": fake},
            }
        )

    def _remote_ready(self, path: str) -> bool:
        remote = self.world.rest.get(path) or {}
        return any(
            c.get("type") == "Ready" and c.get("status") == "True"
            for c in (remote.get("status") or {}).get("conditions") or []
        )


def _sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def main(args: argparse.Namespace) -> int:
    missing = [path for path in (PUBLISHED_RESOURCE_CRD, EXAMPLES) if not path.exists()]
    if missing:
        print(
            f"The demo publishes the servlet's example and needs its repository; not found: "
            f"{', '.join(map(str, missing))}. Install kcpsim editable from a checkout "
            "(see CONTRIBUTING.md).",
            file=sys.stderr,
        )
        return 2
    directory = args.dir or Path(tempfile.mkdtemp(prefix="servlet-demo-"))
    print(f"Starting kcpsim and the servlet; files in {directory}", flush=True)
    print(
        f"The PublishedResource CRD comes from {PUBLISHED_RESOURCE_CRD.relative_to(EXAMPLES.parents[1])}; "
        f"the servlet's Lease lives in namespace {SERVLET_NAMESPACE}.",
        flush=True,
    )
    world = start_world(directory)
    demo = Demo(world, timeout=args.timeout)
    info = world.sim.describe()
    demo.say(
        f"kcpsim on {world.sim.base_url}: org {info['org']['path']} ({info['org']['cluster']}), workspaces "
        + ", ".join(f"{ws['name']} ({ws['cluster']})" for ws in info["workspaces"])
        + f"; export {world.export} has no schema yet"
    )
    failure = ""
    try:
        demo.run()
    except (AssertionError, ServletDied) as exc:
        failure = str(exc)
    except KeyboardInterrupt:
        failure = "interrupted"
    finally:
        stopped = demo.stop()
        world.stop()
    failure = failure or stopped
    if failure:
        print(f"\nDEMO FAILED: {failure}", flush=True)
        if demo.servlet is not None:
            print(f"--- last {LOG_LINES} lines of the servlet's log ({demo.servlet.log_path}) ---")
            print(demo.servlet.log_tail(LOG_LINES), flush=True)
        return 1
    print(
        f"\nDemo finished in {time.monotonic() - demo.started:.1f} s: the servlet published the example, "
        "synced objects from two workspaces and sent status and Secrets back up.",
        flush=True,
    )
    return 0
