"""Mutations of related objects (`spec.related[].mutation`): what the copy gets, and that it settles."""

from __future__ import annotations

import copy
from typing import Any

import attrs

from servlet.core.actions import CreateRelated, Error, PatchRelated, RecordRelatedState, Side
from servlet.core.model import Problem, RelatedResource
from servlet.core.mutation_parsing import parse_mutation
from servlet.core.mutation_steps import Mutation
from servlet.core.patch import apply_merge_patch
from servlet.core.related import plan_related
from servlet.core.related_objects import read_service_state
from tests.unit.test_related import (
    CREDENTIALS,
    LOCAL_NS,
    TLS_SECRET,
    configmap,
    local_primary,
    primaries,
    secret,
    snapshot,
    types,
)


def mutation(data: dict[str, Any]) -> Mutation:
    problems: list[Problem] = []
    parsed = parse_mutation(data, path="spec.related[0].mutation", problems=problems)
    assert problems == []
    return parsed


def with_steps(
    item: RelatedResource, *spec: dict[str, Any], status: tuple[dict[str, Any], ...] = ()
) -> RelatedResource:
    return attrs.evolve(item, mutation=mutation({"spec": list(spec), "status": list(status)}))


# A CEL step that reads the destination (`other`) and a regex that rewrites a label.
SERVICE_STEPS = with_steps(
    TLS_SECRET,
    {"cel": {"path": "metadata.labels.copy", "expression": "other.metadata.name"}},
    {"delete": {"path": "data.tls\\.key"}},
    {"regex": {"path": "metadata.labels.tier", "pattern": "^(.*)$", "replacement": "\\1-copy"}},
)


def changing(obj: dict[str, Any], **meta: Any) -> dict[str, Any]:
    """`obj` as the API server shows it after a write that changed nothing the sync reads."""
    changed = copy.deepcopy(obj)
    changed["metadata"].update(meta)
    return changed


def test_a_service_origin_copy_carries_the_mutated_content_and_its_record_the_mutated_keys() -> None:
    source = secret(LOCAL_NS, "cert-1-tls", labels={"tier": "gold"})

    create, record = plan_related(
        primaries=primaries(), related=[SERVICE_STEPS], snapshot=snapshot((Side.LOCAL, source))
    )

    assert isinstance(create, CreateRelated) and isinstance(record, RecordRelatedState)
    assert create.object["data"] == {"tls.crt": "Y2VydA=="}
    assert create.object["metadata"]["labels"] == {"tier": "gold-copy", "copy": "api-tls"}
    recorded = read_service_state(apply_merge_patch(local_primary(), record.patch), TLS_SECRET.identifier)
    assert recorded is not None and recorded.content["data"] == {"tls.crt": ""}
    assert recorded.content["metadata"] == {"labels": {"tier": "gold-copy", "copy": "api-tls"}}


def test_a_mutated_service_origin_copy_is_a_fixed_point_whatever_the_api_server_changes() -> None:
    source = secret(LOCAL_NS, "cert-1-tls", labels={"tier": "gold"})
    create, record = plan_related(
        primaries=primaries(), related=[SERVICE_STEPS], snapshot=snapshot((Side.LOCAL, source))
    )
    assert isinstance(create, CreateRelated) and isinstance(record, RecordRelatedState)
    pair = primaries(local=apply_merge_patch(local_primary(), record.patch))

    # Every write changes resourceVersion and managedFields: a step that saw them would never settle.
    resynced = snapshot(
        (Side.LOCAL, changing(source, resourceVersion="812", managedFields=[{"manager": "cert-manager"}])),
        (Side.REMOTE, changing(create.object, resourceVersion="9", managedFields=[{"manager": "servlet"}])),
    )
    assert plan_related(primaries=pair, related=[SERVICE_STEPS], snapshot=resynced) == ()


