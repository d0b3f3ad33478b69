"""Laws of mutations: a run is deterministic and leaves its inputs alone, a synced object with any
mutation is a fixed point (planning again writes nothing), and a failing step never yields a write.

The plans run on the world of `test_plan_laws.py` (its executor and cert-manager stand-in), with
steps drawn from a pool of every kind: steps that read `value`, `self` and `other`, steps that
change the type of a value, delete list items, and steps that fail on some objects.
"""

from __future__ import annotations

import copy
from typing import Any

from attrs import evolve
from hypothesis import given, settings, strategies as st

from servlet.core.actions import Error
from servlet.core.model import LocalKey, Problem
from servlet.core.mutation import apply_mutation
from servlet.core.mutation_steps import CelStep, DeleteStep, Mutation, MutationStep, RegexStep, TemplateStep
from servlet.core.mutation_sync import local_identity
from servlet.core.parsing import parse_published_resource
from servlet.core.plan import SyncContext
from tests.property.test_plan_laws import (
    LABELS,
    RECONCILES_TO_SETTLE,
    SCOPES,
    SPECS,
    World,
    make_context,
    make_remote,
    plan_all,
    reconcile_until_quiet,
)

SPEC_PATHS = st.sampled_from(
    ["spec.x", "spec.secretName", "spec.dnsNames.0", "spec.issuerRef.name", "metadata.labels.app"]
)
STATUS_PATHS = st.sampled_from(["status.x", "status.ready", "status.extra.deep"])
PATTERNS = st.sampled_from(["", "a", "^(.*)$", "-", "[0-9]+"])
REPLACEMENTS = st.sampled_from(["", "b", r"\1-m", "x"])
TEMPLATES = st.sampled_from(
    [
        "{{ .Value }}",
        "{{ .Value.String | upper }}-{{ .Value.Int }}",
        "{{ .LocalObject.metadata.name }}",
        "{{ .RemoteObject.metadata.name }}",
        "{{ .LocalObject.spec }}",  # fails: a template prints no map
    ]
)
EXPRESSIONS = st.sampled_from(
    [
        "value",
        "value == null ? 1 : [value]",
        "self.metadata.name + '-' + string(has(self.spec))",
        "other.metadata.name",
        "other == null ? 'none' : other.kind",
        "{'k': self.metadata.name, 'n': [1, 2.5, true, null]}",
        "self.spec.nothing",  # fails: no such key
        "size(string(value))",
        "has(self.status) && has(self.status.spec) ? self.status.spec : 'none'",  # spec steps see no status
    ]
)


# Status steps reading what the servlet writes on the workspace side: a loop, were it visible.
STATUS_EXPRESSIONS = st.sampled_from(
    [
        "has(other.status) && has(other.status.x) ? string(other.status.x) + 'x' : 'x'",
        "has(other.metadata.resourceVersion) ? other.metadata.resourceVersion : 'none'",
    ]
)


def steps_of(
    paths: st.SearchStrategy[str], expressions: st.SearchStrategy[str] = EXPRESSIONS
) -> st.SearchStrategy[tuple[MutationStep, ...]]:
    step = st.one_of(
        st.builds(DeleteStep, paths),
        st.builds(RegexStep, paths, PATTERNS, REPLACEMENTS),
        st.builds(TemplateStep, paths, TEMPLATES),
        st.builds(CelStep, paths, expressions),
    )
    return st.lists(step, max_size=4).map(tuple)


SPEC_STEPS = steps_of(SPEC_PATHS)
STATUS_STEPS = steps_of(STATUS_PATHS, EXPRESSIONS | STATUS_EXPRESSIONS)
OTHERS = st.none() | st.just({"apiVersion": "v1", "kind": "Thing", "metadata": {"name": "there"}})


def with_mutation(context: SyncContext, mutation: Mutation) -> SyncContext:
    spec = evolve(context.published.spec, mutation=mutation)
    return evolve(context, published=evolve(context.published, spec=spec))


def writes_of(world: World, context: SyncContext) -> list[str]:
    return [action.type for result in plan_all(world, context) for action in result.actions if action.is_write]


@given(spec=SPECS, labels=LABELS, steps=SPEC_STEPS, other=OTHERS)
def test_a_run_is_deterministic_and_leaves_its_inputs_alone(
    spec: dict[str, Any], labels: dict[str, str], steps: tuple[MutationStep, ...], other: dict[str, Any] | None
) -> None:
    obj = make_remote(spec, labels, namespaced=True)
    before, other_before = copy.deepcopy(obj), copy.deepcopy(other)
    first = apply_mutation(steps, obj, other=other, field="spec.mutation.spec")
    second = apply_mutation(steps, copy.deepcopy(obj), other=copy.deepcopy(other), field="spec.mutation.spec")
    assert first == second
    assert (obj, other) == (before, other_before)


