"""`spec.filter`: label selector parsing and matching, namespace filter; the text form of selectors."""

from __future__ import annotations

from typing import Any

import pytest

from servlet.core.filtering import (
    filter_admits,
    is_label_key,
    is_label_value,
    label_selector_text_problem,
    parse_label_selector,
    selector_matches,
)
from servlet.core.model import LabelSelector, Problem, ResourceFilter, SelectorOperator, SelectorRequirement

PATH = "spec.filter.resource"


def _selector(data: Any) -> LabelSelector:
    selector, problems = parse_label_selector(data, path=PATH)
    assert problems == ()
    assert selector is not None
    return selector


def test_an_absent_selector_is_none_without_problems() -> None:
    assert parse_label_selector(None, path=PATH) == (None, ())


def test_a_full_selector_is_read_into_values() -> None:
    selector = _selector(
        {
            "matchLabels": {"foo": "bar", "example.com/tier": ""},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "staging"]},
                {"key": "legacy", "operator": "DoesNotExist"},
            ],
        }
    )
    assert selector == LabelSelector(
        match_labels={"example.com/tier": "", "foo": "bar"},
        match_expressions=(
            SelectorRequirement(key="env", operator=SelectorOperator.IN, values=("prod", "staging")),
            SelectorRequirement(key="legacy", operator=SelectorOperator.DOES_NOT_EXIST),
        ),
    )


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ([], Problem(field=PATH, message="must be a map, not a list")),
        (
            {"matchLabel": {}},
            Problem(field=f"{PATH}.matchLabel", message="unknown field (known fields: matchLabels, matchExpressions)"),
        ),
        ({"matchLabels": ["a"]}, Problem(field=f"{PATH}.matchLabels", message="must be a map, not a list")),
        ({"matchLabels": {"a": 1}}, Problem(field=f"{PATH}.matchLabels.a", message="must be a string, not 1")),
        ({"matchLabels": {"a": True}}, Problem(field=f"{PATH}.matchLabels.a", message="must be a string, not true")),
        (
            {"matchExpressions": {"key": "a"}},
            Problem(field=f"{PATH}.matchExpressions", message="must be a list of requirements, not a map"),
        ),
        ({"matchExpressions": ["a"]}, Problem(field=f"{PATH}.matchExpressions[0]", message='must be a map, not "a"')),
        (
            {"matchExpressions": [{"key": "a", "operator": "Equals", "values": ["b"]}]},
            Problem(
                field=f"{PATH}.matchExpressions[0].operator",
                message='must be In, NotIn, Exists or DoesNotExist, not "Equals"',
            ),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "in", "values": ["b"]}]},
            Problem(
                field=f"{PATH}.matchExpressions[0].operator",
                message='must be In, NotIn, Exists or DoesNotExist, not "in"',
            ),
        ),
        (
            {"matchExpressions": [{"key": "a"}]},
            Problem(
                field=f"{PATH}.matchExpressions[0].operator", message="is required: In, NotIn, Exists or DoesNotExist"
            ),
        ),
        (
            {"matchExpressions": [{"operator": "Exists"}]},
            Problem(field=f"{PATH}.matchExpressions[0].key", message="is required"),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": []}]},
            Problem(field=f"{PATH}.matchExpressions[0].values", message="must not be empty for operator In"),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "NotIn"}]},
            Problem(field=f"{PATH}.matchExpressions[0].values", message="must not be empty for operator NotIn"),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]},
            Problem(field=f"{PATH}.matchExpressions[0].values", message="must be empty for operator Exists"),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "DoesNotExist", "values": ["b"]}]},
            Problem(field=f"{PATH}.matchExpressions[0].values", message="must be empty for operator DoesNotExist"),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": "b"}]},
            Problem(field=f"{PATH}.matchExpressions[0].values", message='must be a list of strings, not "b"'),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": [1]}]},
            Problem(field=f"{PATH}.matchExpressions[0].values[0]", message="must be a string, not 1"),
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["b"], "value": "c"}]},
            Problem(
                field=f"{PATH}.matchExpressions[0].value", message="unknown field (known fields: key, operator, values)"
            ),
        ),
    ],
)
def test_a_malformed_selector_is_one_problem_at_its_field(data: Any, expected: Problem) -> None:
    assert parse_label_selector(data, path=PATH) == (None, (expected,))


@pytest.mark.parametrize(
    ("data", "field", "bad"),
    [
        ({"matchLabels": {"has space": "x"}}, f"{PATH}.matchLabels", '"has space" is not a valid label key'),
        ({"matchLabels": {"a": "-x"}}, f"{PATH}.matchLabels.a", '"-x" is not a valid label value'),
        ({"matchLabels": {"a": "x" * 64}}, f"{PATH}.matchLabels.a", "is not a valid label value"),
        (
            {"matchExpressions": [{"key": "Bad_Prefix/a", "operator": "Exists"}]},
            f"{PATH}.matchExpressions[0].key",
            '"Bad_Prefix/a" is not a valid label key',
        ),
        (
            {"matchExpressions": [{"key": "a", "operator": "In", "values": ["ok", "not ok"]}]},
            f"{PATH}.matchExpressions[0].values[1]",
            '"not ok" is not a valid label value',
        ),
    ],
)
def test_invalid_label_keys_and_values_are_named_in_the_problem(data: Any, field: str, bad: str) -> None:
    selector, problems = parse_label_selector(data, path=PATH)
    assert selector is None
    assert [problem.field for problem in problems] == [field]
    assert bad in problems[0].message


