"""`spec.mutation` read from a PublishedResource: every step checked before any object, by field."""

from __future__ import annotations

from typing import Any

import pytest

from servlet.core.mutation_steps import CelStep, DeleteStep, Mutation, RegexStep, TemplateStep
from servlet.core.parsing import parse_published_resource


def manifest(mutation: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "certs"},
        "spec": {"resource": {"apiGroup": "cert-manager.io", "kind": "Certificate"}, "mutation": mutation},
    }


def problems(mutation: Any) -> list[str]:
    return [str(problem) for problem in parse_published_resource(manifest(mutation)).problems]


def test_every_kind_of_step_is_read_in_order() -> None:
    mutation = {
        "spec": [
            {"delete": {"path": "spec.privateKey"}},
            {"regex": {"path": "spec.secretName", "pattern": "^(.*)$", "replacement": "\\1-tls"}},
            {"template": {"path": "spec.commonName", "template": "{{ .Value.String | lower }}"}},
        ],
        "status": [{"cel": {"path": "status.secretName", "expression": "other.spec.secretName"}}],
    }
    parsed = parse_published_resource(manifest(mutation))
    assert parsed.problems == ()
    assert parsed.value is not None
    assert parsed.value.spec.mutation == Mutation(
        spec=(
            DeleteStep("spec.privateKey"),
            RegexStep("spec.secretName", "^(.*)$", "\\1-tls"),
            TemplateStep("spec.commonName", "{{ .Value.String | lower }}"),
        ),
        status=(CelStep("status.secretName", "other.spec.secretName"),),
    )


def test_the_peers_empty_pattern_replacement_and_template_are_accepted() -> None:
    steps = [
        {"regex": {"path": "spec.a"}},
        {"regex": {"path": "spec.b", "replacement": "$1"}},
        {"template": {"path": "spec.c"}},
    ]
    assert problems({"spec": steps}) == []


@pytest.mark.parametrize(
    ("mutation", "expected"),
    [
        ([], "spec.mutation: must be a map, not a list"),
        ({"spec": {}}, "spec.mutation.spec: must be a list of steps, not a map"),
        ({"both": []}, "spec.mutation.both: unknown field (known fields: spec, status)"),
        ({"spec": [{}]}, "spec.mutation.spec[0]: set exactly one of delete, regex, template and cel"),
        (
            {"spec": [{"delete": {"path": "a"}, "cel": {"path": "a", "expression": "1"}}]},
            "spec.mutation.spec[0]: set exactly one of delete, regex, template and cel (found: delete, cel)",
        ),
        ({"spec": [{"delete": {}}]}, "spec.mutation.spec[0].delete.path: is required"),
        ({"spec": [{"delete": {"path": "spec..x"}}]}, 'spec.mutation.spec[0].delete.path: "spec..x" has an empty key'),
        ({"status": [{"delete": {"path": 3}}]}, "spec.mutation.status[0].delete.path: must be a string, not 3"),
        ({"spec": [{"delete": {"path": "a", "pattern": "x"}}]}, "spec.mutation.spec[0].delete.pattern: unknown field"),
        (
            {"spec": [{"regex": {"path": "a", "pattern": "(a+)+\\1"}}]},
            'spec.mutation.spec[0].regex.pattern: "(a+)+\\1" is not a valid RE2 regular expression',
        ),
        (
            {"spec": [{"regex": {"path": "a", "pattern": "(x)", "replacement": "$1"}}]},
            'spec.mutation.spec[0].regex.replacement: "$1" refers to a group as $1; write \\1 instead',
        ),
        (
            {"spec": [{"template": {"path": "a", "template": "{{ .Object.metadata.name }}"}}]},
            "spec.mutation.spec[0].template.template: unknown field .Object",
        ),
        (
            {"spec": [{"template": {"path": "a", "template": "{{ if .Value }}x{{ end }}"}}]},
            "spec.mutation.spec[0].template.template: 'if' is not supported",
        ),
        ({"spec": [{"cel": {"path": "a"}}]}, "spec.mutation.spec[0].cel.expression: is required"),
        (
            {"spec": [{"cel": {"path": "a", "expression": "value +"}}]},
            "spec.mutation.spec[0].cel.expression: at 1:8: Syntax error",
        ),
        (
            {"spec": [{"cel": {"path": "a", "expression": "object.spec"}}]},
            "spec.mutation.spec[0].cel.expression: at 1:7: undeclared reference to 'object.spec'",
        ),
        (
            {"spec": [{"cel": {"path": "a", "expression": "1" + " + 1" * 1100}}]},
            "spec.mutation.spec[0].cel.expression: is 4401 characters long; an expression may have at most 4096",
        ),
    ],
)
def test_a_step_that_can_never_work_is_a_problem_at_its_field(mutation: Any, expected: str) -> None:
    found = problems(mutation)
    assert len(found) == 1 and found[0].startswith(expected), found


def test_an_unknown_kind_of_step_is_named_as_such() -> None:
    assert problems({"spec": [{"replace": {"path": "a"}}]}) == [
        "spec.mutation.spec[0].replace: unknown field (known fields: delete, regex, template, cel)",
        "spec.mutation.spec[0]: set exactly one of delete, regex, template and cel",
    ]


def test_every_bad_step_is_reported_at_once() -> None:
    mutation = {
        "spec": [{"delete": {"path": "ok"}}, {"cel": {"path": "a[1]", "expression": "value +"}}],
        "status": [{"regex": {"path": "b", "pattern": "("}}],
    }
    fields = [problem.field for problem in parse_published_resource(manifest(mutation)).problems]
    assert fields == [
        "spec.mutation.spec[1].cel.path",
        "spec.mutation.spec[1].cel.expression",
        "spec.mutation.status[0].regex.pattern",
    ]
