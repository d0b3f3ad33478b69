"""The container image, as far as it can be checked without a container engine.

What a build would do is reproduced here: the first stage's COPY instructions are replayed into
an empty context (after .dockerignore) and `pip wheel` builds the package from exactly that, so a
file the build forgot shows up as a broken wheel here. The final stage is read for what the chart
relies on: a slim base, the numeric non-root user the pod runs as, and `servlet run` as the
default command, which must resolve to the installed console script.
"""

from __future__ import annotations

import fnmatch
import json
import shutil
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import attrs
import pytest
import yaml

from tests.chart.rendering import CHART, REPO

PACKAGES = {"core": "servlet/core", "adapters": "servlet/adapters", "app": "servlet/app"}


@attrs.frozen
class Instruction:
    keyword: str
    arguments: str


@attrs.frozen
class Stage:
    base: str
    name: str
    instructions: tuple[Instruction, ...]

    def all(self, keyword: str) -> list[str]:
        return [i.arguments for i in self.instructions if i.keyword == keyword]


def parse_dockerfile(text: str) -> list[Stage]:
    """Stages with their instructions; comments dropped, continuation lines joined."""
    logical: list[str] = []
    pending = ""
    for line in text.splitlines():
        stripped = line.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        logical.append(pending + stripped)
        pending = ""
    stages: list[Stage] = []
    base, name = "", ""
    instructions: list[Instruction] = []
    for line in logical:
        keyword, _, arguments = line.partition(" ")
        if keyword.upper() == "FROM":
            if base:
                stages.append(Stage(base, name, tuple(instructions)))
            words = arguments.split()
            base, name, instructions = words[0], words[2] if len(words) > 2 else "", []
        elif base:
            instructions.append(Instruction(keyword.upper(), arguments.strip()))
    stages.append(Stage(base, name, tuple(instructions)))
    return stages


DOCKERFILE = (REPO / "Dockerfile").read_text()
STAGES = parse_dockerfile(DOCKERFILE)
BUILD, FINAL = STAGES[0], STAGES[-1]
ARGS = {
    k: v
    for k, _, v in (
        a.partition("=")
        for a in (line.removeprefix("ARG ").strip() for line in DOCKERFILE.splitlines() if line.startswith("ARG "))
    )
}


def _resolve(image: str) -> str:
    for name, value in ARGS.items():
        image = image.replace("${" + name + "}", value)
    return image


def _ignored(relative: str, patterns: list[str]) -> bool:
    """Docker's rule: the last matching line wins; `!` re-includes. Enough for this file's patterns."""
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        body = pattern.lstrip("!").rstrip("/")
        parts = relative.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        if body.startswith("**/"):
            matched = any(fnmatch.fnmatch(part, body[3:]) for part in parts)
        else:
            matched = any(fnmatch.fnmatch(prefix, body) for prefix in prefixes)
        if matched:
            ignored = not negate
    return ignored


def _build_context(tmp: Path) -> Path:
    """The first stage's WORKDIR after its COPY instructions, built from the repository as Docker would."""
    patterns = [
        line.strip()
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    workdir = tmp / "src"
    for arguments in BUILD.all("COPY"):
        *sources, destination = arguments.split()
        assert not any(s.startswith("--") for s in sources), "the build stage copies from the context only"
        for source in sources:
            origin = REPO / source
            assert origin.exists(), f"COPY {source}: not in the repository"
            assert not _ignored(source, patterns), f"COPY {source}: excluded by .dockerignore"
            target = workdir / destination
            if origin.is_dir():  # Docker copies a folder's contents into the destination
                for file in origin.rglob("*"):
                    if file.is_file() and not _ignored(file.relative_to(REPO).as_posix(), patterns):
                        out = target / file.relative_to(origin)
                        out.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(file, out)
            else:
                out = target / origin.name if destination.endswith("/") or len(sources) > 1 else target
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(origin, out)
    return workdir


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("image")
    context = _build_context(tmp)
    # As the build stage makes it: `python -m build --wheel` in the copied context.
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp / "wheels"), str(context)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (built,) = (tmp / "wheels").glob("kdp_servlet-*.whl")
    return built


