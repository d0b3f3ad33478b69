"""Every action type executed against kcpsim, each checked by reading the result back.

Local targets are cert-manager Certificates on the service cluster; remote targets are the
exported `certificates.example.corp` Certificates in team-a (`k7v2m9x4q1w8z3r5`) through the VW,
plus related Secrets and namespaces on both sides. Reads for checking go through plain lightkube
clients straight to the workspace or the service cluster, never through the code under test.
"""

from __future__ import annotations

import base64
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import Client
from lightkube.types import PatchType

from kcpsim import ErrorRule, FaultPlan, KcpSim
from servlet.adapters.connections import Connections, Target
from servlet.adapters.executor import Executor
from servlet.adapters.kube import resource_class, wrap
from servlet.core.actions import (
    Action,
    AddFinalizer,
    Adopt,
    Conflict as ConflictAction,
    Create,
    CreateNamespace,
    CreateRelated,
    DeleteLocal,
    DeleteRelated,
    Error,
    ObjectRef,
    Patch,
    PatchRelated,
    PatchRemoteStatus,
    RecordRelatedState,
    Release,
    RemoveFinalizer,
    Side,
)
from servlet.core.errors import AlreadyExists, Conflict, Forbidden, NotFound, NotLeader
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION
from servlet.core.model import ResourceType
from servlet.core.patch import encode_state
from servlet.core.ports import CRD_TYPE
from servlet.core.redaction import REDACTED
from servlet.core.targets import NAMESPACE_TYPE, SECRET_TYPE

REPO = Path(__file__).resolve().parents[2]
TEAM_A = "k7v2m9x4q1w8z3r5"
FINALIZER = "syncer.kdp.k8c.io/cleanup"
LOCAL = ResourceType(group="cert-manager.io", version="v1", kind="Certificate", plural="certificates", namespaced=True)
REMOTE = ResourceType(
    group="certificates.example.corp", version="v1alpha1", kind="Certificate", plural="certificates", namespaced=True
)


class Observed:
    def __init__(self) -> None:
        self.seen: list[tuple[Target, str, int | None]] = []

    def __call__(self, *, target: Target, verb: str, code: int | None) -> None:
        self.seen.append((target, verb, code))


async def execute(
    sim: KcpSim, *actions: Action, can_write: Callable[[], bool] = lambda: True, observed: Observed | None = None
) -> list[dict[str, Any] | None]:
    """Execute the actions in order with a fresh executor; the request log starts empty."""

    connections = Connections(
        service_config=sim.service_config(), kcp_config=sim.kcp_config(), on_request=observed, trust_env=False
    )
    connections.set_virtual_workspace_url(sim.vw_url())
    executor = Executor(connections, can_write=can_write)
    sim.requests.clear()
    try:
        return [await executor.execute(action) for action in actions]
    finally:
        await connections.aclose()


def local_ref(name: str = "copy", namespace: str = "default", resource: ResourceType = LOCAL) -> ObjectRef:
    return ObjectRef(side=Side.LOCAL, resource=resource, namespace=namespace, name=name)


def remote_ref(
    name: str = "web", namespace: str = "default", resource: ResourceType = REMOTE, cluster: str = TEAM_A
) -> ObjectRef:
    return ObjectRef(side=Side.REMOTE, resource=resource, namespace=namespace, name=name, cluster=cluster)


def local_certificate(name: str = "copy", namespace: str = "default") -> dict[str, Any]:
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"name": name, "namespace": namespace, "labels": {"syncer.kdp.k8c.io/servlet": "tom"}},
        "spec": {"secretName": "web-tls", "issuerRef": {"name": "ca"}, "commonName": "web.example"},
    }


def secret(name: str, namespace: str = "default", **data: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"name": name, "namespace": namespace},
        "data": dict(data),
    }


@pytest.fixture
def service(kcpsim: KcpSim) -> Iterator[Client]:
    client = kcpsim.client(kcpsim.service_config())
    client.create(
        wrap(
            resource_class(CRD_TYPE),
            yaml.safe_load((REPO / "examples" / "certificates" / "crd-certificates.yaml").read_text()),
        )
    )
    yield client
    client.close()


@pytest.fixture
def team_a(kcpsim: KcpSim) -> Iterator[Client]:
    client = kcpsim.client(kcpsim.workspace_config("team-a"))
    client.create(
        wrap(
            resource_class(REMOTE),
            {
                "apiVersion": "certificates.example.corp/v1alpha1",
                "kind": "Certificate",
                "metadata": {"name": "web", "namespace": "default"},
                "spec": {"commonName": "web.team-a.example", "secretName": "web-tls"},
            },
        )
    )
    yield client
    client.close()


