"""Laws of label selectors and `spec.filter` (Kubernetes semantics)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from servlet.core.filtering import count_admitted, filter_admits, parse_label_selector, selector_matches
from servlet.core.model import LabelSelector, ResourceFilter, SelectorOperator, SelectorRequirement

# Few keys and values, so generated label sets often hit and often miss a selector.
_keys = st.sampled_from(["app", "tier", "example.com/team", "env"])
_values = st.sampled_from(["", "a", "b", "prod"])
_label_sets = st.dictionaries(_keys, _values, max_size=4)
_value_lists = st.lists(_values, min_size=1, max_size=3)


@given(_label_sets, _label_sets)
def test_match_labels_matches_exactly_the_label_sets_containing_its_pairs(
    required: dict[str, str],
    labels: dict[str, str],
) -> None:
    selector = LabelSelector(match_labels=required)
    contains_pairs = required.items() <= labels.items()
    assert selector_matches(selector, labels) is contains_pairs


@given(_label_sets)
def test_the_empty_selector_matches_every_label_set(labels: dict[str, str]) -> None:
    assert selector_matches(LabelSelector(match_labels={}), labels)


@given(_keys, _value_lists, _label_sets)
def test_not_in_is_the_negation_of_in(key: str, values: list[str], labels: dict[str, str]) -> None:
    def matches(operator: SelectorOperator) -> bool:
        requirement = SelectorRequirement(key=key, operator=operator, values=tuple(values))
        return selector_matches(LabelSelector(match_labels={}, match_expressions=(requirement,)), labels)

    assert matches(SelectorOperator.NOT_IN) is not matches(SelectorOperator.IN)


@given(_keys, _label_sets)
def test_does_not_exist_is_the_negation_of_exists(key: str, labels: dict[str, str]) -> None:
    def matches(operator: SelectorOperator) -> bool:
        requirement = SelectorRequirement(key=key, operator=operator)
        return selector_matches(LabelSelector(match_labels={}, match_expressions=(requirement,)), labels)

    assert matches(SelectorOperator.EXISTS) is (key in labels)
    assert matches(SelectorOperator.DOES_NOT_EXIST) is (key not in labels)


_requirements = st.one_of(
    st.builds(
        SelectorRequirement,
        key=_keys,
        operator=st.sampled_from([SelectorOperator.IN, SelectorOperator.NOT_IN]),
        values=_value_lists.map(tuple),
    ),
    st.builds(
        SelectorRequirement,
        key=_keys,
        operator=st.sampled_from([SelectorOperator.EXISTS, SelectorOperator.DOES_NOT_EXIST]),
    ),
)
_selectors = st.builds(
    LabelSelector, match_labels=_label_sets, match_expressions=st.lists(_requirements, max_size=3).map(tuple)
)


@given(_selectors, _label_sets)
def test_a_selector_matches_iff_its_labels_and_every_expression_match(
    selector: LabelSelector,
    labels: dict[str, str],
) -> None:
    parts = [LabelSelector(match_labels=dict(selector.match_labels))] + [
        LabelSelector(match_labels={}, match_expressions=(requirement,)) for requirement in selector.match_expressions
    ]
    assert selector_matches(selector, labels) is all(selector_matches(part, labels) for part in parts)


def _manifest(selector: LabelSelector) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if selector.match_labels:
        data["matchLabels"] = dict(selector.match_labels)
    if selector.match_expressions:
        data["matchExpressions"] = [
            {"key": requirement.key, "operator": requirement.operator.value}
            | ({"values": list(requirement.values)} if requirement.values else {})
            for requirement in selector.match_expressions
        ]
    return data


@given(_selectors)
def test_a_selector_written_as_yaml_parses_back_to_itself(selector: LabelSelector) -> None:
    assert parse_label_selector(_manifest(selector), path="spec.filter.resource") == (selector, ())


@given(_selectors, st.sampled_from(["", "default", "my-app"]), _label_sets)
def test_the_filter_admits_iff_namespace_and_selector_both_admit(
    selector: LabelSelector,
    namespace: str,
    labels: dict[str, str],
) -> None:
    for wanted in (None, "my-app"):
        resource_filter = ResourceFilter(namespace=wanted, labels=selector)
        namespace_ok = wanted is None or namespace == wanted
        admitted = filter_admits(resource_filter, namespace=namespace, labels=labels)
        assert admitted is (namespace_ok and selector_matches(selector, labels))
    assert filter_admits(ResourceFilter(), namespace=namespace, labels=labels)


_namespaces = st.sampled_from(["", "default", "my-app"])


@given(
    st.one_of(st.none(), _selectors),
    st.one_of(st.none(), _namespaces),
    st.lists(st.tuples(_namespaces, _label_sets), max_size=8),
)
def test_counting_admitted_objects_agrees_with_the_filter_and_reads_labels_only_for_a_selector(
    selector: LabelSelector | None,
    namespace: str | None,
    objects: list[tuple[str, dict[str, str]]],
) -> None:
    """The Synced condition's "of N objects", counted every few seconds over the whole cache."""
    resource_filter = ResourceFilter(namespace=namespace, labels=selector)
    read: list[int] = []

    def labels_of(index: int) -> dict[str, str]:
        read.append(index)
        return objects[index][1]

    counted = count_admitted(
        resource_filter, range(len(objects)), namespace_of=lambda index: objects[index][0], labels_of=labels_of
    )
    assert counted == sum(1 for ns, labels in objects if filter_admits(resource_filter, namespace=ns, labels=labels))
    assert read == ([] if selector is None else list(range(len(objects))))