def test_the_wheel_built_from_the_image_context_holds_every_module(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        f"{package}/{path.relative_to(REPO / folder).as_posix()}"
        for folder, package in PACKAGES.items()
        for path in (REPO / folder).rglob("*.py")
        if "__pycache__" not in path.parts
    }
    assert expected, "no sources found"
    assert sorted(expected - names) == []
    assert {f"{package}/py.typed" for package in PACKAGES.values()} <= names
    assert not [n for n in names if n.startswith(("tests/", "kcpsim/", "charts/", "docs/"))]


def test_the_wheel_built_from_the_image_context_carries_the_license(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    licenses = [name for name in archive.namelist() if name.endswith(".dist-info/licenses/LICENSE")]
    assert licenses, "the image's wheel ships without the LICENSE file"
    assert archive.read(licenses[0]) == (REPO / "LICENSE").read_bytes()


def test_the_wheel_installs_the_servlet_console_script(wheel: Path) -> None:
    archive = zipfile.ZipFile(wheel)
    (entry_points,) = [n for n in archive.namelist() if n.endswith(".dist-info/entry_points.txt")]
    text = archive.read(entry_points).decode()
    assert "[console_scripts]" in text
    assert "servlet = servlet.app.cli:main" in text
    (metadata,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    assert Parser().parsestr(archive.read(metadata).decode())["Name"] == "kdp-servlet"


def test_the_image_installs_the_wheel_from_the_build_stage_without_network() -> None:
    assert BUILD.name, "the first stage needs a name to copy from"
    assert any("pip wheel" in run for run in BUILD.all("RUN"))
    installs = [run for run in FINAL.all("RUN") if "pip install" in run]
    assert len(installs) == 1
    assert f"from={BUILD.name}" in installs[0]
    assert "--no-index" in installs[0]
    assert "kdp-servlet" in installs[0]


def test_the_image_pins_every_dependency_with_the_constraints_file() -> None:
    (wheel_run,) = [run for run in BUILD.all("RUN") if "pip wheel" in run]
    assert "python -m build --wheel --outdir /dist ." in wheel_run, "the image installs the released wheel"
    assert "--constraint constraints.txt" in wheel_run and "/dist/kdp_servlet-*.whl" in wheel_run
    assert any("constraints.txt" in copy.split()[:-1] for copy in BUILD.all("COPY")), "constraints.txt is not copied"


def test_the_image_is_a_slim_python_matching_the_package() -> None:
    for stage in (BUILD, FINAL):
        image = _resolve(stage.base)
        assert image.startswith("python:") and image.endswith("-slim"), image
    requires = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["requires-python"]
    version = _resolve(FINAL.base).removeprefix("python:").removesuffix("-slim")
    assert requires == f">={version}", "the image runs the oldest Python the package supports"


def test_the_image_runs_as_the_numeric_non_root_user_the_chart_expects() -> None:
    (user,) = FINAL.all("USER")
    uid, _, gid = user.partition(":")
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    assert uid.isdigit() and int(uid) != 0
    assert int(uid) == values["podSecurityContext"]["runAsUser"]
    assert int(gid) == values["podSecurityContext"]["runAsGroup"]


def test_the_entrypoint_and_default_command_are_servlet_run() -> None:
    (entrypoint,) = FINAL.all("ENTRYPOINT")
    (command,) = FINAL.all("CMD")
    # Exec form: no shell in between, so SIGTERM reaches the servlet and it can release its Lease.
    assert json.loads(entrypoint) == ["servlet"]
    assert json.loads(command) == ["run"]


def test_the_entrypoint_resolves_to_the_run_command_of_the_installed_script() -> None:
    script = Path(sys.executable).parent / "servlet"
    assert script.exists(), "the console script is not installed next to the interpreter"
    result = subprocess.run(
        [str(script), *json.loads(FINAL.all("CMD")[0]), "--help"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Usage: servlet run [OPTIONS]" in result.stdout


def test_the_exposed_ports_are_the_charts_default_ports() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    (exposed,) = FINAL.all("EXPOSE")
    assert sorted(int(port) for port in exposed.split()) == sorted(
        [values["metrics"]["port"], values["health"]["port"]]
    )
