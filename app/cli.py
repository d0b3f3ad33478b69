"""The `servlet` command line: `servlet plan` (dry run), `servlet convert` and, with the daemon, `servlet run`.

Every flag can also come from the environment as `SERVLET_<FLAG>` (SPEC 9). Invalid input ends
with exit code 1 and every problem listed, never with a traceback.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
import yaml

from servlet.adapters.connections import ConfigurationError, Connections
from servlet.app.live_inventory import LiveInventory, read_live_inventory
from servlet.app.live_reads import LiveReadError
from servlet.app.manifests import load_documents
from servlet.app.plan_changes import add_field_changes
from servlet.app.plan_options import (
    ApiExportOption,
    ApiGroupOption,
    ContextOption,
    EndpointSliceOption,
    KcpContextOption,
    KcpKubeconfigOption,
    KubeconfigOption,
    NameOption,
    NamespaceOption,
    OutputFormat,
    PublishedResourceSelectorOption,
)
from servlet.app.render import render_text
from servlet.app.run_command import default_namespace
from servlet.core.endpoint_slices import SliceChoice, parse_slice_choice
from servlet.core.inventory import Inventory, build_inventory
from servlet.core.model import Problem, ServletIdentity
from servlet.core.naming import is_dns1123_label, is_dns1123_subdomain
from servlet.core.preview import PlanError, plan_servlet

# Plain help, wrapped at the terminal's width: rich's tables cut long option and variable names.
app = typer.Typer(
    name="servlet",
    no_args_is_help=True,
    add_completion=False,
    rich_markup_mode=None,
    help="Publish service-cluster CRDs into KDP (kcp) and sync objects both ways.",
)

# Exit codes of `servlet plan`: 1 an error (in the inputs, the clusters or the plan); 2 a usage error
# (a flag's value), as for `servlet run`; with --detailed-exitcode, 2 also means writes are pending.
EXIT_ERROR, EXIT_USAGE, EXIT_CHANGES = 1, 2, 2


def _print_version(wanted: bool) -> None:
    if wanted:
        typer.echo(f"servlet {importlib.metadata.version('kdp-servlet')}")
        raise typer.Exit()


@app.callback()
def _commands(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the servlet's version and exit."),
    ] = False,
) -> None:
    """Publish service-cluster CRDs into KDP (kcp) and sync objects both ways."""


# Flags that only mean something when reading the clusters.
_LIVE_FLAGS = {
    "kcp_kubeconfig": "--kcp-kubeconfig",
    "kubeconfig": "--kubeconfig",
    "context": "--context",
    "kcp_context": "--kcp-context",
    "published_resource_selector": "--published-resource-selector",
    "endpoint_slice": "--apiexportendpointslice",
}


def identity_problems(*, name: str, api_group: str) -> list[Problem]:
    problems = []
    if not is_dns1123_label(name):
        problems.append(Problem(field="--name", message=f"{name!r} is not a DNS-1123 label"))
    if not is_dns1123_subdomain(api_group) or "." not in api_group:
        problems.append(
            Problem(field="--api-group", message=f"{api_group!r} is not an API group (a DNS subdomain with a dot)")
        )
    return problems


def _fail(
    problems: list[Problem], *, output: OutputFormat, servlet: ServletIdentity, code: int = EXIT_ERROR
) -> NoReturn:
    """Every problem, as the plan's errors; JSON and YAML keep the keys of a plan, so readers need one shape."""
    errors = [PlanError(object=p.field, field="", message=p.message) for p in problems]
    if output is OutputFormat.TEXT:
        for error in errors:
            where = f"{error.object}: " if error.object else ""
            typer.echo(f"error: {where}{error.message}", err=True)
    else:
        _echo_data(
            {
                "servlet": servlet.fq_name,
                "schemas": [],
                "apiExport": None,
                "objects": [],
                "errors": [error.to_dict() for error in errors],
                "warnings": [],
                "orphans": [],
                "schemaOnly": [],
            },
            output=output,
        )
    raise typer.Exit(code=code)


