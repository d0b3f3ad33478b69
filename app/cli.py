"""The `servlet` command line: `servlet plan` (dry run) and, with the daemon, `servlet run`.

Every flag can also come from the environment as `SERVLET_<FLAG>` (SPEC 9). Invalid input ends
with exit code 1 and every problem listed, never with a traceback.
"""

from __future__ import annotations

import asyncio
import enum
import json
from pathlib import Path
from typing import Annotated, NoReturn, Optional

import typer

from servlet.adapters.connections import ConfigurationError, Connections
from servlet.app.live_inventory import LiveInventory, read_live_inventory
from servlet.app.live_reads import LiveReadError
from servlet.app.manifests import load_documents
from servlet.app.plan_changes import add_field_changes
from servlet.app.render import render_text
from servlet.app.run_command import default_namespace
from servlet.core.inventory import Inventory, build_inventory
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
KubeconfigOption = Annotated[Optional[str], typer.Option(
    "--kubeconfig", envvar="SERVLET_KUBECONFIG",
    help="Kubeconfig of the service cluster (default: KUBECONFIG, else the pod's service account).")]
KcpKubeconfigOption = Annotated[Optional[str], typer.Option(
    "--kcp-kubeconfig", envvar="SERVLET_KCP_KUBECONFIG",
    help="Kubeconfig pointing into the org workspace (server .../clusters/<workspace path>).")]
NamespaceOption = Annotated[Optional[str], typer.Option(
    "--namespace", envvar="SERVLET_NAMESPACE",
    help="Where the servlet runs; no copy is planned into it (default: the pod's namespace, else default).")]
PublishedResourceSelectorOption = Annotated[str, typer.Option(
    "--published-resource-selector", envvar="SERVLET_PUBLISHED_RESOURCE_SELECTOR",
    help="Only PublishedResources matching this label selector, e.g. 'tier=gold,team in (a,b)'.")]

# Flags that only mean something when reading the clusters.
_LIVE_FLAGS = {"kcp_kubeconfig": "--kcp-kubeconfig", "kubeconfig": "--kubeconfig",
               "published_resource_selector": "--published-resource-selector"}


def identity_problems(*, name: str, api_group: str) -> list[Problem]:
    problems = []
    if not is_dns1123_label(name):
        problems.append(Problem(field="--name", message=f"{name!r} is not a DNS-1123 label"))
    if not is_dns1123_subdomain(api_group) or "." not in api_group:
        problems.append(Problem(field="--api-group",
                                message=f"{api_group!r} is not an API group (a DNS subdomain with a dot)"))
    return problems


def _fail(problems: list[Problem], *, output: OutputFormat) -> NoReturn:
    errors = [PlanError(object=p.field, field="", message=p.message) for p in problems]
    if output is OutputFormat.JSON:
        typer.echo(json.dumps({"schemas": [], "apiExport": None, "objects": [],
                               "errors": [error.to_dict() for error in errors], "warnings": []}, indent=2))
    else:
        for error in errors:
            where = f"{error.object}: " if error.object else ""
            typer.echo(f"error: {where}{error.message}", err=True)
    raise typer.Exit(code=1)


