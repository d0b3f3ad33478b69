"""Laws of the sync plan, checked by executing plans on an in-memory world until nothing is left.

The world holds both sides as plain objects; a tiny executor applies each action the way the API
server would, and a stand-in for cert-manager reacts to local Certificates between reconciles
(status and the TLS Secret). The laws: plans are deterministic and do not touch their inputs; a
fresh object, a changed object and a deleted object each settle within the documented number of
reconciles (`plan.py`), after which planning writes nothing.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from typing import Any, assert_never

from hypothesis import given, strategies as st

from servlet.core.actions import Action, Side, Write
from servlet.core.dryrun import plan_world
from servlet.core.metadata import FINALIZER
from servlet.core.model import (
    Naming,
    Origin,
    PublishedResource,
    PublishedResourceSpec,
    RegexRule,
    RelatedKind,
    RelatedReference,
    RelatedResource,
    ResourceType,
    ServletIdentity,
    SourceResource,
    ValueReference,
)
from servlet.core.patch import apply_merge_patch
from servlet.core.plan import ObjectPlan, SyncContext
from servlet.core.projection import Projected
from servlet.core.related_objects import Coordinates, resolve_side

CLUSTER = "p4n8c2l6t0y9h1j3"
# Documented in plan.py: create, then status and related objects; the next plan writes nothing.
RECONCILES_TO_SETTLE = 3

Key = tuple[str, str, str, str, str]  # apiVersion, kind, cluster, namespace, name


def make_context(*, local_namespaced: bool, remote_namespaced: bool) -> SyncContext:
    """The seed's example: cert-manager Certificates as Zertifikate, the TLS Secret flowing up."""
    # A cluster-scoped primary has no namespace to lend its related objects: inject one.
    namespace = (
        None
        if local_namespaced and remote_namespaced
        else ValueReference(path="spec.secretName", regex=RegexRule(pattern="", replacement="certs"))
    )
    related = (
        RelatedResource(
            identifier="tls-secret",
            origin=Origin.SERVICE,
            kind=RelatedKind.SECRET,
            reference=RelatedReference(name=ValueReference(path="spec.secretName"), namespace=namespace),
        ),
        RelatedResource(
            identifier="settings",
            origin=Origin.PLATFORM,
            kind=RelatedKind.CONFIGMAP,
            reference=RelatedReference(name=ValueReference(path="spec.configName"), namespace=namespace),
        ),
    )
    spec = PublishedResourceSpec(
        resource=SourceResource(api_group="cert-manager.io", kind="Certificate", version="v1"),
        naming=Naming(),
        related=related,
    )
    projected = Projected(
        schema_name="v0123abcd.zertifikate.certificates.example.corp",
        schema_spec={},
        local=ResourceType("cert-manager.io", "v1", "Certificate", "certificates", local_namespaced),
        remote=ResourceType("certificates.example.corp", "v1beta1", "Zertifikat", "zertifikate", remote_namespaced),
        has_status_subresource=True,
    )
    return SyncContext(
        servlet=ServletIdentity("tom", "certificates.example.corp"),
        published=PublishedResource(name="certs", spec=spec),
        projected=projected,
    )


# --- the world and its executor ----------------------------------------------------------------


def key_of(obj: dict[str, Any], *, cluster: str) -> Key:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], cluster, meta.get("namespace", ""), meta["name"])


