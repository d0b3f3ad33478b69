"""Related objects found by a label selector, renamed by a rewrite (issue 15): the planner's answers.

Driven through the planning loop `servlet plan` runs (`core.dryrun.settle` on a `World`), so what
these tests see is what the daemon would write.
"""

from __future__ import annotations

from typing import Any

import pytest

from servlet.core.actions import Side
from servlet.core.dryrun import settle
from servlet.core.keys import metadata_of
from servlet.core.parsing import parse_published_resource
from servlet.core.related_types import RELATED_OBJECTS_PER_PRIMARY_MAX
from servlet.core.world import World
from tests.unit.test_plan import make_context, make_remote

CLUSTER = "p4n8c2l6t0y9h1j3"


def selector_entry(origin: str = "service", **selector: Any) -> dict[str, Any]:
    body = {"matchLabels": {"issued-by": "{{ .Object.spec.issuer }}"}, **selector}
    body.setdefault("rewrite", {"regex": {"pattern": "^internal-(.+)$", "replacement": "public-\\1"}})
    return {"identifier": "issued", "origin": origin, "kind": "Secret", "object": {"selector": body}}


def parsed(*related: dict[str, Any]) -> tuple[Any, tuple[Any, ...]]:
    result = parse_published_resource(
        {
            "apiVersion": "services.kdp.k8c.io/v1alpha1",
            "kind": "PublishedResource",
            "metadata": {"name": "certs"},
            "spec": {
                "resource": {"kind": "Certificate", "apiGroup": "cert-manager.io", "versions": ["v1"]},
                "related": list(related),
            },
        }
    )
    return result.value, result.problems


def context_with(*related: dict[str, Any]) -> Any:
    published, problems = parsed(*related)
    assert not problems, problems
    return make_context(related=published.spec.related)


def secret(namespace: str, name: str, *, labels: dict[str, str] | None = None, cluster: str = "") -> dict[str, Any]:
    meta: dict[str, Any] = {"namespace": namespace, "name": name, "labels": dict(labels or {})}
    if cluster:
        meta["annotations"] = {"kcp.io/cluster": cluster}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": meta,
        "type": "Opaque",
        "data": {"k": name.encode().hex()},
    }


def settled(context: Any, world: World) -> list[dict[str, Any]]:
    plans = settle(world, [context])
    return [action.to_dict() for plan in plans for action in plan.actions]


def workspace_secrets(world: World) -> dict[str, dict[str, Any]]:
    return {
        metadata_of(obj)["name"]: obj
        for obj in world.listed(Side.REMOTE)
        if obj["kind"] == "Secret" and metadata_of(obj)["namespace"] == "prod"
    }


def local_namespace(world: World) -> str:
    (primary,) = [obj for obj in world.listed(Side.LOCAL) if obj["kind"] == "Certificate"]
    return str(metadata_of(primary)["namespace"])


def world_with_primary(context: Any, *, spec: dict[str, Any]) -> tuple[World, str]:
    world = World(remote=[make_remote(spec=spec, finalizers=())])
    settle(world, [context])  # the primary's copy exists: related objects hang off it
    namespace = local_namespace(world)
    local = next(obj for obj in world.listed(Side.LOCAL) if obj["kind"] == "Certificate")
    world.put(Side.LOCAL, {**local, "spec": {**local["spec"], "issuer": spec["issuer"]}})
    return world, namespace


def test_the_secrets_the_selector_finds_go_up_renamed_and_the_others_stay() -> None:
    context = context_with(selector_entry())
    world, namespace = world_with_primary(context, spec={"issuer": "shop-ca"})
    for name, issuer in (("internal-web", "shop-ca"), ("internal-db", "shop-ca"), ("internal-other", "else")):
        world.put(Side.LOCAL, secret(namespace, name, labels={"issued-by": issuer}))

    errors = [action for action in settled(context, world) if action["type"] == "error"]

    assert errors == []
    copies = workspace_secrets(world)
    assert sorted(copies) == ["public-db", "public-web"]
    assert copies["public-web"]["data"] == {"k": b"internal-web".hex()}


def test_a_secret_that_leaves_the_selector_loses_its_copy_and_one_that_joins_gains_one() -> None:
    context = context_with(selector_entry())
    world, namespace = world_with_primary(context, spec={"issuer": "shop-ca"})
    world.put(Side.LOCAL, secret(namespace, "internal-web", labels={"issued-by": "shop-ca"}))
    settled(context, world)
    assert sorted(workspace_secrets(world)) == ["public-web"]

    world.put(Side.LOCAL, secret(namespace, "internal-web", labels={"issued-by": "else"}))
    world.put(Side.LOCAL, secret(namespace, "internal-api", labels={"issued-by": "shop-ca"}))
    settled(context, world)

    assert sorted(workspace_secrets(world)) == ["public-api"]


