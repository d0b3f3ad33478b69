"""The rendered RBAC is exactly the README's table for the given values: generated from
`publishedResources`, no wildcard, the Lease only in the release namespace, bound to the
ServiceAccount the pods run as."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.rbac import Grant, allows, documented, granted, table_rows
from tests.chart.rendering import CERTIFICATES, NAMESPACE, one, render, with_required

WIDGETS = {"apiGroup": "example.com", "resources": ["widgets", "gadgets"], "relatedKinds": ["ConfigMap"]}


def _grants(values: dict[str, Any], *, namespace: str = NAMESPACE) -> set[Grant]:
    documents = render(values, namespace=namespace)
    account = one(documents, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"]
    return granted(documents, service_account=account, namespace=namespace)


DATABASES = {"apiGroup": "databases.example.org", "resources": ["databases"]}


def test_with_every_optional_rule_the_rbac_is_exactly_the_documented_table() -> None:
    values = with_required(publishedResources=[CERTIFICATES, WIDGETS], relatedResources=[DATABASES])
    assert sorted(_grants(values)) == sorted(documented(values, namespace=NAMESPACE))


@pytest.mark.parametrize(
    "values",
    [
        with_required(),
        with_required(publishedResources=[CERTIFICATES]),
        with_required(publishedResources=[WIDGETS], replicaCount=1, leaderElection={"enabled": False}),
    ],
    ids=["no published resources", "certificates", "widgets without leader election"],
)
def test_the_rbac_never_grants_more_than_the_documented_table(values: dict[str, Any]) -> None:
    extra = _grants(values) - documented(values, namespace=NAMESPACE)
    assert sorted(g.describe() for g in extra) == []


@pytest.mark.parametrize(
    ("published", "expected"),
    [
        ([], set()),
        ([CERTIFICATES], {"secrets"}),
        ([WIDGETS], {"configmaps"}),
        ([CERTIFICATES, WIDGETS], {"configmaps", "secrets"}),
        ([{**CERTIFICATES, "relatedKinds": []}], set()),
    ],
)
def test_secrets_and_configmaps_are_granted_only_for_related_kinds_in_use(
    published: list[dict[str, Any]], expected: set[str]
) -> None:
    grants = _grants(with_required(publishedResources=published))
    assert {g.resource for g in grants if g.resource in ("secrets", "configmaps")} == expected


def test_related_types_of_any_group_get_the_related_verbs_only_when_listed() -> None:
    listed = {(g.group, g.resource, g.verb) for g in _grants(with_required(relatedResources=[DATABASES]))}
    verbs = {verb for group, resource, verb in listed if (group, resource) == ("databases.example.org", "databases")}
    assert verbs == {"get", "list", "watch", "create", "patch", "delete"}
    unlisted = _grants(with_required())
    assert not any(g.group == "databases.example.org" for g in unlisted)


def test_each_published_resource_gets_the_sync_verbs_and_nothing_on_its_status() -> None:
    grants = _grants(with_required(publishedResources=[CERTIFICATES, WIDGETS]))
    for group, plural in [("cert-manager.io", "certificates"), ("example.com", "widgets"), ("example.com", "gadgets")]:
        # `get` only for a copy of another replica's share in the way of a create (`--buckets`).
        assert {g.verb for g in grants if (g.group, g.resource) == (group, plural)} == {
            "get",
            "list",
            "watch",
            "create",
            "patch",
            "delete",
        }
        assert not [g for g in grants if g.group == group and g.resource.startswith(f"{plural}/")]
    # A group that is not listed gets nothing.
    assert not [g for g in grants if g.group == "acme.cert-manager.io"]


@pytest.mark.parametrize(
    ("values", "verbs"),
    [
        (with_required(), ("get", "list", "create", "update", "delete")),  # two replicas sharing buckets
        (with_required(buckets=0), ("get", "create", "update")),
        (with_required(replicaCount=1), ("get", "create", "update")),
    ],
    ids=["buckets", "no buckets", "one replica"],
)
def test_the_leases_are_granted_in_the_release_namespace_only(values: dict[str, Any], verbs: tuple[str, ...]) -> None:
    grants = _grants(values, namespace="platform-sync")
    leases = {g for g in grants if g.resource == "leases"}
    assert leases == {Grant("coordination.k8s.io", "leases", verb, "platform-sync") for verb in verbs}
    assert allows(grants, verb="update", group="coordination.k8s.io", resource="leases", namespace="platform-sync")
    assert not allows(grants, verb="update", group="coordination.k8s.io", resource="leases", namespace="kube-system")


def test_without_leader_election_nothing_touches_leases() -> None:
    grants = _grants(with_required(replicaCount=1, leaderElection={"enabled": False}))
    assert not [g for g in grants if g.resource == "leases"]


def test_the_bindings_name_the_service_account_the_pods_run_as() -> None:
    documents = render(with_required(serviceAccount={"name": "kdp-servlet"}))
    account = one(documents, "ServiceAccount")["metadata"]["name"]
    assert account == "kdp-servlet"
    assert one(documents, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == account
    assert granted(documents, service_account=account, namespace=NAMESPACE)
    assert not granted(documents, service_account="default", namespace=NAMESPACE)


def test_without_rbac_the_chart_grants_nothing() -> None:
    documents = render(with_required(rbac={"create": False}))
    assert not granted(documents, service_account="servlet", namespace=NAMESPACE)


def test_the_readme_table_has_one_documented_reason_per_row() -> None:
    rows = table_rows()
    assert len(rows) >= 8
    for row in rows:
        assert len(row) == 5 and row[4], f"row without a reason: {row}"
