"""Laws of PublishedResource parsing: never raises, problems always located, valid manifests round-trip."""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import given, strategies as st

from servlet.core.model import (
    LabelSelector,
    Naming,
    Origin,
    Projection,
    PublishedResource,
    PublishedResourceSpec,
    RegexRule,
    RelatedKind,
    RelatedReference,
    RelatedResource,
    ResourceFilter,
    Scope,
    SelectorOperator,
    SelectorRequirement,
    SourceResource,
    ValueReference,
)
from servlet.core.naming import CLUSTER_NAME, NAME_HASH, NAMESPACE_HASH, PLACEHOLDERS
from servlet.core.parsing import parse_published_resource

# Field names of the manifest mixed with junk, so random documents reach deep into the parser.
_FIELD_NAMES = [
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "uid",
    "generation",
    "spec",
    "resource",
    "apiGroup",
    "version",
    "versions",
    "filter",
    "namespace",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "projection",
    "plural",
    "shortNames",
    "categories",
    "scope",
    "naming",
    "related",
    "identifier",
    "origin",
    "reference",
    "path",
    "regex",
    "pattern",
    "replacement",
    "namming",
    "",
]
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.sampled_from(["Secret", "service", "In", "Exists", "Cluster", "spec.x", ".x", "(a", r"\1", "$remoteNme"]),
)
_documents = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(st.sampled_from(_FIELD_NAMES) | st.text(max_size=5), children, max_size=5)
    ),
    max_leaves=30,
)


@given(_documents)
def test_parsing_never_raises_and_every_problem_has_a_field(document: Any) -> None:
    result = parse_published_resource(document)
    assert (result.value is None) is bool(result.problems)
    assert all(problem.field and problem.message for problem in result.problems)


@given(_documents, st.sampled_from(["resource", "filter", "projection", "naming", "related"]))
def test_any_value_in_any_spec_field_is_a_value_or_located_problems(document: Any, field: str) -> None:
    manifest = {"spec": {"resource": {"apiGroup": "a.io", "kind": "A"}, field: document}}
    result = parse_published_resource(manifest)
    assert (result.value is None) is bool(result.problems)
    assert all(problem.field.startswith(f"spec.{field}") for problem in result.problems)


# ---- round trip: values -> manifest -> the same values --------------------------------------

