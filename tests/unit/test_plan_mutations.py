"""Mutations in the sync plan: the copy carries the mutated content, the status goes up mutated,
a synced object plans nothing, and a failing step is an error with no write."""

from __future__ import annotations

import copy

from attrs import evolve

from servlet.core.actions import Create, Error, Patch, PatchRemoteStatus, Side
from servlet.core.dryrun import plan_world, settle
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION
from servlet.core.mutation_steps import CelStep, DeleteStep, Mutation, MutationStep, RegexStep, TemplateStep
from servlet.core.patch import apply_merge_patch, decode_state
from servlet.core.plan import SyncContext
from servlet.core.world import World
from tests.unit.test_plan import LOCAL_NAME, created_local, make_context, make_remote, plan, types


def context_with(*, spec: tuple[MutationStep, ...] = (), status: tuple[MutationStep, ...] = ()) -> SyncContext:
    context = make_context()
    published = evolve(
        context.published, spec=evolve(context.published.spec, mutation=Mutation(spec=spec, status=status))
    )
    return evolve(context, published=published)


SPEC_STEPS = (
    RegexStep("spec.secretName", "^(.*)-tls$", r"\1-certificate"),
    CelStep("spec.issuer", '"issuer-" + other.metadata.namespace'),
    TemplateStep("metadata.labels.copied-from", "{{ .LocalObject.metadata.name }}"),
    DeleteStep("spec.dnsNames"),
)


def test_a_new_copy_carries_the_mutated_content_and_records_it_as_its_state() -> None:
    context = context_with(spec=SPEC_STEPS)
    remote = make_remote()
    local = created_local(context, remote)
    assert local["spec"] == {"secretName": "api-certificate", "issuer": f"issuer-{local['metadata']['namespace']}"}
    assert local["metadata"]["labels"]["copied-from"] == "api"
    assert decode_state(local["metadata"]["annotations"][LAST_KNOWN_STATE_ANNOTATION]) == {
        "spec": local["spec"],
        "metadata": {"labels": {"copied-from": "api"}},
    }
    assert remote == make_remote(), "the workspace object is not changed"


def test_a_copy_synced_with_mutations_plans_nothing_again() -> None:
    context = context_with(spec=SPEC_STEPS)
    remote = make_remote()
    assert plan(context, remote, local=created_local(context, remote)).actions == ()


def test_a_changed_workspace_field_is_patched_through_the_mutation() -> None:
    context = context_with(spec=SPEC_STEPS)
    local = created_local(context, make_remote())
    changed = make_remote(spec={"secretName": "web-tls", "dnsNames": ["web.example.corp"]})
    result = plan(context, changed, local=local)
    assert types(result) == ["patch"]
    patched = result.actions[0]
    assert isinstance(patched, Patch)
    assert apply_merge_patch(local, patched.patch)["spec"]["secretName"] == "web-certificate"
    assert "dnsNames" not in patched.patch["spec"], "the deleted field is still deleted"


def test_the_status_goes_up_as_the_status_steps_leave_it() -> None:
    status_steps = (
        RegexStep("status.secretName", "", "hidden"),
        CelStep("status.observed", "other.spec.secretName"),
    )
    context = context_with(spec=SPEC_STEPS, status=status_steps)
    local = created_local(context, make_remote())
    local["status"] = {"secretName": f"{LOCAL_NAME}-tls", "ready": True}
    result = plan(context, make_remote(), local=local)
    update = next(action for action in result.actions if isinstance(action, PatchRemoteStatus))
    # `other` is the workspace object as the spec steps left it.
    assert update.status == {"secretName": "hidden", "ready": True, "observed": "api-certificate"}
    assert local["status"]["secretName"] == f"{LOCAL_NAME}-tls", "the local status is not changed"
    remote = make_remote(status=update.status)
    assert plan(context, remote, local=local).actions == ()


def test_spec_steps_do_not_see_the_status_or_the_resource_version() -> None:
    context = context_with(spec=(CelStep("spec.seen", "[has(self.status), has(self.metadata.resourceVersion)]"),))
    local = created_local(context, make_remote(status={"phase": "Ready"}))
    assert local["spec"]["seen"] == [False, False]


def test_a_failing_step_is_an_error_naming_its_field_and_the_object_and_nothing_is_written() -> None:
    context = context_with(spec=(DeleteStep("spec.dnsNames"), CelStep("spec.secretName", "self.spec.missing")))
    created = plan(context, make_remote(finalizers=()))
    assert types(created) == ["error"]
    error = created.actions[0]
    assert isinstance(error, Error)
    assert error.field == "spec.mutation.spec[1].cel.expression"
    assert "missing" in error.reason and error.target is not None and error.target.name == LOCAL_NAME

    local = created_local(make_context(), make_remote())
    existing = plan(context, make_remote(finalizers=()), local=local)
    assert types(existing) == ["error"], "not even the finalizer is added"


def test_a_failing_status_step_stops_the_content_patch_too() -> None:
    context = context_with(status=(CelStep("status.x", "self.status.nothing"),))
    local = created_local(context, make_remote())
    local["status"] = {"phase": "Ready"}
    changed = make_remote(spec={"secretName": "other-tls"})
    result = plan(context, changed, local=local)
    assert types(result) == ["error"]
    assert result.actions[0].field == "spec.mutation.status[0].cel.expression"  # type: ignore[union-attr]


def test_servlet_plan_shows_the_mutated_object_and_settles() -> None:
    context = context_with(spec=SPEC_STEPS)
    remote = make_remote(finalizers=())
    plans = plan_world(contexts=[context], remote_objects=[copy.deepcopy(remote)], local_objects=[])
    created = [action for result in plans for action in result.actions if isinstance(action, Create)]
    assert len(created) == 1
    assert created[0].object["spec"]["secretName"] == "api-certificate"
    assert not [action for result in plans for action in result.actions if isinstance(action, Error)]


def test_servlet_plan_removes_a_status_field_a_status_step_deletes() -> None:
    context = context_with(status=(DeleteStep("status.privateKeySecret"),))
    local = created_local(context, make_remote())
    local["status"] = {"ready": True, "privateKeySecret": "local-only"}
    world = World(remote=[make_remote(status={"ready": False, "privateKeySecret": "local-only"})], local=[local])
    plans = settle(world, [context])
    assert [action.type for result in plans for action in result.actions] == ["patchRemoteStatus"]
    (remote,) = [obj for obj in world.listed(Side.REMOTE) if obj["kind"] == "Zertifikat"]
    assert remote["status"] == {"ready": True}


def test_status_steps_do_not_see_the_workspace_status_so_reading_it_cannot_loop() -> None:
    # Were `other` the live workspace object, each status write would feed the next one.
    grow = CelStep("status.x", "has(other.status) && has(other.status.x) ? other.status.x + 'x' : 'x'")
    context = context_with(status=(grow,))
    local = created_local(context, make_remote())
    local["status"] = {"ready": True}
    world = World(remote=[make_remote(status={"x": "old"})], local=[local])
    plans = settle(world, [context])
    assert not [action for result in plans for action in result.actions if isinstance(action, Error)]
    (remote,) = [obj for obj in world.listed(Side.REMOTE) if obj["kind"] == "Zertifikat"]
    assert remote["status"] == {"ready": True, "x": "x"}