@pytest.mark.parametrize(
    ("issuer", "error"),
    [(None, None), ("shop ca!", "yields the label value 'shop ca!' on the local side, which is not valid")],
)
def test_labels_that_cannot_be_evaluated_keep_the_copies_they_found(issuer: str | None, error: str | None) -> None:
    context = context_with(selector_entry())
    world, namespace = world_with_primary(context, spec={"issuer": "shop-ca"})
    world.put(Side.LOCAL, secret(namespace, "internal-web", labels={"issued-by": "shop-ca"}))
    settled(context, world)
    assert sorted(workspace_secrets(world)) == ["public-web"]

    primary = next(obj for obj in world.listed(Side.REMOTE) if obj["kind"] == "Zertifikat")
    spec = {key: value for key, value in primary["spec"].items() if key != "issuer"}
    world.put(Side.REMOTE, {**primary, "spec": spec if issuer is None else {**spec, "issuer": issuer}})
    errors = [action["reason"] for action in settled(context, world) if action["type"] == "error"]

    assert sorted(workspace_secrets(world)) == ["public-web"], "unset or invalid, the labels deselect nothing"
    assert errors == ([] if error is None else [f"spec.related[0].object.selector.matchLabels.issued-by: {error}"])


def test_a_tenants_own_secret_at_a_rewritten_name_is_never_deleted() -> None:
    context = context_with(selector_entry())
    world, namespace = world_with_primary(context, spec={"issuer": "shop-ca"})
    world.put(Side.REMOTE, secret("prod", "public-web", cluster=CLUSTER))
    world.put(Side.LOCAL, secret(namespace, "internal-web", labels={"issued-by": "shop-ca"}))
    settled(context, world)

    world.put(Side.LOCAL, secret(namespace, "internal-web", labels={}))
    settled(context, world)

    assert "public-web" in workspace_secrets(world)


def test_two_secrets_rewritten_to_one_name_are_an_error_and_nothing_of_the_entry_is_written() -> None:
    context = context_with(
        selector_entry(rewrite={"regex": {"pattern": "^internal-(.+)-\\d$", "replacement": "public-\\1"}})
    )
    world, namespace = world_with_primary(context, spec={"issuer": "shop-ca"})
    for name in ("internal-web-1", "internal-web-2"):
        world.put(Side.LOCAL, secret(namespace, name, labels={"issued-by": "shop-ca"}))

    errors = [action for action in settled(context, world) if action["type"] == "error"]

    assert workspace_secrets(world) == {}
    assert errors and errors[0]["field"] == "spec.related[0].object.selector.rewrite"
    assert "'internal-web-1' and 'internal-web-2' to 'public-web'" in errors[0]["reason"]


def test_more_related_objects_than_the_bound_are_an_error_and_none_is_written() -> None:
    context = context_with(selector_entry())
    world, namespace = world_with_primary(context, spec={"issuer": "shop-ca"})
    for number in range(RELATED_OBJECTS_PER_PRIMARY_MAX + 1):
        world.put(Side.LOCAL, secret(namespace, f"internal-s{number}", labels={"issued-by": "shop-ca"}))

    errors = [action for action in settled(context, world) if action["type"] == "error"]

    assert workspace_secrets(world) == {}
    assert f"at most {RELATED_OBJECTS_PER_PRIMARY_MAX}" in errors[0]["reason"]


def test_a_template_rewrite_and_match_expressions_pick_and_name_workspace_secrets_for_the_service() -> None:
    entry = selector_entry(
        "platform",
        matchLabels={"share": "yes"},
        matchExpressions=[{"key": "tier", "operator": "In", "values": ["gold", "silver"]}],
        rewrite={"template": {"template": "{{ .Value }}-of-api"}},
    )
    context = context_with(entry)
    world, namespace = world_with_primary(context, spec={"issuer": "shop-ca"})
    world.put(Side.REMOTE, secret("prod", "gold", labels={"share": "yes", "tier": "gold"}, cluster=CLUSTER))
    world.put(Side.REMOTE, secret("prod", "bronze", labels={"share": "yes", "tier": "bronze"}, cluster=CLUSTER))

    settled(context, world)

    local = sorted(
        metadata_of(obj)["name"]
        for obj in world.listed(Side.LOCAL)
        if obj["kind"] == "Secret" and metadata_of(obj)["namespace"] == namespace
    )
    assert local == ["gold-of-api"]


@pytest.mark.parametrize(
    ("selector", "field", "message"),
    [
        ({"matchLabels": {"a": "b"}}, "spec.related[0].object.selector.rewrite", "is required"),
        ({"rewrite": {"regex": {"pattern": "x", "replacement": "y"}}}, "spec.related[0].object.selector", "neither"),
        (
            {"matchLabels": {"a": "b"}, "rewrite": {"regex": {"replacement": "y"}}},
            "spec.related[0].object.selector.rewrite.regex.pattern",
            "every copy one name",
        ),
        (
            {"matchLabels": {"a b": "c"}, "rewrite": {"template": {"template": "{{ .Value }}"}}},
            "spec.related[0].object.selector.matchLabels.a b",
            "not a valid label key",
        ),
        (
            {"matchLabels": {"a": "b"}, "rewrite": {"template": {"template": "{{ .Nope }}"}}},
            "spec.related[0].object.selector.rewrite.template.template",
            "Nope",
        ),
    ],
)
def test_a_bad_selector_is_a_problem_naming_the_field(selector: dict[str, Any], field: str, message: str) -> None:
    entry = {"identifier": "issued", "origin": "service", "kind": "Secret", "object": {"selector": selector}}
    _, problems = parsed(entry)
    assert [problem.field for problem in problems] == [field]
    assert message in problems[0].message


def test_a_namespace_cannot_be_found_by_a_selector() -> None:
    entry = selector_entry()
    entry["object"]["namespace"] = {"selector": {"matchLabels": {"a": "b"}}}
    _, problems = parsed(entry)
    assert [problem.field for problem in problems] == ["spec.related[0].object.namespace.selector"]
