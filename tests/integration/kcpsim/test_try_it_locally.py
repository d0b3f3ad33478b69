"""The standalone mode as docs/try-it-locally.md describes it: `serve` writes working kubeconfigs,
and every curl command of the document does what the document says."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx2
import pytest
from lightkube import Client
from lightkube.config.kubeconfig import KubeConfig
from lightkube.resources.core_v1 import Namespace

from tests.integration.kcpsim.helpers import LogicalCluster

REPO = Path(__file__).resolve().parents[3]
DOC = REPO / "docs" / "try-it-locally.md"


@contextmanager
def serve(tmp_path: Path, *extra: str) -> Iterator[tuple[str, Path, list[str]]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "kcpsim", "serve", "--dir", str(tmp_path), "--port", "0", *extra],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line.rstrip())
        if line.startswith("Stop with Ctrl-C"):
            break
    match = re.search(r"serving on (http://\S+)", "\n".join(lines))
    assert match, "\n".join(lines)
    yield match.group(1), tmp_path, lines
    process.send_signal(signal.SIGINT)
    code = process.wait(timeout=10)
    process.stdout.close()
    assert code == 0


@pytest.fixture
def served(tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    with serve(tmp_path) as running:
        yield running


def test_serve_takes_names_and_a_fault_plan(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"errors": [{"status": 500, "verb": "list", "resource": "secrets", "limit": 1}]}')
    with serve(
        tmp_path / "kc",
        "--org",
        "root:acme",
        "--apiexport",
        "widgets.acme.io",
        "--workspaces",
        "blue,green",
        "--faults",
        str(plan),
    ) as (base, directory, _):
        assert sorted(p.name for p in directory.iterdir()) == [
            "blue.kubeconfig",
            "green.kubeconfig",
            "kcp.kubeconfig",
            "service.kubeconfig",
        ]
        with httpx2.Client(base_url=base, trust_env=False) as client:
            assert [client.get("/api/v1/secrets").status_code for _ in range(2)] == [500, 200]
            binding = client.get("/clusters/root:acme:green/apis/apis.kcp.io/v1alpha1/apibindings/widgets.acme.io")
            assert binding.json()["status"]["phase"] == "Bound"


def test_serve_writes_a_kubeconfig_per_cluster_that_lightkube_can_use(served: tuple[str, Path, list[str]]) -> None:
    _, directory, lines = served
    assert sorted(p.name for p in directory.iterdir()) == [
        "kcp.kubeconfig",
        "service.kubeconfig",
        "team-a.kubeconfig",
        "team-b.kubeconfig",
    ]
    assert any("virtual workspace" in line for line in lines)
    with Client(KubeConfig.from_file(directory / "service.kubeconfig"), trust_env=False) as service:
        assert "default" in {n.metadata.name for n in service.list(Namespace)}
    with Client(KubeConfig.from_file(directory / "kcp.kubeconfig"), trust_env=False) as org:
        assert org.get(LogicalCluster, "cluster").metadata.annotations["kcp.io/path"] == "root:myorg"
    with Client(KubeConfig.from_file(directory / "team-b.kubeconfig"), trust_env=False) as team_b:
        assert team_b.get(LogicalCluster, "cluster").metadata.annotations["kcp.io/path"] == "root:myorg:team-b"


def _doc_commands() -> list[str]:
    """Logical shell lines of the document's sh blocks (continuations joined)."""
    blocks = re.findall(r"```sh\n(.*?)```", DOC.read_text(), flags=re.S)
    commands: list[str] = []
    for block in blocks:
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [line.strip() for line in joined.splitlines() if line.strip()]
    return commands


def _run_curl(client: httpx2.Client, command: str, env: dict[str, str]) -> tuple[int, str]:
    text, _, comment = command.partition(" # ")
    for name, value in env.items():
        text = text.replace(f"${name}", value)
    args = shlex.split(text)[1:]
    method, headers, data, url = "GET", {}, None, ""
    while args:
        arg = args.pop(0)
        if arg in ("-s", "-N"):
            continue
        if arg == "-X":
            method = args.pop(0)
        elif arg == "-H":
            key, _, value = args.pop(0).partition(": ")
            headers[key] = value
        elif arg == "-d":
            data = args.pop(0)
        else:
            url = arg
    expected = re.search(r"expect (\d{3})", comment)
    response = client.request(method, url, headers=headers, content=data)
    wanted = int(expected.group(1)) if expected else None
    ok = response.status_code == wanted if wanted else response.status_code < 400
    return (0 if ok else response.status_code), response.text[:300]


def test_every_curl_command_of_the_document_works(served: tuple[str, Path, list[str]]) -> None:
    base, _, _ = served
    env = {"KCPSIM": base}
    ran = 0
    slice_url = (
        f"{base}/clusters/root:myorg/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/certificates.example.corp"
    )
    with httpx2.Client(trust_env=False) as client:
        published = client.get(slice_url).json()["status"]["endpoints"][0]["url"]
    with httpx2.Client(trust_env=False, timeout=10) as client:
        for command in _doc_commands():
            if command.startswith("export ") and "$(" not in command and not command.startswith("export KCPSIM="):
                name, _, value = command[len("export ") :].partition("=")
                for known, known_value in env.items():
                    value = value.replace(f"${known}", known_value)
                env[name] = value
            elif command.startswith("curl "):
                failed, body = _run_curl(client, command, env)
                assert not failed, f"{command}\n-> {failed}: {body}"
                ran += 1
    assert ran >= 25
    assert env["VW"] == published


def test_serve_with_rbac_requires_the_token_its_kubeconfigs_carry(tmp_path: Path) -> None:
    with serve(tmp_path, "--authz", "rbac") as (base, directory, lines):
        printed = [line.split()[2] for line in lines if line.strip().startswith("admin token")]
        assert len(printed) == 1, "\n".join(lines)
        with Client(KubeConfig.from_file(directory / "team-a.kubeconfig"), trust_env=False) as team_a:
            assert team_a.get(LogicalCluster, "cluster").metadata.annotations["kcp.io/path"] == "root:myorg:team-a"
        with httpx2.Client(base_url=base, trust_env=False, timeout=10) as client:
            assert client.get("/api/v1/namespaces").status_code == 401
            assert client.get("/readyz").text == "ok"
            token = {"Authorization": f"Bearer {printed[0]}"}
            assert client.get("/api/v1/namespaces", headers=token).status_code == 200