class World:
    def __init__(self, remote: Iterable[dict[str, Any]]) -> None:
        self.objects: dict[Side, dict[Key, dict[str, Any]]] = {Side.REMOTE: {}, Side.LOCAL: {}}
        for obj in remote:
            self.objects[Side.REMOTE][key_of(obj, cluster=CLUSTER)] = copy.deepcopy(obj)

    def listed(self, side: Side) -> list[dict[str, Any]]:
        return [copy.deepcopy(obj) for _, obj in sorted(self.objects[side].items())]

    def execute(self, action: Action) -> None:
        if action.write is Write.NOTHING:
            return
        target = action.target
        key: Key = (target.resource.api_version, target.resource.kind, target.cluster, target.namespace, target.name)
        side = self.objects[target.side]
        match action.write:
            case Write.CREATE | Write.CREATE_NAMESPACE:
                assert key not in side, f"{action.type} of an existing object: the planner must not cause AlreadyExists"
                created = copy.deepcopy(action.object)
                if target.side is Side.REMOTE:
                    created["metadata"].setdefault("annotations", {})["kcp.io/cluster"] = target.cluster
                side[key] = created
            case Write.DELETE:
                assert key in side, f"{action.type} of a missing object"
                del side[key]
            case Write.FINALIZERS | Write.STATUS | Write.PATCH:
                assert key in side, f"{action.type} of a missing object"
                side[key] = apply_merge_patch(side[key], action.patch)
                meta = side[key]["metadata"]
                if meta.get("deletionTimestamp") and not meta.get("finalizers"):
                    del side[key]  # the API server completes a deletion once no finalizer is left
            case _:
                assert_never(action.write)

    def cert_manager(self, context: SyncContext) -> None:
        """Status and the TLS Secret for every local Certificate, derived from its spec only."""
        for obj in list(self.objects[Side.LOCAL].values()):
            if obj["kind"] != "Certificate":
                continue
            spec = obj.get("spec", {})
            obj["status"] = {"ready": True, "spec": json.dumps(spec, sort_keys=True)}
            where = resolve_side(context.published.spec.related[0], index=0, primary=obj, side=Side.LOCAL)
            if isinstance(where, Coordinates):
                self.objects[Side.LOCAL][("v1", "Secret", "", where.namespace, where.name)] = {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "type": "kubernetes.io/tls",
                    "metadata": {
                        "namespace": where.namespace,
                        "name": where.name,
                        "labels": {"cert-manager.io/certificate-name": obj["metadata"]["name"]},
                    },
                    "data": {"tls.crt": str(len(json.dumps(spec))), "tls.key": "c2VjcmV0"},
                }


def plan_all(world: World, context: SyncContext) -> tuple[ObjectPlan, ...]:
    return plan_world(
        contexts=[context], remote_objects=world.listed(Side.REMOTE), local_objects=world.listed(Side.LOCAL)
    )


def reconcile_until_quiet(world: World, context: SyncContext) -> int:
    """Reconciles that wrote something before a plan wrote nothing (the quiet one included)."""
    for count in range(1, RECONCILES_TO_SETTLE + 2):
        plans = plan_all(world, context)
        if not any(p.writes for p in plans):
            return count
        for object_plan in plans:
            for action in object_plan.actions:
                world.execute(action)
        world.cert_manager(context)
    raise AssertionError("the plans never settled")


# --- generated inputs --------------------------------------------------------------------------

FIELD_NAMES = st.sampled_from(["dnsNames", "duration", "issuerRef", "usages", "privateKey", "x"])
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.text("ab-", max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3),
    max_leaves=6,
)
SPECS = st.builds(
    lambda fields, secret, config: {**fields, "secretName": secret, "configName": config},
    st.dictionaries(FIELD_NAMES, JSON_VALUES, max_size=4),
    st.sampled_from(["api-tls", "web-tls"]),
    st.sampled_from(["settings", "other"]),
)
LABELS = st.dictionaries(
    st.sampled_from(["team", "kcp.io/owner", "syncer.kdp.k8c.io/servlet", "app"]),
    st.sampled_from(["a", "b"]),
    max_size=3,
)
SCOPES = st.sampled_from([(True, True), (True, False), (False, True), (False, False)])
CONFIG_DATA = st.none() | st.dictionaries(
    st.sampled_from(["region", "tier"]), st.sampled_from(["eu", "us"]), max_size=2
)


def make_remote(spec: dict[str, Any], labels: dict[str, str], *, namespaced: bool) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "api", "labels": labels, "annotations": {"kcp.io/cluster": CLUSTER}}
    if namespaced:
        meta["namespace"] = "prod"
    return {"apiVersion": "certificates.example.corp/v1beta1", "kind": "Zertifikat", "metadata": meta, "spec": spec}


