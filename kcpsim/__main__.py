"""Command line: `kcpsim serve ...` runs a standalone simulator; `demo` shows the servlet.

`serve` writes service.kubeconfig, kcp.kubeconfig (pointing into the org workspace) and one
kubeconfig per consumer workspace into --dir, prints the URLs and runs until interrupted.
`demo` (kcpsim/demo.py) runs the servlet against an in-process simulator and narrates what it
syncs; `tour` walks through the kcp flow with plain HTTP, no servlet. Both are tours, not tests.
`python -m kcpsim` is the same command as the `kcpsim` console script.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import signal
import sys
import urllib.request
from pathlib import Path
from typing import Any

from kcpsim import demo
from kcpsim.access import AUTHZ_MODES
from kcpsim.auth import AUTH_MODES
from kcpsim.faults import FaultPlan
from kcpsim.sim import KcpSim, SimConfig
from kcpsim.topology import Topology, WorkspaceSpec


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kcpsim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run a standalone simulator and write kubeconfigs")
    serve.add_argument("--dir", required=True, type=Path, help="where the kubeconfigs are written")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=6443, help="0 picks a free port")
    serve.add_argument("--org", default="root:myorg", help="workspace path of the org holding the APIExport")
    serve.add_argument("--apiexport", default="certificates.example.corp", help="APIExport name (also its API group)")
    serve.add_argument("--workspaces", default="team-a,team-b", help="comma-separated consumer workspaces")
    serve.add_argument("--claims", default="namespaces,secrets", help="core resources the export claims at start")
    serve.add_argument("--no-schema", action="store_true", help="start the export without an APIResourceSchema")
    serve.add_argument("--samples", action="store_true", help="create sample Certificates and Secrets")
    serve.add_argument("--tls", action="store_true", help="serve HTTPS with a generated CA (in the kubeconfigs)")
    serve.add_argument("--history-size", type=int, default=10_000, help="watch events kept for resuming")
    serve.add_argument(
        "--shards",
        type=int,
        default=1,
        help="kcp shards, each serving the VW for its own workspaces (assigned by a hash of their cluster name)",
    )
    serve.add_argument("--faults", type=Path, help="a JSON fault plan to start with (see docs/try-it-locally.md)")
    serve.add_argument(
        "--deprecated-vw-urls",
        action="store_true",
        help="also fill APIExport.status.virtualWorkspaces, as kcp 0.27 and older do",
    )
    serve.add_argument(
        "--controller-delay",
        type=float,
        default=0.0,
        help="seconds between rounds of controller work (0: kcp's reactions are instant)",
    )
    serve.add_argument(
        "--authn",
        choices=AUTH_MODES,
        default="lenient",
        help="token: 401 without the kubeconfigs' token (lenient: anyone acts as the admin)",
    )
    serve.add_argument(
        "--authz",
        choices=AUTHZ_MODES,
        default="always-allow",
        help="rbac: identities other than the admin are held to stored RBAC (implies --authn token)",
    )
    demo.add_parser(sub)
    sub.add_parser("tour", help="a guided tour of the kcp flow against an in-process simulator")
    return parser


def _topology(args: argparse.Namespace) -> Topology:
    names = [n.strip() for n in args.workspaces.split(",") if n.strip()]
    claims = tuple(c.strip() for c in args.claims.split(",") if c.strip())
    return Topology(
        org=args.org,
        export=args.apiexport,
        workspaces=tuple(WorkspaceSpec(n) for n in names),
        claims=claims,
        with_schema=not args.no_schema,
        with_samples=args.samples,
    )


async def _serve(args: argparse.Namespace) -> None:
    plan = FaultPlan.from_dict(json.loads(args.faults.read_text())) if args.faults else FaultPlan()
    sim = KcpSim(
        SimConfig(
            host=args.host,
            port=args.port,
            tls=args.tls,
            history_size=args.history_size,
            topology=_topology(args),
            faults=plan,
            controller_delay=args.controller_delay,
            deprecated_vw_urls=args.deprecated_vw_urls,
            authn=args.authn,
            authz=args.authz,
            shards=args.shards,
        )
    )
    task = asyncio.ensure_future(sim.serve_forever())
    while not sim.port and not task.done():
        await asyncio.sleep(0.01)
    while sim.world.resolve(sim.topology.org) is None and not task.done():
        await asyncio.sleep(0.01)
    if task.done():
        task.result()
        return
    files = sim.write_kubeconfigs(args.dir)
    info = sim.describe()
    print(f"kcpsim serving on {sim.base_url}")
    print(f"  service cluster     {info['serviceCluster']}    kubeconfig {files['service']}")
    print(
        f"  org {info['org']['path']:<15} {info['org']['url']}    (logical cluster {info['org']['cluster']})"
        f"    kubeconfig {files['kcp']}"
    )
    for ws in info["workspaces"]:
        print(
            f"  workspace {ws['path']:<9} {ws['url']}    (logical cluster {ws['cluster']})    kubeconfig {files[ws['name']]}"
        )
    print(f"  virtual workspace   {info['virtualWorkspace']}")
    print(f"  admin               {sim.base_url}/_kcpsim/requests  {sim.base_url}/_kcpsim/faults")
    if sim.auth.mode != "lenient":
        print(f"  admin token         {sim.auth.admin_token}    (in every kubeconfig; authorization {args.authz})")
    print("Stop with Ctrl-C.", flush=True)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task


def _request(method: str, url: str, body: Any = None, content_type: str = "application/json") -> Any:
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": content_type})
    with urllib.request.urlopen(request) as response:
        return json.loads(response.read())


def _demo() -> None:
    with KcpSim() as sim:
        info = sim.describe()
        org, vw = info["org"]["url"], info["virtualWorkspace"]
        team_a = info["workspaces"][0]
        print(f"1. The org workspace identifies itself: GET {org}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster")
        lc = _request("GET", f"{org}/apis/core.kcp.io/v1alpha1/logicalclusters/cluster")
        print(f"   kcp.io/cluster={lc['metadata']['annotations']['kcp.io/cluster']}")
        print("2. The endpoint slice names the virtual workspace URL")
        eps = _request("GET", f"{org}/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/{sim.topology.export}")
        for endpoint in eps["status"]["endpoints"]:
            print(f"   {endpoint['url']}")
        print(f"3. A user in {team_a['path']} creates a Certificate")
        _request(
            "POST",
            f"{team_a['url']}/apis/{sim.topology.group}/v1alpha1/namespaces/default/certificates",
            {
                "apiVersion": f"{sim.topology.group}/v1alpha1",
                "kind": "Certificate",
                "metadata": {"name": "demo"},
                "spec": {"commonName": "demo.example"},
            },
        )
        print("4. The provider sees it through the virtual workspace, across all workspaces")
        listed = _request("GET", f"{vw}/clusters/*/apis/{sim.topology.group}/v1alpha1/certificates")
        for item in listed["items"]:
            print(
                f"   {item['metadata']['annotations']['kcp.io/cluster']}/{item['metadata']['namespace']}/{item['metadata']['name']}"
            )
        print("5. ... and writes its status in that workspace")
        path = f"{vw}/clusters/{team_a['cluster']}/apis/{sim.topology.group}/v1alpha1/namespaces/default/certificates/demo/status"
        _request("PATCH", path, {"status": {"phase": "Ready"}}, content_type="application/merge-patch+json")
        got = _request(
            "GET", f"{team_a['url']}/apis/{sim.topology.group}/v1alpha1/namespaces/default/certificates/demo"
        )
        print(f"   the user sees status.phase={got['status']['phase']}")
        print(f"{len(sim.requests.records())} API requests were made.")


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "serve":
        asyncio.run(_serve(args))
    elif args.command == "demo":
        return demo.main(args)
    elif args.command == "tour":
        _demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
