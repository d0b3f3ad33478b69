"""Which remote objects a PublishedResource syncs: `spec.filter` (namespace and label selector).

Label selectors follow Kubernetes semantics: `matchLabels` and every expression must hold; `NotIn`
and `DoesNotExist` hold when the key is absent; an empty selector selects everything. The text
form (`--published-resource-selector`, which the API server evaluates) is checked here too, with
the same rules for keys and values, so the two forms cannot drift apart.

Deliberately not here: what happens to an object that leaves the filter (the planner releases
it) and reading the rest of `spec` (`parsing.py`, which calls `parse_label_selector`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from servlet.core.fields import as_mapping, describe, read_enum, read_string, read_string_list, report_unknown
from servlet.core.model import LabelSelector, Problem, ResourceFilter, SelectorOperator, SelectorRequirement
from servlet.core.naming import DNS_LABEL_MAX, is_dns1123_subdomain

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["filter_admits", "selector_matches"]

K = TypeVar("K")

_LABEL_NAME_RE = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_KEY_RULE = (
    "a label key is an optional DNS subdomain prefix and '/', then a name of at most 63 letters, "
    "digits, '-', '_' or '.' that starts and ends with a letter or digit"
)
_VALUE_RULE = (
    "a label value is empty or at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit"
)


def is_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and not is_dns1123_subdomain(prefix):
        return False
    return len(name) <= DNS_LABEL_MAX and _LABEL_NAME_RE.fullmatch(name) is not None


def is_label_value(value: str) -> bool:
    return value == "" or (len(value) <= DNS_LABEL_MAX and _LABEL_NAME_RE.fullmatch(value) is not None)


# One requirement of the text form: `!key`, `key`, `key op value` or `key in|notin (values)`.
_TEXT_REQUIREMENT = re.compile(
    r"^\s*(?:(?P<not>!)\s*(?P<absent>[^\s!=<>(),]+)"
    r"|(?P<key>[^\s!=<>(),]+)\s*(?:(?P<op>==|=|!=|<|>)\s*(?P<value>[^\s!=<>(),]*)"
    r"|\s+(?P<set>in|notin)\s*\((?P<values>[^()]*)\))?)\s*$"
)


def _split_requirements(text: str) -> list[str]:
    """The requirements of a text selector: split at commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def label_selector_text_problem(text: str, *, field: str) -> Problem | None:
    """A problem with a label selector in the text form of kubectl and the API's `labelSelector`
    parameter (`a=b,c in (d,e),!f`), reported at `field`; None if the API server would accept it.

    The keys and values obey the same rules as in a PublishedResource's structured selector.
    """
    for requirement in _split_requirements(text):
        match = _TEXT_REQUIREMENT.match(requirement)
        if match is None:
            return Problem(
                field=field,
                message=f"{requirement.strip()!r} of {text!r} is not a label selector "
                "requirement (key, !key, key=value, key!=value, key in (a,b), key notin (a,b))",
            )
        key = match["absent"] or match["key"]
        if not is_label_key(key):
            return Problem(field=field, message=f"{key!r} in {text!r} is not a valid label key")
        values = (
            [v.strip() for v in match["values"].split(",")]
            if match["set"]
            else ([match["value"]] if match["op"] else [])
        )
        if match["op"] in ("<", ">"):
            if not values[0].lstrip("-").isdigit():
                return Problem(field=field, message=f"{key}{match['op']}{values[0]} in {text!r} needs a whole number")
            continue
        for value in values:
            if not is_label_value(value):
                return Problem(field=field, message=f"{value!r} in {text!r} is not a valid label value")
    return None


def selector_matches(selector: LabelSelector, labels: Mapping[str, str]) -> bool:
    if any(labels.get(key) != value for key, value in selector.match_labels):
        return False
    return all(_requirement_holds(requirement, labels) for requirement in selector.match_expressions)


def filter_admits(resource_filter: ResourceFilter, *, namespace: str, labels: Mapping[str, str]) -> bool:
    """Whether a remote object in `namespace` ("" if cluster-scoped) with `labels` is synced."""
    if resource_filter.namespace is not None and namespace != resource_filter.namespace:
        return False
    return resource_filter.labels is None or selector_matches(resource_filter.labels, labels)


def count_admitted(
    resource_filter: ResourceFilter,
    keys: Iterable[K],
    *,
    namespace_of: Callable[[K], str],
    labels_of: Callable[[K], Mapping[str, str]],
) -> int:
    """How many of the objects at `keys` are synced. Their labels are read (`labels_of`, which may
    decode a cached object) only for a label selector: a filter by namespace decides from the keys."""
    by_labels = resource_filter.labels is not None
    return sum(
        1
        for key in keys
        if filter_admits(resource_filter, namespace=namespace_of(key), labels=labels_of(key) if by_labels else {})
    )


