"""Which APIExportEndpointSlice the VW URLs come from (`--apiexportendpointslice`), and whether it fits.

By default the URLs come from the slice kcp creates next to the export, named like it, and on
older kcp from the export's deprecated `status.virtualWorkspaces`. An operator may name another
slice instead, `NAME` in the org workspace or `WORKSPACE-PATH:NAME` in another workspace (a slice
may live anywhere and point at the export by `spec.export.{path,name}`, for instance one with a
partition). A chosen slice is the only source: no fallback to the export, which would quietly
watch other URLs than the ones asked for.

The slice must name this servlet's export; one that names another would sync the wrong tenants,
so it is an error naming the flag, as is a slice that does not exist.

Deliberately not here: reading the slice (the daemon's cache, the live plan's reader).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from servlet.core.model import Problem
from servlet.core.naming import is_dns1123_label, is_dns1123_subdomain

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["FLAG", "SliceChoice", "parse_slice_choice", "slice_mismatch", "slice_missing"]

FLAG = "--apiexportendpointslice"


@frozen
class SliceChoice:
    """The slice named by the flag: `workspace` is a workspace path ("" for the org workspace)."""

    name: str
    workspace: str = ""

    def describe(self) -> str:
        return f"{self.workspace}:{self.name}" if self.workspace else self.name


def parse_slice_choice(text: str) -> SliceChoice | Problem:
    """`NAME` or `WORKSPACE-PATH:NAME` (e.g. `root:shared:certificates`); a Problem naming the flag."""
    workspace, colon, name = text.strip().rpartition(":")
    if not is_dns1123_subdomain(name):
        return Problem(
            field=FLAG, message=f"{text!r}: {name!r} is not an object name (NAME or WORKSPACE-PATH:NAME expected)"
        )
    if colon and not all(is_dns1123_label(segment) for segment in workspace.split(":")):
        return Problem(
            field=FLAG,
            message=f"{text!r}: {workspace!r} is not a workspace path (segments like root:myorg, separated by ':')",
        )
    return SliceChoice(name=name, workspace=workspace)


def slice_mismatch(
    endpoint_slice: Mapping[str, Any], *, choice: SliceChoice, export_name: str, org_path: str, org_cluster: str
) -> str | None:
    """Why the chosen slice does not serve the export `export_name` of the org workspace; None if it does.

    kcp reads an empty `spec.export.path` as the slice's own workspace; a path may be the org
    workspace's path or its logical cluster name.
    """
    spec = endpoint_slice.get("spec")
    export = spec.get("export") if isinstance(spec, Mapping) else None
    export = export if isinstance(export, Mapping) else {}
    name, path = str(export.get("name") or ""), str(export.get("path") or "")
    in_org = choice.workspace in ("", org_path, org_cluster)
    points_at_org = path in (org_path, org_cluster) or (not path and in_org)
    if name == export_name and points_at_org:
        return None
    named = f"{path or 'its own workspace'}:{name or '(none)'}"
    return (
        f"{FLAG}: the APIExportEndpointSlice {choice.describe()} is for the APIExport {named}, "
        f"not for {org_path}:{export_name}, the export this servlet manages (--apiexport)"
    )


def slice_missing(choice: SliceChoice, *, org_path: str) -> str:
    """The message for a chosen slice that does not exist."""
    where = choice.workspace or org_path
    return f"{FLAG}: the APIExportEndpointSlice {choice.name!r} does not exist in workspace {where}"
