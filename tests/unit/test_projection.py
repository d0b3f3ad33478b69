"""CRD -> APIResourceSchema projection (SPEC 3)."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from servlet.core.model import (
    Problem,
    Projection,
    PublishedResource,
    PublishedResourceSpec,
    ResourceType,
    Scope,
    SourceResource,
)
from servlet.core.projection import Projected, pluralize, project, schema_manifest, schema_name

GROUP = "certificates.example.corp"
SCALE = {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}
EXAMPLE_CRD = Path(__file__).resolve().parents[2] / "examples" / "certificates" / "crd-certificates.yaml"
SCHEMA = {
    "type": "object",
    "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
}


def _version(name: str, *, served: bool = True, storage: bool = False, **extra: Any) -> dict[str, Any]:
    return {"name": name, "served": served, "storage": storage, "schema": {"openAPIV3Schema": SCHEMA}, **extra}


def _crd(*versions: dict[str, Any], scope: str = "Namespaced", **names: Any) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {
            "group": "example.io",
            "scope": scope,
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget", **names},
            "versions": list(versions) or [_version("v1", storage=True)],
        },
    }


def _published(
    *,
    version: str | None = None,
    group: str = "example.io",
    kind: str = "Widget",
    projection: Projection = Projection(),
) -> PublishedResource:
    return PublishedResource(
        name="publish-widgets",
        spec=PublishedResourceSpec(
            resource=SourceResource(api_group=group, kind=kind, version=version),
            projection=projection,
        ),
    )


def _projected(crd: dict[str, Any], published: PublishedResource) -> Projected:
    result = project(crd=crd, published=published, api_group=GROUP)
    assert isinstance(result, Projected), result
    return result


def _problems(crd: dict[str, Any], published: PublishedResource) -> tuple[Problem, ...]:
    result = project(crd=crd, published=published, api_group=GROUP)
    assert isinstance(result, tuple), result
    return result


def test_the_seed_projects_cert_manager_certificates_as_zertifikat_v1beta1() -> None:
    crd = yaml.safe_load(EXAMPLE_CRD.read_text())
    published = _published(
        group="cert-manager.io",
        kind="Certificate",
        version="v1",
        projection=Projection(version="v1beta1", kind="Zertifikat", short_names=("zerts",)),
    )

    projected = _projected(crd, published)

    crd_version = crd["spec"]["versions"][0]
    assert projected.schema_spec == {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {
            "kind": "Zertifikat",
            "listKind": "ZertifikatList",
            "singular": "zertifikat",
            "plural": "zertifikats",
            "shortNames": ["zerts"],
            "categories": ["cert-manager"],
        },
        "versions": [
            {
                "name": "v1beta1",
                "served": True,
                "storage": True,
                "schema": crd_version["schema"]["openAPIV3Schema"],
                "subresources": {"status": {}},
                "additionalPrinterColumns": crd_version["additionalPrinterColumns"],
            }
        ],
    }
    assert projected.schema_name.startswith("v") and projected.schema_name.endswith(f".zertifikats.{GROUP}")
    assert projected.local == ResourceType(
        group="cert-manager.io", version="v1", kind="Certificate", plural="certificates", namespaced=True
    )
    assert projected.remote == ResourceType(
        group=GROUP, version="v1beta1", kind="Zertifikat", plural="zertifikats", namespaced=True
    )
    assert projected.has_status_subresource


def test_the_plural_override_wins_over_the_computed_plural_of_a_projected_kind() -> None:
    projected = _projected(_crd(), _published(projection=Projection(kind="Zertifikat", plural="zertifikate")))

    assert projected.schema_spec["names"]["plural"] == "zertifikate"
    assert projected.schema_spec["names"]["singular"] == "zertifikat"
    assert projected.remote.plural == "zertifikate"
    assert projected.schema_name.endswith(f".zertifikate.{GROUP}")


def test_the_plural_override_applies_even_when_the_kind_is_kept() -> None:
    names = _projected(_crd(), _published(projection=Projection(plural="gadgets"))).schema_spec["names"]

    assert names == {"kind": "Widget", "listKind": "WidgetList", "singular": "widget", "plural": "gadgets"}


@pytest.mark.parametrize(
    ("kind", "plural"),
    [
        ("Policy", "policies"),
        ("Class", "classes"),
        ("Zertifikat", "zertifikats"),
        ("Box", "boxes"),
    ],
)
def test_a_projected_kind_renames_every_derived_name(kind: str, plural: str) -> None:
    names = _projected(_crd(), _published(projection=Projection(kind=kind))).schema_spec["names"]

    assert names == {"kind": kind, "listKind": f"{kind}List", "singular": kind.lower(), "plural": plural}


def test_without_a_projection_the_crd_names_are_published_in_the_servlet_group() -> None:
    crd = _crd(shortNames=["wd"], categories=["all"])
    projected = _projected(crd, _published())

    assert projected.schema_spec["names"] == crd["spec"]["names"]
    assert projected.schema_spec["group"] == GROUP
    assert projected.schema_name.endswith(f".widgets.{GROUP}")


@pytest.mark.parametrize(
    ("projection", "short_names", "categories"),
    [
        (Projection(), ["wd"], ["all"]),
        (Projection(short_names=("w", "wdg")), ["w", "wdg"], ["all"]),
        (Projection(categories=("tools",)), ["wd"], ["tools"]),
        (Projection(short_names=(), categories=()), None, None),
    ],
)
def test_short_names_and_categories_are_copied_unless_projected_and_an_empty_list_clears_them(
    projection: Projection,
    short_names: list[str] | None,
    categories: list[str] | None,
) -> None:
    crd = _crd(shortNames=["wd"], categories=["all"])

    names = _projected(crd, _published(projection=projection)).schema_spec["names"]

    assert names.get("shortNames") == short_names
    assert names.get("categories") == categories


def test_a_cleared_list_names_the_same_schema_as_a_crd_without_that_list() -> None:
    cleared = _projected(_crd(shortNames=["wd"]), _published(projection=Projection(short_names=())))
    never_had = _projected(_crd(), _published())

    assert cleared.schema_name == never_had.schema_name


@pytest.mark.parametrize(
    ("crd_scope", "projected_scope", "remote_namespaced"),
    [
        ("Namespaced", Scope.CLUSTER, False),
        ("Cluster", Scope.NAMESPACED, True),
        ("Cluster", None, False),
    ],
)
def test_the_scope_is_the_projection_scope_or_the_crds(
    crd_scope: str,
    projected_scope: Scope | None,
    remote_namespaced: bool,
) -> None:
    projected = _projected(_crd(scope=crd_scope), _published(projection=Projection(scope=projected_scope)))

    assert projected.schema_spec["scope"] == ("Namespaced" if remote_namespaced else "Cluster")
    assert projected.remote.namespaced is remote_namespaced
    assert projected.local.namespaced is (crd_scope == "Namespaced")


def test_without_a_requested_version_the_storage_version_is_published() -> None:
    crd = _crd(_version("v1alpha1"), _version("v1", storage=True), _version("v2alpha1"))

    projected = _projected(crd, _published())

    assert [v["name"] for v in projected.schema_spec["versions"]] == ["v1"]
    assert projected.local.version == "v1"
    assert projected.remote.version == "v1"


def test_a_requested_version_is_published_as_the_only_served_storage_version() -> None:
    crd = _crd(_version("v1alpha1", deprecated=True, deprecationWarning="use v1"), _version("v1", storage=True))

    projected = _projected(crd, _published(version="v1alpha1"))

    assert projected.schema_spec["versions"] == [
        {
            "name": "v1alpha1",
            "served": True,
            "storage": True,
            "schema": SCHEMA,
            "deprecated": True,
            "deprecationWarning": "use v1",
        }
    ]
    assert projected.local.version == "v1alpha1"


@pytest.mark.parametrize(
    ("crd", "version", "message_part"),
    [
        (_crd(_version("v1", storage=True)), "v2", "no version 'v2'"),
        (
            _crd(_version("v1", storage=True), _version("v1beta1", served=False)),
            "v1beta1",
            "does not serve version 'v1beta1'",
        ),
        (_crd(_version("v1", served=False, storage=True)), None, "does not serve version 'v1'"),
        (_crd(_version("v1")), None, "no version as its storage version"),
    ],
)
def test_a_missing_or_unserved_version_is_a_problem_of_spec_resource_version(
    crd: dict[str, Any],
    version: str | None,
    message_part: str,
) -> None:
    problems = _problems(crd, _published(version=version))

    assert [p.field for p in problems] == ["spec.resource.version"]
    assert message_part in problems[0].message


@pytest.mark.parametrize(
    ("group", "kind", "field"),
    [
        ("other.io", "Widget", "spec.resource.apiGroup"),
        ("example.io", "Gadget", "spec.resource.kind"),
    ],
)
def test_a_crd_that_is_not_the_published_resource_is_a_problem(group: str, kind: str, field: str) -> None:
    problems = _problems(_crd(), _published(group=group, kind=kind))

    assert [p.field for p in problems] == [field]


@pytest.mark.parametrize(
    ("subresources", "has_status"),
    [
        ({"status": {}}, True),
        ({"status": {}, "scale": SCALE}, True),
        ({"scale": SCALE}, False),
        (None, False),
    ],
)
def test_the_status_subresource_of_the_chosen_version_is_reported_and_copied(
    subresources: dict[str, Any] | None,
    has_status: bool,
) -> None:
    extra: dict[str, Any] = {} if subresources is None else {"subresources": subresources}
    crd = _crd(_version("v1", storage=True, **extra), _version("v2", subresources={"status": {}}))

    projected = _projected(crd, _published(version="v1"))

    assert projected.has_status_subresource is has_status
    assert projected.schema_spec["versions"][0].get("subresources") == subresources


@pytest.mark.parametrize(
    ("projection", "field"),
    [
        (Projection(plural="Zertifikate"), "spec.projection.plural"),
        (Projection(plural="zerti_fikate"), "spec.projection.plural"),
        (Projection(kind="Zerti fikat"), "spec.projection.kind"),
        (Projection(kind="9Lives"), "spec.projection.kind"),
        (Projection(kind="K" * 64), "spec.projection.kind"),
        (Projection(kind="K" * 63), "spec.projection.plural"),
        (Projection(version="1"), "spec.projection.version"),
        (Projection(version="v1.0"), "spec.projection.version"),
        (Projection(version="v0"), "spec.projection.version"),
        (Projection(version="V1"), "spec.projection.version"),
        (Projection(short_names=("ok", "Bad")), "spec.projection.shortNames[1]"),
        (Projection(categories=("all tools",)), "spec.projection.categories[0]"),
    ],
)
def test_a_projection_that_yields_an_invalid_kubernetes_name_is_a_problem(
    projection: Projection,
    field: str,
) -> None:
    problems = _problems(_crd(), _published(projection=projection))

    assert [p.field for p in problems] == [field]


@pytest.mark.parametrize("version", ["v1", "v1alpha1", "v2beta3", "v10"])
def test_kubernetes_version_names_are_accepted_as_projected_versions(version: str) -> None:
    assert _projected(_crd(), _published(projection=Projection(version=version))).remote.version == version


def test_every_problem_is_reported_at_once() -> None:
    problems = _problems(
        _crd(), _published(version="v9", kind="Gadget", projection=Projection(plural="Bad", version="one"))
    )

    assert {p.field for p in problems} == {
        "spec.resource.kind",
        "spec.resource.version",
        "spec.projection.plural",
        "spec.projection.version",
    }
    assert "'Bad'" in next(p.message for p in problems if p.field == "spec.projection.plural")


def test_a_crd_that_leaves_singular_and_list_kind_to_defaulting_still_gives_complete_names() -> None:
    crd = _crd()
    del crd["spec"]["names"]["singular"], crd["spec"]["names"]["listKind"]

    names = _projected(crd, _published()).schema_spec["names"]

    assert names == {"kind": "Widget", "listKind": "WidgetList", "singular": "widget", "plural": "widgets"}


def test_the_schema_name_is_the_sha1_of_the_canonical_spec_computed_independently() -> None:
    projected = _projected(_crd(), _published())

    expected_spec = {
        "group": GROUP,
        "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
        "scope": "Namespaced",
        "versions": [{"name": "v1", "served": True, "storage": True, "schema": SCHEMA}],
    }
    serialised = json.dumps(expected_spec, sort_keys=True, separators=(",", ":")).encode("utf-8")
    digest = hashlib.sha1(serialised).hexdigest()[:8]
    assert projected.schema_spec == expected_spec
    assert projected.schema_name == f"v{digest}.widgets.{GROUP}"
    # Pinned (checked with `sha1sum` on the serialised text) so a change of the serialisation
    # shows up as a renamed schema.
    assert projected.schema_name == "v07bbbc0b.widgets.certificates.example.corp"


def test_a_changed_schema_yields_a_new_schema_name() -> None:
    changed = _crd()
    changed["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = {**SCHEMA, "required": ["spec"]}

    assert _projected(changed, _published()).schema_name != _projected(_crd(), _published()).schema_name


def test_key_order_in_the_crd_does_not_change_the_schema_name() -> None:
    crd = _crd()
    reordered = copy.deepcopy(crd)
    reordered["spec"]["names"] = dict(reversed(list(crd["spec"]["names"].items())))
    reordered["spec"]["versions"][0] = dict(reversed(list(crd["spec"]["versions"][0].items())))

    assert _projected(reordered, _published()).schema_name == _projected(crd, _published()).schema_name


def test_schema_name_uses_core_for_the_empty_group() -> None:
    assert schema_name(spec={"group": "", "names": {"plural": "things"}}).endswith(".things.core")


def test_the_projection_does_not_share_state_with_the_crd() -> None:
    crd = _crd()
    original = copy.deepcopy(crd)

    projected = _projected(crd, _published())
    projected.schema_spec["versions"][0]["schema"]["properties"].clear()
    schema_manifest(projected)["spec"]["names"].clear()

    assert crd == original
    assert projected.schema_spec["names"]


def test_the_schema_manifest_is_an_apiresourceschema_named_after_its_hash() -> None:
    projected = _projected(_crd(), _published())

    assert schema_manifest(projected) == {
        "apiVersion": "apis.kcp.io/v1alpha1",
        "kind": "APIResourceSchema",
        "metadata": {"name": projected.schema_name},
        "spec": projected.schema_spec,
    }


@pytest.mark.parametrize(
    ("word", "plural"),
    [
        ("policy", "policies"),
        ("class", "classes"),
        ("zertifikat", "zertifikats"),
        ("box", "boxes"),
        ("church", "churches"),
        ("dish", "dishes"),
        ("key", "keys"),
        ("day", "days"),
        ("bus", "buses"),
        ("status", "statuses"),
        ("quiz", "quizes"),
        ("widget", "widgets"),
        ("y", "ys"),
    ],
)
def test_pluralize_follows_three_documented_rules(word: str, plural: str) -> None:
    assert pluralize(word) == plural
