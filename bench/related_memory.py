"""`python -m bench.related_memory`: what unrelated Secrets cost a running servlet's memory.

A PublishedResource with related Secrets (the certificates example), one Zertifikat whose CA
Secret comes down and whose TLS Secret goes up, then `--secrets` unrelated Secrets of `--size`
bytes created by a tenant in its workspace, then as many on the service cluster in the
workspace's namespace. Prints the servlet's resident memory (VmRSS) after each step and the
requests it sent meanwhile; a servlet that caches what it does not need grows by about
secrets x size per step. It does not judge the figures.
"""

from __future__ import annotations

import argparse
import base64
import sys
import tempfile
import time
from pathlib import Path

from kcpsim.harness.world import start_world
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    SECRET,
    ZERTIFIKAT,
    certificate_crd,
    certificates_with_platform_secret,
    example_local_name,
    secret,
    zertifikat,
)

SETTLE_SECONDS = 3.0  # for the servlet to receive and store the watch events of the last step


def rss_mb(pid: int) -> float:
    """VmRSS of a process (Linux): the memory it holds now."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for process {pid}")


def servlet_requests(env: E2E) -> int:
    return sum(
        1
        for call in env.world.callers.calls(token="servlet")
        if "/leases" not in call.path and "/events" not in call.path
    )


def run(*, secrets: int, size: int, directory: Path) -> list[tuple[str, float, int]]:
    env = E2E(start_world(directory / "world"))
    steps: list[tuple[str, float, int]] = []
    try:
        env.publish(certificate_crd(), certificates_with_platform_secret())
        servlet = env.servlet(token="servlet")
        env.wait_served("team-a", ZERTIFIKAT)
        cluster = env.world.cluster("team-a")
        env.create_remote("team-a", SECRET, secret("team-issuer-ca", namespace="default", data={"ca.crt": "Y2E="}))
        env.create_remote("team-a", ZERTIFIKAT, zertifikat("web", issuer="team-issuer"))
        env.wait_local(CERTIFICATE, namespace=cluster, name=example_local_name(namespace="default", name="web"))
        env.wait_local(SECRET, namespace=cluster, name="team-issuer-ca")
        env.world.apply(
            secret("web-tls", namespace=cluster, type_="kubernetes.io/tls", data={"tls.crt": "YQ==", "tls.key": "Yg=="})
        )
        env.eventually(
            lambda: env.remote("team-a", SECRET, namespace="default", name="web-tls"),
            what="the TLS Secret in the workspace",
        )

        def step(name: str) -> None:
            time.sleep(SETTLE_SECONDS)
            steps.append((name, rss_mb(servlet.pid), servlet_requests(env)))

        step("converged, related Secrets synced")
        blob = base64.b64encode(b"\0" * size).decode()
        for index in range(secrets):
            env.create_remote("team-a", SECRET, secret(f"tenant-{index}", namespace="default", data={"blob": blob}))
        step(f"+{secrets} unrelated Secrets in the workspace")
        for index in range(secrets):
            env.rest.create(
                SECRET.path(namespace=cluster), secret(f"service-{index}", namespace=cluster, data={"blob": blob})
            )
        step(f"+{secrets} unrelated Secrets on the service cluster")
        env.rest.merge_patch(SECRET.path(namespace=cluster, name="web-tls"), {"data": {"tls.key": "Yw=="}})
        env.eventually(
            lambda: (
                (env.remote("team-a", SECRET, namespace="default", name="web-tls") or {}).get("data", {}).get("tls.key")
                == "Yw=="
            ),
            what="a renewed key still reaching the workspace",
        )
        step("a referenced Secret changed and synced")
    finally:
        env.stop_all()
        env.world.stop()
    return steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.related_memory", description=__doc__.split("\n")[0])
    parser.add_argument("--secrets", type=int, default=200, help="unrelated Secrets per side (default 200)")
    parser.add_argument("--size", type=int, default=100_000, help="bytes of data per Secret (default 100000)")
    options = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-related-memory-") as directory:
        steps = run(secrets=options.secrets, size=options.size, directory=Path(directory))
    first_rss, first_requests = steps[0][1], steps[0][2]
    print(f"{'step':<50} {'RSS MB':>8} {'growth MB':>10} {'requests':>9}")
    for name, rss, requests in steps:
        print(f"{name:<50} {rss:>8.1f} {rss - first_rss:>+10.1f} {requests - first_requests:>9}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
