"""The `servlet` command line: `servlet plan` (dry run) and, with the daemon, `servlet run`.

Every flag can also come from the environment as `SERVLET_<FLAG>` (SPEC 9). Invalid input ends
with exit code 1 and every problem listed, never with a traceback.
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from servlet.app.manifests import load_documents
from servlet.app.render import render_text
from servlet.core.inventory import build_inventory
from servlet.core.model import Problem, ServletIdentity
from servlet.core.naming import is_dns1123_label, is_dns1123_subdomain
from servlet.core.preview import PlanError, plan_servlet

app = typer.Typer(name="servlet", no_args_is_help=True, add_completion=False,
                  help="Publish service-cluster CRDs into KDP (kcp) and sync objects both ways.")


@app.callback()
def _commands() -> None:
    """Keeps `plan` (and later `run`) as named subcommands even while only one exists."""


class OutputFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"


NameOption = Annotated[str, typer.Option("--name", envvar="SERVLET_NAME",
                                         help="The servlet's name, e.g. tom (a DNS label).")]
ApiGroupOption = Annotated[str, typer.Option("--api-group", envvar="SERVLET_API_GROUP",
                                             help="The KDP Service's API group, e.g. certificates.example.corp.")]
ApiExportOption = Annotated[Optional[str], typer.Option(
    "--apiexport", envvar="SERVLET_APIEXPORT",
    help="The APIExport the servlet manages (default offline: the one among the inputs).")]


def identity_problems(*, name: str, api_group: str) -> list[Problem]:
    problems = []
    if not is_dns1123_label(name):
        problems.append(Problem(field="--name", message=f"{name!r} is not a DNS-1123 label"))
    if not is_dns1123_subdomain(api_group) or "." not in api_group:
        problems.append(Problem(field="--api-group",
                                message=f"{api_group!r} is not an API group (a DNS subdomain with a dot)"))
    return problems


def _fail(problems: list[Problem], *, output: OutputFormat) -> None:
    errors = [PlanError(object=p.field, field="", message=p.message) for p in problems]
    if output is OutputFormat.JSON:
        typer.echo(json.dumps({"schemas": [], "apiExport": None, "objects": [],
                               "errors": [error.to_dict() for error in errors]}, indent=2))
    else:
        for error in errors:
            typer.echo(f"error: {error.object}: {error.message}", err=True)
    raise typer.Exit(code=1)


@app.command()
def plan(
    name: NameOption,
    api_group: ApiGroupOption,
    files: Annotated[list[Path], typer.Option(
        "-f", "--filename",
        help="A YAML/JSON file (multi-document allowed) or a folder of them; repeatable.")],
    apiexport: ApiExportOption = None,
    output: Annotated[OutputFormat, typer.Option("-o", "--output", help="text or json.")] = OutputFormat.TEXT,
) -> None:
    """Print everything the servlet would do, writing nothing.

    Reads CRDs, PublishedResources, the APIExport, existing APIResourceSchemas, Namespaces and
    objects. An object annotated with kcp.io/cluster lives in that kcp workspace; any other
    object lives on the service cluster.
    """
    problems = identity_problems(name=name, api_group=api_group)
    documents, read_problems = load_documents(files)
    problems.extend(read_problems)
    if problems:
        _fail(problems, output=output)
    result = plan_servlet(inventory=build_inventory(documents),
                          servlet=ServletIdentity(name=name, api_group=api_group),
                          apiexport_name=apiexport)
    data = result.to_dict()
    if output is OutputFormat.JSON:
        typer.echo(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        typer.echo(render_text(data), nl=False)
        typer.echo(f"\nPlan: {result.writes} write(s), {len(result.errors)} error(s).")
    if result.errors:
        raise typer.Exit(code=1)


def main() -> None:
    app()
