"""The flags of `servlet plan`: their names, environment variables and help texts.

Each is an `Annotated` type, so a command declares a flag with one parameter line and the help
text lives in one place.
"""

from __future__ import annotations

import enum
from typing import Annotated

import typer


class OutputFormat(str, enum.Enum):
    TEXT = "text"
    JSON = "json"
    YAML = "yaml"


NameOption = Annotated[
    str, typer.Option("--name", envvar="SERVLET_NAME", help="The servlet's name, e.g. tom (a DNS label).")
]
ApiGroupOption = Annotated[
    str,
    typer.Option(
        "--api-group", envvar="SERVLET_API_GROUP", help="The KDP Service's API group, e.g. certificates.example.corp."
    ),
]
ApiExportOption = Annotated[
    str | None,
    typer.Option(
        "--apiexport",
        envvar="SERVLET_APIEXPORT",
        help="The APIExport the servlet manages (default: offline the one among the inputs, live the API group).",
    ),
]
KubeconfigOption = Annotated[
    str | None,
    typer.Option(
        "--kubeconfig",
        envvar="SERVLET_KUBECONFIG",
        help="Kubeconfig of the service cluster (default: KUBECONFIG, else ~/.kube/config, else the pod's service "
        "account).",
    ),
]
ContextOption = Annotated[
    str | None,
    typer.Option(
        "--context",
        envvar="SERVLET_CONTEXT",
        help="Context of the service cluster's kubeconfig (default: its current).",
    ),
]
KcpContextOption = Annotated[
    str | None,
    typer.Option(
        "--kcp-context", envvar="SERVLET_KCP_CONTEXT", help="Context of the kcp kubeconfig (default: its current)."
    ),
]
KcpKubeconfigOption = Annotated[
    str | None,
    typer.Option(
        "--kcp-kubeconfig",
        envvar="SERVLET_KCP_KUBECONFIG",
        help="Kubeconfig pointing into the org workspace (server .../clusters/<workspace path>).",
    ),
]
NamespaceOption = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        envvar="SERVLET_NAMESPACE",
        help="Where the servlet runs; no copy is planned into it (default: the pod's namespace, else default).",
    ),
]
PublishedResourceSelectorOption = Annotated[
    str,
    typer.Option(
        "--published-resource-selector",
        envvar="SERVLET_PUBLISHED_RESOURCE_SELECTOR",
        help="Only PublishedResources matching this label selector, e.g. 'tier=gold,team in (a,b)'.",
    ),
]
EndpointSliceOption = Annotated[
    str | None,
    typer.Option(
        "--apiexportendpointslice",
        envvar="SERVLET_APIEXPORTENDPOINTSLICE",
        help="Live: the APIExportEndpointSlice the VW URLs come from, NAME or WORKSPACE-PATH:NAME (default: the one "
        "named like the APIExport, else the APIExport's status).",
    ),
]
