"""Laws of Kubernetes' version order and of publishing several versions.

The order is checked against the rules as Kubernetes states them (GA > beta > alpha; higher
numbers first within a level; other names last, alphabetically), written here as a comparison
of two names, independently of the sort key the servlet uses.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from hypothesis import given, strategies as st

from servlet.core.model import PublishedResource, PublishedResourceSpec, SourceResource
from servlet.core.projection import Projected, project
from servlet.core.versions import by_version_priority, version_priority_key

_kube_like = st.from_regex(r"v[0-9]{1,3}((alpha|beta)[0-9]{1,3})?", fullmatch=True)
_other = st.text(alphabet="abvz0129", min_size=1, max_size=6)
_names = st.one_of(_kube_like, _other)
_RULE = re.compile(r"v([0-9]+)(?:(alpha|beta)([0-9]+))?")


def _kubernetes_compare(a: str, b: str) -> int:
    """-1 when `a` is listed before `b`, by the rules as stated; names of equal priority by name."""
    match_a, match_b = _RULE.fullmatch(a), _RULE.fullmatch(b)
    if match_a is None or match_b is None:
        if match_a is None and match_b is None:
            return (a > b) - (a < b)
        return -1 if match_b is None else 1
    level = {None: 2, "beta": 1, "alpha": 0}
    for x, y in (
        (level[match_a.group(2)], level[match_b.group(2)]),
        (int(match_a.group(1)), int(match_b.group(1))),
        (int(match_a.group(3) or 0), int(match_b.group(3) or 0)),
    ):
        if x != y:
            return -1 if x > y else 1
    return (a > b) - (a < b)


@given(st.lists(_names, max_size=12))
def test_the_order_is_the_one_kubernetes_states(names: list[str]) -> None:
    assert by_version_priority(names) == sorted(names, key=functools.cmp_to_key(_kubernetes_compare))


@given(_names, _names, _names)
def test_the_order_is_total_and_transitive(a: str, b: str, c: str) -> None:
    ka, kb, kc = version_priority_key(a), version_priority_key(b), version_priority_key(c)
    assert (ka == kb) == (a == b)
    if ka <= kb and kb <= kc:
        assert ka <= kc


@given(_kube_like, _other)
def test_every_kubernetes_version_comes_before_every_other_name(kube: str, other: str) -> None:
    if _RULE.fullmatch(other) is None:
        assert by_version_priority([other, kube]) == [kube, other]


_published_names = st.lists(
    st.from_regex(r"v[1-9]((alpha|beta)[1-9])?", fullmatch=True), min_size=1, max_size=4, unique=True
)


@given(_published_names, st.data())
def test_several_versions_give_one_stored_version_the_sync_uses_and_any_list_order_one_schema(
    names: list[str],
    data: st.DataObject,
) -> None:
    storage = data.draw(st.sampled_from(names))
    crd: dict[str, Any] = {
        "spec": {
            "group": "example.io",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "versions": [
                {
                    "name": name,
                    "served": True,
                    "storage": name == storage,
                    "schema": {"openAPIV3Schema": {"type": "object", "x-version": name}},
                }
                for name in names
            ],
        }
    }
    chosen = data.draw(st.lists(st.sampled_from(names), min_size=1, unique=True))
    results = [
        project(
            crd=crd,
            api_group="widgets.example.corp",
            published=PublishedResource(
                name="w",
                spec=PublishedResourceSpec(
                    resource=SourceResource(api_group="example.io", kind="Widget", versions=tuple(order))
                ),
            ),
        )
        for order in (chosen, list(reversed(chosen)))
    ]
    assert all(isinstance(result, Projected) for result in results)
    first, second = results
    assert isinstance(first, Projected) and isinstance(second, Projected)
    assert first.schema_name == second.schema_name
    versions = first.schema_spec["versions"]
    assert [v["name"] for v in versions] == by_version_priority(chosen)
    [stored] = [v for v in versions if v["storage"]]
    assert stored["name"] == (storage if storage in chosen else by_version_priority(chosen)[0])
    assert first.remote.version == first.local.version == stored["name"]
    assert stored["schema"] == {"type": "object", "x-version": stored["name"]}
    assert ("conversion" in first.schema_spec) == (len(chosen) > 1)