def workspace_configmap(data: dict[str, str] | None, *, scopes: tuple[bool, bool]) -> list[dict[str, Any]]:
    """The platform-origin ConfigMap where the context of `scopes` looks for it (if any)."""
    if data is None:
        return []
    namespace = "prod" if scopes == (True, True) else "certs"
    return [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "data": data,
            "metadata": {"namespace": namespace, "name": "settings", "annotations": {"kcp.io/cluster": CLUSTER}},
        }
    ]


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    return value


def local_certificate(world: World) -> dict[str, Any]:
    (found,) = [obj for obj in world.objects[Side.LOCAL].values() if obj["kind"] == "Certificate"]
    return found


def remote_primary(world: World) -> dict[str, Any] | None:
    found = [obj for obj in world.objects[Side.REMOTE].values() if obj["kind"] == "Zertifikat"]
    return found[0] if found else None


# --- laws --------------------------------------------------------------------------------------


@given(spec=SPECS, labels=LABELS, scopes=SCOPES, config=CONFIG_DATA)
def test_a_fresh_object_settles_and_both_sides_then_agree(
    spec: dict[str, Any], labels: dict[str, str], scopes: tuple[bool, bool], config: dict[str, str] | None
) -> None:
    local_namespaced, remote_namespaced = scopes
    context = make_context(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced)
    world = World(
        [make_remote(spec, labels, namespaced=remote_namespaced), *workspace_configmap(config, scopes=scopes)]
    )

    assert reconcile_until_quiet(world, context) <= RECONCILES_TO_SETTLE

    local = local_certificate(world)
    remote = remote_primary(world)
    assert remote is not None
    assert without_nulls(local["spec"]) == without_nulls(spec)
    assert remote["metadata"]["finalizers"] == [FINALIZER]
    assert remote["status"] == local["status"]
    copies = [obj for key, obj in world.objects[Side.REMOTE].items() if key[1] == "Secret"]
    assert [obj["metadata"]["name"] for obj in copies] == [spec["secretName"]]
    assert not any(k.startswith("syncer.kdp.k8c.io/") for obj in copies for k in obj["metadata"].get("labels", {}))
    local_configmaps = [obj for key, obj in world.objects[Side.LOCAL].items() if key[1] == "ConfigMap"]
    assert len(local_configmaps) == (1 if config is not None and spec["configName"] == "settings" else 0)


@given(first=SPECS, second=SPECS, labels=LABELS, scopes=SCOPES, config=CONFIG_DATA)
def test_a_change_on_the_platform_settles_keeping_fields_the_servlet_never_wrote(
    first: dict[str, Any],
    second: dict[str, Any],
    labels: dict[str, str],
    scopes: tuple[bool, bool],
    config: dict[str, str] | None,
) -> None:
    local_namespaced, remote_namespaced = scopes
    context = make_context(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced)
    world = World(
        [make_remote(first, labels, namespaced=remote_namespaced), *workspace_configmap(config, scopes=scopes)]
    )
    reconcile_until_quiet(world, context)
    local_certificate(world)["spec"]["webhookDefault"] = "kept"  # a field nobody synced
    remote = remote_primary(world)
    assert remote is not None
    remote["spec"] = copy.deepcopy(second)

    assert reconcile_until_quiet(world, context) <= RECONCILES_TO_SETTLE

    assert without_nulls(local_certificate(world)["spec"]) == {**without_nulls(second), "webhookDefault": "kept"}
    # A copy the first spec named and the second does not is gone, on both sides.
    assert [key[4] for key in world.objects[Side.REMOTE] if key[1] == "Secret"] == [second["secretName"]]
    local_configmaps = [key[4] for key in world.objects[Side.LOCAL] if key[1] == "ConfigMap"]
    assert local_configmaps == (["settings"] if config is not None and second["configName"] == "settings" else [])


