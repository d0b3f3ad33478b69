"""Reading manifests from files, folders and standard input for `servlet plan`.

Every problem (a missing file, broken YAML) becomes a Problem naming the file, so the CLI can
list all of them at once instead of stopping with a traceback at the first. YAML is parsed with
libyaml's C loader when PyYAML has it: on a 50 MB input the pure-Python loader took minutes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TextIO

import yaml

from servlet.core.inventory import Document
from servlet.core.model import Problem

MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
STDIN = Path("-")
# Inputs at least this large report each file read on the progress callback.
PROGRESS_FROM_BYTES = 8 * 1024 * 1024
_YAML_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _files_in(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(child for child in path.rglob("*") if child.is_file() and child.suffix in MANIFEST_SUFFIXES)
    return [path]


def _read(path: Path, stdin: TextIO | None) -> tuple[str | None, list[Problem]]:
    if path == STDIN:
        if stdin is None:
            return None, [Problem(field="-", message="standard input is not available")]
        return stdin.read(), []
    try:
        return path.read_text(encoding="utf-8"), []
    except OSError as error:
        return None, [Problem(field=str(path), message=f"cannot be read: {error.strerror or error}")]
    except UnicodeDecodeError:
        return None, [Problem(field=str(path), message="is not UTF-8 text")]


def _documents_of(path: Path, text: str) -> tuple[list[Document], list[Problem]]:
    name = "<stdin>" if path == STDIN else str(path)
    try:
        if path.suffix == ".json":
            contents: list[object] = [json.loads(text)]
        else:  # YAML, which JSON is a subset of (standard input may be either)
            contents = list(yaml.load_all(text, Loader=_YAML_LOADER))
    except (yaml.YAMLError, json.JSONDecodeError) as error:
        return [], [
            Problem(field=name, message=f"is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {error}")
        ]
    several = len(contents) > 1
    return [
        Document(source=f"{name}#{index + 1}" if several else name, content=content)
        for index, content in enumerate(contents)
    ], []


def load_documents(
    paths: Iterable[Path],
    *,
    stdin: TextIO | None = None,
    progress: Callable[[str], None] | None = None,
) -> tuple[list[Document], list[Problem]]:
    """Every document of `paths` (`-`: `stdin`); `progress` hears of each file of a large input."""
    documents: list[Document] = []
    problems: list[Problem] = []
    files: list[Path] = []
    for given in paths:
        if given == STDIN:
            files.append(given)
            continue
        if not given.exists():
            problems.append(Problem(field=str(given), message="does not exist"))
            continue
        found = _files_in(given)
        if not found:
            problems.append(Problem(field=str(given), message=f"holds no {', '.join(MANIFEST_SUFFIXES)} files"))
        files.extend(found)
    sizes = {file: file.stat().st_size for file in files if file != STDIN}
    total = sum(sizes.values())
    report = progress if progress is not None and total >= PROGRESS_FROM_BYTES else None
    for index, file in enumerate(files, start=1):
        if report is not None and file != STDIN:
            report(f"reading {file} ({sizes[file] / 1024 / 1024:.1f} MB, file {index} of {len(files)})")
        text, read_problems = _read(file, stdin)
        problems.extend(read_problems)
        if text is not None:
            read_documents, file_problems = _documents_of(file, text)
            documents.extend(read_documents)
            problems.extend(file_problems)
    if report is not None:
        report(f"read {len(documents)} documents from {len(files)} file(s)")
    return documents, problems
