"""Publishing several versions of a CRD: Kubernetes' version order, selection, renaming, storage."""

from __future__ import annotations

from typing import Any

import pytest

from servlet.core.model import Projection, PublishedResource, PublishedResourceSpec, SourceResource
from servlet.core.projection import Projected, project
from servlet.core.versions import by_version_priority

GROUP = "widgets.example.corp"
SCHEMA_V1 = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "string"}}}}}
SCHEMA_V2 = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "string"}, "colour": {"type": "string"}}}
    },
}


def _version(
    name: str, *, served: bool = True, storage: bool = False, schema: Any = None, **extra: Any
) -> dict[str, Any]:
    return {
        "name": name,
        "served": served,
        "storage": storage,
        "schema": {"openAPIV3Schema": schema or SCHEMA_V1},
        **extra,
    }


def _crd(*versions: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {
            "group": "example.io",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "versions": list(versions),
        },
    }


V1_V2 = _crd(_version("v1", storage=True), _version("v2", schema=SCHEMA_V2))


def _published(
    *, version: str | None = None, versions: tuple[str, ...] | None = None, projection: Projection = Projection()
) -> PublishedResource:
    source = SourceResource(api_group="example.io", kind="Widget", version=version, versions=versions)
    return PublishedResource(name="widgets", spec=PublishedResourceSpec(resource=source, projection=projection))


def _project(crd: dict[str, Any], published: PublishedResource) -> Projected:
    result = project(crd=crd, published=published, api_group=GROUP)
    assert isinstance(result, Projected), result
    return result


def _problems(crd: dict[str, Any], published: PublishedResource) -> list[str]:
    result = project(crd=crd, published=published, api_group=GROUP)
    assert isinstance(result, tuple), result
    return [str(problem) for problem in result]


def _served(projected: Projected) -> list[tuple[str, bool]]:
    return [(v["name"], v["storage"]) for v in projected.schema_spec["versions"]]


# -- Kubernetes' version order ----------------------------------------------------------------


def test_versions_sort_ga_then_beta_then_alpha_then_other_names_alphabetically() -> None:
    shuffled = [
        "foo10",
        "v1alpha1",
        "v11alpha2",
        "v2",
        "v1beta1",
        "v10beta3",
        "v1",
        "v12alpha1",
        "foo1",
        "v11beta2",
        "v3beta1",
        "v1gamma1",
        "v10",
    ]
    assert by_version_priority(shuffled) == [
        "v10",
        "v2",
        "v1",
        "v11beta2",
        "v10beta3",
        "v3beta1",
        "v1beta1",
        "v12alpha1",
        "v11alpha2",
        "v1alpha1",
        "foo1",
        "foo10",
        "v1gamma1",
    ]


# -- selection ----------------------------------------------------------------------------------


def test_listed_versions_are_published_in_kubernetes_order_whatever_the_list_order() -> None:
    one_way = _project(V1_V2, _published(versions=("v1", "v2")))
    other_way = _project(V1_V2, _published(versions=("v2", "v1")))
    assert _served(one_way) == [("v2", False), ("v1", True)]
    assert one_way.schema_name == other_way.schema_name
    assert one_way.remote_versions == ("v2", "v1")


def test_each_published_version_keeps_its_own_schema_and_kcp_gets_no_conversion_webhook() -> None:
    projected = _project(V1_V2, _published(versions=("v2", "v1")))
    by_name = {v["name"]: v for v in projected.schema_spec["versions"]}
    assert by_name["v1"]["schema"] == SCHEMA_V1 and by_name["v2"]["schema"] == SCHEMA_V2
    assert all(v["served"] for v in by_name.values())
    assert projected.schema_spec["conversion"] == {"strategy": "None"}


def test_an_empty_list_publishes_every_served_version() -> None:
    crd = _crd(_version("v1alpha1", served=False), _version("v1beta1"), _version("v1", storage=True))
    assert _served(_project(crd, _published(versions=()))) == [("v1", True), ("v1beta1", False)]


def test_the_one_version_forms_publish_one_version_without_conversion() -> None:
    for published in (_published(), _published(version="v1"), _published(versions=("v1",))):
        projected = _project(V1_V2, published)
        assert _served(projected) == [("v1", True)]
        assert "conversion" not in projected.schema_spec
    assert (
        _project(V1_V2, _published(versions=("v1",))).schema_name
        == _project(V1_V2, _published(version="v1")).schema_name
    )