def read(client: Client, resource: ResourceType, name: str, namespace: str | None = "default") -> Any:
    return client.get(resource_class(resource), name, namespace=namespace if resource.namespaced else None)


def absent(client: Client, resource: ResourceType, name: str, namespace: str = "default") -> bool:
    try:
        read(client, resource, name, namespace)
    except Exception as exc:  # lightkube's own ApiError: the check reads without our adapters
        return getattr(getattr(exc, "status", None), "code", None) == 404
    return False


# -- local primaries ----------------------------------------------------------------------------


async def test_create_sends_exactly_one_request_and_returns_the_stored_object(kcpsim: KcpSim, service: Client) -> None:
    observed = Observed()
    (created,) = await execute(kcpsim, Create(target=local_ref(), object=local_certificate()), observed=observed)
    sent = [(r.method, r.cluster, r.status) for r in kcpsim.requests.records()]
    stored = read(service, LOCAL, "copy")
    assert created is not None and created["metadata"]["uid"] == stored["metadata"]["uid"]
    assert stored["metadata"]["labels"] == {"syncer.kdp.k8c.io/servlet": "tom"}
    assert stored["spec"]["commonName"] == "web.example"
    assert sent == [("POST", "", 201)]
    assert observed.seen == [(Target.SERVICE, "create", 201)]


async def test_create_of_a_taken_name_is_already_exists(kcpsim: KcpSim, service: Client) -> None:
    await execute(kcpsim, Create(target=local_ref(), object=local_certificate()))
    with pytest.raises(AlreadyExists):
        await execute(kcpsim, Create(target=local_ref(), object=local_certificate()))


@pytest.mark.parametrize("action_type", [Adopt, Patch])
async def test_adopt_and_patch_are_merge_patches_on_the_local_object(
    kcpsim: KcpSim, service: Client, action_type: type[Adopt] | type[Patch]
) -> None:
    await execute(kcpsim, Create(target=local_ref(), object=local_certificate()))
    patch = {
        "metadata": {"labels": {"syncer.kdp.k8c.io/remote-object-cluster": TEAM_A}},
        "spec": {"commonName": None, "dnsNames": ["a.example"]},
    }
    (returned,) = await execute(kcpsim, action_type(target=local_ref(), patch=patch))
    stored = read(service, LOCAL, "copy")
    assert stored["metadata"]["labels"] == {
        "syncer.kdp.k8c.io/servlet": "tom",
        "syncer.kdp.k8c.io/remote-object-cluster": TEAM_A,
    }
    assert "commonName" not in stored["spec"] and stored["spec"]["dnsNames"] == ["a.example"]
    assert returned is not None and returned["metadata"]["resourceVersion"] == stored["metadata"]["resourceVersion"]
    (record,) = kcpsim.requests.matching(verb="patch")
    assert record.method == "PATCH"


async def test_delete_local_removes_the_copy_and_a_missing_copy_is_success(kcpsim: KcpSim, service: Client) -> None:
    await execute(kcpsim, Create(target=local_ref(), object=local_certificate()))
    assert await execute(kcpsim, DeleteLocal(target=local_ref()), DeleteLocal(target=local_ref())) == [None, None]
    assert absent(service, LOCAL, "copy")
    assert [r.status for r in kcpsim.requests.matching(verb="delete")] == [200, 404]


@pytest.mark.parametrize("planned_against", ["the copy", "an object that replaced it"])
async def test_a_delete_and_a_patch_carry_the_uid_of_the_object_they_were_planned_against(
    kcpsim: KcpSim, service: Client, planned_against: str
) -> None:
    (created,) = await execute(kcpsim, Create(target=local_ref(), object=local_certificate()))
    assert created is not None
    uid = created["metadata"]["uid"]
    if planned_against == "an object that replaced it":
        await execute(kcpsim, DeleteLocal(target=local_ref()))
        await execute(kcpsim, Create(target=local_ref(), object=local_certificate()))  # the same name, a new uid
    replaced = planned_against != "the copy"
    patch = {"metadata": {"uid": uid}, "spec": {"commonName": "changed.example"}}
    if replaced:
        with pytest.raises(Conflict, match="UID"):
            await execute(kcpsim, Patch(target=local_ref(), patch=patch))
        with pytest.raises(Conflict, match="UID"):
            await execute(kcpsim, DeleteLocal(target=local_ref(), uid=uid))
        assert read(service, LOCAL, "copy")["spec"]["commonName"] == "web.example", "the new object was written"
    else:
        await execute(kcpsim, Patch(target=local_ref(), patch=patch))
        assert read(service, LOCAL, "copy")["spec"]["commonName"] == "changed.example"
        await execute(kcpsim, DeleteLocal(target=local_ref(), uid=uid))
        assert absent(service, LOCAL, "copy")