def _requirement_holds(requirement: SelectorRequirement, labels: Mapping[str, str]) -> bool:
    present = requirement.key in labels
    match requirement.operator:
        case SelectorOperator.IN:
            return present and labels[requirement.key] in requirement.values
        case SelectorOperator.NOT_IN:
            return not present or labels[requirement.key] not in requirement.values
        case SelectorOperator.EXISTS:
            return present
        case SelectorOperator.DOES_NOT_EXIST:
            return not present


def parse_label_selector(data: object, *, path: str) -> tuple[LabelSelector | None, tuple[Problem, ...]]:
    """A LabelSelector read from manifest data at `path`; None with no problems when absent.

    The selector is None whenever there are problems, so a half-read selector never admits more
    objects than its author meant.
    """
    if data is None:
        return None, ()
    problems: list[Problem] = []
    mapping = as_mapping(data, path=path, problems=problems)
    if mapping is None:
        return None, tuple(problems)
    report_unknown(mapping, path=path, known=("matchLabels", "matchExpressions"), problems=problems)
    labels = _parse_match_labels(mapping.get("matchLabels"), path=f"{path}.matchLabels", problems=problems)
    expressions = _parse_expressions(
        mapping.get("matchExpressions"),
        path=f"{path}.matchExpressions",
        problems=problems,
    )
    if problems:
        return None, tuple(problems)
    return LabelSelector(match_labels=labels, match_expressions=expressions), ()


def _parse_match_labels(data: object, *, path: str, problems: list[Problem]) -> dict[str, str]:
    if data is None:
        return {}
    mapping = as_mapping(data, path=path, problems=problems)
    labels: dict[str, str] = {}
    for key, value in (mapping or {}).items():
        if not isinstance(key, str) or not is_label_key(key):
            problems.append(_bad_key(key, field=path))
        elif not isinstance(value, str):
            problems.append(Problem(field=f"{path}.{key}", message=f"must be a string, not {describe(value)}"))
        elif not is_label_value(value):
            problems.append(_bad_value(value, field=f"{path}.{key}"))
        else:
            labels[key] = value
    return labels


def _parse_expressions(data: object, *, path: str, problems: list[Problem]) -> tuple[SelectorRequirement, ...]:
    if data is None:
        return ()
    if not isinstance(data, list):
        problems.append(Problem(field=path, message=f"must be a list of requirements, not {describe(data)}"))
        return ()
    parsed = [_parse_requirement(item, path=f"{path}[{index}]", problems=problems) for index, item in enumerate(data)]
    return tuple(requirement for requirement in parsed if requirement is not None)


def _parse_requirement(data: object, *, path: str, problems: list[Problem]) -> SelectorRequirement | None:
    mapping = as_mapping(data, path=path, problems=problems)
    if mapping is None:
        return None
    before = len(problems)
    report_unknown(mapping, path=path, known=("key", "operator", "values"), problems=problems)
    key = read_string(mapping, "key", path=path, problems=problems, required=True)
    if key is not None and not is_label_key(key):
        problems.append(_bad_key(key, field=f"{path}.key"))
    operator = read_enum(mapping, "operator", SelectorOperator, path=path, problems=problems, required=True)
    unreadable_before = len(problems)
    values = read_string_list(mapping, "values", path=path, problems=problems)
    unreadable = len(problems) > unreadable_before
    problems.extend(
        _bad_value(value, field=f"{path}.values[{index}]")
        for index, value in enumerate(values or ())
        if not is_label_value(value)
    )
    if operator in (SelectorOperator.IN, SelectorOperator.NOT_IN) and not values and not unreadable:
        problems.append(Problem(field=f"{path}.values", message=f"must not be empty for operator {operator.value}"))
    if operator in (SelectorOperator.EXISTS, SelectorOperator.DOES_NOT_EXIST) and values:
        problems.append(Problem(field=f"{path}.values", message=f"must be empty for operator {operator.value}"))
    if len(problems) > before or key is None or operator is None:
        return None
    return SelectorRequirement(key=key, operator=operator, values=values or ())


def _bad_key(key: object, *, field: str) -> Problem:
    return Problem(field=field, message=f"{describe(key)} is not a valid label key: {_KEY_RULE}")


def _bad_value(value: object, *, field: str) -> Problem:
    return Problem(field=field, message=f"{describe(value)} is not a valid label value: {_VALUE_RULE}")
