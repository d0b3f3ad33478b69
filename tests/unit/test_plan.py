"""The per-object sync plan (SPEC 7): every rule as a concrete remote/local pair and its actions."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from servlet.core.actions import (
    AddFinalizer,
    Adopt,
    Conflict,
    Create,
    CreateNamespace,
    DeleteLocal,
    DeleteRelated,
    Error,
    Patch,
    PatchRemoteStatus,
    Release,
    RemoveFinalizer,
    Side,
)
from servlet.core.dryrun import plan_world
from servlet.core.gather import PlanInputs
from servlet.core.hashing import sha1_hex
from servlet.core.metadata import FINALIZER, LAST_KNOWN_STATE_ANNOTATION, related_state_annotation
from servlet.core.model import (
    LabelSelector,
    LocalKey,
    Naming,
    Origin,
    PublishedResource,
    PublishedResourceSpec,
    RelatedKind,
    RelatedReference,
    RelatedResource,
    RemoteKey,
    ResourceFilter,
    ResourceType,
    ServletIdentity,
    SourceResource,
    ValueReference,
)
from servlet.core.orphans import delete_orphans, find_orphans
from servlet.core.patch import apply_merge_patch, decode_state
from servlet.core.plan import ObjectPlan, SyncContext, plan_object, plan_writes
from servlet.core.projection import Projected
from servlet.core.related import RelatedKey, RelatedSnapshot

CLUSTER = "p4n8c2l6t0y9h1j3"
SERVLET = ServletIdentity(name="tom", api_group="certificates.example.corp")
TLS_SECRET = RelatedResource(
    identifier="tls-secret",
    origin=Origin.SERVICE,
    kind=RelatedKind.SECRET,
    reference=RelatedReference(name=ValueReference(path="spec.secretName")),
)
# What the default naming makes of prod/api in CLUSTER.
LOCAL_NAME = f"{sha1_hex('prod')[:20]}-{sha1_hex('api')[:20]}"


def make_context(
    *,
    naming: Naming = Naming(),
    resource_filter: ResourceFilter = ResourceFilter(),
    related: tuple[RelatedResource, ...] = (),
    status: bool = True,
    local_namespaced: bool = True,
    remote_namespaced: bool = True,
) -> SyncContext:
    spec = PublishedResourceSpec(
        resource=SourceResource(api_group="cert-manager.io", kind="Certificate", version="v1"),
        filter=resource_filter,
        naming=naming,
        related=related,
    )
    projected = Projected(
        schema_name="v0123abcd.zertifikate.certificates.example.corp",
        schema_spec={},
        local=ResourceType("cert-manager.io", "v1", "Certificate", "certificates", local_namespaced),
        remote=ResourceType("certificates.example.corp", "v1beta1", "Zertifikat", "zertifikate", remote_namespaced),
        has_status_subresource=status,
    )
    return SyncContext(servlet=SERVLET, published=PublishedResource(name="certs", spec=spec), projected=projected)


def make_remote(
    *,
    name: str = "api",
    namespace: str = "prod",
    spec: dict[str, Any] | None = None,
    finalizers: tuple[str, ...] = (FINALIZER,),
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    deleting: bool = False,
    status: Any = None,
) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "name": name,
        "annotations": {"kcp.io/cluster": CLUSTER, **(annotations or {})},
        "resourceVersion": "7",
    }
    if namespace:
        meta["namespace"] = namespace
    if finalizers:
        meta["finalizers"] = list(finalizers)
    if labels:
        meta["labels"] = labels
    if deleting:
        meta["deletionTimestamp"] = "2026-11-20T10:00:00Z"
    obj: dict[str, Any] = {
        "apiVersion": "certificates.example.corp/v1beta1",
        "kind": "Zertifikat",
        "metadata": meta,
        "spec": spec if spec is not None else {"secretName": "api-tls", "dnsNames": ["api.example.corp"]},
    }
    if status is not None:
        obj["status"] = status
    return obj


def plan(
    context: SyncContext,
    remote: dict[str, Any],
    *,
    local: dict[str, Any] | None = None,
    occupant: dict[str, Any] | None = None,
    namespace_exists: bool = False,
    related: RelatedSnapshot = RelatedSnapshot(),
) -> ObjectPlan:
    return plan_object(
        context=context,
        inputs=PlanInputs(
            remote,
            candidates=(local,) if local is not None else (),
            occupant=occupant,
            namespace_exists=namespace_exists,
            related=related,
        ),
    )


def created_local(context: SyncContext, remote: dict[str, Any]) -> dict[str, Any]:
    """The local copy exactly as the plan for a fresh object would create it."""
    creates = [a for a in plan(context, remote).actions if isinstance(a, Create)]
    assert len(creates) == 1
    return copy.deepcopy(creates[0].object)


def types(result: ObjectPlan) -> list[str]:
    return [action.type for action in result.actions]


# --- existence ---------------------------------------------------------------------------------


def test_a_fresh_object_gets_finalizer_namespace_and_a_complete_local_copy() -> None:
    remote = make_remote(
        finalizers=(),
        labels={"team": "b", "kcp.io/owner": "x", "syncer.kdp.k8c.io/servlet": "evil"},
        annotations={"note": "hi", "kubectl.kubernetes.io/last-applied-configuration": "{}"},
    )
    result = plan(make_context(), remote)

    assert types(result) == ["addFinalizer", "createNamespace", "create"]
    assert result.local == LocalKey(namespace=CLUSTER, name=LOCAL_NAME)
    add_finalizer, namespace, create = result.actions
    assert isinstance(add_finalizer, AddFinalizer)
    assert add_finalizer.target.side is Side.REMOTE and add_finalizer.target.cluster == CLUSTER
    assert add_finalizer.patch == {"metadata": {"finalizers": [FINALIZER], "resourceVersion": "7"}}
    assert isinstance(namespace, CreateNamespace) and namespace.target.name == CLUSTER
    assert isinstance(create, Create)
    assert create.object["apiVersion"] == "cert-manager.io/v1" and create.object["kind"] == "Certificate"
    assert create.object["spec"] == remote["spec"]
    meta = copy.deepcopy(create.object["metadata"])
    assert (meta["namespace"], meta["name"]) == (CLUSTER, LOCAL_NAME)
    assert meta["labels"] == {
        "team": "b",
        "syncer.kdp.k8c.io/servlet": "tom",
        "syncer.kdp.k8c.io/remote-object-cluster": CLUSTER,
        "syncer.kdp.k8c.io/remote-object-namespace-hash": sha1_hex("prod"),
        "syncer.kdp.k8c.io/remote-object-name-hash": sha1_hex("api"),
        # The remote resource: copies of two PublishedResources sharing a local type never meet.
        "syncer.kdp.k8c.io/remote-object-resource-hash": sha1_hex("zertifikate.certificates.example.corp"),
    }
    state = meta["annotations"].pop(LAST_KNOWN_STATE_ANNOTATION)
    assert meta["annotations"] == {
        "note": "hi",
        "syncer.kdp.k8c.io/remote-object-namespace": "prod",
        "syncer.kdp.k8c.io/remote-object-name": "api",
        "syncer.kdp.k8c.io/remote-object-resource": "zertifikate.certificates.example.corp",
    }
    assert decode_state(state) == {
        "spec": remote["spec"],
        "metadata": {"labels": {"team": "b"}, "annotations": {"note": "hi"}},
    }


def test_an_existing_local_namespace_is_not_created_again() -> None:
    result = plan(make_context(), make_remote(), namespace_exists=True)
    assert types(result) == ["create"]


@pytest.mark.parametrize(
    ("local_namespaced", "remote_namespaced", "namespace", "expected_namespace", "expected_name"),
    [
        (True, True, "prod", CLUSTER, LOCAL_NAME),
        (True, False, "", CLUSTER, sha1_hex("api")[:20]),
        (False, True, "prod", "", f"{CLUSTER}-{LOCAL_NAME}"),
        (False, False, "", "", f"{CLUSTER}-{sha1_hex('api')[:20]}"),
    ],
)
def test_every_scope_combination_creates_its_copy_where_the_default_rule_says(
    local_namespaced: bool, remote_namespaced: bool, namespace: str, expected_namespace: str, expected_name: str
) -> None:
    context = make_context(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced)
    result = plan(context, make_remote(namespace=namespace))

    create = result.actions[-1]
    assert isinstance(create, Create)
    assert result.local == LocalKey(namespace=expected_namespace, name=expected_name)
    assert create.object["metadata"].get("namespace", "") == expected_namespace
    assert create.object["metadata"]["name"] == expected_name
    assert create.target.namespace == expected_namespace
    # A cluster-scoped copy never needs a namespace.
    assert ("createNamespace" in types(result)) is local_namespaced
    has_namespace_label = "syncer.kdp.k8c.io/remote-object-namespace-hash" in create.object["metadata"]["labels"]
    assert has_namespace_label is remote_namespaced


def test_a_naming_rule_that_yields_an_invalid_name_is_an_error_and_nothing_is_written() -> None:
    context = make_context(naming=Naming(name="$remoteName_copy"))
    result = plan(context, make_remote(finalizers=()))

    assert types(result) == ["error"]
    assert not result.writes
    assert result.local is None
    error = result.actions[0]
    assert isinstance(error, Error) and error.field == "spec.naming.name"
    assert "api_copy" in error.reason
    assert result.problems[0].field == "spec.naming.name"


def test_a_remote_object_without_its_cluster_annotation_is_an_error() -> None:
    remote = make_remote()
    del remote["metadata"]["annotations"]["kcp.io/cluster"]
    result = plan(make_context(), remote)
    assert types(result) == ["error"]
    assert "kcp.io/cluster" in result.actions[0].to_dict()["reason"]


# --- find --------------------------------------------------------------------------------------


def test_more_than_one_linked_local_object_is_an_error_without_writes() -> None:
    context = make_context()
    remote = make_remote()
    first = created_local(context, remote)
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "other"
    result = plan_object(context=context, inputs=PlanInputs(remote, candidates=(first, second)))

    assert types(result) == ["error"]
    assert not plan_writes(result)
    assert f"{CLUSTER}/other" in result.actions[0].to_dict()["reason"]


# --- content -----------------------------------------------------------------------------------


def test_a_converged_object_plans_nothing() -> None:
    context = make_context()
    remote = make_remote()
    result = plan(context, remote, local=created_local(context, remote))
    assert result.actions == ()


def test_a_spec_change_on_the_platform_is_exactly_one_patch() -> None:
    context = make_context()
    before = make_remote(spec={"secretName": "api-tls", "dnsNames": ["a.example.corp"], "duration": "2160h"})
    local = created_local(context, before)
    local["spec"]["renewBefore"] = "360h"  # defaulted by a webhook: not ours to remove
    after = make_remote(spec={"secretName": "api-tls", "dnsNames": ["a.example.corp", "b.example.corp"]})

    result = plan(context, after, local=local)

    assert types(result) == ["patch"]
    change = result.actions[0]
    assert isinstance(change, Patch)
    assert change.patch["spec"] == {"dnsNames": ["a.example.corp", "b.example.corp"], "duration": None}
    assert decode_state(change.patch["metadata"]["annotations"][LAST_KNOWN_STATE_ANNOTATION]) == {"spec": after["spec"]}
    assert plan(context, after, local=apply_merge_patch(local, change.patch)).actions == ()


@pytest.mark.parametrize("finalizers", [(), (FINALIZER,)], ids=["fresh", "finalized"])
def test_an_object_too_large_for_its_state_is_an_error_and_gets_no_finalizer(finalizers: tuple[str, ...]) -> None:
    context = make_context()
    # Random-looking text defeats compression, so the state cannot fit the annotation limit.
    blob = "".join(sha1_hex(str(i)) for i in range(20000))
    result = plan(
        context, make_remote(spec={"secretName": "x", "blob": blob}, finalizers=finalizers), namespace_exists=True
    )
    assert types(result) == ["error"]
    assert "too large" in result.actions[0].to_dict()["reason"]


# --- adoption ----------------------------------------------------------------------------------


def test_an_occupant_linked_by_its_annotations_is_adopted_and_its_labels_repaired() -> None:
    context = make_context()
    remote = make_remote(spec={"secretName": "api-tls", "dnsNames": ["new.example.corp"]})
    occupant = created_local(context, make_remote())
    occupant["metadata"]["labels"]["syncer.kdp.k8c.io/remote-object-name-hash"] = "mangled"

    result = plan(context, remote, occupant=occupant)

    assert types(result) == ["adopt", "patch"]
    adopt = result.actions[0]
    assert isinstance(adopt, Adopt)
    assert adopt.patch == {"metadata": {"labels": {"syncer.kdp.k8c.io/remote-object-name-hash": sha1_hex("api")}}}
    assert result.actions[1].to_dict()["patch"]["spec"] == {"dnsNames": ["new.example.corp"]}


@pytest.mark.parametrize(
    "labels",
    [
        {},
        {"syncer.kdp.k8c.io/servlet": "mary", "syncer.kdp.k8c.io/remote-object-cluster": CLUSTER},
        {"syncer.kdp.k8c.io/servlet": "tom", "syncer.kdp.k8c.io/remote-object-cluster": "elsewhere"},
    ],
    ids=["unlabelled", "other-servlet", "other-workspace"],
)
def test_an_occupant_that_is_not_provably_ours_is_a_conflict_and_nothing_is_written(labels: dict[str, str]) -> None:
    occupant = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {
            "namespace": CLUSTER,
            "name": LOCAL_NAME,
            "labels": labels,
            "annotations": {
                "syncer.kdp.k8c.io/remote-object-name": "api",
                "syncer.kdp.k8c.io/remote-object-namespace": "prod",
            },
        },
        "spec": {"secretName": "theirs"},
    }
    result = plan(make_context(), make_remote(finalizers=()), occupant=occupant)

    assert types(result) == ["conflict"]
    assert not result.writes
    conflict = result.actions[0]
    assert isinstance(conflict, Conflict)
    assert f"{CLUSTER}/{LOCAL_NAME}" in conflict.reason and "never overwritten" in conflict.reason


# --- filter ------------------------------------------------------------------------------------

TEAM_B = ResourceFilter(labels=LabelSelector(match_labels={"team": "b"}))


@pytest.mark.parametrize(
    ("resource_filter", "labels", "namespace"),
    [(TEAM_B, {"team": "a"}, "prod"), (TEAM_B, None, "prod"), (ResourceFilter(namespace="dev"), {"team": "b"}, "prod")],
)
def test_an_object_outside_the_filter_is_not_touched(
    resource_filter: ResourceFilter, labels: dict[str, str] | None, namespace: str
) -> None:
    result = plan(
        make_context(resource_filter=resource_filter), make_remote(finalizers=(), labels=labels, namespace=namespace)
    )
    assert result.actions == ()


def test_an_object_that_left_the_filter_is_released_and_its_copy_kept() -> None:
    context = make_context(resource_filter=TEAM_B)
    synced = make_remote(labels={"team": "b"}, finalizers=("other.io/keep", FINALIZER))
    local = created_local(context, synced)
    left = make_remote(labels={"team": "a"}, finalizers=("other.io/keep", FINALIZER))

    result = plan(context, left, local=local)

    assert types(result) == ["release"]
    release = result.actions[0]
    assert isinstance(release, Release)
    assert release.patch == {"metadata": {"finalizers": ["other.io/keep"], "resourceVersion": "7"}}


# --- deletion ----------------------------------------------------------------------------------


def test_deletion_takes_three_reconciles_related_copies_and_local_first_then_the_finalizer() -> None:
    context = make_context(related=(TLS_SECRET,))
    remote = make_remote(deleting=True)
    local = created_local(context, make_remote())
    state = '{"content":{"data":{"tls.crt":""}},"created":true,"name":"api-tls","namespace":"prod"}'
    local["metadata"]["annotations"][related_state_annotation("tls-secret")] = state
    copy_key = RelatedKey(Side.REMOTE, RelatedKind.SECRET, "prod", "api-tls")
    workspace_copy = {"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "prod", "name": "api-tls"}}

    first = plan(context, remote, local=local, related=RelatedSnapshot(objects={copy_key: workspace_copy}))
    assert types(first) == ["deleteRelated", "deleteLocal"]
    delete_copy, delete_local = first.actions
    assert isinstance(delete_copy, DeleteRelated) and delete_copy.target.side is Side.REMOTE
    assert (delete_copy.target.cluster, delete_copy.target.name) == (CLUSTER, "api-tls")
    assert isinstance(delete_local, DeleteLocal) and delete_local.target.name == LOCAL_NAME

    # The local copy waits for its own finalizers: nothing to do but wait.
    terminating = copy.deepcopy(local)
    terminating["metadata"]["deletionTimestamp"] = "2026-11-20T10:00:05Z"
    assert plan(context, remote, local=terminating).actions == ()

    third = plan(context, remote)
    assert types(third) == ["removeFinalizer"]
    assert isinstance(third.actions[0], RemoveFinalizer)
    assert third.actions[0].patch == {"metadata": {"finalizers": [], "resourceVersion": "7"}}


def test_a_deleted_object_without_our_finalizer_is_left_alone() -> None:
    context = make_context()
    local = created_local(context, make_remote())
    assert plan(context, make_remote(deleting=True, finalizers=("other.io/keep",)), local=local).actions == ()


# --- status ------------------------------------------------------------------------------------

READY = {"conditions": [{"type": "Ready", "status": "True"}], "notAfter": "2027-01-01T00:00:00Z"}


@pytest.mark.parametrize(
    ("subresource", "local_status", "remote_status", "expected_patch"),
    [
        (True, READY, None, {"status": READY}),
        (
            True,
            READY,
            {"conditions": [], "stale": "x"},
            {"status": {"conditions": READY["conditions"], "notAfter": READY["notAfter"], "stale": None}},
        ),
        (True, READY, READY, None),
        (True, None, {"conditions": []}, None),
        (False, READY, None, None),
    ],
    ids=["new-status", "changed-status", "same-status", "no-local-status", "no-subresource"],
)
def test_status_flows_up_only_through_a_subresource_and_only_when_different(
    subresource: bool, local_status: Any, remote_status: Any, expected_patch: dict[str, Any] | None
) -> None:
    context = make_context(status=subresource)
    remote = make_remote(status=remote_status)
    local = created_local(context, remote)
    if local_status is not None:
        local["status"] = local_status

    result = plan(context, remote, local=local)

    if expected_patch is None:
        assert result.actions == ()
    else:
        assert types(result) == ["patchRemoteStatus"]
        update = result.actions[0]
        assert isinstance(update, PatchRemoteStatus)
        assert update.status == local_status and update.patch == expected_patch
        assert update.target.side is Side.REMOTE and update.target.name == "api"


# --- related after the primary -----------------------------------------------------------------


def test_related_objects_wait_for_the_local_primary_to_exist() -> None:
    context = make_context(related=(TLS_SECRET,))
    source = RelatedKey(Side.LOCAL, RelatedKind.SECRET, CLUSTER, "api-tls")
    snapshot = RelatedSnapshot(objects={source: {"apiVersion": "v1", "kind": "Secret", "data": {"a": "b"}}})
    assert types(plan(context, make_remote(), related=snapshot)) == ["createNamespace", "create"]


def test_a_related_object_without_a_namespace_is_an_error_that_does_not_stop_the_primary() -> None:
    context = make_context(related=(TLS_SECRET,), local_namespaced=False, remote_namespaced=False)
    remote = make_remote(namespace="", spec={"secretName": "api-tls", "x": 2})
    local = created_local(context, make_remote(namespace="", spec={"secretName": "api-tls", "x": 1}))

    result = plan(context, remote, local=local)

    assert types(result) == ["patch", "error"]
    error = result.actions[1]
    assert isinstance(error, Error)
    assert error.field == "spec.related[0].reference.namespace" and error.identifier == "tls-secret"
    assert [p.field for p in result.problems] == ["spec.related[0].reference.namespace"]


# --- a whole world -----------------------------------------------------------------------------


def test_planning_a_world_finds_candidates_occupants_and_namespaces_from_the_objects_given() -> None:
    context = make_context()
    synced = make_remote(name="api")
    fresh = make_remote(name="web", finalizers=())
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"namespace": "prod", "name": "x", "annotations": {"kcp.io/cluster": CLUSTER}},
    }
    plans = plan_world(
        contexts=[context], remote_objects=[synced, secret, fresh], local_objects=[created_local(context, synced)]
    )

    assert [p.remote.name for p in plans] == ["api", "web"]
    assert plans[0].actions == ()
    # The namespace exists because the synced copy lives in it.
    assert types(plans[1]) == ["addFinalizer", "create"]


def test_plans_have_a_stable_json_form() -> None:
    result = plan(make_context(), make_remote(finalizers=()))
    data = result.to_dict()
    assert json.loads(json.dumps(data)) == data
    assert data["remote"] == {
        "apiVersion": "certificates.example.corp/v1beta1",
        "kind": "Zertifikat",
        "cluster": CLUSTER,
        "namespace": "prod",
        "name": "api",
    }
    assert data["local"] == {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "namespace": CLUSTER,
        "name": LOCAL_NAME,
    }
    assert [a["type"] for a in data["actions"]] == ["addFinalizer", "createNamespace", "create"]
    assert data["actions"][2]["side"] == "local" and data["actions"][2]["resource"] == "certificates"
    assert result.describe() == f"{CLUSTER}:prod/api"


# --- orphans -----------------------------------------------------------------------------------


def test_local_copies_without_a_remote_object_are_orphans() -> None:
    context = make_context()
    live = created_local(context, make_remote(name="api"))
    gone = created_local(context, make_remote(name="gone"))
    foreign = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"namespace": "x", "name": "y", "labels": {"syncer.kdp.k8c.io/servlet": "mary"}},
    }
    remote_keys = [RemoteKey(CLUSTER, "prod", "api")]

    orphans = find_orphans(
        servlet_name="tom",
        remote_resource=context.projected.remote,
        local_objects=[live, gone, foreign],
        remote_keys=remote_keys,
    )

    assert [(o.local.name, o.remote) for o in orphans] == [
        (gone["metadata"]["name"], RemoteKey(CLUSTER, "prod", "gone"))
    ]
    deletions = delete_orphans(orphans=orphans, resource=context.projected.local)
    assert [d.to_dict()["name"] for d in deletions] == [gone["metadata"]["name"]]
    assert all(d.type == "deleteLocal" for d in deletions)


def test_copies_of_a_workspace_whose_shard_left_the_slice_are_not_judged() -> None:
    context = make_context()
    gone = created_local(context, make_remote(name="gone"))

    def orphans(unreadable: frozenset[str]) -> list[str]:
        found = find_orphans(
            servlet_name="tom",
            remote_resource=context.projected.remote,
            local_objects=[gone],
            remote_keys=[],
            unreadable_workspaces=unreadable,
        )
        return [orphan.remote.cluster for orphan in found]

    assert orphans(frozenset()) == [CLUSTER]
    assert orphans(frozenset({CLUSTER})) == []
    assert orphans(frozenset({"another-workspace"})) == [CLUSTER]
