"""The APIExport merge and the virtual workspace URL (SPEC 4)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from servlet.core.apiexport import (
    ExportChange,
    plan_export,
    schema_resource,
    virtual_workspace_url,
    virtual_workspace_urls,
)
from servlet.core.model import RelatedKind

CERTS_A = "va0000000.certificates.certificates.example.corp"
CERTS_B = "vb0000000.certificates.certificates.example.corp"
ISSUERS = "vc0000000.issuers.certificates.example.corp"
ORDERS = "vd0000000.orders.certificates.example.corp"
IDENTITY = {"secretRef": {"namespace": "kcp-system", "name": "certificates.example.corp"}}
SECRETS = {"group": "", "resource": "secrets", "all": True}
CONFIGMAPS = {"group": "", "resource": "configmaps", "all": True}
NAMESPACES = {"group": "", "resource": "namespaces", "all": True}
EVENTS = {"group": "", "resource": "events", "all": True}


def _export(**spec: Any) -> dict[str, Any]:
    """An export the servlet already claimed `events` on, unless the claims are given."""
    spec.setdefault("permissionClaims", [EVENTS])
    return {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIExport",
        "metadata": {"name": "certificates.example.corp", "resourceVersion": "1205"},
        "spec": {"identity": copy.deepcopy(IDENTITY), **spec},
        "status": {"identityHash": "5685b0de"},
    }


def test_an_export_without_claims_gets_the_events_claim_for_events_on_users_objects() -> None:
    change = _change(_export(permissionClaims=[], latestResourceSchemas=[CERTS_A]), [CERTS_A])

    assert change.patch == {"spec": {"permissionClaims": [EVENTS]}}


def _change(export: dict[str, Any], schemas: list[str], kinds: tuple[RelatedKind, ...] = ()) -> ExportChange:
    change = plan_export(export=export, schema_names=schemas, related_kinds=kinds)
    assert change is not None
    return change


def test_a_fresh_export_gets_the_schemas_sorted_and_nothing_else() -> None:
    change = _change(_export(), [ORDERS, CERTS_A])

    assert change.patch == {"spec": {"latestResourceSchemas": [CERTS_A, ORDERS]}}
    assert change.spec == {
        "identity": IDENTITY,
        "permissionClaims": [EVENTS],
        "latestResourceSchemas": [CERTS_A, ORDERS],
    }


def test_schemas_already_in_the_export_are_not_written_again() -> None:
    assert (
        plan_export(
            export=_export(latestResourceSchemas=[CERTS_A, ORDERS]), schema_names=[ORDERS, CERTS_A], related_kinds=()
        )
        is None
    )


def test_an_export_listing_the_right_schemas_in_another_order_is_left_alone() -> None:
    # kcp treats the list as a set; rewriting it only to sort it would be a needless write.
    assert (
        plan_export(export=_export(latestResourceSchemas=[ORDERS, CERTS_A]), schema_names=[CERTS_A], related_kinds=())
        is None
    )


def test_schemas_not_asked_for_are_never_removed() -> None:
    change = _change(_export(latestResourceSchemas=[ORDERS, "v1.widgets.other.io"]), [ISSUERS])

    assert change.patch == {"spec": {"latestResourceSchemas": ["v1.widgets.other.io", ISSUERS, ORDERS]}}


def test_a_new_schema_replaces_the_schema_of_the_same_resource() -> None:
    change = _change(_export(latestResourceSchemas=[CERTS_A, ORDERS]), [CERTS_B])

    assert change.patch == {"spec": {"latestResourceSchemas": [CERTS_B, ORDERS]}}


def test_the_same_plural_in_another_group_is_another_resource() -> None:
    other_group = "va0000000.certificates.other.example.corp"

    change = _change(_export(latestResourceSchemas=[CERTS_A]), [other_group])

    assert change.patch["spec"]["latestResourceSchemas"] == [CERTS_A, other_group]


@pytest.mark.parametrize(
    ("current", "chosen"),
    [
        ([], CERTS_A),
        ([CERTS_B], CERTS_B),
        ([CERTS_A], CERTS_A),
    ],
)
def test_two_wanted_schemas_for_one_resource_resolve_the_same_way_in_any_order(
    current: list[str],
    chosen: str,
) -> None:
    for asked in ([CERTS_A, CERTS_B], [CERTS_B, CERTS_A]):
        change = plan_export(export=_export(latestResourceSchemas=current), schema_names=asked, related_kinds=())
        resulting = change.spec["latestResourceSchemas"] if change else current
        assert resulting == [chosen]


def test_duplicate_schema_entries_are_written_once() -> None:
    change = _change(_export(latestResourceSchemas=[CERTS_A, CERTS_A]), [CERTS_A])

    assert change.patch == {"spec": {"latestResourceSchemas": [CERTS_A]}}


@pytest.mark.parametrize(
    ("kinds", "claims"),
    [
        ((RelatedKind.SECRET,), [NAMESPACES, SECRETS]),
        ((RelatedKind.CONFIGMAP,), [CONFIGMAPS, NAMESPACES]),
        ((RelatedKind.SECRET, RelatedKind.CONFIGMAP, RelatedKind.SECRET), [CONFIGMAPS, NAMESPACES, SECRETS]),
    ],
)
def test_related_kinds_add_their_claims_and_namespaces_with_all_true(
    kinds: tuple[RelatedKind, ...],
    claims: list[dict[str, Any]],
) -> None:
    change = _change(_export(latestResourceSchemas=[CERTS_A]), [CERTS_A], kinds)

    assert change.patch == {"spec": {"permissionClaims": [EVENTS, *claims]}}
    assert change.spec["latestResourceSchemas"] == [CERTS_A]


def test_no_related_kinds_means_no_claims_but_events() -> None:
    assert _change(_export(), [CERTS_A]).spec["permissionClaims"] == [EVENTS]


def test_nothing_to_export_claims_nothing() -> None:
    # Events are claimed with the first schema, in the same patch.
    assert plan_export(export=_export(permissionClaims=[]), schema_names=[], related_kinds=()) is None


@pytest.mark.parametrize(
    "present",
    [
        {"group": "", "resource": "secrets", "all": True},
        {"resource": "secrets"},
        {"group": "", "resource": "secrets", "resourceSelector": [{"namespace": "default"}]},
    ],
)
def test_an_existing_claim_counts_whatever_its_other_fields(present: dict[str, Any]) -> None:
    export = _export(latestResourceSchemas=[CERTS_A], permissionClaims=[NAMESPACES, present, EVENTS])

    assert plan_export(export=export, schema_names=[CERTS_A], related_kinds=[RelatedKind.SECRET]) is None


def test_foreign_claims_keep_their_place_and_shape_and_new_ones_are_appended_sorted() -> None:
    foreign = [
        {"group": "rbac.authorization.k8s.io", "resource": "roles", "all": True},
        {"resource": "secrets", "resourceSelector": [{"name": "x"}]},
        {"group": "example.io", "resource": "widgets", "identityHash": "abc", "all": True},
    ]

    change = _change(_export(permissionClaims=foreign), [], (RelatedKind.CONFIGMAP, RelatedKind.SECRET))

    assert change.patch == {"spec": {"permissionClaims": [*foreign, CONFIGMAPS, NAMESPACES]}}


def test_a_claim_for_the_same_resource_in_another_group_does_not_count() -> None:
    foreign = {"group": "example.io", "resource": "secrets", "identityHash": "abc", "all": True}

    change = _change(_export(permissionClaims=[foreign]), [], (RelatedKind.SECRET,))

    assert change.patch["spec"]["permissionClaims"] == [foreign, NAMESPACES, SECRETS]


def test_schemas_and_claims_change_in_one_patch_and_the_rest_of_the_spec_is_untouched() -> None:
    export = _export(latestResourceSchemas=[CERTS_A], maximalPermissionPolicy={"local": {}})

    change = _change(export, [CERTS_B, ISSUERS], (RelatedKind.SECRET,))

    assert change.patch == {
        "spec": {"latestResourceSchemas": [CERTS_B, ISSUERS], "permissionClaims": [EVENTS, NAMESPACES, SECRETS]}
    }
    assert change.spec == {
        "identity": IDENTITY,
        "permissionClaims": [EVENTS, NAMESPACES, SECRETS],
        "maximalPermissionPolicy": {"local": {}},
        "latestResourceSchemas": [CERTS_B, ISSUERS],
    }


def test_the_planned_spec_needs_no_further_change() -> None:
    roles = {"resource": "roles", "all": True}
    export = _export(latestResourceSchemas=[CERTS_A, ORDERS], permissionClaims=[roles])
    change = _change(export, [CERTS_B, ISSUERS], (RelatedKind.SECRET, RelatedKind.CONFIGMAP))

    assert (
        plan_export(
            export={**export, "spec": change.spec},
            schema_names=[ISSUERS, CERTS_B],
            related_kinds=(RelatedKind.CONFIGMAP, RelatedKind.SECRET),
        )
        is None
    )


def test_an_export_without_spec_is_treated_as_empty() -> None:
    change = _change({"metadata": {"name": "x"}}, [CERTS_A])

    assert change.spec == {"latestResourceSchemas": [CERTS_A], "permissionClaims": [EVENTS]}


def test_the_input_export_and_the_patch_are_not_modified_through_the_planned_spec() -> None:
    export = _export(latestResourceSchemas=[CERTS_A], permissionClaims=[NAMESPACES])

    change = _change(export, [ORDERS], (RelatedKind.SECRET,))
    change.spec["permissionClaims"].append({"resource": "x"})
    change.spec["latestResourceSchemas"].append("y")

    change.spec["identity"]["secretRef"]["name"] = "changed"

    assert export["spec"] == _export(latestResourceSchemas=[CERTS_A], permissionClaims=[NAMESPACES])["spec"]
    assert change.patch["spec"]["latestResourceSchemas"] == [CERTS_A, ORDERS]


@pytest.mark.parametrize(
    ("name", "resource"),
    [
        (CERTS_A, "certificates.certificates.example.corp"),
        ("v1.configmaps.core", "configmaps.core"),
        ("nodots", "nodots"),
    ],
)
def test_schema_resource_is_everything_after_the_first_dot(name: str, resource: str) -> None:
    assert schema_resource(name) == resource


SLICE_URL = "https://kcp.example.test:6443/services/apiexport/abc123xyz/certificates.example.corp"
OLD_URL = "https://shard-1.example.test:6443/services/apiexport/abc123xyz/certificates.example.corp"


def _slice(*urls: str) -> dict[str, Any]:
    return {"kind": "APIExportEndpointSlice", "status": {"endpoints": [{"url": url} for url in urls]}}


def _old_export(*urls: str) -> dict[str, Any]:
    return {**_export(), "status": {"virtualWorkspaces": [{"url": url} for url in urls]}}


@pytest.mark.parametrize(
    ("endpoint_slice", "export", "url"),
    [
        (_slice(SLICE_URL), _old_export(OLD_URL), SLICE_URL),
        (_slice(SLICE_URL, OLD_URL), None, SLICE_URL),
        (_slice("", SLICE_URL), None, SLICE_URL),
        (_slice(), _old_export(OLD_URL), OLD_URL),
        (None, _old_export(OLD_URL), OLD_URL),
        ({"status": {}}, _old_export("", OLD_URL), OLD_URL),
        (_slice(), _export(), None),
        ({"spec": {"export": {"name": "x"}}}, None, None),
        (None, None, None),
    ],
)
def test_the_vw_url_comes_from_the_endpoint_slice_else_from_the_export(
    endpoint_slice: dict[str, Any] | None,
    export: dict[str, Any] | None,
    url: str | None,
) -> None:
    assert virtual_workspace_url(endpoint_slice=endpoint_slice, export=export) == url


def test_every_vw_url_of_a_sharded_kcp_is_read_in_order_without_duplicates() -> None:
    endpoint_slice = {
        "status": {
            "endpoints": [
                {"url": "https://shard-1.kcp/services/apiexport/org/x/"},
                {"url": "https://root.kcp/services/apiexport/org/x"},
                {"url": "https://shard-1.kcp/services/apiexport/org/x"},
                {"url": ""},
            ]
        }
    }
    export = {"status": {"virtualWorkspaces": [{"url": "https://old.kcp/services/apiexport/org/x"}]}}

    assert virtual_workspace_urls(endpoint_slice=endpoint_slice, export=export) == (
        "https://shard-1.kcp/services/apiexport/org/x",
        "https://root.kcp/services/apiexport/org/x",
    )
    assert virtual_workspace_urls(endpoint_slice={"status": {"endpoints": []}}, export=export) == (
        "https://old.kcp/services/apiexport/org/x",
    )
    assert virtual_workspace_urls(endpoint_slice=None, export=None) == ()