# -- storage and the versions the sync uses -----------------------------------------------------


def test_the_crds_storage_version_stays_the_storage_version_and_both_sides_sync_in_it() -> None:
    projected = _project(V1_V2, _published(versions=("v2", "v1"), projection=Projection(versions={"v1": "v1beta1"})))
    assert _served(projected) == [("v2", False), ("v1beta1", True)]
    assert projected.local.version == "v1" and projected.remote.version == "v1beta1"


def test_without_the_crds_storage_version_the_highest_published_version_is_stored() -> None:
    crd = _crd(_version("v1alpha1"), _version("v1beta1"), _version("v1", storage=True))
    projected = _project(crd, _published(versions=("v1alpha1", "v1beta1")))
    assert _served(projected) == [("v1beta1", True), ("v1alpha1", False)]
    assert projected.local.version == "v1beta1" and projected.remote.version == "v1beta1"


def test_the_status_subresource_is_that_of_the_stored_version() -> None:
    crd = _crd(_version("v1", storage=True, subresources={"status": {}}), _version("v2"))
    assert _project(crd, _published(versions=("v1", "v2"))).has_status_subresource
    crd = _crd(_version("v1", storage=True), _version("v2", subresources={"status": {}}))
    assert not _project(crd, _published(versions=("v1", "v2"))).has_status_subresource


# -- renaming ------------------------------------------------------------------------------------


def test_renamed_versions_are_sorted_by_their_kcp_names() -> None:
    projected = _project(V1_V2, _published(versions=(), projection=Projection(versions={"v2": "v1alpha1"})))
    assert projected.remote_versions == ("v1", "v1alpha1")


def test_a_rename_map_on_one_version_names_the_same_schema_as_the_one_version_rename() -> None:
    by_map = _project(V1_V2, _published(version="v1", projection=Projection(versions={"v1": "v1beta1"})))
    by_field = _project(V1_V2, _published(version="v1", projection=Projection(version="v1beta1")))
    assert by_map.schema_name == by_field.schema_name


# -- problems -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("crd", "published", "expected"),
    [
        (
            V1_V2,
            _published(versions=("v2", "v3")),
            ["spec.resource.versions[1]: the CRD has no version 'v3' (it has: v1, v2)"],
        ),
        (
            _crd(_version("v1", storage=True), _version("v2", served=False)),
            _published(versions=("v1", "v2")),
            ["spec.resource.versions[1]: the CRD does not serve version 'v2'"],
        ),
        (
            _crd(_version("v1", served=False, storage=True)),
            _published(versions=()),
            [
                "spec.resource.versions: is empty, which publishes every served version, but the CRD serves none "
                "(it has: v1)"
            ],
        ),
        (
            V1_V2,
            _published(versions=("v1", "v2"), projection=Projection(version="v1beta1")),
            [
                "spec.projection.version: renames one version, but 2 are published (v1, v2); rename them with "
                "spec.projection.versions"
            ],
        ),
        (
            V1_V2,
            _published(versions=("v2",), projection=Projection(versions={"v1": "v1beta1"})),
            ["spec.projection.versions.v1: the CRD version 'v1' is not published (published: v2)"],
        ),
        (
            V1_V2,
            _published(versions=("v1", "v2"), projection=Projection(versions={"v1": "v2"})),
            [
                "spec.projection.versions: 'v2' would name both the CRD's 'v1' and 'v2' in kcp; versions in kcp must be "
                "unique"
            ],
        ),
        (
            _crd(_version("v1", storage=True), _version("version2")),
            _published(versions=()),
            [
                "spec.projection.versions: the CRD's version 'version2' is not a version name kcp accepts "
                "(like v1, v1alpha1 or v2beta3); rename it here"
            ],
        ),
    ],
)
def test_a_bad_version_selection_names_the_field_and_the_version(
    crd: dict[str, Any],
    published: PublishedResource,
    expected: list[str],
) -> None:
    assert _problems(crd, published) == expected


def test_a_version_name_kcp_would_reject_can_be_renamed() -> None:
    crd = _crd(_version("v1", storage=True), _version("version2"))
    projected = _project(crd, _published(versions=(), projection=Projection(versions={"version2": "v2"})))
    assert projected.remote_versions == ("v2", "v1")
