"""The user documentation stays true: flags, metrics, commands, examples, links and the code map.

What is checked, page by page in `docs/`:

- the generated reference blocks (CLI options, metrics) equal what the code produces now;
- every option of every `servlet` command and its environment variable is explained in hand-written
  text, and every metric name appears on the operations page;
- every ```sh block runs offline, from the repository root, with `servlet` on PATH; a ```text
  block right after it is output that must appear in what the commands print (`...` skips lines);
- blocks after a `<!-- needs-cluster -->` comment talk to a real cluster, kcp or a registry and
  are not run; they are still checked: bash must parse them and every `servlet` invocation in them
  must use a command and options the CLI has;
- every PublishedResource in a ```yaml block parses without problems, and every field of the
  PublishedResource CRD is described on the publishing page;
- links between pages (and their #anchors) resolve, the index links every page, and every file
  or module the docs name exists, with every module of the three layers placed in the
  architecture page's map and every module of kcpsim in the map of kcpsim.md.

Pages owned by other guides (library, try-it-locally, demo, ...) have their own tests for their
commands; their links are still checked here.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import attrs
import pytest
import yaml

from servlet.app.observability.metrics import METRIC_NAMES
from servlet.core.parsing import parse_published_resource

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
# The pages this suite checks in full; the rest of docs/ is checked for links only.
OWN_PAGES = (
    "index.md",
    "getting-started.md",
    "publishing-resources.md",
    "cli.md",
    "operations.md",
    "architecture.md",
    "decisions.md",
)
NEEDS_CLUSTER = "<!-- needs-cluster -->"
COMMAND_TIMEOUT = 120


def _load_generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_reference", DOCS / "gen_reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


gen = _load_generator()


def page_text(name: str) -> str:
    return (DOCS / name).read_text()


@attrs.frozen
class Block:
    page: str
    line: int
    language: str
    body: str
    needs_cluster: bool
    output: str | None  # the ```text block right after a ```sh block, if any

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


_FENCE = re.compile(r"^(\s*)(`{3,})([\w-]*)\s*$")


def fenced_blocks(page: str) -> list[Block]:
    """Every fenced block of a page with its language and the marker line before it."""
    if not (DOCS / page).exists():
        return []  # reported by test_every_page_exists
    lines = page_text(page).splitlines()
    found: list[tuple[int, str, str, bool]] = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        indent, fence, language = match.groups()
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        previous = next((lines[i].strip() for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        # A block inside a list item is indented like the item's text.
        body = "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in lines[index + 1 : end])
        found.append((index + 1, language, body + "\n", previous == NEEDS_CLUSTER))
        index = end + 1
    blocks = []
    for position, (line, language, body, needs_cluster) in enumerate(found):
        output = None
        if language == "sh" and position + 1 < len(found):
            next_line, next_language, next_body, _ = found[position + 1]
            # "Right after": only blank lines between the closing fence and the next opening one.
            closing = line + body.count("\n")  # 0-based index of the closing fence
            if next_language == "text" and all(not text.strip() for text in lines[closing + 1 : next_line - 1]):
                output = next_body
        blocks.append(
            Block(page=page, line=line, language=language, body=body, needs_cluster=needs_cluster, output=output)
        )
    return blocks


def all_blocks(language: str) -> list[Block]:
    return [block for page in OWN_PAGES for block in fenced_blocks(page) if block.language == language]


SHELL_BLOCKS = all_blocks("sh")
OFFLINE_BLOCKS = [block for block in SHELL_BLOCKS if not block.needs_cluster]
CLUSTER_BLOCKS = [block for block in SHELL_BLOCKS if block.needs_cluster]


@pytest.mark.parametrize("page", OWN_PAGES)
def test_every_page_exists(page: str) -> None:
    assert (DOCS / page).is_file(), f"docs/{page} is missing"


# --- generated reference --------------------------------------------------------------------------


@pytest.mark.parametrize("page", OWN_PAGES)
def test_generated_reference_blocks_match_the_code(page: str) -> None:
    text = page_text(page)
    assert gen.regenerate(text) == text, (
        f"the generated reference in docs/{page} is out of date: run `python docs/gen_reference.py` and read the diff"
    )


@pytest.mark.parametrize("command", gen.command_names())
def test_every_command_has_a_generated_reference(command: str) -> None:
    assert ("cli", command) in gen.generated_blocks(page_text("cli.md")), (
        f"docs/cli.md has no `<!-- generated: cli {command} -->` block for `servlet {command}`"
    )


def test_every_metric_has_a_generated_reference() -> None:
    assert ("metrics", None) in gen.generated_blocks(page_text("operations.md"))


# --- flags and metrics ----------------------------------------------------------------------------


def _hand_written() -> str:
    return "\n".join(gen.without_generated(page_text(page)) for page in OWN_PAGES)


def _flags() -> Iterator[tuple[str, str]]:
    for command in gen.command_names():
        for param in gen.command_options(command):
            for flag in gen.option_flags(param):
                yield command, flag
            envvar = getattr(param, "envvar", None)
            if isinstance(envvar, str):
                yield command, envvar


@pytest.mark.parametrize("command, flag", sorted(set(_flags())))
def test_every_flag_and_environment_variable_is_explained_in_prose(command: str, flag: str) -> None:
    # `--name` must not count as explained because `--namespace` is.
    assert re.search(rf"`{re.escape(flag)}(?![\w-])", _hand_written()), (
        f"`servlet {command}` has {flag}, which no docs page explains outside the generated tables"
    )


@pytest.mark.parametrize("metric", METRIC_NAMES)
def test_every_metric_is_on_the_operations_page(metric: str) -> None:
    assert f"`{metric}`" in page_text("operations.md")


# --- shell blocks ---------------------------------------------------------------------------------


def _environment() -> dict[str, str]:
    """The user's shell after installing: `servlet` and `python` on PATH, no SERVLET_* settings."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("SERVLET_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # Wide enough that help tables are not wrapped differently on every terminal.
    env["COLUMNS"] = "120"
    env["NO_COLOR"] = "1"
    return env