_labels = st.from_regex(r"[a-z]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)
_groups = st.lists(_labels, min_size=2, max_size=3).map(".".join)
_kinds = st.from_regex(r"[A-Z][a-zA-Z0-9]{0,12}", fullmatch=True)
_optional_names = st.none() | st.lists(_labels, max_size=3).map(tuple)
_patterns = st.lists(st.sampled_from(PLACEHOLDERS) | st.sampled_from(["-", "x-", "."]), min_size=1, max_size=4).map(
    "-".join,
)
# A namespace is a DNS label: a pattern with a '.' of its own can never yield one.
_namespace_patterns = st.lists(
    st.sampled_from(PLACEHOLDERS) | st.sampled_from(["-", "x-"]), min_size=1, max_size=4
).map("-".join)
# Namespace patterns valid without the shared-namespace opt-in: the cluster name, and the remote
# namespace and name only as hashes.
_per_workspace_patterns = st.lists(
    st.sampled_from([CLUSTER_NAME, NAMESPACE_HASH, NAME_HASH]) | st.sampled_from(["-", "x-"]),
    max_size=3,
).map(lambda parts: "-".join([CLUSTER_NAME, *parts]))
_selectors = st.builds(
    LabelSelector,
    match_labels=st.dictionaries(_labels, _labels | st.just(""), max_size=2),
    match_expressions=st.lists(
        st.builds(
            SelectorRequirement,
            key=_labels,
            operator=st.just(SelectorOperator.IN),
            values=st.lists(_labels, min_size=1, max_size=2).map(tuple),
        )
        | st.builds(SelectorRequirement, key=_labels, operator=st.just(SelectorOperator.DOES_NOT_EXIST)),
        max_size=2,
    ).map(tuple),
)
_regexes = st.none() | st.sampled_from(
    [
        RegexRule(pattern="^(.+)$", replacement=r"\1-tls"),
        RegexRule(pattern="", replacement="kube-system"),
        RegexRule(pattern="(?P<n>[a-z]+)", replacement=r"\g<n>"),
        RegexRule(pattern="-cert$", replacement=""),
    ]
)
_value_references = st.builds(
    ValueReference,
    path=st.sampled_from(["spec.secretName", "metadata.name", "spec.tls[0].name"]),
    regex=_regexes,
)
# A related object's namespace may not come from the tenant's spec: status, metadata.namespace or a constant.
_namespace_references = st.builds(
    ValueReference,
    path=st.sampled_from(["status.secretNamespace", "metadata.namespace"]),
    regex=_regexes,
) | st.builds(
    ValueReference,
    path=st.sampled_from(["spec.secretName", "metadata.uid"]),
    regex=st.builds(RegexRule, pattern=st.just(""), replacement=_labels),
)
_related_lists = st.lists(
    st.builds(
        RelatedResource,
        identifier=_labels,
        origin=st.sampled_from(list(Origin)),
        kind=st.sampled_from(list(RelatedKind)),
        reference=st.builds(RelatedReference, name=_value_references, namespace=st.none() | _namespace_references),
    ),
    max_size=3,
    unique_by=lambda related: related.identifier,
).map(tuple)
_kcp_versions = st.from_regex(r"v[1-9][0-9]?((alpha|beta)[1-9])?", fullmatch=True)
_published_resources = st.builds(
    PublishedResource,
    name=_labels,
    uid=st.uuids().map(str),
    generation=st.integers(min_value=1, max_value=10**6),
    spec=st.builds(
        PublishedResourceSpec,
        resource=st.builds(SourceResource, api_group=_groups, kind=_kinds, version=st.none() | _labels)
        | st.builds(
            SourceResource,
            api_group=_groups,
            kind=_kinds,
            versions=st.lists(_labels, max_size=3, unique=True).map(tuple),
        ),
        filter=st.builds(ResourceFilter, namespace=st.none() | _labels, labels=st.none() | _selectors),
        projection=st.builds(
            Projection,
            version=st.none() | _labels,
            kind=st.none() | _kinds,
            plural=st.none() | _labels,
            short_names=_optional_names,
            categories=_optional_names,
            scope=st.none() | st.sampled_from(list(Scope)),
        ).flatmap(
            lambda projection: (
                st.just(projection)
                if projection.version is not None
                else st.builds(
                    attrs.evolve,
                    st.just(projection),
                    versions=st.dictionaries(_labels, _kcp_versions, max_size=3).filter(
                        lambda renames: len(set(renames.values())) == len(renames)
                    ),
                )
            )
        ),
        naming=st.builds(
            Naming,
            namespace=st.none() | _per_workspace_patterns,
            name=st.none() | _patterns,
            allow_shared_namespaces=st.booleans(),
        )
        | st.builds(
            Naming, namespace=_namespace_patterns, name=st.none() | _patterns, allow_shared_namespaces=st.just(True)
        ),
        related=_related_lists,
    ),
).map(lambda published: attrs.evolve(published, spec=_safe_related(published.spec)))


def _safe_related(spec: PublishedResourceSpec) -> PublishedResourceSpec:
    """With shared namespaces, a service-origin object's namespace comes from status (the tenant may choose it)."""
    if not spec.naming.allow_shared_namespaces:
        return spec
    from_status = ValueReference(path="status.secretNamespace")
    related = tuple(
        attrs.evolve(item, reference=attrs.evolve(item.reference, namespace=from_status))
        if item.origin is Origin.SERVICE
        else item
        for item in spec.related
    )
    return attrs.evolve(spec, related=related)


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _selector_manifest(selector: LabelSelector) -> dict[str, Any]:
    return {
        "matchLabels": dict(selector.match_labels),
        "matchExpressions": [
            _without_none(
                {
                    "key": requirement.key,
                    "operator": requirement.operator.value,
                    "values": list(requirement.values) or None,
                }
            )
            for requirement in selector.match_expressions
        ],
    }


def _reference_manifest(reference: ValueReference | None) -> dict[str, Any] | None:
    if reference is None:
        return None
    regex = reference.regex
    return _without_none(
        {
            "path": reference.path,
            "regex": None if regex is None else {"pattern": regex.pattern, "replacement": regex.replacement},
        }
    )


def _manifest(published: PublishedResource) -> dict[str, Any]:
    spec = published.spec
    projection = spec.projection
    return {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": published.name, "uid": published.uid, "generation": published.generation},
        "spec": {
            "resource": _without_none(
                {
                    "apiGroup": spec.resource.api_group,
                    "kind": spec.resource.kind,
                    "version": spec.resource.version,
                    "versions": None if spec.resource.versions is None else list(spec.resource.versions),
                }
            ),
            "filter": _without_none(
                {
                    "namespace": spec.filter.namespace,
                    "resource": None if spec.filter.labels is None else _selector_manifest(spec.filter.labels),
                }
            ),
            "projection": _without_none(
                {
                    "version": projection.version,
                    "versions": dict(projection.versions) or None,
                    "kind": projection.kind,
                    "plural": projection.plural,
                    "shortNames": None if projection.short_names is None else list(projection.short_names),
                    "categories": None if projection.categories is None else list(projection.categories),
                    "scope": None if projection.scope is None else projection.scope.value,
                }
            ),
            "naming": _without_none(
                {
                    "namespace": spec.naming.namespace,
                    "name": spec.naming.name,
                    "allowSharedNamespaces": spec.naming.allow_shared_namespaces or None,
                }
            ),
            "related": [
                {
                    "identifier": related.identifier,
                    "origin": related.origin.value,
                    "kind": related.kind.value,
                    "reference": _without_none(
                        {
                            "name": _reference_manifest(related.reference.name),
                            "namespace": _reference_manifest(related.reference.namespace),
                        }
                    ),
                }
                for related in spec.related
            ],
        },
    }


@given(_published_resources)
def test_a_valid_manifest_parses_back_to_the_values_it_was_built_from(published: PublishedResource) -> None:
    result = parse_published_resource(_manifest(published))
    assert result.problems == ()
    assert result.value == published
