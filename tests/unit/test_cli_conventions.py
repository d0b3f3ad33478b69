"""The habits of kubectl and terraform that `servlet` keeps: help at 80 columns, --version, -o yaml,
-f - from standard input, SERVLET_ variables for every option, and exit codes a script can use."""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import click
import pytest
import typer.main
import yaml
from typer.testing import CliRunner

from servlet.app.cli import app
from servlet.app.manifests import PROGRESS_FROM_BYTES, load_documents
from tests.unit.test_cli_plan import EXAMPLE, IDENTITY, json_plan, run_plan

COMMAND = typer.main.get_command(app)


def _help(*command: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "servlet.app", *command, "--help"],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "80", "TERM": "dumb"},
        check=True,
    )
    return result.stdout


@pytest.mark.parametrize("command", ["run", "plan"])
def test_help_at_80_columns_shows_every_option_and_variable_whole(command: str) -> None:
    text = _help(command)
    subcommand = COMMAND.commands[command]  # type: ignore[attr-defined]

    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    for parameter in subcommand.params:
        if isinstance(parameter, click.Option):
            for flag in parameter.opts:
                assert flag in text, f"{flag} is cut from `servlet {command} --help`"
            if isinstance(parameter.envvar, str):
                assert parameter.envvar in text, f"{parameter.envvar} is cut from `servlet {command} --help`"


@pytest.mark.parametrize("command", ["run", "plan"])
def test_every_option_has_its_servlet_variable(command: str) -> None:
    subcommand = COMMAND.commands[command]  # type: ignore[attr-defined]
    for parameter in subcommand.params:
        if isinstance(parameter, click.Option) and parameter.name != "help":
            long_flag = next(flag for flag in parameter.opts if flag.startswith("--"))
            assert parameter.envvar == "SERVLET_" + long_flag[2:].upper().replace("-", "_"), long_flag


def test_version_prints_the_installed_version() -> None:
    result = CliRunner().invoke(app, ["--version"])
    assert result.exit_code == 0
    assert result.output == f"servlet {importlib.metadata.version('kdp-servlet')}\n"


def test_yaml_output_is_the_json_plan() -> None:
    _, as_json = json_plan("-f", str(EXAMPLE))
    code, output = run_plan("-f", str(EXAMPLE), "-o", "yaml")
    assert code == 0
    assert yaml.safe_load(output) == as_json


def test_the_output_format_comes_from_the_environment_too() -> None:
    result = CliRunner().invoke(app, ["plan", *IDENTITY, "-f", str(EXAMPLE)], env={"SERVLET_OUTPUT": "json"})
    assert json.loads(result.output)["servlet"] == "tom.certificates.example.corp"


def test_manifests_are_read_from_standard_input() -> None:
    text = "\n---\n".join(path.read_text() for path in sorted(EXAMPLE.glob("*.yaml")))
    result = CliRunner().invoke(app, ["plan", *IDENTITY, "-f", "-", "-o", "json"], input=text)
    _, from_files = json_plan("-f", str(EXAMPLE))
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == from_files


def test_an_empty_input_says_nothing_was_read(tmp_path: Path) -> None:
    (tmp_path / "empty.yaml").write_text("# nothing here\n")
    code, output = run_plan("-f", str(tmp_path))
    assert code == 1
    assert "nothing was read" in output and str(tmp_path) in output


def test_an_input_error_in_json_has_the_keys_of_a_plan(tmp_path: Path) -> None:
    _, plan = json_plan("-f", str(EXAMPLE))
    code, failed = json_plan("-f", str(tmp_path / "missing.yaml"))
    assert code == 1
    assert failed.keys() == plan.keys()
    assert failed["errors"] == [{"object": str(tmp_path / "missing.yaml"), "field": "", "message": "does not exist"}]


def test_detailed_exitcode_tells_pending_writes_from_none(tmp_path: Path) -> None:
    code, _ = run_plan("-f", str(EXAMPLE), "--detailed-exitcode")
    assert code == 2, "the example plans writes"
    assert run_plan("-f", str(EXAMPLE))[0] == 0, "without the flag a plan without errors exits 0"
    crds_only = tmp_path / "crds.yaml"
    crds_only.write_text((EXAMPLE / "crd-certificates.yaml").read_text())
    code, output = run_plan("-f", str(crds_only), "--detailed-exitcode")
    assert code == 0, output


def test_an_invalid_name_is_a_usage_error_in_plan_as_in_run() -> None:
    planned = CliRunner().invoke(
        app, ["plan", "--name", "Tom_1", "--api-group", "certificates.example.corp", "-f", str(EXAMPLE)]
    )
    run = CliRunner().invoke(
        app,
        ["run", "--name", "Tom_1", "--api-group", "certificates.example.corp", "--kcp-kubeconfig", "kcp.kubeconfig"],
    )
    assert planned.exit_code == run.exit_code == 2


def test_a_large_input_reports_each_file_it_reads(tmp_path: Path) -> None:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "big", "namespace": "default"},
        "data": {"blob": "x" * (PROGRESS_FROM_BYTES // 2)},
    }
    for name in ("a.yaml", "b.yaml"):
        (tmp_path / name).write_text(json.dumps(config_map))  # JSON is YAML, and dumped at once
    heard: list[str] = []

    documents, problems = load_documents([tmp_path], stdin=io.StringIO(), progress=heard.append)

    assert not problems and len(documents) == 2
    assert [line.split(" (")[0] for line in heard[:2]] == [
        f"reading {tmp_path / 'a.yaml'}",
        f"reading {tmp_path / 'b.yaml'}",
    ]
    assert heard[-1] == "read 2 documents from 2 file(s)"
    assert load_documents([tmp_path / "a.yaml"], progress=heard.append) and len(heard) == 3, "a small input is quiet"


def _servlet(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    """`servlet` as a user runs it: a process, its exit code and its two streams."""
    return subprocess.run(
        [sys.executable, "-m", "servlet.app", *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "80"},
    )


def test_as_a_process_the_exit_codes_tell_in_sync_from_pending_from_errors(tmp_path: Path) -> None:
    crds_only = tmp_path / "crds.yaml"
    crds_only.write_text((EXAMPLE / "crd-certificates.yaml").read_text())
    examples = "\n---\n".join(path.read_text() for path in sorted(EXAMPLE.glob("*.yaml")))

    version = _servlet("--version")
    pending = _servlet("plan", *IDENTITY, "-f", "-", "--detailed-exitcode", "-o", "yaml", stdin=examples)
    in_sync = _servlet("plan", *IDENTITY, "-f", str(crds_only), "--detailed-exitcode")
    broken = _servlet("plan", *IDENTITY, "-f", str(tmp_path / "missing.yaml"), "--detailed-exitcode")
    usage = _servlet("plan", "--name", "Tom_1", "--api-group", "certificates.example.corp", "-f", str(EXAMPLE))

    assert (version.returncode, version.stdout) == (0, f"servlet {importlib.metadata.version('kdp-servlet')}\n")
    assert pending.returncode == 2 and yaml.safe_load(pending.stdout)["servlet"] == "tom.certificates.example.corp"
    assert in_sync.returncode == 0, in_sync.stdout + in_sync.stderr
    assert broken.returncode == 1 and "does not exist" in broken.stderr
    assert usage.returncode == 2 and "--name" in usage.stderr