@app.command()
def plan(
    ctx: typer.Context,
    name: NameOption,
    api_group: ApiGroupOption,
    files: Annotated[Optional[list[Path]], typer.Option(
        "-f", "--filename",
        help="Offline: a YAML/JSON file (multi-document allowed) or a folder of them; repeatable.")] = None,
    apiexport: ApiExportOption = None,
    kubeconfig: KubeconfigOption = None,
    kcp_kubeconfig: KcpKubeconfigOption = None,
    published_resource_selector: PublishedResourceSelectorOption = "",
    namespace: NamespaceOption = None,
    output: Annotated[OutputFormat, typer.Option("-o", "--output", help="text or json.")] = OutputFormat.TEXT,
    delete_orphans: Annotated[bool, typer.Option(
        "--delete-orphans", envvar="SERVLET_DELETE_ORPHANS",
        help="Plan the deletions `servlet run --delete-orphans` makes; orphans are listed either way.")] = False,
) -> None:
    """Print everything the servlet would do, writing nothing.

    Offline (-f): reads CRDs, PublishedResources, the APIExport, existing APIResourceSchemas,
    Namespaces and objects from files. An object annotated with kcp.io/cluster lives in that kcp
    workspace; any other object lives on the service cluster.

    Live (no -f): connects like `servlet run` does, with --kubeconfig, --kcp-kubeconfig,
    --apiexport and --published-resource-selector (each also as SERVLET_<FLAG>), and reads the
    same things from the clusters: the PublishedResources and their CRDs, the APIExport, the
    schemas and the endpoint slice in the org workspace, and through the virtual workspace every
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
    notes: tuple[str, ...] | None = None  # None: offline, where nothing can be left unread
    if files:
        given = {"kcp_kubeconfig": kcp_kubeconfig, "kubeconfig": kubeconfig,
                 "published_resource_selector": published_resource_selector}
        problems.extend(_offline_only_problems(ctx, given))
        documents, read_problems = load_documents(files)
        problems.extend(read_problems)
        if problems:
            _fail(problems, output=output)
        inventory = build_inventory(documents)
    else:
        problems.extend(_live_problems(kcp_kubeconfig=kcp_kubeconfig, apiexport=apiexport))
        if problems:
            _fail(problems, output=output)
        assert kcp_kubeconfig is not None and apiexport is not None  # checked just above
        live = _read_live(kubeconfig=kubeconfig, kcp_kubeconfig=kcp_kubeconfig, apiexport=apiexport,
                          selector=published_resource_selector, servlet=servlet, output=output)
        inventory, notes = live.inventory, live.notes
    _print_plan(inventory, servlet=servlet, apiexport=apiexport, notes=notes, output=output,
                delete_orphans=delete_orphans)


def _set_by(ctx: typer.Context, parameter: str, flag: str) -> str:
    source = ctx.get_parameter_source(parameter)
    # Compared by name: typer ships its own copy of click, whose enum is not public.
    if source is not None and source.name == "ENVIRONMENT":
        return f"{flag} (set through SERVLET_{flag[2:].upper().replace('-', '_')})"
    return flag


def _offline_only_problems(ctx: typer.Context, values: dict[str, str | None]) -> list[Problem]:
    """-f plans from files; a flag that reads the clusters would be silently ignored, so refuse it."""
    return [
        Problem(field=f"-f and {_set_by(ctx, parameter, flag)}",
                message=f"exclude each other: -f plans offline from files, {flag} plans live from the clusters")
        for parameter, flag in _LIVE_FLAGS.items() if values.get(parameter)
    ]


def _live_problems(*, kcp_kubeconfig: str | None, apiexport: str | None) -> list[Problem]:
    problems = []
    if not kcp_kubeconfig:
        problems.append(Problem(field="--kcp-kubeconfig", message=(
            "is needed to plan from the clusters (or give -f to plan offline from files)")))
    if not apiexport:
        problems.append(Problem(field="--apiexport", message="is needed to plan from the clusters: "
                                "name the APIExport the servlet manages (also SERVLET_APIEXPORT)"))
    return problems


def _read_live(
    *, kubeconfig: str | None, kcp_kubeconfig: str, apiexport: str, selector: str, servlet: ServletIdentity,
    output: OutputFormat,
) -> LiveInventory:
    async def read() -> LiveInventory:
        connections = Connections.from_kubeconfigs(kubeconfig=kubeconfig, kcp_kubeconfig=kcp_kubeconfig)
        try:
            return await read_live_inventory(connections=connections, servlet=servlet, apiexport=apiexport,
                                             published_resource_selector=selector)
        finally:
            await connections.aclose()

    try:
        return asyncio.run(read())
    except ConfigurationError as error:
        # The message names the flag at fault already.
        _fail([Problem(field="", message=" ".join(str(error).split()))], output=output)
    except LiveReadError as error:
        _fail([Problem(field=error.where, message=error.detail)], output=output)


def _print_plan(
    inventory: Inventory, *, servlet: ServletIdentity, apiexport: str | None, notes: tuple[str, ...] | None,
    output: OutputFormat, delete_orphans: bool = False,
) -> None:
    result = plan_servlet(inventory=inventory, servlet=servlet, apiexport_name=apiexport,
                          delete_orphans=delete_orphans,
                          crds_from="among the inputs" if notes is None else "on the service cluster")
    data = result.to_dict()
    add_field_changes(data, result, inventory)
    if notes is not None:
        data["notes"] = list(notes)
    if output is OutputFormat.JSON:
        typer.echo(json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False))
    else:
        typer.echo(render_text(data), nl=False)
        if notes:
            typer.echo("\nNotes")
            for note in notes:
                typer.echo(f"  ! {note}")
        warned = f", {len(result.warnings)} warning(s)" if result.warnings else ""
        typer.echo(f"\nPlan: {result.writes} write(s), {len(result.errors)} error(s){warned}.")
    if result.errors:
        raise typer.Exit(code=1)


from servlet.app.run_command import run_command  # noqa: E402  (the daemon's command lives in its own module)

app.command("run")(run_command)


def main() -> None:
    app()
