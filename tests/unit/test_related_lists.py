"""Related entries whose name path runs through a list (`spec.items[*].secretName`): one related
object per item, paired by position on the two primaries, bounded, and cleaned up as items go."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from servlet.core.actions import (
    Action,
    CreateRelated,
    DeleteRelated,
    Error,
    PatchRelated,
    RecordRelatedState,
    Side,
)
from servlet.core.metadata import related_state_annotation
from servlet.core.model import Origin, Problem, RelatedKind, RelatedReference, RelatedResource, ValueReference
from servlet.core.parsing import parse_published_resource
from servlet.core.patch import apply_merge_patch
from servlet.core.related import (
    Primaries,
    RelatedKey,
    RelatedSnapshot,
    plan_related,
    plan_related_cleanup,
    related_reads,
)
from servlet.core.related_types import RELATED_OBJECTS_PER_PRIMARY_MAX
from tests.unit.test_related import LOCAL_NS, configmap, local_primary, primaries, remote_primary, secret

SECRETS = RelatedResource(
    identifier="creds",
    origin=Origin.SERVICE,
    kind=RelatedKind.SECRET,
    reference=RelatedReference(name=ValueReference(path="spec.items[*].secretName"), object_form=True),
)
CONFIGMAPS = attrs.evolve(SECRETS, identifier="settings", origin=Origin.PLATFORM, kind=RelatedKind.CONFIGMAP)


def items(*names: str) -> dict[str, Any]:
    return {"items": [{"secretName": name} for name in names]}


def pair(
    remote_names: tuple[str, ...], local_names: tuple[str, ...], *, local: dict[str, Any] | None = None
) -> Primaries:
    base = local if local is not None else local_primary()
    return primaries(remote=remote_primary(items(*remote_names)), local={**base, "spec": items(*local_names)})


def world(*objects: tuple[Side, dict[str, Any]]) -> dict[RelatedKey, dict[str, Any]]:
    return {
        RelatedKey(side, RelatedKind(obj["kind"]), obj["metadata"]["namespace"], obj["metadata"]["name"]): obj
        for side, obj in objects
    }


def converge(
    primaries_now: Primaries, related: RelatedResource, objects: dict[RelatedKey, dict[str, Any]]
) -> tuple[Primaries, dict[RelatedKey, dict[str, Any]], list[Action]]:
    """Plan and apply the writes, as the executor does, until a plan is empty; every write made."""
    made: list[Action] = []
    for _ in range(5):
        actions = plan_related(primaries=primaries_now, related=[related], snapshot=RelatedSnapshot(objects=objects))
        if not actions:
            return primaries_now, objects, made
        for action in actions:
            made.append(action)
            if isinstance(action, RecordRelatedState):
                local = apply_merge_patch(primaries_now.local, action.patch)
                primaries_now = attrs.evolve(primaries_now, local=local)
                continue
            assert isinstance(action, CreateRelated | PatchRelated | DeleteRelated), action
            target = action.target
            key = RelatedKey(target.side, target.resource, target.namespace, target.name)
            if isinstance(action, CreateRelated):
                objects[key] = {**action.object, "metadata": {**action.object["metadata"], "uid": f"u-{target.name}"}}
            elif isinstance(action, PatchRelated):
                objects[key] = apply_merge_patch(objects[key], action.patch)
            else:
                del objects[key]
    raise AssertionError("planning does not settle")


def records(primaries_now: Primaries) -> list[str]:
    return sorted(key for key in primaries_now.local["metadata"]["annotations"] if "related-state" in key)


def test_each_list_item_names_a_related_object_paired_by_position() -> None:
    start = pair(("a", "b"), ("la", "lb"))
    sources = world((Side.LOCAL, secret(LOCAL_NS, "la", data={"k": "MQ=="})), (Side.LOCAL, secret(LOCAL_NS, "lb")))

    done, objects, made = converge(start, SECRETS, sources)

    assert objects[RelatedKey(Side.REMOTE, RelatedKind.SECRET, "prod", "a")]["data"] == {"k": "MQ=="}
    assert (
        objects[RelatedKey(Side.REMOTE, RelatedKind.SECRET, "prod", "b")]["data"]
        == sources[RelatedKey(Side.LOCAL, RelatedKind.SECRET, LOCAL_NS, "lb")]["data"]
    )
    assert records(done) == [related_state_annotation("creds.0"), related_state_annotation("creds.1")]
    assert [type(action) for action in made].count(CreateRelated) == 2


def test_lists_of_different_lengths_are_an_error_naming_the_field_and_nothing_is_written() -> None:
    actions = plan_related(
        primaries=pair(("a", "b"), ("la",)),
        related=[SECRETS],
        snapshot=RelatedSnapshot(objects=world((Side.LOCAL, secret(LOCAL_NS, "la")))),
    )

    assert len(actions) == 1 and isinstance(actions[0], Error)
    assert actions[0].field == "spec.related[0].object.reference.path"
    assert "2 objects on the remote side and 1 on the local side" in actions[0].reason
    assert actions[0].target is not None and actions[0].target.name == "cert-1"


def test_more_items_than_the_bound_is_an_error_and_nothing_is_read_or_written() -> None:
    names = tuple(f"s{i}" for i in range(RELATED_OBJECTS_PER_PRIMARY_MAX + 1))
    too_many = pair(names, names)

    actions = plan_related(primaries=too_many, related=[SECRETS], snapshot=RelatedSnapshot())

    assert [type(action) for action in actions] == [Error]
    assert f"more than the {RELATED_OBJECTS_PER_PRIMARY_MAX}" in actions[0].reason
    reads = related_reads(related=[SECRETS], remote=too_many.remote, local=too_many.local)
    assert reads.objects == ()
    at_bound = pair(names[:-1], names[:-1])
    assert len(related_reads(related=[SECRETS], remote=at_bound.remote, local=at_bound.local).objects) == 2 * len(
        names[:-1]
    )


def test_an_item_removed_from_both_lists_takes_its_copy_and_record_with_it() -> None:
    sources = world((Side.LOCAL, secret(LOCAL_NS, "la")), (Side.LOCAL, secret(LOCAL_NS, "lb")))
    done, objects, _ = converge(pair(("a", "b"), ("la", "lb")), SECRETS, sources)

    shorter = attrs.evolve(
        done,
        remote=remote_primary(items("a")),
        local={**done.local, "spec": items("la")},
    )
    after, objects, made = converge(shorter, SECRETS, objects)

    assert [(type(action), action.target.name) for action in made if isinstance(action, DeleteRelated)] == [
        (DeleteRelated, "b")
    ]
    assert RelatedKey(Side.REMOTE, RelatedKind.SECRET, "prod", "a") in objects
    assert records(after) == [related_state_annotation("creds.0")]


def test_platform_origin_items_come_down_and_go_when_their_item_goes() -> None:
    origins = world((Side.REMOTE, configmap("prod", "a")), (Side.REMOTE, configmap("prod", "b")))
    done, objects, _ = converge(pair(("a", "b"), ("la", "lb")), CONFIGMAPS, origins)
    local_copies = sorted(key.name for key in objects if key.side is Side.LOCAL)
    assert local_copies == ["la", "lb"]

    emptied = attrs.evolve(done, remote=remote_primary(items()), local={**done.local, "spec": items()})
    after, objects, _ = converge(emptied, CONFIGMAPS, objects)

    assert sorted(key.name for key in objects if key.side is Side.LOCAL) == []
    assert records(after) == []


def test_the_cleanup_of_a_deleted_primary_reaches_every_recorded_item() -> None:
    sources = world((Side.LOCAL, secret(LOCAL_NS, "la")), (Side.LOCAL, secret(LOCAL_NS, "lb")))
    done, objects, _ = converge(pair(("a", "b"), ("la", "lb")), SECRETS, sources)
    # The tenant emptied the list on the way out: the records still find both copies.
    going = attrs.evolve(done, remote=remote_primary(items()))

    actions = plan_related_cleanup(primaries=going, related=[SECRETS], snapshot=RelatedSnapshot(objects=objects))

    assert sorted(action.target.name for action in actions if isinstance(action, DeleteRelated)) == ["a", "b"]


def test_an_entry_without_cleanup_keeps_the_copy_of_a_removed_item_and_forgets_it() -> None:
    keeping = attrs.evolve(SECRETS, cleanup=False)
    sources = world((Side.LOCAL, secret(LOCAL_NS, "la")), (Side.LOCAL, secret(LOCAL_NS, "lb")))
    done, objects, _ = converge(pair(("a", "b"), ("la", "lb")), keeping, sources)

    after, objects, made = converge(
        attrs.evolve(done, remote=remote_primary(items("a")), local={**done.local, "spec": items("la")}),
        keeping,
        objects,
    )

    assert not [action for action in made if isinstance(action, DeleteRelated)]
    assert RelatedKey(Side.REMOTE, RelatedKind.SECRET, "prod", "b") in objects
    assert records(after) == [related_state_annotation("creds.0")]


def _manifest_problems(reference: dict[str, Any]) -> list[Problem]:
    manifest = {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": "x"},
        "spec": {
            "resource": {"apiGroup": "example.com", "kind": "Thing"},
            "related": [{"identifier": "creds", "origin": "service", "kind": "Secret", "reference": reference}],
        },
    }
    return list(parse_published_resource(manifest).problems)


@pytest.mark.parametrize(
    ("reference", "field"),
    [
        ({"name": {"path": "spec.groups[*].items[*].name"}}, "spec.related[0].reference.name.path"),
        (
            {"name": {"path": "spec.items[*].name"}, "namespace": {"path": "status.namespaces[*]"}},
            "spec.related[0].reference.namespace.path",
        ),
    ],
    ids=["two-lists", "namespace-list"],
)
def test_a_list_path_the_pairing_cannot_follow_is_refused_by_field(reference: dict[str, Any], field: str) -> None:
    assert [problem.field for problem in _manifest_problems(reference)] == [field]


def test_a_path_into_a_list_is_accepted() -> None:
    assert _manifest_problems({"name": {"path": "spec.items[*].secretName"}}) == []
