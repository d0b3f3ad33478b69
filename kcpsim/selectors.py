"""Label and field selectors as the apiserver parses and matches them.

Label selectors support equality (`a=b`, `a==b`, `a!=b`) and set-based requirements
(`a in (x,y)`, `a notin (x)`, `a`, `!a`). Field selectors support `metadata.name` and
`metadata.namespace`, like the apiserver does for custom resources, and for core Events also the
fields `kubectl describe` and `kubectl get events --field-selector` use (`involvedObject.*`,
`reason`, `type`, ...). Nothing here knows HTTP.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from kcpsim.errors import StatusError, bad_request

Matcher = Callable[[Mapping[str, str]], bool]

_KEY = r"[A-Za-z0-9]([-A-Za-z0-9_./]*[A-Za-z0-9])?"
_VALUE = r"([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?"
_SET_RE = re.compile(rf"^\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s+\((?P<values>[^)]*)\)\s*$")
_EQ_RE = re.compile(rf"^\s*(?P<key>{_KEY})\s*(?P<op>==|!=|=)\s*(?P<value>{_VALUE})\s*$")
_EXISTS_RE = re.compile(rf"^\s*(?P<neg>!?)\s*(?P<key>{_KEY})\s*$")


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
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
    return [p for p in parts if p.strip()]


def _requirement(text: str) -> Matcher:
    if match := _SET_RE.match(text):
        key = match["key"]
        values = {v.strip() for v in match["values"].split(",") if v.strip()}
        if match["op"] == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if match := _EQ_RE.match(text):
        key, value = match["key"], match["value"]
        if match["op"] == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if match := _EXISTS_RE.match(text):
        key = match["key"]
        if match["neg"]:
            return lambda labels: key not in labels
        return lambda labels: key in labels
    raise bad_request(
        f"unable to parse requirement: found '{text.strip()}', expected a valid label selector requirement"
    )


def parse_label_selector(text: str | None) -> Matcher:
    """A matcher for `labelSelector=...`; an empty selector matches everything."""
    if not text or not text.strip():
        return lambda labels: True
    requirements = [_requirement(part) for part in _split_top_level(text)]
    return lambda labels: all(req(labels) for req in requirements)


FIELDS = ("metadata.name", "metadata.namespace")
# The apiserver's field labels for core v1 Events (pkg/registry/core/event: ToSelectableFields).
EVENT_FIELDS = (
    *FIELDS,
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)


def parse_field_selector(text: str | None, *, fields: tuple[str, ...] = FIELDS) -> Callable[[Mapping[str, Any]], bool]:
    """A matcher over a whole object for `fieldSelector=...`, allowing the `fields` given."""
    if not text or not text.strip():
        return lambda obj: True
    checks: list[Callable[[Mapping[str, Any]], bool]] = []
    for part in text.split(","):
        match = re.match(r"^\s*([A-Za-z.]+)\s*(==|!=|=)\s*(.*?)\s*$", part)
        if not match:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field, op, value = match.groups()
        if field not in fields:
            known = ", ".join(f'"{name}"' for name in fields)
            raise bad_request(f'"{field}" is not a known field selector: only {known}')
        checks.append(_field_check(field, value, negate=op == "!="))
    return lambda obj: all(check(obj) for check in checks)


def _field_value(obj: Mapping[str, Any], path: str) -> str:
    if path == "source":  # the apiserver selects on the source's component
        path = "source.component"
    value: Any = obj
    for part in path.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return "" if value is None else str(value)


def _field_check(path: str, value: str, *, negate: bool) -> Callable[[Mapping[str, Any]], bool]:
    def check(obj: Mapping[str, Any]) -> bool:
        return (_field_value(obj, path) == value) != negate

    return check


def selector_from_label_selector_object(selector: Mapping[str, Any]) -> Matcher:
    """A matcher for a `metav1.LabelSelector` object (matchLabels + matchExpressions)."""
    match_labels: Mapping[str, str] = selector.get("matchLabels") or {}
    expressions: list[Mapping[str, Any]] = selector.get("matchExpressions") or []

    def matches(labels: Mapping[str, str]) -> bool:
        if any(labels.get(k) != v for k, v in match_labels.items()):
            return False
        for expr in expressions:
            key, op, values = expr["key"], expr["operator"], set(expr.get("values") or [])
            if op == "In" and labels.get(key) not in values:
                return False
            if op == "NotIn" and labels.get(key) in values:
                return False
            if op == "Exists" and key not in labels:
                return False
            if op == "DoesNotExist" and key in labels:
                return False
        return True

    return matches


__all__ = [
    "EVENT_FIELDS",
    "FIELDS",
    "Matcher",
    "StatusError",
    "parse_field_selector",
    "parse_label_selector",
    "selector_from_label_selector_object",
]