async def test_record_related_state_writes_only_its_annotation(kcpsim: KcpSim, service: Client) -> None:
    await execute(kcpsim, Create(target=local_ref(), object=local_certificate()))
    key = "syncer.kdp.k8c.io/related-state.tls"
    await execute(
        kcpsim,
        RecordRelatedState(
            identifier="tls", target=local_ref(), patch={"metadata": {"annotations": {key: '{"created":true}'}}}
        ),
    )
    assert read(service, LOCAL, "copy")["metadata"]["annotations"] == {key: '{"created":true}'}
    await execute(
        kcpsim,
        RecordRelatedState(identifier="tls", target=local_ref(), patch={"metadata": {"annotations": {key: None}}}),
    )
    stored = read(service, LOCAL, "copy")
    assert key not in (stored["metadata"].get("annotations") or {})
    assert stored["spec"]["commonName"] == "web.example"


# -- namespaces ---------------------------------------------------------------------------------


@pytest.mark.parametrize("side", [Side.LOCAL, Side.REMOTE])
async def test_create_namespace_creates_it_and_an_existing_one_is_success(
    kcpsim: KcpSim, service: Client, team_a: Client, side: Side
) -> None:
    cluster = TEAM_A if side is Side.REMOTE else ""
    new = ObjectRef(side=side, resource=NAMESPACE_TYPE, namespace="", name="fresh", cluster=cluster)
    existing = ObjectRef(side=side, resource=NAMESPACE_TYPE, namespace="", name="default", cluster=cluster)
    created, again = await execute(kcpsim, CreateNamespace(target=new), CreateNamespace(target=existing))
    assert created is not None and created["metadata"]["name"] == "fresh"
    assert again is None
    sent = kcpsim.requests.records()
    assert [r.status for r in sent] == [201, 409]
    assert all(r.virtual_workspace is (side is Side.REMOTE) for r in sent)
    reader = team_a if side is Side.REMOTE else service
    assert read(reader, NAMESPACE_TYPE, "fresh", None)["metadata"]["name"] == "fresh"


# -- remote primaries ---------------------------------------------------------------------------


async def test_finalizers_are_added_and_removed_with_the_resource_version_read(kcpsim: KcpSim, team_a: Client) -> None:
    version = read(team_a, REMOTE, "web")["metadata"]["resourceVersion"]
    (added,) = await execute(
        kcpsim, AddFinalizer(target=remote_ref(), finalizers=(FINALIZER,), resource_version=version)
    )
    (record,) = kcpsim.requests.records()
    assert read(team_a, REMOTE, "web")["metadata"]["finalizers"] == [FINALIZER]
    assert added is not None
    assert (record.cluster, record.virtual_workspace, record.verb) == (TEAM_A, True, "patch")

    await execute(
        kcpsim,
        RemoveFinalizer(target=remote_ref(), finalizers=(), resource_version=added["metadata"]["resourceVersion"]),
    )
    assert not read(team_a, REMOTE, "web")["metadata"].get("finalizers")


async def test_release_takes_the_finalizer_off_and_keeps_others(kcpsim: KcpSim, team_a: Client) -> None:
    version = read(team_a, REMOTE, "web")["metadata"]["resourceVersion"]
    (added,) = await execute(
        kcpsim,
        AddFinalizer(target=remote_ref(), finalizers=("other.example/keep", FINALIZER), resource_version=version),
    )
    assert added is not None
    await execute(
        kcpsim,
        Release(
            target=remote_ref(),
            finalizers=("other.example/keep",),
            resource_version=added["metadata"]["resourceVersion"],
        ),
    )
    assert read(team_a, REMOTE, "web")["metadata"]["finalizers"] == ["other.example/keep"]


