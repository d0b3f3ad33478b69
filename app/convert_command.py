"""`servlet convert`: PublishedResources of kcp's api-syncagent, rewritten as the servlet's.

A thin shell around `core.convert.convert_published_resource`: it reads the files (or standard
input) with `manifests.py` as `servlet plan` does, converts every document, prints the results
as YAML (a stream `kubectl apply -f -` takes) or JSON, and lists every field not carried over.
Exit codes follow `servlet plan`: 0 converted, 1 an error (unreadable input, a document that
cannot be converted), 2 a usage error, and with `--detailed-exitcode` 2 also when some field was
not carried over.

Deliberately not here: the conversion itself (the core).
"""

from __future__ import annotations

import enum
import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from servlet.app.manifests import load_documents
from servlet.core.convert import Conversion, convert_published_resource
from servlet.core.inventory import expand_lists

EXIT_ERROR, EXIT_USAGE, EXIT_NOT_CARRIED_OVER = 1, 2, 2
# Templates stay on one line, as their authors wrote them.
_NO_WRAP = 10_000


class ConvertFormat(str, enum.Enum):
    YAML = "yaml"
    JSON = "json"


def convert_command(
    files: Annotated[
        list[Path] | None,
        typer.Option(
            "-f",
            "--filename",
            envvar="SERVLET_FILENAME",
            help="The api-syncagent PublishedResources: a YAML/JSON file (multi-document allowed), a folder of them, "
            "or - for standard input; repeatable (the variable: paths separated by spaces).",
        ),
    ] = None,
    output: Annotated[
        ConvertFormat, typer.Option("-o", "--output", envvar="SERVLET_OUTPUT", help="yaml or json.")
    ] = ConvertFormat.YAML,
    detailed_exitcode: Annotated[
        bool,
        typer.Option(
            "--detailed-exitcode",
            envvar="SERVLET_DETAILED_EXITCODE",
            help="Exit 0 when every field was carried over, 2 when some were not, 1 on errors.",
        ),
    ] = False,
) -> None:
    """Convert PublishedResources of kcp's api-syncagent (syncagent.kcp.io/v1alpha1) into the servlet's.

    Prints the converted PublishedResources (YAML by default, a stream for kubectl apply -f -) and
    lists on standard error every field that was not carried over, with the reason (with -o json,
    in the output's `warnings`). Every printed PublishedResource is valid for the servlet. Example:

        servlet convert -f syncagent/ > published.yaml
    """
    if not files:
        typer.echo("error: -f: give the files to convert (or - for standard input)", err=True)
        raise typer.Exit(code=EXIT_USAGE)
    documents, read_problems = load_documents(files, stdin=sys.stdin)
    errors = [_entry(problem.field, "", "", problem.message) for problem in read_problems]
    if not documents and not read_problems:
        shown = ", ".join(str(path) for path in files)
        errors.append(_entry("-f", "", "", f"nothing was read: {shown} hold(s) no Kubernetes objects"))
    converted: list[dict[str, Any]] = []
    warnings: list[dict[str, str]] = []
    # `kubectl get -o yaml` prints a List; an empty YAML document is nothing to convert.
    for document in expand_lists(documents):
        conversion = convert_published_resource(document.content)
        warnings.extend(_entries(document.source, conversion, errors=False))
        errors.extend(_entries(document.source, conversion, errors=True))
        if conversion.manifest is not None:
            converted.append(conversion.manifest)
    if output is ConvertFormat.JSON:
        report = {"items": converted, "warnings": warnings, "errors": errors}
        typer.echo(json.dumps(report, indent=2, ensure_ascii=False))
    else:
        if converted:
            typer.echo(yaml.safe_dump_all(converted, sort_keys=False, allow_unicode=True, width=_NO_WRAP), nl=False)
        for kind, entries in (("warning", warnings), ("error", errors)):
            for entry in entries:
                typer.echo(f"{kind}: {_described(entry)}", err=True)
    if errors:
        raise typer.Exit(code=EXIT_ERROR)
    if detailed_exitcode and warnings:
        raise typer.Exit(code=EXIT_NOT_CARRIED_OVER)


def _entries(source: str, conversion: Conversion, *, errors: bool) -> list[dict[str, str]]:
    notes = conversion.errors if errors else conversion.notes
    return [_entry(source, conversion.name, note.field, note.reason) for note in notes]


def _entry(source: str, name: str, field: str, reason: str) -> dict[str, str]:
    return {"source": source, "publishedResource": name, "field": field, "reason": reason}


def _described(entry: dict[str, str]) -> str:
    parts = [entry["source"], f"PublishedResource {entry['publishedResource']}" if entry["publishedResource"] else ""]
    where = ": ".join(part for part in (*parts, entry["field"]) if part)
    return f"{where}: {entry['reason']}" if where else entry["reason"]
