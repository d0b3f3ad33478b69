"""Reading manifests from files and folders for `servlet plan`.

Every problem (a missing file, broken YAML) becomes a Problem naming the file, so the CLI can
list all of them at once instead of stopping with a traceback at the first.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

import yaml

from servlet.core.inventory import Document
from servlet.core.model import Problem

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def _files_in(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(child for child in path.rglob("*") if child.is_file() and child.suffix in MANIFEST_SUFFIXES)
    return [path]


def _documents_of(path: Path) -> tuple[list[Document], list[Problem]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        return [], [Problem(field=str(path), message=f"cannot be read: {error.strerror or error}")]
    except UnicodeDecodeError:
        return [], [Problem(field=str(path), message="is not UTF-8 text")]
    try:
        if path.suffix == ".json":
            contents: list[object] = [json.loads(text)]
        else:
            contents = list(yaml.safe_load_all(text))
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        return [], [Problem(field=str(path), message=f"is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {error}")]
    several = len(contents) > 1
    return [
        Document(source=f"{path}#{index + 1}" if several else str(path), content=content)
        for index, content in enumerate(contents)
    ], []


def load_documents(paths: Iterable[Path]) -> tuple[list[Document], list[Problem]]:
    documents: list[Document] = []
    problems: list[Problem] = []
    for given in paths:
        if not given.exists():
            problems.append(Problem(field=str(given), message="does not exist"))
            continue
        files = _files_in(given)
        if not files:
            problems.append(Problem(field=str(given), message=f"holds no {', '.join(MANIFEST_SUFFIXES)} files"))
        for file in files:
            found, file_problems = _documents_of(file)
            documents.extend(found)
            problems.extend(file_problems)
    return documents, problems