@pytest.mark.parametrize("action_type", [AddFinalizer, RemoveFinalizer, Release])
async def test_a_finalizer_patch_with_a_stale_resource_version_is_a_conflict_and_changes_nothing(
    kcpsim: KcpSim, team_a: Client, action_type: type[AddFinalizer] | type[RemoveFinalizer] | type[Release]
) -> None:
    stale = read(team_a, REMOTE, "web")["metadata"]["resourceVersion"]
    team_a.patch(
        resource_class(REMOTE),
        "web",
        {"metadata": {"labels": {"edited": "yes"}}},
        namespace="default",
        patch_type=PatchType.MERGE,
    )
    with pytest.raises(Conflict):
        await execute(kcpsim, action_type(target=remote_ref(), finalizers=(FINALIZER,), resource_version=stale))
    assert not read(team_a, REMOTE, "web")["metadata"].get("finalizers")


async def test_remote_status_is_written_through_the_status_subresource(kcpsim: KcpSim, team_a: Client) -> None:
    action = PatchRemoteStatus(target=remote_ref(), status={"phase": "Ready"}, patch={"status": {"phase": "Ready"}})
    (returned,) = await execute(kcpsim, action)
    (record,) = kcpsim.requests.records()
    stored = read(team_a, REMOTE, "web")
    assert stored["status"] == {"phase": "Ready"}
    assert stored["spec"] == {"commonName": "web.team-a.example", "secretName": "web-tls"}
    assert returned is not None and returned["status"] == {"phase": "Ready"}
    assert record.path.endswith("/certificates/web/status") and record.method == "PATCH"


async def test_remote_status_of_a_missing_object_is_not_found(kcpsim: KcpSim, team_a: Client) -> None:
    with pytest.raises(NotFound):
        await execute(kcpsim, PatchRemoteStatus(target=remote_ref(name="gone"), status={}, patch={"status": {}}))


# -- related objects ----------------------------------------------------------------------------


async def test_a_related_secret_is_created_patched_and_deleted_in_the_workspace_through_the_vw(
    kcpsim: KcpSim, team_a: Client
) -> None:
    ref = remote_ref(name="web-tls", resource=SECRET_TYPE)
    created, patched = await execute(
        kcpsim,
        CreateRelated(identifier="tls", target=ref, object=secret("web-tls", **{"tls.crt": "Y2VydA=="})),
        PatchRelated(identifier="tls", target=ref, patch={"data": {"tls.key": "a2V5"}}),
    )
    assert created is not None and patched is not None
    assert {(r.cluster, r.virtual_workspace) for r in kcpsim.requests.records()} == {(TEAM_A, True)}
    stored = read(team_a, SECRET_TYPE, "web-tls")
    assert stored["data"] == {"tls.crt": "Y2VydA==", "tls.key": "a2V5"}

    assert await execute(
        kcpsim, DeleteRelated(identifier="tls", target=ref), DeleteRelated(identifier="tls", target=ref)
    ) == [None, None]
    assert absent(team_a, SECRET_TYPE, "web-tls")


async def test_a_related_secret_is_created_locally_for_origin_platform(kcpsim: KcpSim, service: Client) -> None:
    ref = local_ref(name="web-tls", namespace="kube-system", resource=SECRET_TYPE)
    await execute(kcpsim, CreateRelated(identifier="tls", target=ref, object=secret("web-tls", namespace="", a="Yg==")))
    assert read(service, SECRET_TYPE, "web-tls", "kube-system")["data"] == {"a": "Yg=="}


async def test_a_related_secret_in_a_workspace_that_did_not_accept_the_claim_is_forbidden(kcpsim: KcpSim) -> None:
    cluster = kcpsim.add_workspace("team-x", accept_claims=False)
    ref = remote_ref(name="web-tls", resource=SECRET_TYPE, cluster=cluster)
    with pytest.raises(Forbidden) as raised:
        await execute(kcpsim, CreateRelated(identifier="tls", target=ref, object=secret("web-tls")))
    assert raised.value.code == 403 and cluster in str(raised.value)


# A value as a PEM key looks, so its JSON spelling differs from the plain one.
MARKER = '-----BEGIN KEY-----\nexecutor-marker-52d7b0 "q"\n-----END KEY-----'
ENCODED = base64.b64encode(MARKER.encode()).decode()


def platform_copy(name: str) -> dict[str, Any]:
    """A local copy of a workspace Secret as the planner builds it: the value also in its state."""
    copied = secret(name, namespace="kube-system", **{"ca.crt": ENCODED})
    copied["metadata"]["annotations"] = {LAST_KNOWN_STATE_ANNOTATION: encode_state({"data": copied["data"]})}
    return copied


