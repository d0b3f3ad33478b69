"""Laws of the APIExport merge (SPEC 4): add-only, idempotent, order-independent, sorted."""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from servlet.core.apiexport import plan_export, schema_resource
from servlet.core.model import RelatedKind

# Few plurals and groups, so generated schemas often share a resource and exercise replacement.
_schema_names = st.builds(
    lambda digest, plural, group: f"v{digest}.{plural}.{group}",
    st.text("0123456789abcdef", min_size=8, max_size=8),
    st.sampled_from(["certificates", "issuers", "orders"]),
    st.sampled_from(["certificates.example.corp", "other.example.corp"]),
)
_foreign_claims = st.lists(
    st.fixed_dictionaries(
        {"resource": st.sampled_from(["secrets", "configmaps", "namespaces", "roles", "widgets"])},
        optional={
            "group": st.sampled_from(["", "rbac.authorization.k8s.io", "example.io"]),
            "all": st.just(True),
            "identityHash": st.text("abc", max_size=3),
            "resourceSelector": st.just([{"namespace": "default"}]),
        },
    ),
    max_size=4,
)
_kinds = st.lists(st.sampled_from(list(RelatedKind)), max_size=3)


@st.composite
def _exports(draw: st.DrawFn) -> dict[str, Any]:
    spec: dict[str, Any] = {"identity": {"secretRef": {"namespace": "kcp-system", "name": "e"}}}
    if draw(st.booleans()):
        spec["latestResourceSchemas"] = draw(st.lists(_schema_names, max_size=4))
    if draw(st.booleans()):
        spec["permissionClaims"] = draw(_foreign_claims)
    return {"apiVersion": "apis.kcp.io/v1alpha1", "kind": "APIExport", "metadata": {"name": "e"}, "spec": spec}


def _resulting_spec(export: dict[str, Any], schemas: list[str], kinds: list[RelatedKind]) -> dict[str, Any]:
    change = plan_export(export=export, schema_names=schemas, related_kinds=kinds)
    return change.spec if change is not None else export["spec"]


@given(_exports(), st.lists(_schema_names, max_size=5), _kinds)
def test_no_resource_is_ever_lost_and_every_asked_resource_is_served(
    export: dict[str, Any],
    schemas: list[str],
    kinds: list[RelatedKind],
) -> None:
    after = _resulting_spec(export, schemas, kinds).get("latestResourceSchemas", [])

    before = export["spec"].get("latestResourceSchemas", [])
    served = {schema_resource(name) for name in after}
    assert {schema_resource(name) for name in [*before, *schemas]} <= served
    for name in schemas:
        # kcp serves one schema per resource: an asked resource ends up with exactly one entry.
        assert sum(schema_resource(entry) == schema_resource(name) for entry in after) == 1
        if sum(schema_resource(other) == schema_resource(name) for other in set(schemas)) == 1:
            assert name in after


@given(_exports(), st.lists(_schema_names, max_size=5), _kinds)
def test_merging_the_result_again_changes_nothing(
    export: dict[str, Any],
    schemas: list[str],
    kinds: list[RelatedKind],
) -> None:
    merged = {**export, "spec": _resulting_spec(export, schemas, kinds)}

    assert plan_export(export=merged, schema_names=schemas, related_kinds=kinds) is None


@given(_exports(), st.lists(_schema_names, max_size=5), _kinds, st.data())
def test_the_order_of_schemas_and_kinds_does_not_matter(
    export: dict[str, Any],
    schemas: list[str],
    kinds: list[RelatedKind],
    data: st.DataObject,
) -> None:
    shuffled_schemas = data.draw(st.permutations(schemas))
    shuffled_kinds = data.draw(st.permutations(kinds))

    first = plan_export(export=export, schema_names=schemas, related_kinds=kinds)
    second = plan_export(export=export, schema_names=shuffled_schemas, related_kinds=shuffled_kinds)

    assert first == second


@given(_exports(), st.lists(_schema_names, max_size=5), _kinds)
def test_written_schemas_are_sorted_and_added_claims_are_sorted_and_claim_everything(
    export: dict[str, Any],
    schemas: list[str],
    kinds: list[RelatedKind],
) -> None:
    change = plan_export(export=export, schema_names=schemas, related_kinds=kinds)

    if change is None:
        return
    written = change.patch["spec"]
    if "latestResourceSchemas" in written:
        assert written["latestResourceSchemas"] == sorted(set(written["latestResourceSchemas"]))
    existing = export["spec"].get("permissionClaims", [])
    added = written.get("permissionClaims", existing)[len(existing) :]
    assert added == sorted(added, key=lambda claim: claim["resource"])
    assert all(claim == {"group": "", "resource": claim["resource"], "all": True} for claim in added)


@given(_exports(), st.lists(_schema_names, max_size=5), _kinds)
def test_existing_claims_are_kept_unchanged_in_place_and_needed_claims_exist(
    export: dict[str, Any],
    schemas: list[str],
    kinds: list[RelatedKind],
) -> None:
    claims = _resulting_spec(export, schemas, kinds).get("permissionClaims", [])

    existing = export["spec"].get("permissionClaims", [])
    assert claims[: len(existing)] == existing
    core_claimed = {claim["resource"] for claim in claims if not claim.get("group")}
    needed = {kind.plural for kind in kinds} | ({"namespaces"} if kinds else set())
    assert needed <= core_claimed


@given(_exports(), st.lists(_schema_names, max_size=5), _kinds)
def test_the_patch_touches_only_schemas_and_claims_and_yields_the_planned_spec(
    export: dict[str, Any],
    schemas: list[str],
    kinds: list[RelatedKind],
) -> None:
    change = plan_export(export=export, schema_names=schemas, related_kinds=kinds)

    if change is None:
        return
    assert set(change.patch) == {"spec"}
    assert set(change.patch["spec"]) <= {"latestResourceSchemas", "permissionClaims"}
    # A merge patch replaces each list it names whole.
    assert {**export["spec"], **change.patch["spec"]} == change.spec