@settings(max_examples=400)  # the law of the feature: more inputs than the default 100
@given(spec=SPECS, labels=LABELS, scopes=SCOPES, spec_steps=SPEC_STEPS, status_steps=STATUS_STEPS)
def test_a_synced_object_with_mutations_is_a_fixed_point(
    spec: dict[str, Any],
    labels: dict[str, str],
    scopes: tuple[bool, bool],
    spec_steps: tuple[MutationStep, ...],
    status_steps: tuple[MutationStep, ...],
) -> None:
    local_namespaced, remote_namespaced = scopes
    plain = make_context(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced)
    context = with_mutation(plain, Mutation(spec=spec_steps, status=status_steps))
    world = World([make_remote(spec, labels, namespaced=remote_namespaced)])

    assert reconcile_until_quiet(world, context) <= RECONCILES_TO_SETTLE
    # Plan, apply, plan again: nothing is written, whatever the steps read and wrote.
    assert writes_of(world, context) == []


@given(spec=SPECS, labels=LABELS, scopes=SCOPES, spec_steps=SPEC_STEPS)
def test_a_failing_spec_step_never_yields_a_write(
    spec: dict[str, Any], labels: dict[str, str], scopes: tuple[bool, bool], spec_steps: tuple[MutationStep, ...]
) -> None:
    local_namespaced, remote_namespaced = scopes
    context = with_mutation(
        make_context(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced),
        Mutation(spec=(*spec_steps, CelStep("spec.x", "self.spec.nothing"))),
    )
    remote = make_remote(spec, labels, namespaced=remote_namespaced)
    world = World([remote])
    before = copy.deepcopy(world.objects)

    plans = plan_all(world, context)
    assert not [action for result in plans for action in result.actions if action.is_write]
    errors = [action for result in plans for action in result.actions if isinstance(action, Error)]
    assert errors and all(error.field.startswith("spec.mutation.spec[") for error in errors)
    assert world.objects == before


@given(spec=SPECS, labels=LABELS, scopes=SCOPES, spec_steps=SPEC_STEPS, status_steps=STATUS_STEPS)
def test_once_synced_a_step_that_fails_stops_every_write_of_its_object(
    spec: dict[str, Any],
    labels: dict[str, str],
    scopes: tuple[bool, bool],
    spec_steps: tuple[MutationStep, ...],
    status_steps: tuple[MutationStep, ...],
) -> None:
    """Synced without mutations, then given steps: either they work on the object, or nothing is written."""
    local_namespaced, remote_namespaced = scopes
    plain = make_context(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced)
    world = World([make_remote(spec, labels, namespaced=remote_namespaced)])
    reconcile_until_quiet(world, plain)
    context = with_mutation(plain, Mutation(spec=spec_steps, status=status_steps))
    (remote,) = [obj for obj in world.objects[next(iter(world.objects))].values() if obj["kind"] == "Zertifikat"]
    identity = local_identity(context.projected.local, LocalKey("", "unused"))
    spec_result = apply_mutation(spec_steps, remote, other=identity, field="spec.mutation.spec")

    plans = plan_all(world, context)
    actions = [action for result in plans for action in result.actions]
    failed = [action for action in actions if isinstance(action, Error) and action.field.startswith("spec.mutation.")]
    writes = [action for action in actions if action.is_write]
    if isinstance(spec_result, Problem) or failed:
        assert failed and not writes, (failed, writes)
    else:
        assert reconcile_until_quiet(world, context) <= RECONCILES_TO_SETTLE


ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["spec", "status", "delete", "regex", "cel", "path", "x"]), inner, max_size=4)
    ),
    max_leaves=12,
)
# Text of any code point, lone surrogates included: a manifest decoded from JSON can hold them.
ANY_TEXT = (
    st.text(max_size=12)
    | st.text(st.characters(categories=["Cs"]), min_size=1, max_size=3)
    | st.sampled_from(["spec.a", "value", "(", "\\1", "{{ .Value }}"])
)
FIELDS = {
    "delete": ("path",),
    "regex": ("path", "pattern", "replacement"),
    "template": ("path", "template"),
    "cel": ("path", "expression"),
}
# One kind per step with all its fields, so that every compiler meets the text; sometimes two kinds.
STEP = st.sampled_from(sorted(FIELDS)).flatmap(
    lambda kind: st.fixed_dictionaries({kind: st.fixed_dictionaries(dict.fromkeys(FIELDS[kind], ANY_TEXT))})
) | st.dictionaries(st.sampled_from(sorted(FIELDS)), st.dictionaries(st.sampled_from(["path", "x"]), ANY_TEXT))
SHAPED = st.fixed_dictionaries({}, optional={"spec": st.lists(STEP, max_size=3), "status": st.lists(STEP, max_size=3)})


@given(mutation=ANY_JSON | SHAPED)
def test_reading_any_mutation_never_raises_and_names_its_problems_under_spec_mutation(mutation: Any) -> None:
    manifest = {"spec": {"resource": {"apiGroup": "example.com", "kind": "Widget"}, "mutation": mutation}}
    result = parse_published_resource(manifest)
    assert all(problem.field.startswith("spec.mutation") for problem in result.problems), result.problems
    assert (result.value is None) == bool(result.problems)
