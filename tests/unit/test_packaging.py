"""The wheel must carry every sub-package (setuptools only installs the ones listed) and the
license, and each version it is built as has its entry in the changelog."""

import re
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
