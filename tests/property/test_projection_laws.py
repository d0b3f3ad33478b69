"""Laws of the CRD -> APIResourceSchema projection (SPEC 3): deterministic, well-named, verbatim."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any

from hypothesis import assume, given, strategies as st

from servlet.core.model import Projection, PublishedResource, PublishedResourceSpec, Scope, SourceResource
from servlet.core.projection import Projected, pluralize, project, schema_manifest

GROUP = "certificates.example.corp"
_label = st.from_regex(r"[a-z][a-z0-9]{0,10}", fullmatch=True)
_version_name = st.from_regex(r"v[1-9][0-9]?((alpha|beta)[1-9])?", fullmatch=True)
_json_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=5))
_schema = st.recursive(
    _json_leaf,
    lambda inner: st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
).map(lambda body: {"type": "object", "x-example": body})


@st.composite
def _crds(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(_version_name, min_size=1, max_size=3, unique=True))
    storage = draw(st.sampled_from(names))
    versions = [
        {
            "name": name,
            "served": draw(st.booleans()) or name == storage,
            "storage": name == storage,
            "schema": {"openAPIV3Schema": draw(_schema)},
            **draw(
                st.fixed_dictionaries(
                    {},
                    optional={
                        "subresources": st.just({"status": {}}),
                        "additionalPrinterColumns": st.just(
                            [{"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}]
                        ),
                        "deprecated": st.booleans(),
                    },
                )
            ),
        }
        for name in names
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "spec": {
            "group": "example.io",
            "scope": draw(st.sampled_from(["Namespaced", "Cluster"])),
            "names": {
                "kind": "Widget",
                "listKind": "WidgetList",
                "plural": "widgets",
                "singular": "widget",
                **draw(st.fixed_dictionaries({}, optional={"shortNames": st.lists(_label, max_size=2)})),
            },
            "versions": versions,
        },
    }


_projections = st.builds(
    Projection,
    version=st.none() | _version_name,
    kind=st.none() | _label.map(str.capitalize),
    plural=st.none() | _label,
    short_names=st.none() | st.lists(_label, max_size=2).map(tuple),
    categories=st.none() | st.lists(_label, max_size=2).map(tuple),
    scope=st.none() | st.sampled_from(Scope),
)


@st.composite
def _inputs(draw: st.DrawFn) -> tuple[dict[str, Any], PublishedResource]:
    crd = draw(_crds())
    version = draw(st.none() | st.sampled_from([v["name"] for v in crd["spec"]["versions"] if v["served"]]))
    published = PublishedResource(
        name="p",
        spec=PublishedResourceSpec(
            resource=SourceResource(api_group="example.io", kind="Widget", version=version),
            projection=draw(_projections),
        ),
    )
    return crd, published


def _project(crd: dict[str, Any], published: PublishedResource) -> Projected:
    result = project(crd=crd, published=published, api_group=GROUP)
    assert isinstance(result, Projected), result
    return result


@given(_inputs())
def test_projection_is_deterministic_and_independent_of_key_order(
    inputs: tuple[dict[str, Any], PublishedResource],
) -> None:
    crd, published = inputs
    reordered = json.loads(json.dumps(crd))
    reordered["spec"] = dict(reversed(list(reordered["spec"].items())))
    reordered["spec"]["versions"] = [dict(reversed(list(v.items()))) for v in reordered["spec"]["versions"]]

    assert _project(crd, published) == _project(copy.deepcopy(crd), published) == _project(reordered, published)


@given(_inputs())
def test_the_schema_name_follows_the_pattern_and_hashes_the_spec(
    inputs: tuple[dict[str, Any], PublishedResource],
) -> None:
    projected = _project(*inputs)

    plural = projected.schema_spec["names"]["plural"]
    assert re.fullmatch(rf"v[0-9a-f]{{8}}\.{re.escape(plural)}\.{re.escape(GROUP)}", projected.schema_name)
    canonical = json.dumps(projected.schema_spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False)

    assert projected.schema_name[1:9] == hashlib.sha1(canonical.encode("utf-8")).hexdigest()[:8]
    assert schema_manifest(projected)["metadata"] == {"name": projected.schema_name}


@given(_inputs())
def test_exactly_the_chosen_version_is_published_with_its_schema_unchanged(
    inputs: tuple[dict[str, Any], PublishedResource],
) -> None:
    crd, published = inputs
    projected = _project(crd, published)

    chosen = next(v for v in crd["spec"]["versions"] if v["name"] == projected.local.version)
    assert published.spec.resource.version in (None, chosen["name"])
    assert published.spec.resource.version is not None or chosen["storage"]
    [version] = projected.schema_spec["versions"]
    assert version["served"] is version["storage"] is True
    assert version["name"] == (published.spec.projection.version or chosen["name"]) == projected.remote.version
    assert version["schema"] == chosen["schema"]["openAPIV3Schema"]
    assert projected.has_status_subresource is ("status" in chosen.get("subresources", {}))
    assert projected.remote.plural == projected.schema_spec["names"]["plural"]
    assert projected.remote.group == projected.schema_spec["group"] == GROUP


@given(_inputs(), _schema)
def test_a_different_schema_gives_a_different_name(
    inputs: tuple[dict[str, Any], PublishedResource], other: dict[str, Any]
) -> None:
    crd, published = inputs
    before = _project(crd, published)
    changed = copy.deepcopy(crd)
    version = next(v for v in changed["spec"]["versions"] if v["name"] == before.local.version)
    assume(other != version["schema"]["openAPIV3Schema"])
    version["schema"]["openAPIV3Schema"] = other

    assert _project(changed, published).schema_name != before.schema_name


@given(_label)
def test_a_plural_is_longer_than_its_singular_and_starts_with_its_stem(word: str) -> None:
    plural = pluralize(word)

    assert len(plural) > len(word)
    assert plural.startswith(word[:-1])
