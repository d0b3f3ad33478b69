"""Build-breaking checks of the code itself: types (mypy --strict), layers and core purity."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.typecheck import run_mypy

REPO = Path(__file__).resolve().parents[2]
# Builtins that reach the outside world; the import contract cannot see these.
IMPURE_BUILTINS = {"open", "print", "input", "exec", "eval", "__import__", "breakpoint"}


def test_mypy_strict_passes_on_all_packages(tmp_path: Path) -> None:
    result = run_mypy(tmp_path / "tree", cache=tmp_path / "cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts_hold() -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
            "--config",
            str(REPO / "pyproject.toml"),
            "--no-cache",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 broken" in result.stdout


@pytest.mark.parametrize("module", sorted((REPO / "core").glob("*.py")), ids=lambda p: p.name)
def test_core_module_calls_no_impure_builtin(module: Path) -> None:
    tree = ast.parse(module.read_text(), filename=str(module))
    calls = [
        f"{module.name}:{node.lineno} {node.func.id}()"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in IMPURE_BUILTINS
    ]
    assert not calls, f"the core must not do I/O: {calls}"


def test_ruff_finds_nothing_with_the_repositorys_rules() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(REPO)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_leaves_every_file_as_it_is() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "format", "--check", "--no-cache", str(REPO)],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, "run `.venv/bin/ruff format .`:\n" + result.stdout + result.stderr


def test_the_pre_commit_hooks_are_these_checks_run_from_the_repositorys_own_venv() -> None:
    config = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())
    assert [repo["repo"] for repo in config["repos"]] == ["local"], "a hook fetched from elsewhere"
    entries = [hook["entry"] for repo in config["repos"] for hook in repo["hooks"]]
    assert all(entry.startswith(".venv/bin/") for entry in entries), entries
    for check in (
        "-m ruff check --no-cache",
        "-m ruff format --check --no-cache",
        "-m tests.typecheck",
        "lint-imports --config pyproject.toml --no-cache",
        "-k calls_no_impure_builtin",
    ):
        assert any(check in entry for entry in entries), f"no pre-commit hook runs `{check}`"