def test_a_key_a_mutation_stops_producing_is_removed_from_the_copy() -> None:
    source = secret(LOCAL_NS, "cert-1-tls")
    create, record = plan_related(
        primaries=primaries(), related=[SERVICE_STEPS], snapshot=snapshot((Side.LOCAL, source))
    )
    assert isinstance(create, CreateRelated) and isinstance(record, RecordRelatedState)
    pair = primaries(local=apply_merge_patch(local_primary(), record.patch))
    fewer = with_steps(TLS_SECRET, {"delete": {"path": "data.tls\\.key"}}, {"delete": {"path": "data.tls\\.crt"}})

    actions = plan_related(
        primaries=pair, related=[fewer], snapshot=snapshot((Side.LOCAL, source), (Side.REMOTE, create.object))
    )

    assert types(actions) == ["patchRelated", "recordRelatedState"]
    assert isinstance(actions[0], PatchRelated)
    assert actions[0].patch["data"] == {"tls.crt": None}
    assert actions[0].patch["metadata"]["labels"] == {"tier": None, "copy": None}
    recorded = read_service_state(apply_merge_patch(pair.local, actions[1].patch), TLS_SECRET.identifier)
    assert recorded is not None and recorded.content == {"data": {}, "type": "kubernetes.io/tls"}


def test_a_platform_origin_copy_is_mutated_on_its_way_down_and_then_settles() -> None:
    steps = with_steps(
        CREDENTIALS,
        {"template": {"path": "data.region", "template": "{{ .Value.String | upper }}"}},
        {"cel": {"path": "data.copy", "expression": "other.metadata.namespace + '/' + other.metadata.name"}},
        # Reads the whole of the origin's metadata: it sees no field that every write changes.
        {"cel": {"path": "data.fields", "expression": "string(size(self.metadata))"}},
    )
    origin = configmap("prod", "settings")

    create, record = plan_related(primaries=primaries(), related=[steps], snapshot=snapshot((Side.REMOTE, origin)))

    assert isinstance(create, CreateRelated) and isinstance(record, RecordRelatedState)
    assert create.object["data"] == {"region": "EU", "copy": f"{LOCAL_NS}/cert-1-settings", "fields": "2"}
    pair = primaries(local=apply_merge_patch(local_primary(), record.patch))
    resynced = snapshot(
        (Side.REMOTE, changing(origin, resourceVersion="41", managedFields=[{"manager": "kubectl"}])),
        (Side.LOCAL, changing(create.object, resourceVersion="7", managedFields=[{"manager": "servlet"}])),
    )
    assert plan_related(primaries=pair, related=[steps], snapshot=resynced) == ()


def test_a_failing_step_is_an_error_naming_its_field_and_nothing_of_that_object_is_written() -> None:
    failing = with_steps(TLS_SECRET, {"cel": {"path": "data.x", "expression": "self.spec.missing"}})
    source = secret(LOCAL_NS, "cert-1-tls")

    first = plan_related(primaries=primaries(), related=[failing], snapshot=snapshot((Side.LOCAL, source)))

    assert len(first) == 1 and isinstance(first[0], Error)
    assert first[0].field == "spec.related[0].mutation.spec[0].cel.expression"
    assert (first[0].target.side, first[0].target.name) == (Side.REMOTE, "api-tls")

    # Once synced, a step that starts failing leaves the copy and its record as they are.
    create, record = plan_related(primaries=primaries(), related=[TLS_SECRET], snapshot=snapshot((Side.LOCAL, source)))
    assert isinstance(create, CreateRelated) and isinstance(record, RecordRelatedState)
    pair = primaries(local=apply_merge_patch(local_primary(), record.patch))
    renewed = secret(LOCAL_NS, "cert-1-tls", data={"tls.crt": "bmV3"})
    later = plan_related(
        primaries=pair, related=[failing], snapshot=snapshot((Side.LOCAL, renewed), (Side.REMOTE, create.object))
    )
    assert [type(action) for action in later] == [Error]


def test_status_steps_change_the_status_that_sync_status_copies() -> None:
    steps = attrs.evolve(
        with_steps(
            TLS_SECRET, status=({"regex": {"path": "status.phase", "pattern": "^Ready$", "replacement": "Up"}},)
        ),
        sync_status=True,
    )
    source = {**secret(LOCAL_NS, "cert-1-tls"), "status": {"phase": "Ready"}}

    create, _record = plan_related(primaries=primaries(), related=[steps], snapshot=snapshot((Side.LOCAL, source)))

    assert isinstance(create, CreateRelated) and create.object["status"] == {"phase": "Up"}
