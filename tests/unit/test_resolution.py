"""Resolving a PublishedResource against the CRDs at hand: the one verdict the daemon and both plans give."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from servlet.core.parsing import parse_published_resource
from servlet.core.projection import Projected
from servlet.core.resolution import (
    CRD_NOT_FOUND,
    INVALID_PROJECTION,
    INVALID_SPEC,
    crd_identity,
    find_crd,
    published_identity,
    resolve,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "certificates"
API_GROUP = "certificates.example.corp"


def _load(name: str) -> dict[str, Any]:
    loaded = yaml.safe_load((EXAMPLE / name).read_text())
    assert isinstance(loaded, dict)
    return loaded


def _other_crds() -> list[dict[str, Any]]:
    """CRDs that share the group or the kind with the example's, never both."""
    other_group = _load("crd-certificates.yaml")
    other_group["metadata"]["name"] = "certificates.other.example.org"
    other_group["spec"]["group"] = "other.example.org"
    other_kind = _load("crd-certificates.yaml")
    other_kind["metadata"]["name"] = "issuers.cert-manager.io"
    other_kind["spec"]["names"].update(kind="Issuer", plural="issuers", singular="issuer", listKind="IssuerList")
    return [other_group, other_kind]


def test_the_crd_is_found_by_the_group_and_kind_the_published_resource_names() -> None:
    crd, manifest = _load("crd-certificates.yaml"), _load("publishedresource.yaml")
    published = parse_published_resource(manifest).value
    assert published is not None
    assert find_crd([*_other_crds(), crd], published) is crd
    assert find_crd(_other_crds(), published) is None
    assert crd_identity(crd) == published_identity(manifest) == ("cert-manager.io", "Certificate")


def test_a_published_resource_with_its_crd_resolves_to_its_projection() -> None:
    crd, manifest = _load("crd-certificates.yaml"), _load("publishedresource.yaml")
    resolution = resolve(
        parsed=parse_published_resource(manifest), crd=crd, api_group=API_GROUP, crds_from="on the service cluster"
    )
    assert isinstance(resolution.projected, Projected)
    assert resolution.projected.remote.group == API_GROUP
    assert (resolution.problems, resolution.reason) == ((), "")


def test_a_missing_crd_is_named_with_where_it_was_looked_for() -> None:
    resolution = resolve(
        parsed=parse_published_resource(_load("publishedresource.yaml")),
        crd=None,
        api_group=API_GROUP,
        crds_from="among the inputs",
    )
    assert resolution.reason == CRD_NOT_FOUND and resolution.projected is None
    [problem] = resolution.problems
    assert problem.field == "spec.resource"
    assert problem.message == (
        "there is no CustomResourceDefinition for kind 'Certificate' in group 'cert-manager.io' among the inputs"
    )


def test_a_crd_being_deleted_counts_as_gone() -> None:
    crd = _load("crd-certificates.yaml")
    crd["metadata"]["deletionTimestamp"] = "2025-03-03T09:00:00Z"
    resolution = resolve(
        parsed=parse_published_resource(_load("publishedresource.yaml")),
        crd=crd,
        api_group=API_GROUP,
        crds_from="on the service cluster",
    )
    assert resolution.reason == CRD_NOT_FOUND and resolution.projected is None
    assert resolution.problems[0].message == (
        "the CustomResourceDefinition for kind 'Certificate' in group "
        "'cert-manager.io' on the service cluster is being deleted"
    )


def test_an_invalid_spec_reports_the_parser_problems_and_no_crd_is_needed() -> None:
    manifest = _load("publishedresource.yaml")
    manifest["spec"]["naming"] = {"name": "$remoteNme"}
    parsed = parse_published_resource(manifest)
    resolution = resolve(parsed=parsed, crd=None, api_group=API_GROUP, crds_from="among the inputs")
    assert resolution.reason == INVALID_SPEC and resolution.published is None
    assert resolution.problems == parsed.problems and resolution.problems


def test_a_crd_that_cannot_be_projected_as_asked_reports_why() -> None:
    crd, manifest = _load("crd-certificates.yaml"), copy.deepcopy(_load("publishedresource.yaml"))
    manifest["spec"]["resource"]["version"] = "v9"  # the CRD serves no such version
    resolution = resolve(
        parsed=parse_published_resource(manifest), crd=crd, api_group=API_GROUP, crds_from="among the inputs"
    )
    assert resolution.reason == INVALID_PROJECTION and resolution.projected is None
    assert resolution.published is not None
    assert any("v9" in problem.message for problem in resolution.problems), resolution.problems
