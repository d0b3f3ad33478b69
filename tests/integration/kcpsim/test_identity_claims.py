"""Claims on another export's resource (`identityHash`): the VW serves it only once claimed, and
a workspace's objects only once that workspace accepted the claim."""

from __future__ import annotations

import base64
from typing import Any

from kcpsim.waiting import eventually
from tests.integration.kcpsim.helpers import EXPORT, EXPORT_HASH, ORG, TEAM_A, Raw

DB_GROUP = "databases.example.org"
SCHEMA = f"v1.databases.{DB_GROUP}"
DATABASES = f"/apis/{DB_GROUP}/v1/namespaces/default/databases"
EXPORTS = "/apis/apis.kcp.io/v1alpha1/apiexports"


def _ok(response: Any) -> dict[str, Any]:
    assert response.status_code < 300, response.text
    body: dict[str, Any] = response.json()
    return body


def _provide_databases(raw: Raw) -> str:
    """A second export in the org serves Databases; team-a binds it. Returns its identity hash."""
    org = f"/clusters/{ORG}"
    _ok(
        raw(
            "POST",
            f"{org}/api/v1/namespaces/kcp-system/secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "databases", "namespace": "kcp-system"},
                "data": {"key": base64.b64encode(b"databases").decode()},
            },
        )
    )
    spec_schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    _ok(
        raw(
            "POST",
            f"{org}/apis/apis.kcp.io/v1alpha1/apiresourceschemas",
            {
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIResourceSchema",
                "metadata": {"name": SCHEMA},
                "spec": {
                    "group": DB_GROUP,
                    "names": {
                        "plural": "databases",
                        "singular": "database",
                        "kind": "Database",
                        "listKind": "DatabaseList",
                    },
                    "scope": "Namespaced",
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": spec_schema}],
                },
            },
        )
    )
    _ok(
        raw(
            "POST",
            f"{org}{EXPORTS}",
            {
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIExport",
                "metadata": {"name": DB_GROUP},
                "spec": {
                    "identity": {"secretRef": {"namespace": "kcp-system", "name": "databases"}},
                    "latestResourceSchemas": [SCHEMA],
                },
            },
        )
    )
    identity = eventually(
        lambda: (_ok(raw("GET", f"{org}{EXPORTS}/{DB_GROUP}")).get("status") or {}).get("identityHash"),
        what="the identity hash of the Database export",
    )
    _ok(
        raw(
            "POST",
            f"/clusters/{TEAM_A}/apis/apis.kcp.io/v1alpha1/apibindings",
            {
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIBinding",
                "metadata": {"name": "databases"},
                "spec": {"reference": {"export": {"path": "root:myorg", "name": DB_GROUP}}},
            },
        )
    )
    return str(identity)


def test_another_exports_resource_is_served_through_an_accepted_identity_claim(raw: Raw) -> None:
    identity = _provide_databases(raw)
    _ok(
        raw(
            "POST",
            f"/clusters/{TEAM_A}{DATABASES}",
            {"apiVersion": f"{DB_GROUP}/v1", "kind": "Database", "metadata": {"name": "db"}, "spec": {"size": 1}},
        )
    )
    through_vw = f"/services/apiexport/{ORG}/{EXPORT}/clusters/{TEAM_A}{DATABASES}/db"
    assert raw("GET", through_vw).status_code == 404, "not claimed: not served"

    claims = _ok(raw("GET", f"/clusters/{ORG}{EXPORTS}/{EXPORT}"))["spec"].get("permissionClaims") or []
    claim = {"group": DB_GROUP, "resource": "databases", "identityHash": identity, "all": True}
    _ok(
        raw(
            "PATCH",
            f"/clusters/{ORG}{EXPORTS}/{EXPORT}",
            {"spec": {"permissionClaims": [*claims, claim]}},
            content_type="application/merge-patch+json",
        )
    )
    assert raw("GET", through_vw).status_code == 403, "claimed but not accepted: forbidden"

    binding = f"/clusters/{TEAM_A}/apis/apis.kcp.io/v1alpha1/apibindings/{EXPORT}"
    accepted = [{**c, "state": "Accepted"} for c in _ok(raw("GET", binding))["spec"].get("permissionClaims") or []]
    _ok(
        raw(
            "PATCH",
            binding,
            {"spec": {"permissionClaims": [*accepted, {**claim, "state": "Accepted"}]}},
            content_type="application/merge-patch+json",
        )
    )
    found = eventually(lambda: _ok(raw("GET", through_vw)), what="the Database through the VW, the claim accepted")
    assert found["spec"] == {"size": 1}
    assert f"claimed.internal.apis.kcp.io/{EXPORT_HASH}" in found["metadata"]["labels"]
    listed = _ok(raw("GET", f"/services/apiexport/{ORG}/{EXPORT}/clusters/*/apis/{DB_GROUP}/v1/databases"))
    assert [item["metadata"]["name"] for item in listed["items"]] == ["db"]
