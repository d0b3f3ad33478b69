"""`syncStatus` for origin platform: the local copy's status goes up to the workspace object it copies."""

from __future__ import annotations

from typing import Any

import attrs

from servlet.core.actions import CreateRelated, Error, PatchRelated, PatchRemoteStatus, RecordRelatedState, Side
from servlet.core.model import Origin, Problem
from servlet.core.mutation_parsing import parse_mutation
from servlet.core.parsing import parse_published_resource
from servlet.core.patch import apply_merge_patch
from servlet.core.related import Primaries, RelatedKey, RelatedSnapshot, plan_related
from servlet.core.related_types import resolve_related_types
from tests.unit.test_related import LOCAL_NS, local_primary, primaries
from tests.unit.test_related_types import (
    DATABASE,
    DATABASE_TYPE,
    database,
    database_crd,
    entry,
    manifest,
    published,
)

# The tenant's Database (in the workspace, named by spec.secretName) comes down; its copy's
# status, which the service's operator writes, goes up.
PLATFORM_DB = attrs.evolve(DATABASE, origin=Origin.PLATFORM, sync_status=True, status_subresource=True)
ORIGIN = RelatedKey(Side.REMOTE, DATABASE_TYPE, "prod", "api-tls")
COPY = RelatedKey(Side.LOCAL, DATABASE_TYPE, LOCAL_NS, "cert-1-tls")


def workspace_database(status: dict[str, Any] | None = None) -> dict[str, Any]:
    obj = database("prod", "api-tls", engine="pg")
    if status is None:
        obj.pop("status")
    else:
        obj["status"] = status
    return obj


def synced(item: Any) -> tuple[Primaries, dict[str, Any], dict[str, Any]]:
    """The copy made and recorded: (primaries, workspace origin, local copy)."""
    origin = workspace_database()
    create, record = plan_related(
        primaries=primaries(), related=[item], snapshot=RelatedSnapshot(objects={ORIGIN: origin})
    )
    assert isinstance(create, CreateRelated) and isinstance(record, RecordRelatedState)
    assert "status" not in create.object, "the workspace object's status never goes down"
    return primaries(local=apply_merge_patch(local_primary(), record.patch)), origin, create.object


def test_the_copys_status_goes_up_to_the_workspace_origin_through_its_subresource() -> None:
    pair, origin, copy = synced(PLATFORM_DB)
    working = {**copy, "status": {"phase": "Provisioning", "endpoint": "db.internal"}}

    actions = plan_related(
        primaries=pair, related=[PLATFORM_DB], snapshot=RelatedSnapshot(objects={ORIGIN: origin, COPY: working})
    )

    (status,) = actions
    assert isinstance(status, PatchRemoteStatus)
    assert (status.target.side, status.target.namespace, status.target.name) == (Side.REMOTE, "prod", "api-tls")
    assert status.patch == {"status": {"phase": "Provisioning", "endpoint": "db.internal"}}

    # Once it is there, nothing more is written, although the write changed the origin's resourceVersion.
    written = {**origin, "status": status.status, "metadata": {**origin["metadata"], "resourceVersion": "9"}}
    settled = RelatedSnapshot(objects={ORIGIN: written, COPY: working})
    assert plan_related(primaries=pair, related=[PLATFORM_DB], snapshot=settled) == ()


def test_status_steps_change_the_copys_status_on_its_way_up() -> None:
    problems: list[Problem] = []
    steps = parse_mutation(
        {
            "status": [
                {"cel": {"path": "status.where", "expression": "other.metadata.namespace + '/' + other.metadata.name"}}
            ]
        },
        path="spec.related[0].mutation",
        problems=problems,
    )
    assert problems == []
    item = attrs.evolve(PLATFORM_DB, mutation=steps)
    pair, origin, copy = synced(item)

    (status,) = plan_related(
        primaries=pair,
        related=[item],
        snapshot=RelatedSnapshot(objects={ORIGIN: origin, COPY: {**copy, "status": {"phase": "Ready"}}}),
    )

    assert isinstance(status, PatchRemoteStatus) and status.status == {"phase": "Ready", "where": "prod/api-tls"}


def test_a_type_without_status_subresource_reports_the_field_and_still_syncs_content() -> None:
    item = attrs.evolve(PLATFORM_DB, status_subresource=False)
    pair, origin, copy = synced(item)
    changed = {**origin, "spec": {"engine": "mysql"}, "status": {"phase": "Pending"}}

    actions = plan_related(
        primaries=pair,
        related=[item],
        snapshot=RelatedSnapshot(objects={ORIGIN: changed, COPY: {**copy, "status": {"phase": "Ready"}}}),
    )

    assert [type(action) for action in actions] == [PatchRelated, Error]
    assert isinstance(actions[1], Error) and actions[1].field == "spec.related[0].syncStatus"
    assert "status" not in actions[0].patch, "the copy's status is never written as content either way"


def test_the_status_subresource_of_a_platform_entry_is_read_from_the_origin_types_crd() -> None:
    crd = database_crd()
    crd["spec"]["versions"][0]["subresources"] = {"status": {}}
    item = attrs.evolve(PLATFORM_DB, resolved=None, status_subresource=False)
    (resolved,) = resolve_related_types(published(item), [crd]).spec.related
    assert resolved.status_subresource


def test_the_parser_accepts_platform_sync_status_for_a_type_and_refuses_it_for_a_secret() -> None:
    typed = entry(origin="platform", group="databases.example.org", version="v1", resource="databases", syncStatus=True)
    assert parse_published_resource(manifest(typed)).problems == ()
    secret = entry(origin="platform", kind="Secret", syncStatus=True)
    assert [p.field for p in parse_published_resource(manifest(secret)).problems] == ["spec.related[0].syncStatus"]