def _chunks(expected: str) -> list[list[str]]:
    """Expected output split at `...` lines into runs of lines that must appear contiguously."""
    chunks: list[list[str]] = [[]]
    for line in expected.splitlines():
        if line.strip() == "...":
            chunks.append([])
        else:
            chunks[-1].append(line.rstrip())
    return [chunk for chunk in chunks if chunk]


def _contains_in_order(actual: list[str], chunks: list[list[str]]) -> str | None:
    """None when every chunk occurs in `actual`, in order; else the first chunk that does not."""
    start = 0
    for chunk in chunks:
        for index in range(start, len(actual) - len(chunk) + 1):
            if actual[index : index + len(chunk)] == chunk:
                start = index + len(chunk)
                break
        else:
            return "\n".join(chunk)
    return None


@pytest.mark.parametrize("block", OFFLINE_BLOCKS, ids=lambda block: block.id)
def test_offline_shell_block_runs_and_prints_what_the_page_shows(block: Block) -> None:
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block.body],
        cwd=REPO,
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=COMMAND_TIMEOUT,
        check=False,
    )
    printed = result.stdout + result.stderr
    assert result.returncode == 0, f"docs/{block.id} failed with exit code {result.returncode}:\n{printed[-3000:]}"
    if block.output is not None:
        missing = _contains_in_order([line.rstrip() for line in printed.splitlines()], _chunks(block.output))
        assert missing is None, f"docs/{block.id} did not print:\n{missing}\n\nit printed:\n{printed[-3000:]}"


def test_offline_blocks_exist_on_the_command_pages() -> None:
    pages = {block.page for block in OFFLINE_BLOCKS}
    assert {"cli.md", "getting-started.md"} <= pages


def _servlet_invocations(script: str) -> list[list[str]]:
    """The argument lists of every `servlet ...` command in a shell script (line continuations joined)."""
    joined = script.replace("\\\n", " ")
    invocations = []
    for line in joined.splitlines():
        line = line.split(" #", 1)[0]
        for part in re.split(r"\|\||&&|[|;]", line):
            try:
                words = shlex.split(part)
            except ValueError:
                continue
            if words and Path(words[0]).name == "servlet":
                invocations.append(words[1:])
    return invocations


def _unknown_flags(words: list[str]) -> list[str]:
    if not words or words[0].startswith("-"):
        return []  # `servlet --help`
    command, *arguments = words
    if command not in gen.command_names():
        return [f"unknown command {command!r}"]
    known = {flag for param in gen.command_options(command) for flag in gen.option_flags(param)} | {"--help"}
    used = {word.split("=", 1)[0] for word in arguments if word.startswith("-")}
    return sorted(f"servlet {command} has no option {flag}" for flag in used - known)


