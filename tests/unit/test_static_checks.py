"""Build-breaking checks of the code itself: types (mypy --strict), layers and core purity."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "adapters", "app")
# Builtins that reach the outside world; the import contract cannot see these.
IMPURE_BUILTINS = {"open", "print", "input", "exec", "eval", "__import__", "breakpoint"}


def _mypy_tree(tmp_path: Path) -> Path:
    """The installed package layout (servlet/core, ...) as directory links to the source folders.

    The editable install maps the folders with an import hook, which mypy cannot follow; linking
    whole directories keeps new modules visible without reinstalling.
    """
    namespace = tmp_path / "servlet"
    namespace.mkdir()
    for package in PACKAGES:
        (namespace / package).symlink_to(REPO / package, target_is_directory=True)
    return tmp_path


def test_mypy_strict_passes_on_all_packages(tmp_path: Path) -> None:
    tree = _mypy_tree(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
         "--cache-dir", str(tmp_path / "cache"), "-p", "servlet"],
        cwd=tree, env={**os.environ, "MYPYPATH": str(tree)},
        capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts_hold() -> None:
    result = subprocess.run(
        [sys.executable, "-c", "from importlinter.cli import lint_imports_command; lint_imports_command()",
         "--config", str(REPO / "pyproject.toml"), "--no-cache"],
        cwd=REPO, capture_output=True, text=True, check=False,
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


def test_no_unused_imports_or_undefined_names_anywhere() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", str(REPO)],
        cwd=REPO, capture_output=True, text=True, check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