@given(spec=SPECS, labels=LABELS, scopes=SCOPES, config=CONFIG_DATA)
def test_a_deleted_object_takes_its_copies_with_it_and_then_goes(
    spec: dict[str, Any], labels: dict[str, str], scopes: tuple[bool, bool], config: dict[str, str] | None
) -> None:
    local_namespaced, remote_namespaced = scopes
    context = make_context(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced)
    world = World(
        [make_remote(spec, labels, namespaced=remote_namespaced), *workspace_configmap(config, scopes=scopes)]
    )
    reconcile_until_quiet(world, context)
    remote = remote_primary(world)
    assert remote is not None
    remote["metadata"]["deletionTimestamp"] = "2026-11-20T10:00:00Z"

    assert reconcile_until_quiet(world, context) <= RECONCILES_TO_SETTLE

    assert remote_primary(world) is None
    # Left on the service cluster: namespaces and cert-manager's own Secret, never a servlet copy.
    assert {key[1] for key in world.objects[Side.LOCAL]} <= {"Namespace", "Secret"}
    assert [key[1] for key in world.objects[Side.REMOTE] if key[1] != "Namespace"] == (
        ["ConfigMap"] if config is not None else []
    )


@given(spec=SPECS, labels=LABELS, scopes=SCOPES, config=CONFIG_DATA, steps=st.integers(0, 2))
def test_plans_are_deterministic_and_leave_their_inputs_alone(
    spec: dict[str, Any], labels: dict[str, str], scopes: tuple[bool, bool], config: dict[str, str] | None, steps: int
) -> None:
    local_namespaced, remote_namespaced = scopes
    context = make_context(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced)
    world = World(
        [make_remote(spec, labels, namespaced=remote_namespaced), *workspace_configmap(config, scopes=scopes)]
    )
    for _ in range(steps):  # look at the world part of the way to convergence, too
        for object_plan in plan_all(world, context):
            for action in object_plan.actions:
                world.execute(action)
        world.cert_manager(context)
    remote_objects, local_objects = world.listed(Side.REMOTE), world.listed(Side.LOCAL)
    before = copy.deepcopy((remote_objects, local_objects))

    first = plan_world(contexts=[context], remote_objects=remote_objects, local_objects=local_objects)
    second = plan_world(
        contexts=[context], remote_objects=copy.deepcopy(remote_objects), local_objects=copy.deepcopy(local_objects)
    )

    assert [p.to_dict() for p in first] == [p.to_dict() for p in second]
    assert json.dumps([p.to_dict() for p in first], sort_keys=True) == json.dumps(
        [p.to_dict() for p in second], sort_keys=True
    )
    assert (remote_objects, local_objects) == before


def mangle_link_labels(world: World) -> None:
    labels = local_certificate(world)["metadata"]["labels"]
    labels["syncer.kdp.k8c.io/remote-object-name-hash"] = "mangled"


def delete_local_copy(world: World) -> None:
    (key,) = [key for key in world.objects[Side.LOCAL] if key[1] == "Certificate"]
    del world.objects[Side.LOCAL][key]


def drift_local_spec(world: World) -> None:
    local_certificate(world)["spec"]["secretName"] = "drifted"


def delete_workspace_secret(world: World) -> None:
    for key in [key for key in world.objects[Side.REMOTE] if key[1] == "Secret"]:
        del world.objects[Side.REMOTE][key]


DISTURBANCES = st.sampled_from([mangle_link_labels, delete_local_copy, drift_local_spec, delete_workspace_secret])


@given(spec=SPECS, labels=LABELS, scopes=SCOPES, config=CONFIG_DATA, disturbance=DISTURBANCES)
def test_a_disturbed_world_is_repaired_without_duplicates_or_conflicts(
    spec: dict[str, Any],
    labels: dict[str, str],
    scopes: tuple[bool, bool],
    config: dict[str, str] | None,
    disturbance: Any,
) -> None:
    local_namespaced, remote_namespaced = scopes
    context = make_context(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced)
    world = World(
        [make_remote(spec, labels, namespaced=remote_namespaced), *workspace_configmap(config, scopes=scopes)]
    )
    reconcile_until_quiet(world, context)
    disturbance(world)

    assert reconcile_until_quiet(world, context) <= RECONCILES_TO_SETTLE

    assert without_nulls(local_certificate(world)["spec"]) == without_nulls(spec)
    plans = plan_all(world, context)
    assert not any(action.type in {"conflict", "error"} for p in plans for action in p.actions)
    copies = [key for key in world.objects[Side.REMOTE] if key[1] == "Secret"]
    assert [key[4] for key in copies] == [spec["secretName"]]