@pytest.mark.parametrize("verb", ["create", "patch"])
async def test_a_refusal_quoting_the_request_reaches_nobody_with_the_secret_values_in_it(
    kcpsim: KcpSim, service: Client, verb: str
) -> None:
    ref = local_ref(name="team-ca", namespace="kube-system", resource=SECRET_TYPE)
    if verb == "patch":
        await execute(
            kcpsim, CreateRelated(identifier="ca", target=ref, object=secret("team-ca", namespace="kube-system"))
        )
    copy = platform_copy("team-ca")
    action: Action = (
        CreateRelated(identifier="ca", target=ref, object=copy)
        if verb == "create"
        else PatchRelated(identifier="ca", target=ref, patch={key: copy[key] for key in ("data", "metadata")})
    )
    kcpsim.set_faults(
        FaultPlan(errors=(ErrorRule(status=403, verb=verb, resource="secrets", quote_body=True, limit=1),))
    )

    with pytest.raises(Forbidden) as raised:
        await execute(kcpsim, action)

    shown = "".join(traceback.format_exception(raised.value)) + repr(raised.value.args)
    assert "denied" in shown and REDACTED in shown and "ca.crt" in shown, shown
    for spelling in (ENCODED, "executor-marker-52d7b0"):
        assert spelling not in shown, "a Secret value reached the failure"
    # The request carried the real value, and does again once the server accepts it.
    await execute(kcpsim, action)
    assert read(service, SECRET_TYPE, "team-ca", "kube-system")["data"] == {"ca.crt": ENCODED}


# -- leadership and reports ---------------------------------------------------------------------


WRITES: list[Action] = [
    Create(target=local_ref(), object=local_certificate()),
    CreateNamespace(target=ObjectRef(side=Side.LOCAL, resource=NAMESPACE_TYPE, namespace="", name="x")),
    Adopt(target=local_ref(), patch={"metadata": {"labels": {"a": "b"}}}),
    Patch(target=local_ref(), patch={"spec": {"commonName": "x"}}),
    AddFinalizer(target=remote_ref(), finalizers=(FINALIZER,), resource_version="1"),
    RemoveFinalizer(target=remote_ref(), finalizers=(), resource_version="1"),
    Release(target=remote_ref(), finalizers=(), resource_version="1"),
    PatchRemoteStatus(target=remote_ref(), status={}, patch={"status": {}}),
    DeleteLocal(target=local_ref()),
    CreateRelated(identifier="tls", target=remote_ref(name="s", resource=SECRET_TYPE), object=secret("s")),
    PatchRelated(identifier="tls", target=remote_ref(name="s", resource=SECRET_TYPE), patch={"data": {}}),
    DeleteRelated(identifier="tls", target=remote_ref(name="s", resource=SECRET_TYPE)),
    RecordRelatedState(identifier="tls", target=local_ref(), patch={"metadata": {}}),
]


@pytest.mark.parametrize("action", WRITES, ids=[action.type for action in WRITES])
async def test_a_replica_that_is_not_the_leader_refuses_every_write_and_sends_nothing(
    kcpsim: KcpSim, action: Action
) -> None:
    with pytest.raises(NotLeader) as raised:
        await execute(kcpsim, action, can_write=lambda: False)
    assert raised.value.action is action
    assert kcpsim.requests.records() == []


async def test_leadership_is_checked_before_each_write_so_losing_it_stops_writing_at_once(
    kcpsim: KcpSim, service: Client
) -> None:
    leading = iter([True, False])
    first = CreateNamespace(target=ObjectRef(side=Side.LOCAL, resource=NAMESPACE_TYPE, namespace="", name="one"))
    second = CreateNamespace(target=ObjectRef(side=Side.LOCAL, resource=NAMESPACE_TYPE, namespace="", name="two"))
    with pytest.raises(NotLeader):
        await execute(kcpsim, first, second, can_write=lambda: next(leading))
    assert [r.status for r in kcpsim.requests.records()] == [201]
    assert absent(service, NAMESPACE_TYPE, "two", "")


@pytest.mark.parametrize("leader", [True, False])
async def test_conflicts_and_errors_are_reports_and_send_nothing(kcpsim: KcpSim, leader: bool) -> None:
    actions: list[Action] = [
        ConflictAction(target=local_ref(), reason="someone else's object"),
        Error(reason="spec.naming.name: bad"),
        Error(reason="x", target=remote_ref()),
    ]
    assert await execute(kcpsim, *actions, can_write=lambda: leader) == [None, None, None]
    assert kcpsim.requests.records() == []