def test_every_problem_of_a_selector_is_reported_at_once() -> None:
    selector, problems = parse_label_selector(
        {"matchLabels": {"a b": "c"}, "matchExpressions": [{"key": "x", "operator": "In"}, {"operator": "Foo"}]},
        path=PATH,
    )
    assert selector is None
    assert [problem.field for problem in problems] == [
        f"{PATH}.matchLabels",
        f"{PATH}.matchExpressions[0].values",
        f"{PATH}.matchExpressions[1].key",
        f"{PATH}.matchExpressions[1].operator",
    ]


@pytest.mark.parametrize(
    ("key", "valid"),
    [
        ("app", True),
        ("app.kubernetes.io/name", True),
        ("A_b.c-D", True),
        ("example.com/", False),
        ("/name", False),
        ("Example.com/name", False),
        ("a/b/c", False),
        ("x" * 63, True),
        ("x" * 64, False),
        ("", False),
        ("_a", False),
    ],
)
def test_label_keys(key: str, valid: bool) -> None:
    assert is_label_key(key) is valid


@pytest.mark.parametrize(("value", "valid"), [("", True), ("v1.2_3-x", True), ("-a", False), ("a/b", False)])
def test_label_values(value: str, valid: bool) -> None:
    assert is_label_value(value) is valid


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        ({}, {}, True),
        ({}, {"any": "thing"}, True),
        ({"matchLabels": {"foo": "bar"}}, {"foo": "bar", "x": "y"}, True),
        ({"matchLabels": {"foo": "bar"}}, {"foo": "baz"}, False),
        ({"matchLabels": {"foo": "bar"}}, {}, False),
        ({"matchLabels": {"foo": ""}}, {}, False),
        ({"matchLabels": {"foo": ""}}, {"foo": ""}, True),
        ({"matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]}]}, {"env": "b"}, True),
        ({"matchExpressions": [{"key": "env", "operator": "In", "values": ["a", "b"]}]}, {"env": "c"}, False),
        ({"matchExpressions": [{"key": "env", "operator": "In", "values": ["a"]}]}, {}, False),
        ({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["a"]}]}, {"env": "a"}, False),
        ({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["a"]}]}, {"env": "b"}, True),
        ({"matchExpressions": [{"key": "env", "operator": "NotIn", "values": ["a"]}]}, {}, True),
        ({"matchExpressions": [{"key": "env", "operator": "Exists"}]}, {"env": ""}, True),
        ({"matchExpressions": [{"key": "env", "operator": "Exists"}]}, {}, False),
        ({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}, {}, True),
        ({"matchExpressions": [{"key": "env", "operator": "DoesNotExist"}]}, {"env": "a"}, False),
        (
            {"matchLabels": {"foo": "bar"}, "matchExpressions": [{"key": "env", "operator": "Exists"}]},
            {"foo": "bar"},
            False,
        ),
        (
            {"matchLabels": {"foo": "bar"}, "matchExpressions": [{"key": "env", "operator": "Exists"}]},
            {"foo": "bar", "env": "x"},
            True,
        ),
    ],
)
def test_selector_matching_follows_kubernetes(selector: Any, labels: dict[str, str], matches: bool) -> None:
    assert selector_matches(_selector(selector), labels) is matches


@pytest.mark.parametrize(
    ("resource_filter", "namespace", "labels", "admitted"),
    [
        (ResourceFilter(), "anything", {}, True),
        (ResourceFilter(), "", {}, True),
        (ResourceFilter(namespace="my-app"), "my-app", {}, True),
        (ResourceFilter(namespace="my-app"), "my-app-2", {}, False),
        (ResourceFilter(namespace="my-app"), "", {}, False),
        (ResourceFilter(labels=LabelSelector(match_labels={"foo": "bar"})), "x", {"foo": "bar"}, True),
        (ResourceFilter(labels=LabelSelector(match_labels={"foo": "bar"})), "x", {}, False),
        (
            ResourceFilter(namespace="my-app", labels=LabelSelector(match_labels={"foo": "bar"})),
            "other",
            {"foo": "bar"},
            False,
        ),
        (
            ResourceFilter(namespace="my-app", labels=LabelSelector(match_labels={"foo": "bar"})),
            "my-app",
            {"foo": "bar"},
            True,
        ),
    ],
)
def test_filter_admits_by_exact_namespace_and_selector(
    resource_filter: ResourceFilter,
    namespace: str,
    labels: dict[str, str],
    admitted: bool,
) -> None:
    assert filter_admits(resource_filter, namespace=namespace, labels=labels) is admitted


# -- the text form, as given to --published-resource-selector --------------------------------


@pytest.mark.parametrize(
    "selector",
    [
        "env=prod",
        "env==prod",
        "env!=prod",
        "tier in (a, b)",
        "tier notin (a,b),env",
        "!legacy",
        "example.com/team=blue,size>3",
        "empty=",
    ],
)
def test_label_selectors_kubernetes_accepts_are_accepted(selector: str) -> None:
    assert label_selector_text_problem(selector, field="--published-resource-selector") is None


@pytest.mark.parametrize(
    "selector, mentions",
    [
        ("env in prod", "env in prod"),
        ("env=prod,", "''"),
        ("Bad Key=x", "Bad Key=x"),
        ("env=no/slash", "'no/slash'"),
        ("size>big", "whole number"),
        ("-bad=x", "'-bad'"),
    ],
)
def test_malformed_label_selectors_are_explained(selector: str, mentions: str) -> None:
    problem = label_selector_text_problem(selector, field="--published-resource-selector")
    assert isinstance(problem, Problem) and problem.field == "--published-resource-selector"
    assert mentions in problem.message, problem.message
