"""The release artifacts as a user receives them: `python -m build` makes a wheel and an sdist that
pass `twine check`, and the wheel, installed with constraints.txt into a clean virtual environment,
plans the bundled example from any directory.

Building and installing reach the package index, as the README's install command does.
"""

from __future__ import annotations

import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
CONSTRAINTS = REPO / "constraints.txt"


def _pins(lines: str) -> dict[str, str]:
    """name -> version of the `name==version` lines (names normalised as pip compares them)."""
    pins: dict[str, str] = {}
    for line in lines.splitlines():
        name, equals, version = line.strip().partition("==")
        if equals and not line.startswith("#"):
            pins[name.lower().replace("_", "-")] = version
    return pins


def _run(*command: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(part) for part in command], capture_output=True, text=True, check=False, cwd=cwd)
    assert result.returncode == 0, f"{' '.join(map(str, command))}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run(sys.executable, "-m", "build", "--outdir", out, REPO)
    return out


def test_the_wheel_and_the_sdist_pass_twine_check(dist: Path) -> None:
    wheels, sdists = sorted(dist.glob("kdp_servlet-*.whl")), sorted(dist.glob("kdp_servlet-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(path.name for path in dist.iterdir())
    result = _run(sys.executable, "-m", "twine", "check", "--strict", wheels[0], sdists[0])
    assert result.stdout.count("PASSED") == 2, result.stdout


def test_the_wheel_installs_pinned_into_a_clean_venv_and_plans_the_example(dist: Path, tmp_path: Path) -> None:
    (wheel,) = dist.glob("kdp_servlet-*.whl")
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    _run(python, "-m", "pip", "install", "--quiet", "--constraint", CONSTRAINTS, wheel)

    installed = _pins(_run(python, "-m", "pip", "freeze", "--exclude", "kdp-servlet").stdout)
    assert installed == _pins(CONSTRAINTS.read_text()), (
        "constraints.txt does not pin exactly what the wheel installs; regenerate it (CONTRIBUTING.md)"
    )

    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    plan = _run(
        environment / "bin" / "servlet",
        "plan",
        "--api-group",
        "certificates.example.corp",
        "--name",
        "tom",
        "-f",
        REPO / "examples" / "certificates",
        cwd=elsewhere,
    )
    assert "create" in plan.stdout, plan.stdout
