"""PublishedResource manifests into model values, or every problem at once (SPEC 2 and 8)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

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
    RelatedWatch,
    ResourceFilter,
    Scope,
    SelectorOperator,
    SelectorRequirement,
    SourceResource,
    ValueReference,
)
from servlet.core.parsing import ParseResult, parse_published_resource

CERT_MANAGER = SourceResource(api_group="cert-manager.io", kind="Certificate", version="v1")


def _manifest(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": "publish-certmanager-certs"},
        "spec": {"resource": {"kind": "Certificate", "apiGroup": "cert-manager.io", "version": "v1"}, **spec},
    }


def _related(**fields: Any) -> dict[str, Any]:
    item: dict[str, Any] = {
        "identifier": "tls-secret",
        "origin": "service",
        "kind": "Secret",
        "reference": {"name": {"path": "spec.secretName"}},
    }
    item.update(fields)
    return item


def _spec(result: ParseResult) -> PublishedResourceSpec:
    assert result.problems == ()
    assert result.value is not None
    return result.value.spec


def _problems(manifest: Any) -> list[str]:
    result = parse_published_resource(manifest)
    assert result.value is None
    return [str(problem) for problem in result.problems]


def test_the_seed_minimal_example_parses_with_defaults() -> None:
    result = parse_published_resource(_manifest())
    assert result == ParseResult(
        value=PublishedResource(name="publish-certmanager-certs", spec=PublishedResourceSpec(resource=CERT_MANAGER)),
        problems=(),
    )


def test_the_seed_certificate_example_with_its_tls_secret() -> None:
    # The seed's namespace was kube-system, which namespace safety refuses (test_namespace_safety.py).
    manifest = _manifest(
        naming={
            "namespace": "certs-$remoteClusterName",
            "name": "$remoteClusterName-$remoteNamespaceHash-$remoteNameHash",
        },
        related=[_related()],
    )
    assert _spec(parse_published_resource(manifest)) == PublishedResourceSpec(
        resource=CERT_MANAGER,
        naming=Naming(
            namespace="certs-$remoteClusterName", name="$remoteClusterName-$remoteNamespaceHash-$remoteNameHash"
        ),
        related=(
            RelatedResource(
                identifier="tls-secret",
                origin=Origin.SERVICE,
                kind=RelatedKind.SECRET,
                reference=RelatedReference(name=ValueReference(path="spec.secretName")),
            ),
        ),
    )


def test_the_seed_example_without_an_identifier_is_rejected() -> None:
    item = _related()
    del item["identifier"]
    assert _problems(_manifest(related=[item])) == ["spec.related[0].identifier: is required"]


def test_several_versions_and_their_kcp_names_parse() -> None:
    manifest = _manifest(projection={"versions": {"v1": "v1beta1"}})
    manifest["spec"]["resource"] = {"apiGroup": "cert-manager.io", "kind": "Certificate", "versions": ["v2", "v1"]}
    spec = _spec(parse_published_resource(manifest))
    assert spec.resource.versions == ("v2", "v1") and spec.resource.version is None
    assert dict(spec.projection.versions) == {"v1": "v1beta1"}


def test_an_empty_version_list_is_kept_apart_from_no_list() -> None:
    # `versions: []` publishes every served version; no list publishes the storage version.
    manifest = _manifest()
    manifest["spec"]["resource"] = {"apiGroup": "cert-manager.io", "kind": "Certificate", "versions": []}
    assert _spec(parse_published_resource(manifest)).resource.versions == ()
    del manifest["spec"]["resource"]["versions"]
    assert _spec(parse_published_resource(manifest)).resource.versions is None


def test_the_seed_constant_namespace_injection_parses() -> None:
    reference = {
        "name": {"path": "spec.secretName"},
        "namespace": {"path": "metadata.uid", "regex": {"replacement": "kube-system"}},
    }
    spec = _spec(parse_published_resource(_manifest(related=[_related(reference=reference)])))
    assert spec.related[0].reference.namespace == ValueReference(
        path="metadata.uid",
        regex=RegexRule(pattern="", replacement="kube-system"),
    )


def test_filter_and_projection_are_read() -> None:
    manifest = _manifest(
        filter={
            "namespace": "my-app",
            "resource": {
                "matchLabels": {"foo": "bar"},
                "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["x"]}],
            },
        },
        projection={
            "version": "v1beta1",
            "kind": "Zertifikat",
            "plural": "zertifikate",
            "shortNames": ["zerts"],
            "categories": ["management"],
            "scope": "Cluster",
        },
    )
    spec = _spec(parse_published_resource(manifest))
    assert spec.filter == ResourceFilter(
        namespace="my-app",
        labels=LabelSelector(
            match_labels={"foo": "bar"},
            match_expressions=(SelectorRequirement(key="tier", operator=SelectorOperator.NOT_IN, values=("x",)),),
        ),
    )
    assert spec.projection == Projection(
        version="v1beta1",
        kind="Zertifikat",
        plural="zertifikate",
        short_names=("zerts",),
        categories=("management",),
        scope=Scope.CLUSTER,
    )


@pytest.mark.parametrize(
    ("projection", "short_names", "categories"),
    [
        ({}, None, None),
        ({"shortNames": []}, (), None),
        ({"categories": []}, None, ()),
        ({"shortNames": None}, None, None),
    ],
)
def test_an_explicit_empty_list_is_kept_apart_from_an_absent_one(
    projection: dict[str, Any],
    short_names: tuple[str, ...] | None,
    categories: tuple[str, ...] | None,
) -> None:
    spec = _spec(parse_published_resource(_manifest(projection=projection)))
    assert (spec.projection.short_names, spec.projection.categories) == (short_names, categories)


def test_metadata_name_uid_and_generation_are_read() -> None:
    manifest = _manifest()
    manifest["metadata"] = {"name": "pr", "uid": "1234-abcd", "generation": 3, "labels": {"a": "b"}}
    result = parse_published_resource(manifest)
    assert result.value is not None
    assert (result.value.name, result.value.uid, result.value.generation) == ("pr", "1234-abcd", 3)


def test_type_meta_may_be_absent_but_not_wrong() -> None:
    manifest = _manifest()
    del manifest["apiVersion"], manifest["kind"]
    assert parse_published_resource(manifest).problems == ()
    manifest["kind"] = "CustomResourceDefinition"
    assert _problems(manifest) == ['kind: must be PublishedResource, not "CustomResourceDefinition"']


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (None, "manifest: a PublishedResource must be a map, not null"),
        ([], "manifest: a PublishedResource must be a map, not a list"),
        ("spec", 'manifest: a PublishedResource must be a map, not "spec"'),
        ({}, "spec: is required"),
        ({"spec": None}, "spec: is required"),
        ({"spec": [1]}, "spec: must be a map, not a list"),
        ({"spec": {}}, "spec.resource: is required (apiGroup and kind of the CRD to publish)"),
        (
            {"metadata": [], "spec": {"resource": {"apiGroup": "a.io", "kind": "A"}}},
            "metadata: must be a map, not a list",
        ),
    ],
)
def test_any_shape_of_input_is_a_problem_not_an_exception(manifest: Any, expected: str) -> None:
    assert _problems(manifest) == [expected]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (
            {"namming": {}},
            "spec.namming: unknown field (known fields: resource, filter, projection, naming, related, synchronization, enableWorkspacePaths, mutation)",
        ),
        ({"resource": {"kind": "Certificate"}}, "spec.resource.apiGroup: is required"),
        ({"resource": {"apiGroup": "cert-manager.io"}}, "spec.resource.kind: is required"),
        (
            {"resource": {"apiGroup": " ", "kind": "A"}},
            'spec.resource.apiGroup: must be a DNS subdomain such as cert-manager.io (or "" for the core group), not " "',
        ),
        ({"resource": {"apiGroup": ["a"], "kind": "A"}}, "spec.resource.apiGroup: must be a string, not a list"),
        ({"resource": {"apiGroup": "a.io", "kind": 5}}, "spec.resource.kind: must be a string, not 5"),
        (
            {"resource": {"apiGroup": "a.io", "kind": "A", "versions": "v1"}},
            'spec.resource.versions: must be a list of strings, not "v1"',
        ),
        (
            {"resource": {"apiGroup": "a.io", "kind": "A", "versions": ["v1", 2]}},
            "spec.resource.versions[1]: must be a string, not 2",
        ),
        (
            {"resource": {"apiGroup": "a.io", "kind": "A", "versions": ["v1", "V2"]}},
            "spec.resource.versions[1]: must be a lower-case DNS-1035 label (letters, digits and '-', starting with a "
            'letter, at most 63 characters), not "V2"',
        ),
        (
            {"resource": {"apiGroup": "a.io", "kind": "A", "versions": ["v2", "v1", "v2"]}},
            'spec.resource.versions[2]: "v2" is listed twice (also at [0])',
        ),
        (
            {"resource": {"apiGroup": "a.io", "kind": "A", "version": "v1", "versions": ["v1", "v2"]}},
            'spec.resource.versions: set either version or versions, not both (version is "v1")',
        ),
        (
            {"resource": {"apiGroup": "a.io", "kind": "A", "wersions": ["v1"]}},
            "spec.resource.wersions: unknown field (known fields: apiGroup, kind, version, versions)",
        ),
        (
            {"projection": {"versions": ["v1"]}},
            "spec.projection.versions: must be a map from a CRD version to its name in kcp, not a list",
        ),
        (
            {"projection": {"versions": {"v1": "V1beta1"}}},
            'spec.projection.versions.v1: "V1beta1" is not a Kubernetes version name like v1, v1alpha1 or v2beta3',
        ),
        (
            {"projection": {"versions": {"v1": None}}},
            "spec.projection.versions.v1: null is not a Kubernetes version name like v1, v1alpha1 or v2beta3",
        ),
        (
            {"projection": {"versions": {1: "v1"}}},
            "spec.projection.versions.1: the key 1 is not a CRD version name: use a lower-case DNS-1035 label such as v1",
        ),
        (
            {"projection": {"versions": {"v1": "v3", "v2": "v3"}}},
            'spec.projection.versions.v2: "v3" is already the name of v1; versions in kcp must be unique',
        ),
        (
            {"projection": {"version": "v1beta1", "versions": {"v1": "v1beta1"}}},
            'spec.projection.versions: set either version or versions, not both (version is "v1beta1")',
        ),
        (
            {"resource": {"apiGroup": "Cert_Manager", "kind": "A"}},
            'spec.resource.apiGroup: must be a DNS subdomain such as cert-manager.io (or "" for the core group), '
            'not "Cert_Manager"',
        ),
        (
            {"resource": {"apiGroup": "a.io", "kind": "A", "version": "V1"}},
            "spec.resource.version: must be a lower-case DNS-1035 label (letters, digits and '-', starting with a "
            'letter, at most 63 characters), not "V1"',
        ),
        ({"filter": "my-app"}, 'spec.filter: must be a map, not "my-app"'),
        (
            {"filter": {"namespace": "My App"}},
            'spec.filter.namespace: must be a namespace name (a DNS-1123 label), not "My App"',
        ),
        (
            {"filter": {"resource": {"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]}}},
            "spec.filter.resource.matchExpressions[0].values: must be empty for operator Exists",
        ),
        ({"projection": {"scope": "Global"}}, 'spec.projection.scope: must be Namespaced or Cluster, not "Global"'),
        (
            {"projection": {"scope": "namespaced"}},
            'spec.projection.scope: must be Namespaced or Cluster, not "namespaced"',
        ),
        ({"projection": {"shortNames": "zerts"}}, 'spec.projection.shortNames: must be a list of strings, not "zerts"'),
        ({"projection": {"categories": [1]}}, "spec.projection.categories[0]: must be a string, not 1"),
        ({"projection": {"kind": {"name": "X"}}}, "spec.projection.kind: must be a string, not a map"),
        (
            {"projection": {"kind": "Zerti fikat"}},
            "spec.projection.kind: must be a kind name such as Certificate (letters, digits and '-', starting with a "
            'letter), not "Zerti fikat"',
        ),
        (
            {"projection": {"group": "x.io"}},
            "spec.projection.group: unknown field (known fields: version, versions, kind, plural, shortNames, categories, "
            "scope)",
        ),
        ({"naming": {"name": "$remoteNme"}}, "spec.naming.name: unknown placeholder $remoteNme"),
        (
            {"naming": {"namespace": "$remoteClusterNam"}},
            "spec.naming.namespace: unknown placeholder $remoteClusterNam",
        ),
        ({"naming": {"name": ""}}, "spec.naming.name: must not be empty"),
        ({"naming": {"name": 5}}, "spec.naming.name: must be a string, not 5"),
        (
            {"naming": {"prefix": "x"}},
            "spec.naming.prefix: unknown field (known fields: namespace, name, allowSharedNamespaces)",
        ),
        ({"related": {"identifier": "x"}}, "spec.related: must be a list of related resources, not a map"),
        ({"related": ["x"]}, 'spec.related[0]: must be a map, not "x"'),
    ],
)
def test_each_bad_spec_field_is_one_problem_at_its_path(spec: dict[str, Any], expected: str) -> None:
    manifest = _manifest()
    manifest["spec"].update(spec)
    assert _problems(manifest) == [expected]


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"kind": "Deployment"}, 'spec.related[0].kind: must be Secret or ConfigMap, not "Deployment"'),
        ({"kind": "secret"}, 'spec.related[0].kind: must be Secret or ConfigMap, not "secret"'),
        ({"kind": None}, "spec.related[0].kind: is required: Secret or ConfigMap"),
        ({"origin": "kcp"}, 'spec.related[0].origin: must be service or platform, not "kcp"'),
        ({"origin": None}, "spec.related[0].origin: is required: service or platform"),
        (
            {"identifier": "TLS"},
            "spec.related[0].identifier: must be a DNS-1123 label of at most 40 characters "
            "(lower-case letters, digits and '-'), not \"TLS\"",
        ),
        (
            {"identifier": "a" * 41},
            "spec.related[0].identifier: must be a DNS-1123 label of at most 40 characters "
            f"(lower-case letters, digits and '-'), not \"{'a' * 41}\"",
        ),
        ({"identifier": 7}, "spec.related[0].identifier: must be a string, not 7"),
        ({"reference": None}, "spec.related[0].reference: is required (where the related object's name is found)"),
        ({"reference": {}}, "spec.related[0].reference.name: is required (a map with path and optional regex)"),
        (
            {"reference": {"name": "spec.secretName"}},
            'spec.related[0].reference.name: must be a map, not "spec.secretName"',
        ),
        ({"reference": {"name": {}}}, "spec.related[0].reference.name.path: is required"),
        (
            {"reference": {"name": {"path": "spec.x", "regexp": {}}}},
            "spec.related[0].reference.name.regexp: unknown field (known fields: path, regex)",
        ),
        (
            {"reference": {"name": {"path": "spec.x"}, "namespace": {"regex": {"replacement": "x"}}}},
            "spec.related[0].reference.namespace.path: is required",
        ),
        (
            {"reference": {"name": {"path": "spec.x"}, "kind": "Secret"}},
            "spec.related[0].reference.kind: unknown field (known fields: name, namespace)",
        ),
        ({"watch": {}}, "spec.related[0].watch: set exactly one of byOwner and bySelector"),
        (
            {"watch": {"byOwner": {}, "bySelector": {"matchLabels": {"a": "b"}}}},
            "spec.related[0].watch: set exactly one of byOwner and bySelector (found: byOwner, bySelector)",
        ),
        ({"watch": "byOwner"}, 'spec.related[0].watch: must be a map, not "byOwner"'),
        (
            {"watch": {"byOwner": {}, "byOwners": {}}},
            "spec.related[0].watch.byOwners: unknown field (known fields: byOwner, bySelector)",
        ),
        (
            {"watch": {"byOwner": {"kind": "Thing"}}},
            "spec.related[0].watch.byOwner: takes no fields; write byOwner: {}, not a map",
        ),
        (
            {"watch": {"bySelector": {"matchExpressions": [{"key": "a", "operator": "Gt"}]}}},
            "spec.related[0].watch.bySelector.matchExpressions[0].operator: "
            'must be In, NotIn, Exists or DoesNotExist, not "Gt"',
        ),
        (
            {"watch": {"bySelector": {"matchLabels": {"a": "x y"}}}},
            'spec.related[0].watch.bySelector.matchLabels.a: "x y" is not a valid label value: a label value is '
            "empty or at most 63 letters, digits, '-', '_' or '.' that starts and ends with a letter or digit",
        ),
        (
            {"mutation": {"spec": [{"delete": {}}]}},
            "spec.related[0].mutation.spec[0].delete.path: is required",
        ),
        (
            {"mutation": {"status": [{"delete": {"path": "status.x"}}]}},
            "spec.related[0].mutation.status: changes the status that syncStatus copies, so it needs syncStatus: true",
        ),
    ],
)
def test_each_bad_related_field_is_one_problem_at_its_path(fields: dict[str, Any], expected: str) -> None:
    assert _problems(_manifest(related=[_related(**fields)])) == [expected]


@pytest.mark.parametrize(
    ("watch", "expected"),
    [
        (None, None),
        ({"byOwner": {}}, RelatedWatch(by_owner=True)),
        ({"bySelector": {"matchLabels": {"app": "shop"}}}, RelatedWatch(selector=LabelSelector({"app": "shop"}))),
        ({"bySelector": {}}, RelatedWatch(selector=LabelSelector())),
    ],
)
def test_a_related_watch_is_read_into_its_form(watch: object, expected: RelatedWatch | None) -> None:
    related = _related() if watch is None else _related(watch=watch)
    spec = _spec(parse_published_resource(_manifest(related=[related])))
    assert spec.related[0].watch == expected


def test_a_related_identifier_of_40_characters_is_allowed() -> None:
    spec = _spec(parse_published_resource(_manifest(related=[_related(identifier="a" * 40)])))
    assert spec.related[0].identifier == "a" * 40


def test_duplicate_identifiers_name_the_first_use() -> None:
    related = [_related(), _related(kind="ConfigMap"), _related(identifier="other"), _related()]
    assert _problems(_manifest(related=related)) == [
        'spec.related[1].identifier: "tls-secret" is already used by spec.related[0]; identifiers must be unique',
        'spec.related[3].identifier: "tls-secret" is already used by spec.related[0]; identifiers must be unique',
    ]


@pytest.mark.parametrize(
    "path",
    ["spec.secretName", "spec.tls[0].secretName", 'metadata.annotations."example.com/secret"', "spec.*.name"],
)
def test_json_paths_without_a_leading_dot_are_accepted(path: str) -> None:
    reference = {"name": {"path": path}}
    spec = _spec(parse_published_resource(_manifest(related=[_related(reference=reference)])))
    assert spec.related[0].reference.name.path == path


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            ".spec.secretName",
            "\".spec.secretName\" starts with '.'; write paths without a leading dot or $, as in spec.secretName",
        ),
        (
            "$.spec.secretName",
            "\"$.spec.secretName\" starts with '$'; write paths without a leading dot or $, as in spec.secretName",
        ),
        ("spec[", '"spec[" is not a valid JSONPath: Parse error near the end of string!'),
        ("spec secretName", '"spec secretName" is not a valid JSONPath: Parse error at 1:5 near token secretName (ID)'),
        ("", "must not be empty"),
    ],
)
def test_bad_json_paths_are_problems(path: str, message: str) -> None:
    reference = {"name": {"path": path}}
    assert _problems(_manifest(related=[_related(reference=reference)])) == [
        f"spec.related[0].reference.name.path: {message}",
    ]


@pytest.mark.parametrize(
    "regex",
    [
        {"pattern": "^(.+)$", "replacement": r"prefix-\1"},
        {"pattern": "(?P<base>[a-z]+)-cert", "replacement": r"\g<base>-tls"},
        {"pattern": "(a)(b)", "replacement": r"\2\1"},
        {"pattern": "-cert$", "replacement": ""},
        {"pattern": "", "replacement": "kube-system"},
        {"replacement": "kube-system"},
        {"pattern": "x", "replacement": None},
    ],
)
def test_valid_regex_rules_are_kept_verbatim(regex: dict[str, Any]) -> None:
    reference = {"name": {"path": "spec.secretName", "regex": regex}}
    spec = _spec(parse_published_resource(_manifest(related=[_related(reference=reference)])))
    assert spec.related[0].reference.name.regex == RegexRule(
        pattern=regex.get("pattern") or "",
        replacement=regex.get("replacement") or "",
    )


@pytest.mark.parametrize(
    ("regex", "expected"),
    [
        ({"pattern": "(a"}, 'regex.pattern: "(a" is not a valid RE2 regular expression: missing ): (a'),
        # RE2 never backtracks, so what needs backtracking is refused when the spec is read.
        (
            {"pattern": r"(a)\1"},
            'regex.pattern: "(a)\\1" is not a valid RE2 regular expression: invalid escape sequence: \\1',
        ),
        (
            {"pattern": "x(?=y)"},
            'regex.pattern: "x(?=y)" is not a valid RE2 regular expression: invalid perl operator: (?=',
        ),
        (
            {"pattern": r"x\Z"},
            'regex.pattern: "x\\Z" is not a valid RE2 regular expression: invalid escape sequence: \\Z',
        ),
        (
            {"pattern": "(a)", "replacement": r"\2"},
            'regex.replacement: "\\2" is not a valid replacement for '
            'pattern "(a)": invalid group reference 2 at position 0',
        ),
        (
            {"pattern": "", "replacement": r"\1"},
            'regex.replacement: "\\1" is not a valid replacement for '
            'pattern "": invalid group reference 1 at position 0',
        ),
        (
            {"pattern": "(?P<a>x)", "replacement": r"\g<b>"},
            'regex.replacement: "\\g<b>" is not a valid replacement '
            "for pattern \"(?P<a>x)\": unknown group name 'b' at "
            "position 0",
        ),
        (
            {"pattern": "(a)", "replacement": r"x\n"},
            'regex.replacement: "x\\n" is not a valid replacement for '
            'pattern "(a)": \\n at position 1 is not a group reference; '
            "write \\\\ for a backslash",
        ),
        (
            {"pattern": "(a)", "replacement": "$1-x"},
            'regex.replacement: "$1-x" refers to a group as $1; write \\1 instead',
        ),
        (
            {"pattern": "(a)", "replacement": "${1}"},
            'regex.replacement: "${1}" refers to a group as $1; write \\1 instead',
        ),
        ({}, "regex: sets neither pattern nor replacement"),
        ({"pattern": 5, "replacement": "x"}, "regex.pattern: must be a string, not 5"),
        ({"pattern": "x", "replace": "y"}, "regex.replace: unknown field (known fields: pattern, replacement)"),
        ("^x$", 'regex: must be a map, not "^x$"'),
    ],
)
def test_bad_regex_rules_are_problems(regex: Any, expected: str) -> None:
    reference = {"name": {"path": "spec.secretName", "regex": regex}}
    assert _problems(_manifest(related=[_related(reference=reference)])) == [
        f"spec.related[0].reference.name.{expected}",
    ]


def test_every_problem_of_a_manifest_is_reported_at_once() -> None:
    manifest = {
        "spec": {
            "resource": {"apiGroup": "cert-manager.io"},
            "namming": {},
            "naming": {"name": "$remoteNme-$remoteName"},
            "projection": {"scope": "Global"},
            "related": [
                _related(kind="Deployment"),
                _related(origin="kcp", reference={"name": {"path": ".spec.x", "regex": {"pattern": "("}}}),
            ],
        },
    }
    assert [problem.field for problem in parse_published_resource(manifest).problems] == [
        "spec.namming",
        "spec.resource.kind",
        "spec.projection.scope",
        "spec.naming.name",
        "spec.related[0].kind",
        "spec.related[1].origin",
        "spec.related[1].reference.name.path",
        "spec.related[1].reference.name.regex.pattern",
        "spec.related[1].identifier",
    ]


def test_the_seed_projection_example_is_rejected_for_its_upper_case_plural() -> None:
    # Kubernetes requires lower-case plurals; the seed's `Zertifikate` would be refused by kcp.
    projection = {"version": "v1beta1", "kind": "Zertifikat", "plural": "Zertifikate", "shortNames": ["zerts"]}
    assert _problems(_manifest(projection=projection)) == [
        "spec.projection.plural: must be a lower-case DNS-1035 label (letters, digits and '-', starting with a "
        'letter, at most 63 characters), not "Zertifikate"',
    ]


def test_parsing_does_not_change_its_input() -> None:
    manifest = _manifest(related=[_related()], projection={"shortNames": []})
    before = copy.deepcopy(manifest)
    parse_published_resource(manifest)
    assert manifest == before


@pytest.mark.parametrize("generation", [-1, 1.5, "3", True])
def test_a_generation_that_is_not_a_whole_number_is_a_problem(generation: Any) -> None:
    manifest = _manifest()
    manifest["metadata"]["generation"] = generation
    assert [problem.field for problem in parse_published_resource(manifest).problems] == ["metadata.generation"]


@pytest.mark.parametrize("origin", ["service", "platform"])
@pytest.mark.parametrize(
    "namespace",
    [
        {"path": "spec.secretNamespace"},
        {"path": "metadata.labels.team"},
        {"path": "spec.secretName", "regex": {"pattern": "^(.*)$", "replacement": "kube-system"}},
    ],
)
def test_a_related_namespace_the_tenant_could_choose_is_refused(origin: str, namespace: dict[str, Any]) -> None:
    problems = _problems(
        _manifest(
            related=[_related(origin=origin, reference={"name": {"path": "spec.secretName"}, "namespace": namespace})]
        )
    )
    assert len(problems) == 1, problems
    assert problems[0].startswith(
        f"spec.related[0].reference.namespace.path: '{namespace['path']}' is read from the tenant's object"
    )


@pytest.mark.parametrize(
    "namespace",
    [
        {"path": "status.secretNamespace"},
        {"path": "metadata.namespace"},
        {"path": "spec.anything", "regex": {"pattern": "", "replacement": "certs"}},
    ],
)
def test_a_related_namespace_from_status_the_primarys_namespace_or_a_constant_is_accepted(
    namespace: dict[str, Any],
) -> None:
    result = parse_published_resource(
        _manifest(related=[_related(reference={"name": {"path": "spec.secretName"}, "namespace": namespace})])
    )
    assert result.problems == ()
    assert _spec(result).related[0].reference.namespace is not None


def test_an_empty_api_group_names_the_core_group_and_a_missing_one_is_still_required() -> None:
    core = parse_published_resource(
        {"metadata": {"name": "cms"}, "spec": {"resource": {"apiGroup": "", "kind": "ConfigMap"}}}
    )
    assert _spec(core).resource.api_group == ""
    assert _problems({"metadata": {"name": "cms"}, "spec": {"resource": {"kind": "ConfigMap"}}}) == [
        "spec.resource.apiGroup: is required"
    ]
