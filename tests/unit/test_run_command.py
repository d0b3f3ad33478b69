"""`servlet run` flags: values, defaults, environment variables, and bad input naming the flag."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from servlet.app.cli import app
from servlet.app.daemon_config import DaemonConfig
from servlet.app.observability.probes import Address
from servlet.app.run_command import build_config
from servlet.core.endpoint_slices import SliceChoice

GOOD: dict[str, Any] = {
    "kubeconfig": None,
    "kcp_kubeconfig": "/etc/servlet/kcp.kubeconfig",
    "name": "tom",
    "api_group": "certificates.example.corp",
    "apiexport": None,
    "namespace": "kdp-system",
    "leader_election": True,
    "published_resource_selector": None,
    "metrics_address": ":8080",
    "health_address": "127.0.0.1:8081",
    "delete_orphans": False,
    "lease_duration": 15.0,
    "lease_renew_deadline": 10.0,
    "lease_retry_period": 2.0,
    "resync_period": 600.0,
    "sync_workers": 4,
}


def test_good_flags_become_the_daemon_configuration_with_documented_defaults() -> None:
    config = build_config(**GOOD)
    assert isinstance(config, DaemonConfig)
    assert config.servlet.fq_name == "tom.certificates.example.corp"
    assert config.apiexport == "certificates.example.corp", "the APIExport defaults to the API group"
    assert config.metrics_address == Address(host="", port=8080)
    assert config.health_address == Address(host="127.0.0.1", port=8081)
    assert config.lease.lease_duration == 15.0 and config.resync_period == 600.0


def test_the_servlets_namespace_is_protected_from_copies() -> None:
    config = build_config(**GOOD)
    assert isinstance(config, DaemonConfig)
    assert config.servlet.protected_namespaces == frozenset({"kdp-system"}) and config.namespace == "kdp-system"


@pytest.mark.parametrize(
    ("text", "choice"),
    [
        (None, None),
        ("certs", SliceChoice(name="certs")),
        ("root:shared:certs.v2", SliceChoice(name="certs.v2", workspace="root:shared")),
    ],
)
def test_the_endpoint_slice_flag_names_a_slice_here_or_in_another_workspace(
    text: str | None, choice: SliceChoice | None
) -> None:
    config = build_config(**{**GOOD, "endpoint_slice": text})
    assert isinstance(config, DaemonConfig) and config.endpoint_slice == choice


def test_a_resync_period_of_zero_turns_periodic_resyncs_off() -> None:
    config = build_config(**{**GOOD, "resync_period": 0.0})
    assert isinstance(config, DaemonConfig) and config.resync_period is None


@pytest.mark.parametrize(
    "change, flag",
    [
        ({"name": "Tom"}, "--name"),
        ({"api_group": "nodots"}, "--api-group"),
        ({"kcp_kubeconfig": ""}, "--kcp-kubeconfig"),
        ({"apiexport": "Not A Name"}, "--apiexport"),
        ({"namespace": "kdp_system"}, "--namespace"),
        ({"published_resource_selector": "env in prod"}, "--published-resource-selector"),
        ({"metrics_address": "8080"}, "--metrics-address"),
        ({"health_address": "localhost:http"}, "--health-address"),
        ({"lease_renew_deadline": 20.0}, "--lease-renew-deadline"),
        ({"resync_period": -1.0}, "--resync-period"),
        ({"sync_workers": 0}, "--sync-workers"),
        ({"endpoint_slice": "root:My_Org:certs"}, "--apiexportendpointslice"),
        ({"endpoint_slice": "root:myorg:"}, "--apiexportendpointslice"),
    ],
    ids=lambda value: value if isinstance(value, str) else "",
)
def test_each_bad_flag_is_reported_by_name(change: dict[str, Any], flag: str) -> None:
    problems = build_config(**{**GOOD, **change})
    assert isinstance(problems, list) and len(problems) == 1, problems
    assert flag in problems[0].field


def test_every_bad_flag_is_reported_at_once() -> None:
    problems = build_config(**{**GOOD, "name": "Tom", "metrics_address": "x", "sync_workers": 0})
    assert isinstance(problems, list)
    assert [problem.field for problem in problems] == ["--name", "--metrics-address", "--sync-workers"]


# -- the command line as a user runs it ----------------------------------------------------------


@pytest.fixture
def cli() -> Iterator[CliRunner]:
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield CliRunner()
    # `servlet run` configures logging for the process; put the test process's logging back.
    for handler in list(root.handlers):
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)


def _kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "users": [{"name": "u", "user": {"token": "t"}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
            }
        )
    )
    return path


BASE_ARGS = ["run", "--name", "tom", "--api-group", "certificates.example.corp", "--kcp-kubeconfig", "kcp.yaml"]


@pytest.mark.parametrize(
    "args, env, flag",
    [
        (["--name", "Tom_Invalid"], {}, "--name"),
        (["--log-format", "xml"], {}, "--log-format"),
        (["--metrics-address", "nowhere"], {}, "--metrics-address"),
        (["--lease-duration", "soon"], {}, "--lease-duration"),
        ([], {"SERVLET_HEALTH_ADDRESS": "[::1]8081"}, "--health-address"),
        ([], {"SERVLET_PUBLISHED_RESOURCE_SELECTOR": "a in b"}, "--published-resource-selector"),
    ],
    ids=["name", "log-format", "metrics-address", "lease-duration", "env-health-address", "env-selector"],
)
def test_bad_flags_and_environment_values_exit_2_naming_the_flag(
    cli: CliRunner, args: list[str], env: dict[str, str], flag: str
) -> None:
    result = cli.invoke(app, [*BASE_ARGS, *args], env=env)
    assert result.exit_code == 2, result.output
    assert flag in result.output, result.output
    assert "Traceback" not in result.output


def test_a_missing_required_flag_exits_2_naming_it(cli: CliRunner) -> None:
    result = cli.invoke(app, ["run", "--name", "tom", "--api-group", "certificates.example.corp"])
    assert result.exit_code == 2
    assert "--kcp-kubeconfig" in result.output


def test_flags_come_from_the_environment_and_a_kcp_kubeconfig_outside_a_workspace_exits_1(
    cli: CliRunner, tmp_path: Path
) -> None:
    kcp = _kubeconfig(tmp_path / "kcp.yaml", "https://kcp.example.test:6443")
    service = _kubeconfig(tmp_path / "service.yaml", "https://service.example.test:6443")
    env = {
        "SERVLET_NAME": "tom",
        "SERVLET_API_GROUP": "certificates.example.corp",
        "SERVLET_KCP_KUBECONFIG": str(kcp),
        "SERVLET_KUBECONFIG": str(service),
        "SERVLET_METRICS_ADDRESS": "127.0.0.1:0",
        "SERVLET_HEALTH_ADDRESS": "127.0.0.1:0",
        "SERVLET_LOG_FORMAT": "console",
    }
    result = cli.invoke(app, ["run"], env=env)
    assert result.exit_code == 1, result.output
    assert "--kcp-kubeconfig must point into a kcp workspace" in result.output
    assert "Traceback" not in result.output


def test_python_dash_m_runs_the_command_line() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "servlet.app", "run", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={"COLUMNS": "200", "PATH": ""},
    )
    assert result.returncode == 0, result.stderr
    assert "SERVLET_KCP_KUBECONFIG" in result.stdout and "--delete-orphans" in result.stdout