def _echo_data(data: dict[str, Any], *, output: OutputFormat) -> None:
    if output is OutputFormat.JSON:
        typer.echo(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        typer.echo(yaml.safe_dump(data, sort_keys=True, allow_unicode=True), nl=False)


@app.command()
def plan(
    ctx: typer.Context,
    name: NameOption,
    api_group: ApiGroupOption,
    files: Annotated[
        list[Path] | None,
        typer.Option(
            "-f",
            "--filename",
            envvar="SERVLET_FILENAME",
            help="Offline: a YAML/JSON file (multi-document allowed), a folder of them, or - for standard input; "
            "repeatable (the variable: paths separated by spaces).",
        ),
    ] = None,
    apiexport: ApiExportOption = None,
    endpoint_slice: EndpointSliceOption = None,
    kubeconfig: KubeconfigOption = None,
    kcp_kubeconfig: KcpKubeconfigOption = None,
    context: ContextOption = None,
    kcp_context: KcpContextOption = None,
    published_resource_selector: PublishedResourceSelectorOption = "",
    namespace: NamespaceOption = None,
    output: Annotated[
        OutputFormat, typer.Option("-o", "--output", envvar="SERVLET_OUTPUT", help="text, json or yaml.")
    ] = OutputFormat.TEXT,
    delete_orphans: Annotated[
        bool,
        typer.Option(
            "--delete-orphans",
            envvar="SERVLET_DELETE_ORPHANS",
            help="Plan the deletions `servlet run --delete-orphans` makes; orphans are listed either way.",
        ),
    ] = False,
    detailed_exitcode: Annotated[
        bool,
        typer.Option(
            "--detailed-exitcode",
            envvar="SERVLET_DETAILED_EXITCODE",
            help="Exit 0 when nothing would be written, 2 when writes are pending, 1 on errors.",
        ),
    ] = False,
) -> None:
    """Print everything the servlet would do, writing nothing.

    Offline (-f): reads CRDs, PublishedResources, the APIExport, existing APIResourceSchemas,
    Namespaces and objects from files. An object annotated with kcp.io/cluster lives in that kcp
    workspace; any other object lives on the service cluster.

    Live (no -f): connects like `servlet run` does, with --kubeconfig, --kcp-kubeconfig,
    --apiexport, --apiexportendpointslice and --published-resource-selector (each also as
    SERVLET_<FLAG>), and reads the same things from the clusters: the PublishedResources and their
    CRDs, the APIExport, the schemas and the endpoint slice, and through every URL of the virtual
    workspace (one per kcp shard) every
    remote object with its local copy, namespaces and related Secrets/ConfigMaps. It only sends
    GET requests. Until kcp has published the virtual workspace URL, the plan says so and covers
    schemas and the APIExport only. An unreachable or refusing API server ends with exit code 1
    and one line naming it and its URL. Example:

        servlet plan --name tom --api-group certificates.example.corp \\
            --apiexport certificates.example.corp \\
            --kubeconfig service.kubeconfig --kcp-kubeconfig kcp.kubeconfig
    """
    problems = identity_problems(name=name, api_group=api_group)
    # The same default as `servlet run`, so the plan refuses the namespaces the daemon would.
    own_namespace = namespace if namespace is not None else default_namespace()
    if not is_dns1123_label(own_namespace):
        problems.append(Problem(field="--namespace", message=f"{own_namespace!r} is not a namespace name"))
    servlet = ServletIdentity(name=name, api_group=api_group, namespace=own_namespace)
    if files:
        problems.extend(
            _offline_only_problems(
                ctx,
                {
                    "kcp_kubeconfig": kcp_kubeconfig,
                    "kubeconfig": kubeconfig,
                    "context": context,
                    "kcp_context": kcp_context,
                    "published_resource_selector": published_resource_selector,
                    "endpoint_slice": endpoint_slice,
                },
            )
        )
    elif not kcp_kubeconfig:
        problems.append(
            Problem(
                field="--kcp-kubeconfig",
                message=("is needed to plan from the clusters (or give -f to plan offline from files)"),
            )
        )
    slice_choice = parse_slice_choice(endpoint_slice) if endpoint_slice and not files else None
    if isinstance(slice_choice, Problem):
        problems.append(slice_choice)
    if problems or isinstance(slice_choice, Problem):
        _fail(problems, output=output, servlet=servlet, code=EXIT_USAGE)
    notes: tuple[str, ...] | None = None  # None: offline, where nothing can be left unread
    if files:
        documents, read_problems = load_documents(files, stdin=sys.stdin, progress=_progress)
        if not documents and not read_problems:
            read_problems = [
                Problem(
                    field="-f",
                    message=(
                        f"nothing was read: {', '.join(str(path) for path in files)} hold(s) no Kubernetes objects"
                    ),
                )
            ]
        if read_problems:
            _fail(read_problems, output=output, servlet=servlet)
        inventory = build_inventory(documents)
    else:
        assert kcp_kubeconfig is not None  # checked above
        # The same default as `servlet run`: the APIExport is named like the API group.
        apiexport = apiexport or api_group
        live = _read_live(
            kubeconfig=kubeconfig,
            kcp_kubeconfig=kcp_kubeconfig,
            contexts=(context, kcp_context),
            apiexport=apiexport,
            selector=published_resource_selector,
            servlet=servlet,
            output=output,
            endpoint_slice=slice_choice,
        )
        inventory, notes = live.inventory, live.notes
    _print_plan(
        inventory,
        servlet=servlet,
        apiexport=apiexport,
        notes=notes,
        output=output,
        delete_orphans=delete_orphans,
        detailed_exitcode=detailed_exitcode,
    )


def _progress(message: str) -> None:
    typer.echo(message, err=True)


def _set_by(ctx: typer.Context, parameter: str, flag: str) -> str:
    source = ctx.get_parameter_source(parameter)
    # Compared by name: typer ships its own copy of click, whose enum is not public.
    if source is not None and source.name == "ENVIRONMENT":
        return f"{flag} (set through SERVLET_{flag[2:].upper().replace('-', '_')})"
    return flag


def _offline_only_problems(ctx: typer.Context, values: dict[str, str | None]) -> list[Problem]:
    """-f plans from files; a flag that reads the clusters would be silently ignored, so refuse it."""
    return [
        Problem(
            field=f"-f and {_set_by(ctx, parameter, flag)}",
            message=f"exclude each other: -f plans offline from files, {flag} plans live from the clusters",
        )
        for parameter, flag in _LIVE_FLAGS.items()
        if values.get(parameter)
    ]


def _read_live(
    *,
    kubeconfig: str | None,
    kcp_kubeconfig: str,
    contexts: tuple[str | None, str | None],
    apiexport: str,
    selector: str,
    servlet: ServletIdentity,
    output: OutputFormat,
    endpoint_slice: SliceChoice | None = None,
) -> LiveInventory:
    async def read() -> LiveInventory:
        connections = Connections.from_kubeconfigs(
            kubeconfig=kubeconfig, kcp_kubeconfig=kcp_kubeconfig, context=contexts[0], kcp_context=contexts[1]
        )
        try:
            return await read_live_inventory(
                connections=connections,
                servlet=servlet,
                apiexport=apiexport,
                published_resource_selector=selector,
                endpoint_slice=endpoint_slice,
            )
        finally:
            await connections.aclose()

    try:
        return asyncio.run(read())
    except ConfigurationError as error:
        # The message names the flag at fault already.
        _fail([Problem(field="", message=" ".join(str(error).split()))], output=output, servlet=servlet)
    except LiveReadError as error:
        _fail([Problem(field=error.where, message=error.detail)], output=output, servlet=servlet)


def _print_plan(
    inventory: Inventory,
    *,
    servlet: ServletIdentity,
    apiexport: str | None,
    notes: tuple[str, ...] | None,
    output: OutputFormat,
    delete_orphans: bool = False,
    detailed_exitcode: bool = False,
) -> None:
    result = plan_servlet(
        inventory=inventory,
        servlet=servlet,
        apiexport_name=apiexport,
        delete_orphans=delete_orphans,
        crds_from="among the inputs" if notes is None else "on the service cluster",
    )
    data = result.to_dict()
    add_field_changes(data, result, inventory)
    if notes is not None:
        data["notes"] = list(notes)
    if output is not OutputFormat.TEXT:
        _echo_data(data, output=output)
    else:
        typer.echo(render_text(data), nl=False)
        if notes:
            typer.echo("\nNotes")
            for note in notes:
                typer.echo(f"  ! {note}")
        warned = f", {len(result.warnings)} warning(s)" if result.warnings else ""
        typer.echo(f"\nPlan: {result.writes} write(s), {len(result.errors)} error(s){warned}.")
    if result.errors:
        raise typer.Exit(code=EXIT_ERROR)
    if detailed_exitcode and result.writes:
        raise typer.Exit(code=EXIT_CHANGES)


from servlet.app.run_command import run_command  # noqa: E402  (the daemon's command lives in its own module)

app.command("run")(run_command)

from servlet.app.convert_command import convert_command  # noqa: E402  (a command of its own module)

app.command("convert")(convert_command)


def main() -> None:
    app()
