"""The library page's examples run as written, and its table is the public API the code declares.

The table of building blocks names each public module of `servlet.core` and its main entry
points; every such name must exist and be in its module's `__all__` (the supported surface),
every `__all__` name must exist, and every module of the core must be either in the table or on
the page's list of internal modules, so a new module is a decision, not an accident.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import re
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "library.md"

# One backticked entry of the table: a name (`project`, `servlet.core.world.World`, `Type.field`),
# maybe called (`project(crd=, ...)`), maybe with its result (`-> Projected or None`). Anything
# else in backticks (`syncer.kdp.k8c.io/`) is prose.
_ENTRY = re.compile(r"(?P<name>[A-Za-z_][\w.]*)(?P<call>\(.*\))?(?:\s*->\s*(?P<results>\w+(?:\s+or\s+\w+)*))?")


def _table_rows() -> dict[str, str]:
    """Module name -> the text of its entry-points cell, from the building blocks table."""
    rows = {}
    for line in PAGE.read_text().splitlines():
        match = re.fullmatch(r"\| `(servlet\.core\.\w+)` \|[^|]*\|(.*)\|", line)
        if match:
            rows[match.group(1)] = match.group(2)
    return rows


def _internal_modules() -> set[str]:
    text = PAGE.read_text()
    listing = re.search(r"^Internal modules: (.*?)\n\n", text, flags=re.DOTALL | re.MULTILINE)
    assert listing, "docs/library.md has no `Internal modules: ...` paragraph"
    return set(re.findall(r"`(servlet\.core\.\w+)`", listing.group(1)))


def _public(module: ModuleType) -> list[str]:
    declared = getattr(module, "__all__", None)
    assert isinstance(declared, (list, tuple)), f"{module.__name__} declares no __all__"
    return list(declared)


def _resolve(cell_module: ModuleType, dotted: str) -> tuple[ModuleType, str, str | None]:
    """(module, name, attribute) that a documented entry refers to."""
    if dotted.startswith("servlet.core."):
        module_name, _, name = dotted.rpartition(".")
        return importlib.import_module(module_name), name, None
    name, _, attribute = dotted.partition(".")
    return cell_module, name, attribute or None


def _problems_of_row(module_name: str, cell: str) -> list[str]:
    module = importlib.import_module(module_name)
    public = _public(module)
    entries = [match for text in re.findall(r"`([^`]+)`", cell) if (match := _ENTRY.fullmatch(text))]
    documented_public = {
        public_module.__name__: _public(public_module) for public_module in map(importlib.import_module, _table_rows())
    }
    # Classes the cell names: a bare lower-case entry that is no module name is one of their fields.
    classes = [
        getattr(module, entry["name"])
        for entry in entries
        if entry["name"] in public and isinstance(getattr(module, entry["name"], None), type)
    ]
    classes += [
        getattr(importlib.import_module(owner), result)
        for entry in entries
        for result in re.split(r"\s+or\s+", entry["results"] or "")
        for owner, names in documented_public.items()
        if result in names
    ]
    problems = []
    for entry in entries:
        owner, name, attribute = _resolve(module, entry["name"])
        if name in _public(owner) and hasattr(owner, name):
            if attribute is not None and not hasattr(getattr(owner, name), attribute):
                problems.append(f"`{entry['name']}`: {name} has no {attribute}")
        elif owner is module and attribute is None and any(hasattr(cls, name) for cls in classes):
            pass  # a field or method of a class the cell names, like `ParseResult`'s `problems`
        elif hasattr(owner, name):
            problems.append(f"`{entry['name']}`: {name} is not in {owner.__name__}.__all__")
        else:
            problems.append(f"`{entry['name']}`: {owner.__name__} has no {name}")
        for result in re.split(r"\s+or\s+", entry["results"] or ""):
            if result and result != "None" and not any(result in names for names in documented_public.values()):
                problems.append(f"`{entry['name']}` returns {result}, which no public module's __all__ lists")
    return problems


def test_library_examples_run_and_their_commented_results_hold() -> None:
    page = PAGE.read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL)
    assert len(blocks) >= 3
    namespace: dict[str, object] = {}
    printed = io.StringIO()
    with contextlib.chdir(REPO), contextlib.redirect_stdout(printed):
        for block in blocks:
            exec(compile(block, "docs/library.md", "exec"), namespace)
    output = printed.getvalue()
    assert "8 writes" in output
    for claimed in re.findall(r"print\(key\)\s+# (.*)", page):
        assert claimed in output


def test_the_table_lists_the_modules_the_examples_import() -> None:
    imported = set(re.findall(r"from (servlet\.core\.\w+) import", PAGE.read_text()))
    assert imported <= set(_table_rows()), (
        f"the examples import modules the table does not list: {imported - set(_table_rows())}"
    )


@pytest.mark.parametrize("module_name", sorted(_table_rows()))
def test_every_name_the_table_documents_is_public_in_its_module(module_name: str) -> None:
    problems = _problems_of_row(module_name, _table_rows()[module_name])
    assert not problems, f"docs/library.md, row {module_name}: {problems}"


@pytest.mark.parametrize("module_name", sorted(_table_rows()))
def test_every_name_in_a_public_modules_all_exists(module_name: str) -> None:
    module = importlib.import_module(module_name)
    declared = _public(module)
    missing = sorted(name for name in declared if not hasattr(module, name))
    assert not missing, f"{module_name}.__all__ lists names the module does not have: {missing}"
    assert len(set(declared)) == len(declared), f"{module_name}.__all__ lists a name twice"


def test_every_core_module_is_either_public_or_internal() -> None:
    on_disk = {f"servlet.core.{path.stem}" for path in (REPO / "core").glob("*.py") if path.stem != "__init__"}
    public, internal = set(_table_rows()), _internal_modules()
    assert not public & internal, f"docs/library.md calls these both public and internal: {sorted(public & internal)}"
    assert not (public | internal) - on_disk, (
        f"docs/library.md names modules that do not exist: {sorted((public | internal) - on_disk)}"
    )
    unplaced = sorted(on_disk - public - internal)
    assert not unplaced, (
        f"docs/library.md neither documents nor lists as internal: {unplaced}; add a row to the "
        "table (and an __all__) or name it under `Internal modules:`"
    )
