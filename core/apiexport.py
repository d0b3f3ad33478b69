"""What the servlet adds to its APIExport, and where the export's virtual workspace lives (SPEC 4).

The APIExport belongs to KDP; the servlet only ever adds to it: the schemas of its published
resources, the permission claims its related resources need, the claim on `events` it
records Events on users' objects with, and the claim on `logicalclusters` it reads workspace paths
with (`spec.enableWorkspacePaths`). This module computes that
addition as a JSON merge patch (or None when there is nothing to add), so a reconcile that finds
the export already complete writes nothing.

It also decides which PublishedResource keeps a schema that several of them project to
(`schema_taken_by`), for the daemon and `servlet plan` alike.

It deliberately does not remove anything (a schema leaves the export only when a newer schema for
the same resource replaces it), does not validate claims it did not write, and does not read or
write the cluster: the caller fetches the export and sends the patch.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from servlet.core.model import RelatedKind, RelatedResource
from servlet.core.related_types import Claim, required_claims

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["ExportChange", "plan_export", "virtual_workspace_url", "virtual_workspace_urls"]

SCHEMAS_FIELD = "latestResourceSchemas"
CLAIMS_FIELD = "permissionClaims"
_CORE_GROUP = ""
_NAMESPACES = "namespaces"
# Events on users' objects (`kubectl describe` in a workspace) are written through the VW.
_EVENTS = "events"
# Workspace paths are read from each workspace's LogicalCluster through the VW.
LOGICAL_CLUSTERS_CLAIM = ("core.kcp.io", "logicalclusters")


@frozen
class ExportChange:
    """A merge patch for the APIExport, and the `spec` the export has once it is applied."""

    patch: dict[str, Any]
    spec: dict[str, Any]


def schema_resource(name: str) -> str:
    """The `<plural>.<group>` an APIResourceSchema named `<prefix>.<plural>.<group>` defines.

    kcp allows one schema per resource in an export, so this is what two schema names must share
    for the newer one to replace the older.
    """
    return name.split(".", 1)[1] if "." in name else name


@frozen
class SchemaClaim:
    """A PublishedResource that projects to the APIResourceSchema `schema_name`.

    `created` is its `metadata.creationTimestamp` as the API server writes it (RFC 3339 in UTC,
    so the text sorts by time); "" when unknown, as for a manifest read from a file.
    """

    published_resource: str
    schema_name: str
    created: str = ""


def schema_taken_by(claims: Iterable[SchemaClaim]) -> dict[str, str]:
    """For each PublishedResource whose schema another one already publishes: that other one's name.

    Identical projections give identical schema names. Were both served, every object would be
    copied once per PublishedResource and their workers would fight over one finalizer, so one
    keeps the schema: the oldest by creationTimestamp, then the lowest name; one without a
    timestamp counts as the newest. The answer depends on the claims alone, never on their order,
    so the daemon and `servlet plan` agree whatever order events arrive in.
    """
    claims = list(claims)
    keepers: dict[str, SchemaClaim] = {}
    for claim in claims:
        keeper = keepers.get(claim.schema_name)
        if keeper is None or _seniority(claim) < _seniority(keeper):
            keepers[claim.schema_name] = claim
    return {
        claim.published_resource: keepers[claim.schema_name].published_resource
        for claim in claims
        if keepers[claim.schema_name].published_resource != claim.published_resource
    }


def _seniority(claim: SchemaClaim) -> tuple[bool, str, str]:
    return (not claim.created, claim.created, claim.published_resource)


def plan_export(
    *,
    export: Mapping[str, Any],
    schema_names: Iterable[str],
    related_kinds: Iterable[RelatedKind] = (),
    related: Iterable[RelatedResource] = (),
    workspace_paths: bool = False,
) -> ExportChange | None:
    """The addition `export` needs to serve `schema_names` and claim what the `related` entries
    (or the bare `related_kinds`) read in kcp; None if nothing is missing.

    A related type the export serves itself (one of its schemas) needs no claim; one of another
    export is claimed with that export's identity hash (`related_types.required_claims`).

    `workspace_paths`: some PublishedResource reads workspace paths, so `logicalclusters` is claimed.

    Written schema lists are sorted and free of duplicates; an export that already lists exactly
    the right schemas in another order is left alone, since kcp reads the list as a set.
    """
    spec = _mapping(export.get("spec"))
    current_schemas = [name for name in _sequence(spec.get(SCHEMAS_FIELD)) if isinstance(name, str)]
    current_claims = list(_sequence(spec.get(CLAIMS_FIELD)))

    wanted = set(schema_names)
    schemas = _merged_schemas(current=current_schemas, wanted=wanted)
    related, kinds = list(related), set(related_kinds)
    exported = {_group_and_plural(name) for name in schemas}
    claims = {Claim("", kind.plural) for kind in kinds} | required_claims(related, exported=exported)
    # Events are claimed with the first schema, in the same patch: nothing to sync, no Events.
    new_claims = _missing_claims(
        current=current_claims,
        claims=claims,
        namespaces=bool(kinds) or bool(related),
        events=bool(wanted),
        workspace_paths=workspace_paths,
    )

    patch_spec: dict[str, Any] = {}
    if set(schemas) != set(current_schemas) or len(current_schemas) != len(set(current_schemas)):
        patch_spec[SCHEMAS_FIELD] = schemas
    if new_claims:
        # A merge patch replaces lists whole, so the claims we did not write are sent back as read.
        patch_spec[CLAIMS_FIELD] = [*current_claims, *new_claims]
    if not patch_spec:
        return None
    # Copies, so a caller editing the patch or the spec changes neither the other nor the export.
    return ExportChange(patch={"spec": copy.deepcopy(patch_spec)}, spec=copy.deepcopy({**spec, **patch_spec}))


def virtual_workspace_urls(
    *, endpoint_slice: Mapping[str, Any] | None, export: Mapping[str, Any] | None
) -> tuple[str, ...]:
    """Every VW URL of the export: the endpoint slice's (kcp 0.28+), else the export's (older kcp).

    A sharded kcp lists one URL per shard that serves a workspace binding the export, and adds and
    removes them as bindings come and go; all of them must be watched. Duplicates are dropped and
    the order kept; empty when kcp has published none yet.
    """
    for obj, field_name in ((endpoint_slice, "endpoints"), (export, "virtualWorkspaces")):
        status = _mapping(_mapping(obj).get("status"))
        urls: dict[str, None] = {}
        for entry in _sequence(status.get(field_name)):
            url = _mapping(entry).get("url")
            if isinstance(url, str) and url:
                urls.setdefault(url.rstrip("/"), None)
        if urls:
            return tuple(urls)
    return ()


def virtual_workspace_url(*, endpoint_slice: Mapping[str, Any] | None, export: Mapping[str, Any] | None) -> str | None:
    """The first of `virtual_workspace_urls`, None when there is none (an unsharded kcp has one)."""
    urls = virtual_workspace_urls(endpoint_slice=endpoint_slice, export=export)
    return urls[0] if urls else None


def _merged_schemas(*, current: Sequence[str], wanted: set[str]) -> list[str]:
    """Current schemas plus wanted ones, a wanted schema replacing the current one of its resource.

    Two wanted schemas for the same resource conflict (kcp serves one per resource). The choice
    must not depend on the order they were asked in: the one already in the export stays, else
    the lowest name wins. Reporting the conflict is the caller's job.
    """
    chosen: dict[str, str] = {}
    current_set = set(current)
    for name in sorted(wanted):
        resource = schema_resource(name)
        if resource not in chosen or (name in current_set and chosen[resource] not in current_set):
            chosen[resource] = name
    kept = {name for name in current if schema_resource(name) not in chosen}
    return sorted(kept | set(chosen.values()))


def _group_and_plural(schema_name: str) -> tuple[str, str]:
    plural, _, group = schema_resource(schema_name).partition(".")
    return group, plural


def _missing_claims(
    *, current: Sequence[Any], claims: set[Claim], namespaces: bool, events: bool, workspace_paths: bool
) -> list[dict[str, Any]]:
    """The claims the related types, Events and workspace paths need that the export does not have yet, sorted."""
    needed = set(claims) | ({Claim(_CORE_GROUP, _EVENTS)} if events else set())
    if namespaces:
        # A related object may have to go into a namespace that does not exist in the workspace yet.
        needed.add(Claim(_CORE_GROUP, _NAMESPACES))
    if workspace_paths:
        needed.add(Claim(*LOGICAL_CLUSTERS_CLAIM))
    present = {
        Claim(str(claim.get("group") or ""), str(claim.get("resource")), str(claim.get("identityHash") or ""))
        for claim in current
        if isinstance(claim, Mapping)
    }
    return [claim.to_dict() for claim in sorted(needed - present)]


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _sequence(value: object) -> Sequence[Any]:
    return value if isinstance(value, list | tuple) else ()