@pytest.mark.parametrize("block", SHELL_BLOCKS, ids=lambda block: block.id)
def test_shell_block_parses_and_uses_only_real_servlet_options(block: Block) -> None:
    # Blocks marked needs-cluster are not run (they need a service cluster, kcp or network
    # access); this is what can be checked about them without one.
    syntax = subprocess.run(["bash", "-n", "-c", block.body], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, f"docs/{block.id} is not valid bash: {syntax.stderr}"
    problems = [problem for words in _servlet_invocations(block.body) for problem in _unknown_flags(words)]
    assert not problems, f"docs/{block.id}: {problems}"


def test_offline_examples_are_run_not_marked_away() -> None:
    # A guard against marking everything needs-cluster to make the suite pass.
    assert len(OFFLINE_BLOCKS) >= 5
    assert all("servlet plan -f" not in block.body for block in CLUSTER_BLOCKS)


# --- PublishedResource examples and fields --------------------------------------------------------


def _published_resources() -> list[tuple[str, dict[str, object]]]:
    found = []
    for block in all_blocks("yaml"):
        for document in yaml.safe_load_all(block.body):
            if isinstance(document, dict) and document.get("kind") == "PublishedResource":
                found.append((block.id, document))
    return found


@pytest.mark.parametrize("where, manifest", _published_resources(), ids=lambda value: str(value)[:40])
def test_published_resource_example_is_valid(where: str, manifest: dict[str, object]) -> None:
    result = parse_published_resource(manifest)
    assert result.problems == (), f"docs/{where}: {[str(problem) for problem in result.problems]}"


def _schema_paths(schema: dict[str, object], prefix: str) -> Iterator[str]:
    properties = schema.get("properties")
    if isinstance(properties, dict):
        for name, child in properties.items():
            if isinstance(child, dict):
                yield f"{prefix}.{name}"
                yield from _schema_paths(child, f"{prefix}.{name}")
    items = schema.get("items")
    if isinstance(items, dict):
        yield from _schema_paths(items, f"{prefix}[]")


def _crd_fields() -> list[str]:
    crd = yaml.safe_load((REPO / "charts" / "servlet" / "crds" / "publishedresources.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
    paths = [*_schema_paths(schema["spec"], "spec"), *_schema_paths(schema["status"], "status")]
    # Fields of a condition and of a selector requirement are the usual Kubernetes ones.
    return [
        path
        for path in paths
        if not path.startswith(("status.conditions[].", "spec.filter.resource.matchExpressions[]."))
    ]


@pytest.mark.parametrize("field", _crd_fields())
def test_every_published_resource_field_is_described(field: str) -> None:
    page = page_text("publishing-resources.md")
    assert f"`{field}`" in page or f"`{field}[]`" in page, f"`{field}` is not described in publishing-resources.md"


# --- Helm values ----------------------------------------------------------------------------------


def _values_documents() -> list[tuple[str, dict[str, object]]]:
    """Chart values files shown in the docs: YAML blocks with the chart's required top-level keys."""
    found = []
    for block in all_blocks("yaml"):
        document = yaml.safe_load(block.body)
        if isinstance(document, dict) and {"servlet", "kcpKubeconfig"} <= set(document):
            found.append((block.id, document))
    return found


def _set_value(values: dict[str, object], path: str, text: str) -> None:
    """One `helm --set path=text`: dots and [index] as Helm reads them, true/false/integers typed."""
    value: object = text
    if text in ("true", "false"):
        value = text == "true"
    elif re.fullmatch(r"-?[0-9]+", text):
        value = int(text)
    keys: list[str | int] = [int(part) if part.isdigit() else part for part in re.findall(r"[^.\[\]]+", path)]
    target: object = values
    for key, following in zip(keys, [*keys[1:], None]):
        fresh: object = value if following is None else ([] if isinstance(following, int) else {})
        if isinstance(key, int):
            assert isinstance(target, list)
            while len(target) <= key:
                target.append(None)
            if following is None or target[key] is None:
                target[key] = fresh
            target = target[key]
        else:
            assert isinstance(target, dict)
            if following is None or key not in target:
                target[key] = fresh
            target = target[key]


def _helm_installs() -> list[tuple[str, dict[str, object]]]:
    """The values of every `helm install`/`helm upgrade` command in the docs, --values files resolved."""
    found = []
    # `--values servlet-values.yaml` means the values file getting-started.md shows.
    shown = [document for _, document in _values_documents()]
    for page in OWN_PAGES:
        for block in fenced_blocks(page):
            if block.language != "sh":
                continue
            for line in block.body.replace("\\\n", " ").splitlines():
                if not line.startswith(("helm install ", "helm upgrade ")):
                    continue
                words = shlex.split(line, comments=True)
                values: dict[str, object] = {}
                if {"--values", "-f"} & set(words) and shown:
                    values = yaml.safe_load(yaml.safe_dump(shown[0]))
                for index, word in enumerate(words):
                    if word in ("--set", "--set-string"):
                        path, _, text = words[index + 1].partition("=")
                        _set_value(values, path, text)
                found.append((block.id, values))
    return found


@pytest.mark.parametrize("where, values", [*_values_documents(), *_helm_installs()], ids=lambda value: str(value)[:40])
def test_chart_values_in_the_docs_install_a_servlet(where: str, values: dict[str, object]) -> None:
    from tests.chart.rendering import render  # Helm's SDK: only this test needs it

    deployment = next(doc for doc in render(values) if doc["kind"] == "Deployment")
    arguments = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    servlet = values["servlet"]
    assert isinstance(servlet, dict)
    assert f"--name={servlet['name']}" in arguments, f"docs/{where}: {arguments}"


def test_the_install_instructions_are_checked() -> None:
    assert _helm_installs(), "no helm install command found in the docs"


# --- links, index, code map -----------------------------------------------------------------------


_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to dashes."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.DOTALL)
    return {_slug(line.lstrip("#")) for line in text.splitlines() if line.startswith("#")}


def _link_pages() -> list[Path]:
    pages = [
        *sorted(DOCS.glob("*.md")),
        REPO / "README.md",
        REPO / "CHANGELOG.md",
        REPO / "CONTRIBUTING.md",
        REPO / "charts" / "servlet" / "README.md",
    ]
    return [page for page in pages if page.exists()]


@pytest.mark.parametrize("page", _link_pages(), ids=lambda path: path.name)
def test_internal_links_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(), flags=re.DOTALL)
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path_part, _, anchor = target.partition("#")
        linked = page if not path_part else (page.parent / path_part).resolve()
        if not linked.exists():
            broken.append(f"{target} (no such file)")
        elif anchor and linked.suffix == ".md" and anchor not in _anchors(linked):
            broken.append(f"{target} (no heading #{anchor})")
    assert not broken, f"{page.name}: {broken}"


def test_index_has_the_data_flow_diagram_and_links_every_page() -> None:
    index = page_text("index.md")
    assert "```mermaid" in index
    linked = {target.partition("#")[0] for target in _LINK.findall(index)}
    missing = sorted(page.name for page in DOCS.glob("*.md") if page.name != "index.md" and page.name not in linked)
    assert not missing, f"index.md does not link {missing}"


_NAMED_PATH = re.compile(r"`((?:core|adapters|app|kcpsim|tests|charts|examples|docs)/[\w./-]*\w/?)`")


@pytest.mark.parametrize("page", OWN_PAGES)
def test_every_file_the_docs_name_exists(page: str) -> None:
    missing = sorted({path for path in _NAMED_PATH.findall(page_text(page)) if not (REPO / path).exists()})
    assert not missing, f"docs/{page} names files that do not exist: {missing}"


def _layer_modules() -> list[str]:
    modules = []
    for layer in ("core", "adapters", "app"):
        for path in sorted((REPO / layer).rglob("*.py")):
            if path.name != "__init__.py":
                modules.append(path.relative_to(REPO).as_posix())
    return modules


@pytest.mark.parametrize("module", _layer_modules())
def test_every_module_is_placed_on_the_architecture_map(module: str) -> None:
    assert f"`{module}`" in page_text("architecture.md"), f"architecture.md does not say what `{module}` is for"


def _kcpsim_modules() -> list[str]:
    return [
        path.relative_to(REPO).as_posix()
        for path in sorted((REPO / "kcpsim").rglob("*.py"))
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    ]


@pytest.mark.parametrize("module", _kcpsim_modules())
def test_every_kcpsim_module_is_placed_on_its_map(module: str) -> None:
    assert f"`{module}`" in page_text("kcpsim.md"), f"kcpsim.md does not say what `{module}` is for"
