"""The wheel must carry every sub-package (setuptools only installs the ones listed) and the
license, declare every distribution the code imports, and each version it is built as has its
entry in the changelog. The same holds for kcpsim, the simulator, a distribution of its own."""

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOP_LEVEL = {"core": "servlet.core", "adapters": "servlet.adapters", "app": "servlet.app"}
KCPSIM = REPO / "kcpsim"


def test_every_source_package_is_listed_for_installation() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join([TOP_LEVEL[init.relative_to(REPO).parts[0]], *init.relative_to(REPO).parts[1:-1]])
        for folder in TOP_LEVEL
        for init in (REPO / folder).rglob("__init__.py")
    }
    assert on_disk == set(config["packages"])
    assert config["package-dir"] == {package: folder for folder, package in TOP_LEVEL.items()}


def _imported_top_level_modules(folders: list[Path]) -> set[str]:
    """Every top-level module an absolute import in the sources under `folders` names."""
    modules: set[str] = set()
    for folder in folders:
        for source in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(source.read_text(), filename=str(source))):
                if isinstance(node, ast.Import):
                    modules.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules.add(node.module.split(".")[0])
    return modules


def _canonical(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def _names(requirements: list[str]) -> set[str]:
    return {_canonical(re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]) for requirement in requirements}


def _undeclared(third_party: set[str], declared: set[str]) -> dict[str, list[str]]:
    providers = importlib.metadata.packages_distributions()
    unknown = sorted(module for module in third_party if module not in providers)
    assert unknown == [], f"imported but installed by no distribution: {unknown}"
    return {
        module: sorted(providers[module])
        for module in third_party
        if not declared & {_canonical(name) for name in providers[module]}
    }


def test_every_third_party_module_the_code_imports_is_a_declared_dependency() -> None:
    # A module that only arrives as a dependency of a dependency disappears the day that one
    # stops needing it, and the image (built from pyproject.toml) breaks with it.
    folders = [REPO / folder for folder in TOP_LEVEL]
    third_party = _imported_top_level_modules(folders) - set(sys.stdlib_module_names) - {"servlet", "__future__"}
    declared = _names(tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"])
    undeclared = _undeclared(third_party, declared)
    assert undeclared == {}, f"imported but not in [project] dependencies: {undeclared}"


def test_kcpsim_lists_its_sub_packages_and_declares_what_it_imports() -> None:
    config = tomllib.loads((KCPSIM / "pyproject.toml").read_text())
    on_disk = {
        ".".join(["kcpsim", *init.relative_to(KCPSIM).parts[:-1]])
        for init in KCPSIM.rglob("__init__.py")
        if "egg-info" not in str(init)
    }
    assert on_disk == set(config["tool"]["setuptools"]["packages"])
    third_party = _imported_top_level_modules([KCPSIM]) - set(sys.stdlib_module_names) - {"kcpsim", "__future__"}
    project = config["project"]
    declared = _names(
        [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    )
    undeclared = _undeclared(third_party, declared)
    assert undeclared == {}, f"kcpsim imports these but kcpsim/pyproject.toml does not declare them: {undeclared}"


def test_the_servlet_does_not_depend_on_its_simulator() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    everything = [*project["dependencies"], *(r for extra in project["optional-dependencies"].values() for r in extra)]
    assert "kcpsim" not in _names(everything)
    assert "kcpsim" not in project["scripts"].values()


def test_the_changelog_has_an_entry_for_the_current_version_below_unreleased() -> None:
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    headings = re.findall(r"^## \[([^\]]+)\]", (REPO / "CHANGELOG.md").read_text(), flags=re.MULTILINE)
    assert headings[:1] == ["Unreleased"], "CHANGELOG.md must start with the changes not released yet"
    assert version in headings, f"CHANGELOG.md has no `## [{version}]` entry for the version pyproject.toml builds"


def test_the_apache_license_the_project_declares_ships_with_it() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert project["license"] == "Apache-2.0"
    assert project.get("license-files") == ["LICENSE"], "the LICENSE file is not declared for the wheel and sdist"
    text = (REPO / "LICENSE").read_text()
    assert "Apache License\n" in text and "Version 2.0, January 2004" in text
    assert "END OF TERMS AND CONDITIONS" in text
