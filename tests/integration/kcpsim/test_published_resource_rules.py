"""The PublishedResource CRD of the chart refuses impossible combinations at admission (issue 15):
its `x-kubernetes-validations` rules, evaluated by an API server (the simulator's CEL), over raw
HTTP and with kubectl. The servlet's parser refuses the same objects (tests/unit/test_parsing.py);
these rules tell the author at `kubectl apply` time instead of in the PublishedResource's status."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import Raw
from tests.integration.kcpsim.kubectl import kubectl

REPO = Path(__file__).resolve().parents[3]
CRD_PATH = REPO / "charts" / "servlet" / "crds" / "publishedresources.yaml"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
PUBLISHED = "/apis/services.kdp.k8c.io/v1alpha1/publishedresources"

SECRET_ENTRY: dict[str, Any] = {
    "identifier": "tls",
    "origin": "service",
    "kind": "Secret",
    "reference": {"name": {"path": "spec.secretName"}},
}
DATABASE_ENTRY: dict[str, Any] = {
    "identifier": "db",
    "origin": "service",
    "group": "databases.example.org",
    "version": "v1",
    "resource": "databases",
    "reference": {"name": {"path": "spec.databaseName"}},
}


def _published(name: str, *related: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": name},
        "spec": {"resource": {"apiGroup": "example.com", "kind": "Widget"}, "related": list(related)},
    }


def _without(entry: dict[str, Any], *fields: str) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key not in fields}


@pytest.fixture
def crd_installed(raw: Raw) -> Raw:
    crd = yaml.safe_load(CRD_PATH.read_text())
    response = raw("POST", CRDS, crd)
    assert response.status_code == 201, response.text
    return raw


# (case id, the broken related entry, the field the refusal names, the rule's message)
BROKEN: list[tuple[str, dict[str, Any], str, str]] = [
    (
        "resource-without-version",
        _without(DATABASE_ENTRY, "version"),
        "spec.related[0]",
        "version and resource go together",
    ),
    (
        "version-without-resource",
        {**SECRET_ENTRY, "version": "v1"},
        "spec.related[0]",
        "version and resource go together",
    ),
    (
        "group-without-resource",
        {**SECRET_ENTRY, "group": "databases.example.org"},
        "spec.related[0]",
        "group needs version and resource",
    ),
    (
        "kind-and-resource",
        {**DATABASE_ENTRY, "kind": "Secret"},
        "spec.related[0]",
        "set either kind (Secret or ConfigMap) or group, version and resource",
    ),
    (
        "identity-hash-without-resource",
        {**SECRET_ENTRY, "identityHash": "4f8c0e7d"},
        "spec.related[0]",
        "identityHash needs group, version and resource",
    ),
    (
        "object-reference-and-template",
        {
            **_without(SECRET_ENTRY, "reference"),
            "object": {
                "reference": {"path": "spec.secretName"},
                "template": {"template": "{{ .Object.metadata.name }}"},
            },
        },
        "spec.related[0].object",
        "set exactly one of reference, template and selector",
    ),
    (
        "object-template-and-selector",
        {
            **_without(SECRET_ENTRY, "reference"),
            "object": {
                "template": {"template": "x"},
                "selector": {"matchLabels": {"a": "b"}, "rewrite": {"regex": {"pattern": "^(.+)$"}}},
            },
        },
        "spec.related[0].object",
        "set exactly one of reference, template and selector",
    ),
    (
        "object-with-none",
        {**_without(SECRET_ENTRY, "reference"), "object": {"namespace": {"template": {"template": "x"}}}},
        "spec.related[0].object",
        "set exactly one of reference, template and selector",
    ),
    (
        "watch-with-none",
        {**SECRET_ENTRY, "watch": {}},
        "spec.related[0].watch",
        "set exactly one of byOwner and bySelector",
    ),
    (
        "watch-with-both",
        {**SECRET_ENTRY, "watch": {"byOwner": {}, "bySelector": {"matchLabels": {"shop": "main"}}}},
        "spec.related[0].watch",
        "set exactly one of byOwner and bySelector",
    ),
]


@pytest.mark.parametrize(("entry", "field", "message"), [case[1:] for case in BROKEN], ids=[case[0] for case in BROKEN])
def test_an_impossible_related_entry_is_refused_with_the_rules_message(
    crd_installed: Raw, entry: dict[str, Any], field: str, message: str
) -> None:
    response = crd_installed("POST", PUBLISHED, _published("broken", entry))
    assert response.status_code == 422, response.text
    status = response.json()
    assert status["reason"] == "Invalid"
    causes = [(cause["field"], cause["message"]) for cause in status["details"]["causes"]]
    assert (field, f'Invalid value: "object": {message}') in causes, causes
    assert message in status["message"]
    assert crd_installed("GET", f"{PUBLISHED}/broken").status_code == 404


def test_entries_that_keep_every_rule_are_stored(crd_installed: Raw) -> None:
    entries = [
        {**SECRET_ENTRY, "watch": {"byOwner": {}}},
        {**DATABASE_ENTRY, "identityHash": "4f8c0e7d", "watch": {"bySelector": {"matchLabels": {"shop": "main"}}}},
        {
            **_without(SECRET_ENTRY, "reference"),
            "identifier": "issued",
            "object": {"selector": {"matchLabels": {"a": "b"}, "rewrite": {"regex": {"pattern": "^(.+)$"}}}},
            "watch": {"bySelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]}},
        },
    ]
    response = crd_installed("POST", PUBLISHED, _published("fine", *entries))
    assert response.status_code == 201, response.text
    assert response.json()["spec"]["related"] == entries


def test_kubectl_shows_the_rules_message_and_applies_a_valid_object(
    kcpsim: KcpSim, crd_installed: Raw, tmp_path: Path
) -> None:
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["service"]
    broken = _published("broken", {**SECRET_ENTRY, "watch": {}})
    created = kubectl(kubeconfig, "create", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(broken))
    assert created.returncode == 1
    assert (
        'The PublishedResource "broken" is invalid: spec.related[0].watch: Invalid value: "object": ' in created.stderr
    )
    assert "set exactly one of byOwner and bySelector" in created.stderr, created.stderr
    fine = _published("fine", {**SECRET_ENTRY, "watch": {"byOwner": {}}})
    applied = kubectl(kubeconfig, "apply", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(fine))
    assert applied.returncode == 0, applied.stderr


def test_by_owner_with_a_field_is_refused_as_an_unknown_field_under_strict_validation(crd_installed: Raw) -> None:
    """`byOwner` takes no fields: the schema knows none, so strict validation (kubectl's default)
    refuses one."""
    body = _published("strict", {**SECRET_ENTRY, "watch": {"byOwner": {"kind": "Widget"}}})
    response = crd_installed("POST", PUBLISHED, body, params={"fieldValidation": "Strict"})
    assert response.status_code == 400, response.text
    assert 'unknown field \\"spec.related[0].watch.byOwner.kind\\"' in response.text
