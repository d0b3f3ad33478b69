"""Related Secrets and ConfigMaps (SPEC 8): coordinates on both sides, both directions, cleanup."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from servlet.core.actions import (
    REDACTED,
    Conflict,
    CreateNamespace,
    CreateRelated,
    DeleteRelated,
    ObjectRef,
    PatchRelated,
    RecordRelatedState,
    Side,
    redacted,
)
from servlet.core.hashing import sha1_hex
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION, related_state_annotation
from servlet.core.model import (
    Origin,
    Problem,
    RegexRule,
    RelatedKind,
    RelatedReference,
    RelatedResource,
    RemoteKey,
    ResourceType,
    ValueReference,
)
from servlet.core.patch import apply_merge_patch, decode_state
from servlet.core.related import (
    Coordinates,
    Primaries,
    RelatedKey,
    RelatedSnapshot,
    absences_to_confirm,
    plan_related,
    plan_related_cleanup,
    related_reads,
)
from servlet.core.related_objects import resolve_side, resolve_value

CLUSTER = "p4n8c2l6t0y9h1j3"
LOCAL_NS = CLUSTER
KEY = related_state_annotation("tls-secret")
PASSWORD = "aHVudGVyMg=="  # base64 of a password that must never show up in a reason

TLS_SECRET = RelatedResource(
    identifier="tls-secret",
    origin=Origin.SERVICE,
    kind=RelatedKind.SECRET,
    reference=RelatedReference(name=ValueReference(path="spec.secretName")),
)
CREDENTIALS = RelatedResource(
    identifier="credentials",
    origin=Origin.PLATFORM,
    kind=RelatedKind.CONFIGMAP,
    reference=RelatedReference(name=ValueReference(path="spec.configName")),
)


def remote_primary(spec: dict[str, Any] | None = None, *, namespace: str = "prod") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "api", "annotations": {"kcp.io/cluster": CLUSTER}}
    if namespace:
        meta["namespace"] = namespace
    return {
        "apiVersion": "certificates.example.corp/v1beta1",
        "kind": "Zertifikat",
        "metadata": meta,
        "spec": spec if spec is not None else {"secretName": "api-tls", "configName": "settings"},
    }


def local_primary(
    spec: dict[str, Any] | None = None, *, annotations: dict[str, str] | None = None, namespace: str = LOCAL_NS
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "cert-1", "annotations": dict(annotations or {})}
    if namespace:
        meta["namespace"] = namespace
    # The service rewrote the names on its side: each side is resolved on its own primary.
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": meta,
        "spec": spec if spec is not None else {"secretName": "cert-1-tls", "configName": "cert-1-settings"},
    }


def primaries(remote: dict[str, Any] | None = None, local: dict[str, Any] | None = None) -> Primaries:
    local = local if local is not None else local_primary()
    meta = local["metadata"]
    return Primaries(
        servlet_name="tom",
        remote_key=RemoteKey(CLUSTER, "prod", "api"),
        remote=remote if remote is not None else remote_primary(),
        local=local,
        local_ref=ObjectRef(
            side=Side.LOCAL,
            resource=ResourceType("cert-manager.io", "v1", "Certificate", "certificates", True),
            namespace=meta.get("namespace", ""),
            name=meta["name"],
        ),
    )


def secret(namespace: str, name: str, *, data: dict[str, str] | None = None, **extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"namespace": namespace, "name": name, **extra},
        "type": "kubernetes.io/tls",
        "data": data if data is not None else {"tls.crt": "Y2VydA==", "tls.key": PASSWORD},
    }


def configmap(namespace: str, name: str, *, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": namespace, "name": name, **meta},
        "data": data if data is not None else {"region": "eu"},
    }


def snapshot(
    *objects: tuple[Side, dict[str, Any]], namespaces: frozenset[tuple[Side, str]] = frozenset()
) -> RelatedSnapshot:
    return RelatedSnapshot(
        objects={
            RelatedKey(side, RelatedKind(obj["kind"]), obj["metadata"]["namespace"], obj["metadata"]["name"]): obj
            for side, obj in objects
        },
        namespaces=namespaces,
    )


def types(actions: tuple[Any, ...]) -> list[str]:
    return [action.type for action in actions]


# --- coordinates -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reference", "obj", "expected"),
    [
        (ValueReference(path="spec.secretName"), {"spec": {"secretName": "api-tls"}}, "api-tls"),
        (
            ValueReference(path="spec.secretName", regex=RegexRule(pattern="^(.*)-tls$", replacement=r"\1-cert")),
            {"spec": {"secretName": "api-tls"}},
            "api-cert",
        ),
        (
            ValueReference(path="metadata.uid", regex=RegexRule(pattern="", replacement="kube-system")),
            {"metadata": {"uid": "0b5c"}},
            "kube-system",
        ),
        (ValueReference(path="spec.secretName"), {"spec": {}}, None),
        (ValueReference(path="spec.replicas"), {"spec": {"replicas": 3}}, None),
        (ValueReference(path="spec.names[1]"), {"spec": {"names": ["a", "b"]}}, "b"),
    ],
    ids=["plain", "backreference", "constant", "missing", "not-a-string", "index"],
)
def test_a_reference_resolves_to_the_first_string_match_rewritten_by_its_regex(
    reference: ValueReference, obj: dict[str, Any], expected: str | None
) -> None:
    assert resolve_value(reference, obj, field_path="spec.related[0].reference.name") == expected


def test_a_broken_regex_is_a_problem_naming_the_field() -> None:
    reference = ValueReference(path="spec.secretName", regex=RegexRule(pattern="(", replacement="x"))
    problem = resolve_value(reference, {"spec": {"secretName": "a"}}, field_path="spec.related[2].reference.name")
    assert isinstance(problem, Problem) and problem.field == "spec.related[2].reference.name.regex.pattern"


def test_the_namespace_defaults_to_the_primarys_namespace_on_each_side() -> None:
    remote = resolve_side(TLS_SECRET, index=0, primary=remote_primary(), side=Side.REMOTE)
    local = resolve_side(TLS_SECRET, index=0, primary=local_primary(), side=Side.LOCAL)
    assert remote == Coordinates("prod", "api-tls")
    assert local == Coordinates(LOCAL_NS, "cert-1-tls")


def test_a_cluster_scoped_primary_without_a_namespace_reference_is_an_error() -> None:
    result = resolve_side(TLS_SECRET, index=3, primary=remote_primary(namespace=""), side=Side.REMOTE)
    assert isinstance(result, Problem)
    assert result.field == "spec.related[3].reference.namespace"
    assert "cluster-scoped" in result.message


def test_a_cluster_scoped_primary_with_an_injected_namespace_resolves() -> None:
    related = RelatedResource(
        identifier="tls-secret",
        origin=Origin.SERVICE,
        kind=RelatedKind.SECRET,
        reference=RelatedReference(
            name=ValueReference(path="spec.secretName"),
            namespace=ValueReference(path="spec.secretName", regex=RegexRule(pattern="", replacement="kube-system")),
        ),
    )
    primary = remote_primary(namespace="")
    assert resolve_side(related, index=0, primary=primary, side=Side.REMOTE) == Coordinates("kube-system", "api-tls")


def test_an_invalid_resolved_name_is_a_problem() -> None:
    result = resolve_side(TLS_SECRET, index=0, primary=remote_primary({"secretName": "Not_Valid"}), side=Side.REMOTE)
    assert isinstance(result, Problem) and result.field == "spec.related[0].reference.name"


# --- service origin: up into the workspace -----------------------------------------------------


def test_a_service_origin_secret_flows_up_and_its_state_stays_on_the_local_primary() -> None:
    source = secret(
        LOCAL_NS,
        "cert-1-tls",
        labels={"cert-manager.io/certificate-name": "cert-1", "syncer.kdp.k8c.io/servlet": "tom"},
    )
    actions = plan_related(primaries=primaries(), related=[TLS_SECRET], snapshot=snapshot((Side.LOCAL, source)))

    # The record comes after the create: it claims only a copy that was created.
    assert types(actions) == ["createRelated", "recordRelatedState"]
    create, record = actions
    assert isinstance(record, RecordRelatedState) and record.target.side is Side.LOCAL
    assert record.target.name == "cert-1"
    state = decode_state(record.patch["metadata"]["annotations"][KEY])
    # Keys only: the primary must not carry the Secret's values.
    assert state == {
        "namespace": "prod",
        "name": "api-tls",
        "created": True,
        "content": {
            "type": "kubernetes.io/tls",
            "data": {"tls.crt": "", "tls.key": ""},
            "metadata": {"labels": {"cert-manager.io/certificate-name": "cert-1"}},
        },
    }
    assert isinstance(create, CreateRelated)
    assert (create.target.side, create.target.cluster, create.target.namespace, create.target.name) == (
        Side.REMOTE,
        CLUSTER,
        "prod",
        "api-tls",
    )
    # The workspace copy carries no servlet metadata at all.
    assert create.object == {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "data": source["data"],
        "metadata": {"namespace": "prod", "name": "api-tls", "labels": {"cert-manager.io/certificate-name": "cert-1"}},
    }


def converged_service_world() -> tuple[Primaries, RelatedSnapshot, dict[str, Any]]:
    source = secret(LOCAL_NS, "cert-1-tls")
    first = plan_related(primaries=primaries(), related=[TLS_SECRET], snapshot=snapshot((Side.LOCAL, source)))
    create, record = first
    assert isinstance(record, RecordRelatedState) and isinstance(create, CreateRelated)
    local = apply_merge_patch(local_primary(), record.patch)
    return primaries(local=local), snapshot((Side.LOCAL, source), (Side.REMOTE, create.object)), source


def test_a_synced_service_origin_secret_plans_nothing() -> None:
    pair, world, _ = converged_service_world()
    assert plan_related(primaries=pair, related=[TLS_SECRET], snapshot=world) == ()


def test_a_renewed_certificate_patches_the_workspace_copy_and_removes_dropped_keys() -> None:
    pair, _, source = converged_service_world()
    renewed = copy.deepcopy(source)
    renewed["data"] = {"tls.crt": "bmV3"}
    workspace_copy = secret("prod", "api-tls", data=dict(source["data"]), annotations={"kcp.io/cluster": CLUSTER})
    workspace_copy["data"]["user-added"] = "eA=="

    actions = plan_related(
        primaries=pair, related=[TLS_SECRET], snapshot=snapshot((Side.LOCAL, renewed), (Side.REMOTE, workspace_copy))
    )

    assert types(actions) == ["patchRelated", "recordRelatedState"]
    assert isinstance(actions[0], PatchRelated)
    assert actions[0].patch == {"data": {"tls.crt": "bmV3", "tls.key": None}}


def test_a_vanished_service_origin_deletes_the_copy_it_created_and_forgets_it() -> None:
    pair, world, _source = converged_service_world()
    workspace_copy = world.get(Side.REMOTE, RelatedKind.SECRET, Coordinates("prod", "api-tls"))
    assert workspace_copy is not None

    actions = plan_related(primaries=pair, related=[TLS_SECRET], snapshot=snapshot((Side.REMOTE, dict(workspace_copy))))

    assert types(actions) == ["deleteRelated", "recordRelatedState"]
    delete, forget = actions
    assert isinstance(delete, DeleteRelated) and delete.target.side is Side.REMOTE and delete.target.name == "api-tls"
    assert isinstance(forget, RecordRelatedState) and forget.patch == {"metadata": {"annotations": {KEY: None}}}


def test_a_workspace_secret_the_servlet_did_not_create_is_synced_into_but_never_deleted() -> None:
    theirs = secret("prod", "api-tls", data={"tls.crt": "b2xk"})
    source = secret(LOCAL_NS, "cert-1-tls")
    first = plan_related(
        primaries=primaries(), related=[TLS_SECRET], snapshot=snapshot((Side.LOCAL, source), (Side.REMOTE, theirs))
    )
    assert types(first) == ["patchRelated", "recordRelatedState"]
    record = first[1]
    assert isinstance(record, RecordRelatedState)
    assert decode_state(record.patch["metadata"]["annotations"][KEY])["created"] is False  # type: ignore[index]

    pair = primaries(local=apply_merge_patch(local_primary(), record.patch))
    gone = plan_related(primaries=pair, related=[TLS_SECRET], snapshot=snapshot((Side.REMOTE, theirs)))
    assert types(gone) == ["recordRelatedState"]


def test_a_missing_workspace_namespace_is_created_before_the_copy() -> None:
    related = RelatedResource(
        identifier="tls-secret",
        origin=Origin.SERVICE,
        kind=RelatedKind.SECRET,
        reference=RelatedReference(
            name=ValueReference(path="spec.secretName"),
            namespace=ValueReference(path="spec.secretName", regex=RegexRule(pattern="", replacement="certs")),
        ),
    )
    source = secret("certs", "cert-1-tls")
    actions = plan_related(
        primaries=primaries(),
        related=[related],
        snapshot=snapshot((Side.LOCAL, source), namespaces=frozenset({(Side.LOCAL, "certs")})),
    )
    assert types(actions) == ["createNamespace", "createRelated", "recordRelatedState"]
    namespace = actions[0]
    assert isinstance(namespace, CreateNamespace)
    assert (namespace.target.side, namespace.target.cluster, namespace.target.name) == (Side.REMOTE, CLUSTER, "certs")


def test_an_unresolvable_reference_leaves_the_related_object_pending() -> None:
    pending = primaries(remote=remote_primary({}), local=local_primary({}))
    source = secret(LOCAL_NS, "cert-1-tls")
    assert plan_related(primaries=pending, related=[TLS_SECRET], snapshot=snapshot((Side.LOCAL, source))) == ()


# --- platform origin: down to the service cluster ----------------------------------------------


def test_a_platform_origin_configmap_flows_down_with_link_metadata() -> None:
    origin = configmap("prod", "settings", annotations={"kcp.io/cluster": CLUSTER, "owner": "team-b"})
    actions = plan_related(primaries=primaries(), related=[CREDENTIALS], snapshot=snapshot((Side.REMOTE, origin)))

    assert types(actions) == ["createRelated", "recordRelatedState"]
    create, record = actions
    assert isinstance(create, CreateRelated) and isinstance(record, RecordRelatedState)
    assert (create.target.side, create.target.namespace, create.target.name) == (
        Side.LOCAL,
        LOCAL_NS,
        "cert-1-settings",
    )
    # Where the copy is and what it copies, so it can be found again once it is no longer named.
    assert decode_state(record.patch["metadata"]["annotations"][related_state_annotation("credentials")]) == {
        "namespace": LOCAL_NS,
        "name": "cert-1-settings",
        "origin": {"namespace": "prod", "name": "settings"},
    }
    meta = copy.deepcopy(create.object["metadata"])
    assert meta["labels"] == {
        "syncer.kdp.k8c.io/servlet": "tom",
        "syncer.kdp.k8c.io/remote-object-cluster": CLUSTER,
        "syncer.kdp.k8c.io/remote-object-namespace-hash": sha1_hex("prod"),
        "syncer.kdp.k8c.io/remote-object-name-hash": sha1_hex("settings"),
    }
    state = meta["annotations"].pop(LAST_KNOWN_STATE_ANNOTATION)
    assert meta["annotations"] == {
        "owner": "team-b",
        "syncer.kdp.k8c.io/remote-object-namespace": "prod",
        "syncer.kdp.k8c.io/remote-object-name": "settings",
    }
    assert decode_state(state) == {"data": {"region": "eu"}, "metadata": {"annotations": {"owner": "team-b"}}}
    assert create.object["data"] == {"region": "eu"}

    recorded = primaries(local=apply_merge_patch(local_primary(), record.patch))
    converged = snapshot((Side.REMOTE, origin), (Side.LOCAL, create.object))
    assert plan_related(primaries=recorded, related=[CREDENTIALS], snapshot=converged) == ()

    changed = copy.deepcopy(origin)
    changed["data"] = {"region": "us"}
    update = plan_related(
        primaries=recorded,
        related=[CREDENTIALS],
        snapshot=snapshot((Side.REMOTE, changed), (Side.LOCAL, create.object)),
    )
    assert types(update) == ["patchRelated"]
    assert update[0].to_dict()["patch"]["data"] == {"region": "us"}


@pytest.mark.parametrize("kind", [RelatedKind.SECRET, RelatedKind.CONFIGMAP])
def test_an_unlinked_local_destination_is_a_conflict_that_names_it_but_not_its_data(kind: RelatedKind) -> None:
    related = RelatedResource(
        identifier="credentials",
        origin=Origin.PLATFORM,
        kind=kind,
        reference=RelatedReference(name=ValueReference(path="spec.configName")),
    )
    make = secret if kind is RelatedKind.SECRET else configmap
    origin = make("prod", "settings", data={"password": PASSWORD})
    squatter = make(LOCAL_NS, "cert-1-settings", data={"password": PASSWORD})

    actions = plan_related(
        primaries=primaries(), related=[related], snapshot=snapshot((Side.REMOTE, origin), (Side.LOCAL, squatter))
    )

    assert types(actions) == ["conflict"]
    conflict = actions[0]
    assert isinstance(conflict, Conflict) and not conflict.is_write
    assert f"{LOCAL_NS}/cert-1-settings" in conflict.reason and "never overwritten" in conflict.reason
    assert PASSWORD not in conflict.reason and "hunter2" not in conflict.reason


def test_a_vanished_platform_origin_deletes_only_a_linked_local_copy() -> None:
    origin = configmap("prod", "settings")
    created = plan_related(primaries=primaries(), related=[CREDENTIALS], snapshot=snapshot((Side.REMOTE, origin)))
    assert isinstance(created[0], CreateRelated)
    ours = created[0].object

    actions = plan_related(primaries=primaries(), related=[CREDENTIALS], snapshot=snapshot((Side.LOCAL, ours)))
    assert types(actions) == ["deleteRelated"]
    assert actions[0].to_dict()["side"] == "local"

    theirs = configmap(LOCAL_NS, "cert-1-settings")
    assert plan_related(primaries=primaries(), related=[CREDENTIALS], snapshot=snapshot((Side.LOCAL, theirs))) == ()


# --- cleanup and reads -------------------------------------------------------------------------


def test_cleanup_deletes_only_the_copies_the_servlet_created() -> None:
    pair, world, _ = converged_service_world()
    origin = configmap("prod", "settings")
    created = plan_related(primaries=pair, related=[CREDENTIALS], snapshot=snapshot((Side.REMOTE, origin)))
    assert isinstance(created[0], CreateRelated)
    workspace_copy = world.get(Side.REMOTE, RelatedKind.SECRET, Coordinates("prod", "api-tls"))
    assert workspace_copy is not None
    everything = snapshot((Side.REMOTE, dict(workspace_copy)), (Side.LOCAL, created[0].object), (Side.REMOTE, origin))

    actions = plan_related_cleanup(primaries=pair, related=[TLS_SECRET, CREDENTIALS], snapshot=everything)

    assert [(a.to_dict()["type"], a.to_dict()["side"], a.to_dict()["name"]) for a in actions] == [
        ("deleteRelated", "remote", "api-tls"),
        ("deleteRelated", "local", "cert-1-settings"),
    ]
    # Nothing recorded, nothing linked: nothing deleted.
    bare = snapshot((Side.REMOTE, secret("prod", "api-tls")), (Side.LOCAL, configmap(LOCAL_NS, "cert-1-settings")))
    assert plan_related_cleanup(primaries=primaries(), related=[TLS_SECRET, CREDENTIALS], snapshot=bare) == ()


def test_reads_name_every_object_and_foreign_namespace_the_planner_may_look_at() -> None:
    state = '{"content":{},"created":true,"name":"old-tls","namespace":"prod"}'
    local = local_primary(annotations={KEY: state})
    reads = related_reads(related=[TLS_SECRET, CREDENTIALS], remote=remote_primary(), local=local)
    assert set(reads.objects) == {
        RelatedKey(Side.REMOTE, RelatedKind.SECRET, "prod", "api-tls"),
        RelatedKey(Side.LOCAL, RelatedKind.SECRET, LOCAL_NS, "cert-1-tls"),
        RelatedKey(Side.REMOTE, RelatedKind.SECRET, "prod", "old-tls"),
        RelatedKey(Side.REMOTE, RelatedKind.CONFIGMAP, "prod", "settings"),
        RelatedKey(Side.LOCAL, RelatedKind.CONFIGMAP, LOCAL_NS, "cert-1-settings"),
    }
    assert reads.namespaces == ()


def test_printed_plans_show_which_secret_keys_change_but_not_their_values() -> None:
    pair, _, source = converged_service_world()
    renewed = copy.deepcopy(source)
    renewed["data"] = {"tls.crt": PASSWORD}
    workspace_copy = secret("prod", "api-tls", data=dict(source["data"]))
    patched = plan_related(
        primaries=pair, related=[TLS_SECRET], snapshot=snapshot((Side.LOCAL, renewed), (Side.REMOTE, workspace_copy))
    )
    created = plan_related(primaries=primaries(), related=[TLS_SECRET], snapshot=snapshot((Side.LOCAL, renewed)))

    shown = [redacted(action) for action in (*patched, *created)]

    assert PASSWORD not in json.dumps(shown)
    assert shown[0]["patch"] == {"data": {"tls.crt": REDACTED, "tls.key": None}}
    assert shown[-2]["object"]["data"] == {"tls.crt": REDACTED}
    assert json.dumps(patched[0].to_dict()).count(PASSWORD) == 1  # the executable form keeps it


# --- only what the servlet provably created is deleted (a create that lost a race) -------------


def test_a_create_that_loses_the_race_to_the_tenants_own_secret_never_makes_it_ours() -> None:
    source = secret(LOCAL_NS, "cert-1-tls")
    planned = plan_related(primaries=primaries(), related=[TLS_SECRET], snapshot=snapshot((Side.LOCAL, source)))
    # The tenant's own Secret of that name appears before the create lands: the create fails with
    # AlreadyExists, and the executor stops at the first failure.
    theirs = secret("prod", "api-tls", data={"tls.crt": "dGhlaXJz"})
    local = local_primary()
    for action in planned:
        if isinstance(action, CreateRelated):
            break
        assert isinstance(action, RecordRelatedState)
        local = apply_merge_patch(local, action.patch)

    again = plan_related(
        primaries=primaries(local=local),
        related=[TLS_SECRET],
        snapshot=snapshot((Side.LOCAL, source), (Side.REMOTE, theirs)),
    )
    record = again[-1]
    assert isinstance(record, RecordRelatedState)
    assert decode_state(record.patch["metadata"]["annotations"][KEY])["created"] is False  # type: ignore[index]
    local = apply_merge_patch(local, record.patch)

    # Neither the origin's disappearance nor the primary's deletion deletes the tenant's Secret.
    gone = plan_related(
        primaries=primaries(local=local), related=[TLS_SECRET], snapshot=snapshot((Side.REMOTE, theirs))
    )
    assert "deleteRelated" not in types(gone)
    assert (
        plan_related_cleanup(
            primaries=primaries(local=local), related=[TLS_SECRET], snapshot=snapshot((Side.REMOTE, theirs))
        )
        == ()
    )


def test_a_copy_whose_record_was_lost_after_its_create_is_kept_rather_than_guessed_ours() -> None:
    source = secret(LOCAL_NS, "cert-1-tls")
    create, _ = plan_related(primaries=primaries(), related=[TLS_SECRET], snapshot=snapshot((Side.LOCAL, source)))
    assert isinstance(create, CreateRelated)
    # The create landed, the record did not: the copy cannot be told from a tenant's Secret.
    ours_unrecorded = create.object
    replanned = plan_related(
        primaries=primaries(),
        related=[TLS_SECRET],
        snapshot=snapshot((Side.LOCAL, source), (Side.REMOTE, ours_unrecorded)),
    )
    record = replanned[-1]
    assert isinstance(record, RecordRelatedState)
    local = apply_merge_patch(local_primary(), record.patch)
    assert (
        plan_related_cleanup(
            primaries=primaries(local=local), related=[TLS_SECRET], snapshot=snapshot((Side.REMOTE, ours_unrecorded))
        )
        == ()
    )


# --- losing sight of an origin is not its deletion ---------------------------------------------


def converged_platform_world() -> tuple[Primaries, dict[str, Any], dict[str, Any]]:
    """The platform-origin ConfigMap synced down and recorded: (primaries, origin, local copy)."""
    origin = configmap("prod", "settings")
    create, record = plan_related(
        primaries=primaries(), related=[CREDENTIALS], snapshot=snapshot((Side.REMOTE, origin))
    )
    assert isinstance(create, CreateRelated) and isinstance(record, RecordRelatedState)
    return primaries(local=apply_merge_patch(local_primary(), record.patch)), origin, create.object


ORIGIN_KEY = RelatedKey(Side.REMOTE, RelatedKind.CONFIGMAP, "prod", "settings")


def test_an_origin_that_cannot_be_read_keeps_its_copy_and_is_reported() -> None:
    pair, _, ours = converged_platform_world()
    # The tenant rejected the permission claim for ConfigMaps: the origin is out of sight.
    blind = RelatedSnapshot(objects=snapshot((Side.LOCAL, ours)).objects, unreadable=frozenset({ORIGIN_KEY}))

    actions = plan_related(primaries=pair, related=[CREDENTIALS], snapshot=blind)

    assert types(actions) == ["error"]
    error = actions[0]
    assert error.target is not None and (error.target.side, error.target.name) == (Side.REMOTE, "settings")
    assert "prod/settings" in error.reason and "credentials" in error.reason and "configmaps" in error.reason
    assert absences_to_confirm(primaries=pair, related=[CREDENTIALS], snapshot=blind) == frozenset()


def test_an_unconfirmed_absence_keeps_the_copy_until_a_read_confirms_it() -> None:
    pair, _, ours = converged_platform_world()
    cached = RelatedSnapshot(objects=snapshot((Side.LOCAL, ours)).objects, unconfirmed=frozenset({ORIGIN_KEY}))

    actions = plan_related(primaries=pair, related=[CREDENTIALS], snapshot=cached)

    assert types(actions) == ["error"]
    assert "not confirmed" in actions[0].reason and f"{LOCAL_NS}/cert-1-settings" in actions[0].reason
    assert absences_to_confirm(primaries=pair, related=[CREDENTIALS], snapshot=cached) == {ORIGIN_KEY}
    # Read directly and confirmed gone: now the copy goes, and its record with it.
    confirmed = plan_related(primaries=pair, related=[CREDENTIALS], snapshot=snapshot((Side.LOCAL, ours)))
    assert types(confirmed) == ["deleteRelated", "recordRelatedState"]


def test_a_service_origin_out_of_sight_keeps_the_workspace_copy_and_its_record() -> None:
    pair, world, _ = converged_service_world()
    workspace_copy = world.get(Side.REMOTE, RelatedKind.SECRET, Coordinates("prod", "api-tls"))
    assert workspace_copy is not None
    source_key = RelatedKey(Side.LOCAL, RelatedKind.SECRET, LOCAL_NS, "cert-1-tls")
    objects = snapshot((Side.REMOTE, dict(workspace_copy))).objects

    for lost in (
        RelatedSnapshot(objects=objects, unconfirmed=frozenset({source_key})),
        RelatedSnapshot(objects=objects, unreadable=frozenset({source_key})),
    ):
        actions = plan_related(primaries=pair, related=[TLS_SECRET], snapshot=lost)
        assert types(actions) == ["error"], lost
        assert f"local Secret {LOCAL_NS}/cert-1-tls" in actions[0].reason
    assert absences_to_confirm(
        primaries=pair,
        related=[TLS_SECRET],
        snapshot=RelatedSnapshot(objects=objects, unconfirmed=frozenset({source_key})),
    ) == {source_key}


def test_an_unconfirmed_absence_that_leads_to_no_deletion_needs_no_read() -> None:
    origin = configmap("prod", "settings")
    copy_key = RelatedKey(Side.LOCAL, RelatedKind.CONFIGMAP, LOCAL_NS, "cert-1-settings")
    cached = RelatedSnapshot(objects=snapshot((Side.REMOTE, origin)).objects, unconfirmed=frozenset({copy_key}))

    assert types(plan_related(primaries=primaries(), related=[CREDENTIALS], snapshot=cached)) == [
        "createRelated",
        "recordRelatedState",
    ]
    assert absences_to_confirm(primaries=primaries(), related=[CREDENTIALS], snapshot=cached) == frozenset()


# --- a copy no longer named is deleted, if ours ------------------------------------------------


def renamed(pair: Primaries, *, remote_name: str, local_name: str | None) -> Primaries:
    """The tenant pointed the reference elsewhere; the local primary follows unless `local_name` is None."""
    remote = remote_primary({"secretName": remote_name, "configName": remote_name})
    local = copy.deepcopy(dict(pair.local))
    if local_name is not None:
        local["spec"] = {"secretName": local_name, "configName": local_name}
    return primaries(remote=remote, local=local)


def test_a_renamed_platform_reference_deletes_the_old_copy_and_creates_the_new_one() -> None:
    pair, origin, ours = converged_platform_world()
    new_origin = configmap("prod", "settings-v2")
    world = snapshot((Side.REMOTE, origin), (Side.REMOTE, new_origin), (Side.LOCAL, ours))

    actions = plan_related(
        primaries=renamed(pair, remote_name="settings-v2", local_name="settings-v2"),
        related=[CREDENTIALS],
        snapshot=world,
    )

    assert [(a.type, a.target.name) for a in actions] == [
        ("deleteRelated", "cert-1-settings"),
        ("createRelated", "settings-v2"),
        ("recordRelatedState", "cert-1"),
    ]
    record = actions[-1]
    assert isinstance(record, RecordRelatedState)
    assert decode_state(record.patch["metadata"]["annotations"][related_state_annotation("credentials")]) == {
        "namespace": LOCAL_NS,
        "name": "settings-v2",
        "origin": {"namespace": "prod", "name": "settings-v2"},
    }


def test_a_rename_seen_before_the_local_primary_follows_clears_the_old_copy_first() -> None:
    pair, origin, ours = converged_platform_world()
    world = snapshot((Side.REMOTE, origin), (Side.REMOTE, configmap("prod", "settings-v2")), (Side.LOCAL, ours))

    # The local primary still names the old copy's place, which now would copy another origin.
    actions = plan_related(
        primaries=renamed(pair, remote_name="settings-v2", local_name=None), related=[CREDENTIALS], snapshot=world
    )

    assert types(actions) == ["deleteRelated", "recordRelatedState"]
    assert actions[0].target is not None and actions[0].target.name == "cert-1-settings"


def test_a_removed_platform_reference_deletes_the_copy_no_longer_named() -> None:
    pair, origin, ours = converged_platform_world()
    cleared = primaries(remote=remote_primary({}), local=copy.deepcopy(dict(pair.local)) | {"spec": {}})

    actions = plan_related(
        primaries=cleared, related=[CREDENTIALS], snapshot=snapshot((Side.REMOTE, origin), (Side.LOCAL, ours))
    )

    assert types(actions) == ["deleteRelated", "recordRelatedState"]


def test_a_copy_no_longer_named_that_is_not_ours_is_forgotten_but_never_deleted() -> None:
    pair, origin, _ = converged_platform_world()
    theirs = configmap(LOCAL_NS, "cert-1-settings")  # the link is gone: someone else's object now
    world = snapshot((Side.REMOTE, origin), (Side.REMOTE, configmap("prod", "settings-v2")), (Side.LOCAL, theirs))

    actions = plan_related(
        primaries=renamed(pair, remote_name="settings-v2", local_name="settings-v2"),
        related=[CREDENTIALS],
        snapshot=world,
    )

    assert types(actions) == ["createRelated", "recordRelatedState"]


def test_a_renamed_service_reference_deletes_the_old_workspace_copy() -> None:
    pair, world, source = converged_service_world()
    old_copy = world.get(Side.REMOTE, RelatedKind.SECRET, Coordinates("prod", "api-tls"))
    assert old_copy is not None

    actions = plan_related(
        primaries=renamed(pair, remote_name="api-tls-v2", local_name=None),
        related=[TLS_SECRET],
        snapshot=snapshot((Side.LOCAL, source), (Side.REMOTE, dict(old_copy))),
    )

    assert [(a.type, a.target.name) for a in actions] == [
        ("deleteRelated", "api-tls"),
        ("createRelated", "api-tls-v2"),
        ("recordRelatedState", "cert-1"),
    ]


def test_a_linked_copy_made_before_records_existed_is_recorded() -> None:
    pair, origin, ours = converged_platform_world()
    unrecorded = primaries()  # the local primary of an older version carries no record

    actions = plan_related(
        primaries=unrecorded, related=[CREDENTIALS], snapshot=snapshot((Side.REMOTE, origin), (Side.LOCAL, ours))
    )

    assert types(actions) == ["recordRelatedState"]
    assert apply_merge_patch(dict(unrecorded.local), actions[0].to_dict()["patch"]) == pair.local


def test_cleanup_and_reads_reach_a_platform_copy_recorded_at_older_coordinates() -> None:
    pair, _, ours = converged_platform_world()
    moved = renamed(pair, remote_name="settings-v2", local_name="settings-v2")

    reads = related_reads(related=[CREDENTIALS], remote=moved.remote, local=moved.local)
    assert RelatedKey(Side.LOCAL, RelatedKind.CONFIGMAP, LOCAL_NS, "cert-1-settings") in reads.objects
    actions = plan_related_cleanup(primaries=moved, related=[CREDENTIALS], snapshot=snapshot((Side.LOCAL, ours)))
    assert [(a.type, a.target.name) for a in actions] == [("deleteRelated", "cert-1-settings")]
