"""Laws of related-object deletion (SPEC 8): only owned copies, never on what could not be seen.

Each example is a primary pair naming related objects somewhere (or nowhere), records of earlier
copies on the local primary, and a random world of Secrets and ConfigMaps on both sides: absent,
present, present with this servlet's link to some origin, or out of sight (unreadable, or only
missing from a cache).
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from servlet.core.actions import Action, DeleteRelated, ObjectRef, Side
from servlet.core.metadata import link_annotations, link_labels, links_to, related_state_annotation
from servlet.core.model import (
    Origin,
    RelatedKind,
    RelatedReference,
    RelatedResource,
    RemoteKey,
    ResourceType,
    ValueReference,
)
from servlet.core.patch import encode_state
from servlet.core.related import (
    Primaries,
    RelatedKey,
    RelatedSnapshot,
    plan_related,
    plan_related_cleanup,
)
from servlet.core.related_objects import read_service_state

CLUSTER = "p4n8c2l6t0y9h1j3"
REMOTE_NS, LOCAL_NS = "prod", "local-ns"
NAMES = ("a", "b")
SERVLET = "tom"
RELATED = (
    RelatedResource(
        identifier="tls",
        origin=Origin.SERVICE,
        kind=RelatedKind.SECRET,
        reference=RelatedReference(name=ValueReference(path="spec.secretName")),
    ),
    RelatedResource(
        identifier="settings",
        origin=Origin.PLATFORM,
        kind=RelatedKind.CONFIGMAP,
        reference=RelatedReference(name=ValueReference(path="spec.configName")),
    ),
)
KEYS = [
    RelatedKey(side, kind, REMOTE_NS if side is Side.REMOTE else LOCAL_NS, name)
    for side in Side
    for kind in RelatedKind
    for name in NAMES
]

MAYBE_NAME = st.none() | st.sampled_from(NAMES)
# What exists at one key: nothing, a plain object, one linked to origin a or b, or one being deleted.
STATES = st.sampled_from(["absent", "plain", "linked-a", "linked-b", "linked-a", "linked-b", "deleting"])
FOLLOWS = st.sampled_from([True, True, True, False])
SIGHT = st.sampled_from(["read"] * 10 + ["unreadable", "unconfirmed"])  # mostly in sight


def spec(secret: str | None, config: str | None) -> dict[str, str]:
    return {k: v for k, v in (("secretName", secret), ("configName", config)) if v is not None}


def service_record(name: str | None, created: bool) -> dict[str, str]:
    if name is None:
        return {}
    state = {"namespace": REMOTE_NS, "name": name, "created": created, "content": {}}
    return {related_state_annotation("tls"): encode_state(state)}


def platform_record(copy: str | None, origin: str) -> dict[str, str]:
    if copy is None:
        return {}
    state = {"namespace": LOCAL_NS, "name": copy, "origin": {"namespace": REMOTE_NS, "name": origin}}
    return {related_state_annotation("settings"): encode_state(state)}


def related_object(key: RelatedKey, state: str) -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": key.namespace, "name": key.name}
    if state.startswith("linked-"):
        origin = RemoteKey(CLUSTER, REMOTE_NS, state.removeprefix("linked-"))
        meta["labels"] = link_labels(servlet_name=SERVLET, remote=origin)
        meta["annotations"] = link_annotations(remote=origin)
    if state == "deleting":
        meta["deletionTimestamp"] = "2026-11-20T10:00:00Z"
    return {"apiVersion": "v1", "kind": key.resource.kind, "metadata": meta, "data": {"k": "dg=="}}


@st.composite
def examples(draw: st.DrawFn) -> tuple[Primaries, RelatedSnapshot]:
    remote = {
        "apiVersion": "example.corp/v1",
        "kind": "Thing",
        "spec": spec(draw(MAYBE_NAME), draw(MAYBE_NAME)),
        "metadata": {"namespace": REMOTE_NS, "name": "api", "annotations": {"kcp.io/cluster": CLUSTER}},
    }
    annotations = {
        **service_record(draw(MAYBE_NAME), draw(st.booleans())),
        **platform_record(draw(MAYBE_NAME), draw(st.sampled_from(NAMES))),
    }
    # Mostly the local primary names what the remote one does; sometimes it lags or was rewritten.
    local_spec = remote["spec"] if draw(FOLLOWS) else spec(draw(MAYBE_NAME), draw(MAYBE_NAME))
    local = {
        "apiVersion": "example.corp/v1",
        "kind": "Thing",
        "spec": local_spec,
        "metadata": {"namespace": LOCAL_NS, "name": "api", "annotations": annotations},
    }
    objects: dict[RelatedKey, dict[str, Any]] = {}
    unreadable: set[RelatedKey] = set()
    unconfirmed: set[RelatedKey] = set()
    for key in KEYS:
        state, sight = draw(STATES), draw(SIGHT)
        if sight == "unreadable":
            unreadable.add(key)
        elif state != "absent":
            objects[key] = related_object(key, state)
        elif sight == "unconfirmed":
            unconfirmed.add(key)
    pair = Primaries(
        servlet_name=SERVLET,
        remote_key=RemoteKey(CLUSTER, REMOTE_NS, "api"),
        remote=remote,
        local=local,
        local_ref=ObjectRef(
            side=Side.LOCAL,
            resource=ResourceType("example.corp", "v1", "Thing", "things", True),
            namespace=LOCAL_NS,
            name="api",
        ),
    )
    return pair, RelatedSnapshot(objects=objects, unreadable=frozenset(unreadable), unconfirmed=frozenset(unconfirmed))


def deleted(actions: tuple[Action, ...]) -> set[RelatedKey]:
    return {
        RelatedKey(a.target.side, RelatedKind(a.target.resource.kind), a.target.namespace, a.target.name)
        for a in actions
        if isinstance(a, DeleteRelated)
    }


@settings(max_examples=300)
@given(example=examples())
def test_a_delete_only_ever_targets_a_copy_the_servlet_provably_owns(
    example: tuple[Primaries, RelatedSnapshot],
) -> None:
    pair, world = example
    record = read_service_state(pair.local, "tls")
    for actions in (
        plan_related(primaries=pair, related=RELATED, snapshot=world),
        plan_related_cleanup(primaries=pair, related=RELATED, snapshot=world),
    ):
        for key in deleted(actions):
            found = world.objects.get(key)
            assert found is not None, f"deleted {key}, which was not seen"
            assert not found["metadata"].get("deletionTimestamp"), f"deleted {key} again"
            if key.side is Side.REMOTE:  # a workspace copy: only the one recorded as created
                assert (
                    record is not None
                    and record.created
                    and (record.namespace, record.name) == (key.namespace, key.name)
                ), f"deleted {key}, which the record does not prove created"
            else:  # a local copy: only one carrying this servlet's link
                assert any(
                    links_to(found, servlet_name=SERVLET, remote=RemoteKey(CLUSTER, REMOTE_NS, origin))
                    for origin in NAMES
                ), f"deleted unlinked {key}"


def named_origins(pair: Primaries) -> set[RelatedKey]:
    """The origins the primaries name now: the local Secret (service) and the workspace ConfigMap (platform)."""
    secret, config = pair.local["spec"].get("secretName"), pair.remote["spec"].get("configName")
    return ({RelatedKey(Side.LOCAL, RelatedKind.SECRET, LOCAL_NS, secret)} if secret else set()) | (
        {RelatedKey(Side.REMOTE, RelatedKind.CONFIGMAP, REMOTE_NS, config)} if config else set()
    )


@settings(max_examples=300)  # pure and fast; the interesting examples are rare
@given(example=examples(), others=st.sets(st.sampled_from(KEYS), max_size=2), unreadable=st.booleans())
def test_losing_sight_of_objects_never_deletes_more(
    example: tuple[Primaries, RelatedSnapshot], others: set[RelatedKey], unreadable: bool
) -> None:
    pair, world = example
    # Above all the origins: not seeing one must never pass for its deletion.
    lost = named_origins(pair) | others
    seen = plan_related(primaries=pair, related=RELATED, snapshot=world)
    objects = {key: obj for key, obj in world.objects.items() if key not in lost}
    unread, unsure = (lost, frozenset()) if unreadable else (frozenset(), lost)
    blind = RelatedSnapshot(
        objects=objects, unreadable=world.unreadable | unread, unconfirmed=world.unconfirmed | unsure
    )

    assert deleted(plan_related(primaries=pair, related=RELATED, snapshot=blind)) <= deleted(seen)
