"""Mutation steps on one object: each kind, its failures, and the path syntax they share."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from servlet.core.model import Problem
from servlet.core.mutation import apply_mutation
from servlet.core.mutation_path import PathError, parse_path
from servlet.core.mutation_steps import CelStep, DeleteStep, MutationStep, RegexStep, TemplateStep

FIELD = "spec.mutation.spec"
CRONTAB: dict[str, Any] = {
    "apiVersion": "kcp.example.com/v1",
    "kind": "CronTab",
    "metadata": {"namespace": "default", "name": "my-crontab"},
    "spec": {"cronSpec": "* * *", "image": "ubuntu:latest", "replicas": 24, "ports": [80, 443, 8080]},
}
LOCAL = {"apiVersion": "kcp.example.com/v1", "kind": "CronTab", "metadata": {"namespace": "team-a", "name": "c-1"}}


def mutated(*steps: MutationStep, obj: dict[str, Any] | None = None, other: dict[str, Any] | None = LOCAL) -> Any:
    source = copy.deepcopy(CRONTAB if obj is None else obj)
    before = copy.deepcopy(source)
    result = apply_mutation(steps, source, other=other, field=FIELD)
    assert source == before, "a step changed its input"
    return result


def spec_of(result: Any) -> Any:
    assert not isinstance(result, Problem), result
    return result["spec"]


# --- paths -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "keys"),
    [
        ("spec.secretName", ("spec", "secretName")),
        ("spec.ports.1", ("spec", "ports", "1")),
        ("metadata.annotations.example\\.com/team", ("metadata", "annotations", "example.com/team")),
        ("spec.a\\*b", ("spec", "a*b")),
        ("spec.e-mail@host", ("spec", "e-mail@host")),
    ],
)
def test_a_path_is_dotted_keys_with_backslash_escapes(text: str, keys: tuple[str, ...]) -> None:
    assert parse_path(text) == keys


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "must name a field"),
        ("spec..name", "empty key at position 5"),
        ("spec.", "empty key"),
        ("spec.containers[0].image", "list items are numbered with dots (spec.containers.0.image)"),
        ("spec.ports.#", "'#' at position 11"),
        ("spec.*", "selects or computes values"),
        ("spec.a|b", "'|'"),
        ("@this", "'@'"),
        ("spec.name\\", "lone \\"),
    ],
)
def test_a_path_that_names_several_values_or_none_is_refused(text: str, said: str) -> None:
    with pytest.raises(PathError, match=None) as raised:
        parse_path(text)
    assert said in str(raised.value)


# --- delete ------------------------------------------------------------------------------------


def test_delete_removes_a_key_and_a_list_item() -> None:
    spec = spec_of(mutated(DeleteStep("spec.image"), DeleteStep("spec.ports.1")))
    assert "image" not in spec
    assert spec["ports"] == [80, 8080]


@pytest.mark.parametrize("path", ["spec.nothing", "spec.nothing.deeper", "spec.ports.7", "spec.image.deeper"])
def test_delete_of_a_missing_value_leaves_the_object_as_it_is(path: str) -> None:
    assert mutated(DeleteStep(path)) == CRONTAB


# --- regex -------------------------------------------------------------------------------------


def test_regex_replaces_every_match_with_groups_written_as_backslash_numbers() -> None:
    spec = spec_of(mutated(RegexStep("spec.image", r"^(\w+):(\w+)$", r"registry.local/\1:\2")))
    assert spec["image"] == "registry.local/ubuntu:latest"
    assert spec_of(mutated(RegexStep("spec.cronSpec", r"\*", "0")))["cronSpec"] == "0 0 0"


def test_regex_with_an_empty_pattern_sets_the_replacement_as_it_is() -> None:
    assert spec_of(mutated(RegexStep("spec.image", "", r"nginx\1")))["image"] == r"nginx\1"


@pytest.mark.parametrize(
    ("path", "pattern", "replacement", "expected"),
    [
        ("spec.replicas", "4", "5", "25"),  # a number is rewritten as its text, and stays text
        ("spec.ports", "(.)", r"\1", "[80,443,8080]"),  # a list as its compact JSON
        ("spec.missing", "^$", "filled", "filled"),  # a missing value is empty text, and is created
    ],
)
def test_regex_works_on_the_value_as_text(path: str, pattern: str, replacement: str, expected: str) -> None:
    spec = spec_of(mutated(RegexStep(path, pattern, replacement)))
    assert spec[path.split(".")[1]] == expected


# --- template ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{{ .Value.String | upper }}", "UBUNTU:LATEST"),
        ("{{ upper .Value.String }}", "UBUNTU:LATEST"),
        ("{{ .Value }}-x", "ubuntu:latest-x"),
        ("{{ .LocalObject.metadata.name }}", "my-crontab"),  # the object being changed, as the peer names it
        ("{{ .RemoteObject.metadata.namespace }}/{{ .Value.Exists }}", "team-a/true"),  # the other side
        ("  {{ .Value.Raw }}  ", '"ubuntu:latest"'),
        ("", ""),
    ],
)
def test_template_sets_the_value_to_its_trimmed_output(template: str, expected: str) -> None:
    assert spec_of(mutated(TemplateStep("spec.image", template)))["image"] == expected


def test_template_reads_a_number_as_text_or_as_a_number() -> None:
    spec = spec_of(mutated(TemplateStep("spec.replicas", "{{ .Value.Int }} and {{ .Value }}")))
    assert spec["replicas"] == "24 and 24"


def test_template_without_another_object_prints_no_value() -> None:
    result = mutated(TemplateStep("spec.image", "{{ .RemoteObject.metadata.name }}"), other=None)
    assert spec_of(result)["image"] == "<no value>"


# --- cel ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "expression", "expected"),
    [
        ("spec.cronSpec", '"hei verden"', "hei verden"),
        ("spec.cronSpec", "42", 42),  # the type may change
        ("spec.cronSpec", 'value + "foo"', "* * *foo"),
        ("spec.cronSpec", "other.metadata.namespace", "team-a"),
        ("spec.cronSpec", "self.spec.replicas * 2", 48),
        ("spec.cronSpec", "self.spec.ports.filter(p, p > 100)", [443, 8080]),
        ("spec.cronSpec", '{"a": [1.5, true, null]}', {"a": [1.5, True, None]}),
        ("spec.fresh", 'value == null ? "default" : value', "default"),  # a missing value is null
    ],
)
def test_cel_sets_the_value_to_the_expressions_result(path: str, expression: str, expected: Any) -> None:
    assert spec_of(mutated(CelStep(path, expression)))[path.split(".")[1]] == expected


def test_cel_creates_the_maps_on_the_way_to_a_missing_value() -> None:
    assert spec_of(mutated(CelStep("spec.a.b.c", "1")))["a"] == {"b": {"c": 1}}


def test_steps_run_in_order_each_on_the_result_of_the_one_before() -> None:
    steps = (
        CelStep("spec.replicas", "value + 1"),
        TemplateStep("spec.image", "{{ .LocalObject.spec.replicas }}"),
        RegexStep("spec.image", "5$", "6"),
    )
    spec = spec_of(mutated(*steps))
    assert (spec["replicas"], spec["image"]) == (25, "26")


# --- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("step", "field", "said"),
    [
        (CelStep("spec.x", "self.spec.nothing"), "spec.mutation.spec[1].cel.expression", "nothing"),
        (CelStep("spec.x", "1 / 0"), "spec.mutation.spec[1].cel.expression", "divide by zero"),
        (CelStep("spec.x", 'b"raw"'), "spec.mutation.spec[1].cel.expression", "bytes, which has no JSON form"),
        (CelStep("spec.x", "0.0 / 0.0"), "spec.mutation.spec[1].cel.expression", "JSON cannot hold"),
        (CelStep("spec.x", "{1: 2}"), "spec.mutation.spec[1].cel.expression", "text keys only"),
        (CelStep("spec.image.tag", "1"), "spec.mutation.spec[1].cel.path", 'spec.image is "ubuntu:latest"'),
        (RegexStep("spec.ports.x", "", "y"), "spec.mutation.spec[1].regex.path", "spec.ports is a list"),
        (RegexStep("spec.ports.5", "", "y"), "spec.mutation.spec[1].regex.path", "may append (3) but not skip"),
        (TemplateStep("spec.x", "{{ .LocalObject.spec.ports }}"), "spec.mutation.spec[1].template.template", "print"),
        (TemplateStep("spec.x", "{{ .Value | upper }}"), "spec.mutation.spec[1].template.template", "must be a string"),
    ],
)
def test_a_failing_step_is_a_problem_naming_its_field_and_nothing_of_the_run_escapes(
    step: MutationStep, field: str, said: str
) -> None:
    result = mutated(DeleteStep("spec.cronSpec"), step, CelStep("spec.after", "1"))
    assert isinstance(result, Problem), result
    assert result.field == field
    assert said in result.message


def test_the_evaluators_iteration_budget_stops_a_runaway_expression() -> None:
    # The binding's own budget (10,000 comprehension iterations) is the bound the docs promise.
    obj = {"spec": {"items": list(range(200))}}
    nested = "self.spec.items.map(a, self.spec.items.map(b, a * b)).size()"
    result = mutated(CelStep("spec.n", nested), obj=obj)
    assert isinstance(result, Problem) and "budget" in result.message, result
    assert spec_of(mutated(CelStep("spec.n", "self.spec.items.map(a, a * 2).size()"), obj=obj))["n"] == 200


def test_a_list_index_equal_to_the_length_appends() -> None:
    assert spec_of(mutated(CelStep("spec.ports.3", "9090")))["ports"] == [80, 443, 8080, 9090]
