"""The wheel must carry every sub-package (setuptools only installs the ones listed) and declare
every distribution the code imports."""

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TOP_LEVEL = {"core": "servlet.core", "adapters": "servlet.adapters", "app": "servlet.app"}


def test_every_source_package_is_listed_for_installation() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    on_disk = {
        ".".join([TOP_LEVEL[init.relative_to(REPO).parts[0]], *init.relative_to(REPO).parts[1:-1]])
        for folder in TOP_LEVEL
        for init in (REPO / folder).rglob("__init__.py")
    }
    assert on_disk == set(config["packages"])
    assert config["package-dir"] == {package: folder for folder, package in TOP_LEVEL.items()}


def _imported_top_level_modules() -> set[str]:
    """Every top-level module an absolute import in core/, adapters/ or app/ names."""
    modules: set[str] = set()
    for folder in TOP_LEVEL:
        for source in (REPO / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(source.read_text(), filename=str(source))):
                if isinstance(node, ast.Import):
                    modules.update(alias.name.split(".")[0] for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules.add(node.module.split(".")[0])
    return modules


def _canonical(distribution: str) -> str:
    return re.sub(r"[-_.]+", "-", distribution).lower()


def test_every_third_party_module_the_code_imports_is_a_declared_dependency() -> None:
    # A module that only arrives as a dependency of a dependency disappears the day that one
    # stops needing it, and the image (built from pyproject.toml) breaks with it.
    third_party = _imported_top_level_modules() - set(sys.stdlib_module_names) - {"servlet", "__future__"}
    declared = {
        _canonical(re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0])
        for requirement in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    }
    providers = importlib.metadata.packages_distributions()
    unknown = sorted(module for module in third_party if module not in providers)
    assert unknown == [], f"imported but installed by no distribution: {unknown}"
    undeclared = {
        module: sorted(providers[module]) for module in third_party
        if not declared & {_canonical(name) for name in providers[module]}
    }
    assert undeclared == {}, f"imported but not in [project] dependencies: {undeclared}"
