"""Regenerates the reference parts of the docs from the code, so they cannot drift from it.

Two kinds of blocks are generated, each between a start marker and `<!-- end generated -->`:

- `<!-- generated: cli <command> -->` in `cli.md`: the options of `servlet <command>`, read from
  the typer app itself (flags, environment variable, default, help text);
- `<!-- generated: metrics -->` in `operations.md`: every metric the daemon exports, read from a
  fresh `Metrics` registry (name, type, labels, help text).

Run `python docs/gen_reference.py` after changing a flag or a metric; `--check` only reports
stale blocks (exit code 1) and writes nothing. `tests/unit/test_docs.py` runs the same check.

Deliberately not here: any prose. Everything around the blocks is written by hand.
"""

from __future__ import annotations

import enum
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path

import typer
from prometheus_client.metrics import MetricWrapperBase

from servlet.app.cli import app
from servlet.app.observability.metrics import Metrics

DOCS = Path(__file__).resolve().parent
END = "<!-- end generated -->"
_BLOCK = re.compile(
    r"(<!-- generated: (?P<what>[a-z]+)(?: (?P<arg>[a-z-]+))? -->\n)(?P<body>.*?)(" + END + ")", re.DOTALL
)


def _cell(text: str) -> str:
    """Text that is safe inside a Markdown table cell: one line, no bare pipes, no HTML tags."""
    return " ".join(text.split()).replace("|", "\\|").replace("<", "\\<")


def _commands() -> dict[str, object]:
    group = typer.main.get_command(app)
    commands: dict[str, object] = getattr(group, "commands", {})
    return commands


def command_names() -> list[str]:
    """The visible subcommands of `servlet`, sorted."""
    return sorted(name for name, command in _commands().items() if not getattr(command, "hidden", False))


def _choices(param: object) -> list[str]:
    # Typer keeps the annotation of each option; an enum annotation is a fixed set of choices.
    annotation = getattr(getattr(param, "type_descriptor", None), "annotation", None)
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(member.value) for member in annotation]
    return []


def _default(param: object) -> str:
    default = getattr(param, "default", None)
    if getattr(param, "required", False) or default in (None, "", [], ()):
        return ""
    secondary = list(getattr(param, "secondary_opts", []))
    if isinstance(default, bool):
        if secondary:  # an on/off pair: name the flag that is in effect
            return f"`{param.opts[0]}`" if default else f"`{secondary[0]}`"
        return "on" if default else "off"
    if isinstance(default, enum.Enum):
        default = default.value
    return f"`{default}`"


def option_flags(param: object) -> list[str]:
    """Every spelling of an option: `-o`, `--output`, and the `--no-...` half of an on/off pair."""
    return [*getattr(param, "opts", []), *getattr(param, "secondary_opts", [])]


def command_options(name: str) -> list[object]:
    """The options of `servlet <name>` in declaration order, without hidden ones."""
    command = _commands()[name]
    return [
        param
        for param in getattr(command, "params", [])
        if getattr(param, "param_type_name", "") == "option" and not getattr(param, "hidden", False)
    ]


def cli_block(name: str) -> str:
    """The option table of `servlet <name>`."""
    command = _commands()[name]
    summary = (getattr(command, "help", None) or "").strip().split("\n\n")[0]
    lines = [
        f"`servlet {name}`: {_cell(summary)}",
        "",
        "| option | environment variable | default | meaning |",
        "|---|---|---|---|",
    ]
    for param in command_options(name):
        flags = ", ".join(f"`{flag}`" for flag in option_flags(param))
        notes = []
        if getattr(param, "required", False):
            notes.append("required")
        if getattr(param, "multiple", False):
            notes.append("repeatable")
        if notes:
            flags += f" ({', '.join(notes)})"
        envvar = getattr(param, "envvar", None)
        env = f"`{envvar}`" if isinstance(envvar, str) else ""
        meaning = _cell(getattr(param, "help", None) or "")
        choices = _choices(param)
        if choices:
            meaning += f" One of: {', '.join(f'`{choice}`' for choice in choices)}."
        lines.append(f"| {flags} | {env} | {_default(param)} | {meaning} |")
    return "\n".join(lines) + "\n"


def _metric_labels(metrics: Metrics) -> dict[str, tuple[str, ...]]:
    """Label names by metric family name.

    prometheus_client exposes label names only on the metric objects (a family without samples
    has none to show), so they are read from the objects the `Metrics` instance holds, plus the
    samples of families that already have one (the build info is not kept on the instance).
    """
    labels: dict[str, tuple[str, ...]] = {}
    for value in vars(metrics).values():
        if isinstance(value, MetricWrapperBase):
            labels[str(value._name)] = tuple(value._labelnames)
    for family in metrics.registry.collect():
        for sample in family.samples:
            labels.setdefault(family.name, tuple(sample.labels))
    return labels


def metrics_block() -> str:
    """The table of every metric in a fresh registry, in registration order."""
    metrics = Metrics(version="docs")
    labels = _metric_labels(metrics)
    lines = ["| metric | type | labels | meaning |", "|---|---|---|---|"]
    for family in metrics.registry.collect():
        # The exposition adds `_total` to counter samples; people query that name.
        name = f"{family.name}_total" if family.type == "counter" else family.name
        label_names = ", ".join(f"`{label}`" for label in labels.get(family.name, ()))
        lines.append(f"| `{name}` | {family.type} | {label_names} | {_cell(family.documentation)} |")
    return "\n".join(lines) + "\n"


GENERATORS: dict[str, Callable[[str | None], str]] = {
    "cli": lambda arg: cli_block(arg or ""),
    "metrics": lambda arg: metrics_block(),
}


def regenerate(text: str) -> str:
    """`text` with every generated block replaced by its current content."""

    def replace(match: re.Match[str]) -> str:
        generator = GENERATORS.get(match.group("what"))
        if generator is None:
            raise ValueError(f"unknown generated block {match.group(0).splitlines()[0]!r}")
        return match.group(1) + generator(match.group("arg")) + END

    return _BLOCK.sub(replace, text)


def generated_blocks(text: str) -> list[tuple[str, str | None]]:
    """The (kind, argument) of every generated block in `text`, in order."""
    return [(match.group("what"), match.group("arg")) for match in _BLOCK.finditer(text)]


def without_generated(text: str) -> str:
    """`text` with the bodies of generated blocks removed: what people wrote by hand."""
    return _BLOCK.sub(lambda match: match.group(1) + END, text)


def stale_pages(pages: Iterable[Path]) -> list[Path]:
    return [page for page in pages if regenerate(page.read_text()) != page.read_text()]


def main(argv: list[str]) -> int:
    check = "--check" in argv
    pages = sorted(DOCS.glob("*.md"))
    stale = stale_pages(pages)
    for page in stale:
        if check:
            print(f"{page.name}: generated reference is out of date; run python docs/gen_reference.py")
        else:
            page.write_text(regenerate(page.read_text()))
            print(f"{page.name}: regenerated")
    return 1 if check and stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
