"""`python -m tests.typecheck`: mypy --strict over the servlet's three packages, laid out as
installed, and over kcpsim, its simulator.

The one command for the type check, shared by the test suite (`tests/unit/test_static_checks.py`)
and the pre-commit hook, so a commit checked locally is checked exactly as CI checks it.

The editable install maps `core/`, `adapters/` and `app/` to `servlet.*` with an import hook,
which mypy cannot follow; a folder `servlet/` of directory links to the source folders gives mypy
the installed layout, and linking whole directories keeps new modules visible without
reinstalling. kcpsim's folder is its package, so it is checked where it lies.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("core", "adapters", "app")


def link_tree(root: Path) -> Path:
    """`root/servlet/{core,adapters,app}` linked to the source folders; returns `root`."""
    namespace = root / "servlet"
    namespace.mkdir(parents=True, exist_ok=True)
    for package in PACKAGES:
        link = namespace / package
        if not link.is_symlink():
            link.symlink_to(REPO / package, target_is_directory=True)
    return root


def run_mypy(root: Path, *, cache: Path) -> subprocess.CompletedProcess[str]:
    """mypy --strict (the settings of pyproject.toml) over `servlet`, linked under `root`, and `kcpsim`."""
    tree = link_tree(root)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(cache),
            "-p",
            "servlet",
            "-p",
            "kcpsim",
        ],
        cwd=tree,
        env={**os.environ, "MYPYPATH": f"{tree}{os.pathsep}{REPO}"},
        capture_output=True,
        text=True,
        check=False,
    )


def main() -> int:
    # A fixed place for the links (under the ignored mypy cache) lets mypy reuse its cache
    # between runs; the test suite uses a fresh temporary one instead.
    cache = REPO / ".mypy_cache"
    result = run_mypy(cache / "servlet-tree", cache=cache)
    sys.stdout.write(result.stdout + result.stderr)
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
