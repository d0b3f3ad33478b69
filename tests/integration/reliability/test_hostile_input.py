"""Hostile and malformed input (issue 7, item 4), planned by the core the daemon uses.

Each case puts one bad PublishedResource, CRD or user's object next to a good PublishedResource
with a user's Widget, and checks two things: the error is reported on the right object and field
with a sentence naming the bad value (this is what becomes the PublishedResource's condition or
the object's logged and counted error in the daemon), and the good PublishedResource is still
served. A subset runs end to end in `test_hostile_e2e.py`.
"""

from __future__ import annotations

import copy
import hashlib
import time
from typing import Any

import pytest

from servlet.core.openapi_schema import MAX_NODES
from tests.integration.e2e.manifests import (
    LINK,
    default_local_name,
    gadget_crd,
    link_labels,
    published_resource,
    remote_object,
    widget_crd,
)
from tests.integration.reliability.planning import (
    GOOD_CLUSTER,
    actions_for,
    assert_good_still_served,
    good_world,
    in_workspace,
    plan,
)

BAD = "PublishedResource bad"


def _gadgets(**spec: Any) -> dict[str, Any]:
    return published_resource("bad", kind="Gadget", **spec)


def _with(pr: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    pr = copy.deepcopy(pr)
    target = pr
    *parents, last = path.split(".")
    for key in parents:
        target = target.setdefault(key, {})
    target[last] = value
    return pr


def _related(**fields: Any) -> dict[str, Any]:
    entry = {"identifier": "creds", "origin": "service", "kind": "Secret", "reference": {"name": {"path": "spec.note"}}}
    entry.update(fields)
    return entry


# (id, bad PublishedResource, expected field (prefix), words the message must contain)
INVALID_PUBLISHED_RESOURCES: list[tuple[str, dict[str, Any], str, list[str]]] = [
    ("api-group-blank", _with(_gadgets(), "spec.resource.apiGroup", " "), "spec.resource.apiGroup", ["core group"]),
    (
        "no-resource",
        {
            "apiVersion": "services.kdp.k8c.io/v1alpha1",
            "kind": "PublishedResource",
            "metadata": {"name": "bad"},
            "spec": {},
        },
        "spec.resource",
        [],
    ),
    (
        "spec-not-a-mapping",
        {
            "apiVersion": "services.kdp.k8c.io/v1alpha1",
            "kind": "PublishedResource",
            "metadata": {"name": "bad"},
            "spec": "oops",
        },
        "spec",
        [],
    ),
    ("empty-kind", _with(_gadgets(), "spec.resource.kind", ""), "spec.resource.kind", []),
    ("api-group-not-a-string", _with(_gadgets(), "spec.resource.apiGroup", 123), "spec.resource.apiGroup", ["123"]),
    ("unknown-spec-field", _with(_gadgets(), "spec.surprise", True), "spec.surprise", []),
    (
        "filter-namespace-invalid",
        _gadgets(filter={"namespace": "Not_A_Namespace"}),
        "spec.filter.namespace",
        ["Not_A_Namespace"],
    ),
    (
        "filter-label-key-invalid",
        _gadgets(filter={"resource": {"matchLabels": {"bad key!": "x"}}}),
        "spec.filter.resource.matchLabels",
        ["bad key!"],
    ),
    (
        "filter-operator-unknown",
        _gadgets(filter={"resource": {"matchExpressions": [{"key": "tier", "operator": "Near", "values": ["a"]}]}}),
        "spec.filter.resource.matchExpressions[0].operator",
        ["Near"],
    ),
    (
        "filter-exists-with-values",
        _gadgets(filter={"resource": {"matchExpressions": [{"key": "tier", "operator": "Exists", "values": ["a"]}]}}),
        "spec.filter.resource.matchExpressions[0]",
        [],
    ),
    ("projection-kind-with-space", _gadgets(projection={"kind": "Gad get"}), "spec.projection.kind", ["Gad get"]),
    (
        "projection-plural-invalid",
        _gadgets(projection={"plural": "Bad_Plural"}),
        "spec.projection.plural",
        ["Bad_Plural"],
    ),
    ("projection-scope-unknown", _gadgets(projection={"scope": "Galaxy"}), "spec.projection.scope", ["Galaxy"]),
    (
        "projection-short-name-invalid",
        _gadgets(projection={"shortNames": ["BAD!"]}),
        "spec.projection.shortNames",
        ["BAD!"],
    ),
    ("projection-version-invalid", _gadgets(projection={"version": "V1!"}), "spec.projection.version", ["V1!"]),
    ("naming-name-unknown-placeholder", _gadgets(naming={"name": "$remoteNme"}), "spec.naming.name", ["$remoteNme"]),
    (
        "naming-namespace-unknown-placeholder",
        _gadgets(naming={"namespace": "$remoteWorkspace"}),
        "spec.naming.namespace",
        ["$remoteWorkspace"],
    ),
    (
        "naming-namespace-tenant-chosen",
        _gadgets(naming={"namespace": "$remoteNamespace"}),
        "spec.naming.namespace",
        ["$remoteNamespace", "allowSharedNamespaces"],
    ),
    (
        "naming-namespace-system",
        _gadgets(naming={"namespace": "kube-system"}),
        "spec.naming.namespace",
        ["kube-system", "system namespace"],
    ),
    (
        "related-service-from-shared-namespace",
        _gadgets(naming={"namespace": "$remoteNamespace", "allowSharedNamespaces": True}, related=[_related()]),
        "spec.related[0].reference.namespace",
        ["origin service"],
    ),
    (
        "related-kind-deployment",
        _gadgets(related=[_related(kind="Deployment")]),
        "spec.related[0].kind",
        ["Deployment"],
    ),
    (
        "related-origin-unknown",
        _gadgets(related=[_related(origin="elsewhere")]),
        "spec.related[0].origin",
        ["elsewhere"],
    ),
    (
        "related-identifier-too-long",
        _gadgets(related=[_related(identifier="x" * 41)]),
        "spec.related[0].identifier",
        [],
    ),
    (
        "related-identifier-duplicate",
        _gadgets(related=[_related(), _related()]),
        "spec.related[1].identifier",
        ["creds"],
    ),
    (
        "related-path-not-jsonpath",
        _gadgets(related=[_related(reference={"name": {"path": "spec.[[oops"}})]),
        "spec.related[0].reference.name.path",
        [],
    ),
    (
        "related-regex-invalid",
        _gadgets(
            related=[
                _related(reference={"name": {"path": "spec.note", "regex": {"pattern": "((", "replacement": "x"}}})
            ]
        ),
        "spec.related[0].reference.name.regex.pattern",
        [],
    ),
    # RE2 runs every pattern in linear time, so it refuses what needs backtracking.
    (
        "related-regex-backreference",
        _gadgets(
            related=[
                _related(
                    reference={"name": {"path": "spec.note", "regex": {"pattern": r"^(a+)\1$", "replacement": "x"}}}
                )
            ]
        ),
        "spec.related[0].reference.name.regex.pattern",
        ["RE2", "invalid escape sequence"],
    ),
    (
        "related-regex-go-style-group",
        _gadgets(
            related=[
                _related(
                    reference={"name": {"path": "spec.note", "regex": {"pattern": "^(.*)$", "replacement": "${1}-ca"}}}
                )
            ]
        ),
        "spec.related[0].reference.name.regex.replacement",
        [],
    ),
    ("related-not-a-list", _gadgets(related={"identifier": "creds"}), "spec.related", []),
    (
        "resource-versions-not-a-list",
        _with(_gadgets(), "spec.resource.versions", "v1"),
        "spec.resource.versions",
        ["v1"],
    ),
    (
        "resource-versions-item-a-map",
        _with(_gadgets(), "spec.resource.versions", ["v1", {"name": "v2"}]),
        "spec.resource.versions[1]",
        ["a map"],
    ),
    (
        "resource-versions-item-invalid",
        _with(_gadgets(), "spec.resource.versions", ["v1", "V2 "]),
        "spec.resource.versions[1]",
        ["V2 "],
    ),
    (
        "resource-versions-duplicate",
        _with(_gadgets(), "spec.resource.versions", ["v1", "v1"]),
        "spec.resource.versions[1]",
        ["v1", "twice"],
    ),
    (
        "resource-version-and-versions",
        _with(_with(_gadgets(), "spec.resource.version", "v1"), "spec.resource.versions", ["v1"]),
        "spec.resource.versions",
        ["either version or versions"],
    ),
    (
        "projection-versions-not-a-map",
        _gadgets(projection={"versions": ["v1", "v1beta1"]}),
        "spec.projection.versions",
        ["a list"],
    ),
    (
        "projection-versions-target-invalid",
        _gadgets(projection={"versions": {"v1": "1.0"}}),
        "spec.projection.versions.v1",
        ["1.0"],
    ),
    (
        "projection-versions-target-a-map",
        _gadgets(projection={"versions": {"v1": {"name": "v2"}}}),
        "spec.projection.versions.v1",
        ["a map"],
    ),
    (
        "projection-versions-key-a-number",
        _gadgets(projection={"versions": {7: "v1"}}),
        "spec.projection.versions.7",
        ["7"],
    ),
    (
        "projection-versions-same-target",
        _gadgets(projection={"versions": {"v1": "v3", "v2": "v3"}}),
        "spec.projection.versions.v2",
        ["v3", "unique"],
    ),
    (
        "projection-version-and-versions",
        _gadgets(projection={"version": "v1beta1", "versions": {"v1": "v1beta1"}}),
        "spec.projection.versions",
        ["either version or versions"],
    ),
]


@pytest.mark.parametrize(
    "bad, field, words",
    [case[1:] for case in INVALID_PUBLISHED_RESOURCES],
    ids=[case[0] for case in INVALID_PUBLISHED_RESOURCES],
)
def test_an_invalid_published_resource_is_reported_on_its_field_and_the_rest_is_served(
    bad: dict[str, Any], field: str, words: list[str]
) -> None:
    result = plan([*good_world(), gadget_crd(), bad])
    mine = [e for e in result["errors"] if e["object"] == BAD]
    assert mine, f"no error for the bad PublishedResource: {result['errors']}"
    assert any(e["field"].startswith(field) and all(w in e["message"] for w in words) for e in mine), mine
    assert not any(s["publishedResource"] == "bad" for s in result["schemas"]), "a schema for an invalid spec"
    assert_good_still_served(result)


def _crd_without_version(version: str) -> dict[str, Any]:
    crd = gadget_crd()
    crd["spec"]["versions"][0]["name"] = version
    return crd


def _crd_not_served() -> dict[str, Any]:
    crd = gadget_crd()
    crd["spec"]["versions"][0]["served"] = False
    return crd


def _crd_of_versions(*names: str) -> dict[str, Any]:
    crd = gadget_crd()
    (only,) = crd["spec"]["versions"]
    crd["spec"]["versions"] = [{**only, "name": name, "storage": index == 0} for index, name in enumerate(names)]
    return crd


def _listing(published: list[str], **projection: Any) -> dict[str, Any]:
    return _with(_gadgets(projection=projection) if projection else _gadgets(), "spec.resource.versions", published)


CRD_CASES: list[tuple[str, list[dict[str, Any]], dict[str, Any], str, list[str]]] = [
    ("crd-missing", [], _gadgets(), "spec.resource", ["Gadget"]),
    ("crd-other-kind", [widget_crd()], published_resource("bad", kind="Doohickey"), "spec.resource", ["Doohickey"]),
    (
        "crd-lacks-the-version",
        [gadget_crd()],
        _with(_gadgets(), "spec.resource.version", "v2"),
        "spec.resource",
        ["v2"],
    ),
    (
        "crd-only-other-version",
        [_crd_without_version("v1alpha9")],
        _with(_gadgets(), "spec.resource.version", "v1"),
        "spec.resource",
        ["v1"],
    ),
    ("crd-version-not-served", [_crd_not_served()], _gadgets(), "spec.resource", []),
    ("crd-lacks-a-listed-version", [gadget_crd()], _listing(["v1", "v9"]), "spec.resource.versions[1]", ["v9"]),
    ("crd-serves-none-of-all", [_crd_not_served()], _listing([]), "spec.resource.versions", ["serves none"]),
    (
        "crd-lacks-many-listed-versions",
        [gadget_crd()],
        _listing([f"v{n}" for n in range(2, 302)]),
        "spec.resource.versions[299]",
        ["v301"],
    ),
    (
        "projection-renames-an-unpublished-version",
        [_crd_of_versions("v1", "v2")],
        _listing(["v1"], versions={"v2": "v2beta1"}),
        "spec.projection.versions.v2",
        ["not published"],
    ),
    (
        "projection-rename-collides",
        [_crd_of_versions("v1", "v2")],
        _listing([], versions={"v1": "v2"}),
        "spec.projection.versions",
        ["v2", "unique"],
    ),
    (
        "projection-version-with-several",
        [_crd_of_versions("v1", "v2")],
        _listing([], version="v3"),
        "spec.projection.version",
        ["2 are published"],
    ),
    (
        "crd-version-kcp-refuses",
        [_crd_of_versions("v1", "version2")],
        _listing([]),
        "spec.projection.versions",
        ["version2", "rename"],
    ),
]


@pytest.mark.parametrize("crds, bad, field, words", [case[1:] for case in CRD_CASES], ids=[c[0] for c in CRD_CASES])
def test_a_missing_or_unsuitable_crd_is_reported_and_the_rest_is_served(
    crds: list[dict[str, Any]], bad: dict[str, Any], field: str, words: list[str]
) -> None:
    result = plan([*good_world(), *crds, bad])
    mine = [e for e in result["errors"] if e["object"] == BAD]
    assert any(e["field"].startswith(field) and all(w in e["message"] for w in words) for e in mine), result["errors"]
    assert_good_still_served(result)


LONG = "n" * 253
HOSTILE_NAMES: list[tuple[str, dict[str, Any], str, str]] = [
    # (id, naming, remote name, field that must be reported)
    ("name-pattern-too-long", {"name": "copy-$remoteName"}, LONG, "spec.naming.name"),
    (
        "namespace-pattern-too-long",
        {"namespace": "ns-$remoteName", "allowSharedNamespaces": True},
        "x" * 61,
        "spec.naming.namespace",
    ),
    (
        "namespace-pattern-with-dots",
        {"namespace": "$remoteName", "allowSharedNamespaces": True},
        "a.b.c",
        "spec.naming.namespace",
    ),
    ("name-pattern-trailing-dash", {"name": "$remoteName-"}, "ok", "spec.naming.name"),
]


@pytest.mark.parametrize(
    "naming, remote_name, field", [c[1:] for c in HOSTILE_NAMES], ids=[c[0] for c in HOSTILE_NAMES]
)
def test_naming_that_yields_an_invalid_name_is_an_object_error_not_a_write(
    naming: dict[str, str], remote_name: str, field: str
) -> None:
    bad = published_resource("bad", kind="Widget", naming=naming)
    widget = in_workspace(remote_object("Widget", remote_name, namespace="default", size=1), "tenant1")
    # Same CRD as the good one would make two schemas for one resource: serve the bad one alone
    # next to a good world of Gadgets instead.
    result = plan(
        [
            widget_crd(),
            bad,
            widget,
            gadget_crd(),
            published_resource("gadgets", kind="Gadget"),
            in_workspace(remote_object("Gadget", "fine"), GOOD_CLUSTER),
        ]
    )
    mine = [e for e in result["errors"] if remote_name in e["object"]]
    assert any(e["field"] == field for e in mine), result["errors"]
    assert not {"create", "createNamespace"} & set(actions_for(result, name=remote_name)), "wrote an invalid name"
    assert "create" in actions_for(result, name="fine", cluster=GOOD_CLUSTER)


def test_naming_whose_own_text_can_never_be_a_name_refuses_the_published_resource() -> None:
    # An upper-case letter of the pattern's own is in every name it yields: refused up front.
    bad = published_resource("bad", kind="Widget", naming={"name": "Copy-$remoteNameHash"})
    widget = in_workspace(remote_object("Widget", "ok", namespace="default", size=1), "tenant1")
    result = plan(
        [
            widget_crd(),
            bad,
            widget,
            gadget_crd(),
            published_resource("gadgets", kind="Gadget"),
            in_workspace(remote_object("Gadget", "fine"), GOOD_CLUSTER),
        ]
    )
    assert [(e["object"], e["field"]) for e in result["errors"]] == [("PublishedResource bad", "spec.naming.name")]
    assert "can never yield a valid name" in result["errors"][0]["message"]
    assert not [o for o in result["objects"] if o["remote"]["name"] == "ok"], "planned an object of an invalid one"
    assert "create" in actions_for(result, name="fine", cluster=GOOD_CLUSTER)


@pytest.mark.parametrize(
    "remote_name",
    [
        pytest.param(LONG, id="253-characters"),
        pytest.param("a" + "." * 0 + "b" * 62 + ".c", id="dotted"),
        pytest.param("x-" * 126 + "z", id="max-length-dashes"),
    ],
)
def test_long_remote_names_get_valid_hashed_local_names_by_default(remote_name: str) -> None:
    result = plan([*good_world(), in_workspace(remote_object("Widget", remote_name, namespace="default"), "tenant1")])
    assert "create" in actions_for(result, name=remote_name)
    (obj,) = [o for o in result["objects"] if o["remote"]["name"] == remote_name]
    assert len(obj["local"]["name"]) <= 63
    assert_good_still_served(result)


@pytest.mark.parametrize(
    "value",
    [
        pytest.param("Grüße, 世界 🌍", id="unicode-text"),
        pytest.param("\u202eevil\u202c", id="bidi-override"),
        pytest.param("\x00nul", id="nul-character"),
    ],
)
def test_unicode_in_a_spec_is_copied_verbatim(value: str) -> None:
    widget = in_workspace(remote_object("Widget", "uni", namespace="default", note=value), "tenant1")
    result = plan([*good_world(), widget])
    (obj,) = [o for o in result["objects"] if o["remote"]["name"] == "uni"]
    (create,) = [a for a in obj["actions"] if a["type"] == "create"]
    assert create["object"]["spec"]["note"] == value
    assert_good_still_served(result)


def _incompressible(size: int) -> str:
    digests = (hashlib.sha256(str(i).encode()).hexdigest() for i in range(size // 64 + 1))
    return "".join(digests)[:size]


def test_a_huge_spec_whose_state_cannot_fit_the_annotation_limit_is_an_error_on_that_object() -> None:
    # Close to the 1.5 MB object limit, and hex does not compress below the 256 KiB annotation limit.
    widget = in_workspace(
        remote_object("Widget", "huge", namespace="default", note=_incompressible(1_400_000)), "tenant1"
    )
    result = plan([*good_world(), widget])
    mine = [e for e in result["errors"] if "huge" in e["object"]]
    assert any(e["field"] == "metadata.annotations" and "limit" in e["message"] for e in mine), result["errors"]
    assert "create" not in actions_for(result, name="huge")
    assert_good_still_served(result)


def test_a_large_but_compressible_spec_is_synced() -> None:
    widget = in_workspace(remote_object("Widget", "big", namespace="default", note="a" * 1_000_000), "tenant1")
    result = plan([*good_world(), widget])
    assert "create" in actions_for(result, name="big")


FORGED = [
    pytest.param({f"{LINK}/servlet": "tom"}, id="servlet-label"),
    pytest.param({f"{LINK}/remote-object-cluster": GOOD_CLUSTER}, id="cluster-label-of-another-tenant"),
    pytest.param({f"{LINK}/remote-object-name-hash": hashlib.sha1(b"fine").hexdigest()}, id="name-hash-label"),
]


@pytest.mark.parametrize("labels", FORGED)
def test_forged_link_labels_on_a_remote_object_never_reach_the_local_copy(labels: dict[str, str]) -> None:
    widget = in_workspace(remote_object("Widget", "forger", namespace="default", labels=labels), "tenant1")
    result = plan([*good_world(), widget])
    (obj,) = [o for o in result["objects"] if o["remote"]["name"] == "forger"]
    (create,) = [a for a in obj["actions"] if a["type"] == "create"]
    local_labels = create["object"]["metadata"]["labels"]
    assert local_labels[f"{LINK}/remote-object-cluster"] == "tenant1"
    assert local_labels[f"{LINK}/remote-object-name-hash"] == hashlib.sha1(b"forger").hexdigest()
    assert_good_still_served(result)


@pytest.mark.parametrize("annotation", ["last-known-state", "remote-object-name", "related-state.creds"])
def test_forged_link_annotations_on_a_remote_object_never_reach_the_local_copy(annotation: str) -> None:
    widget = in_workspace(remote_object("Widget", "forger", namespace="default"), "tenant1")
    widget["metadata"]["annotations"][f"{LINK}/{annotation}"] = '{"spec": {"size": 666}}'
    result = plan([*good_world(), widget])
    (obj,) = [o for o in result["objects"] if o["remote"]["name"] == "forger"]
    (create,) = [a for a in obj["actions"] if a["type"] == "create"]
    value = create["object"]["metadata"].get("annotations", {}).get(f"{LINK}/{annotation}")
    assert value != '{"spec": {"size": 666}}'


def _local_widget(*, cluster: str, name: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": cluster, "labels": labels or {}, "uid": f"local-{name}"},
        "spec": {"size": 99, "note": "the service owner's own"},
    }


def _default_local_name(namespace: str, name: str) -> str:
    return hashlib.sha1(namespace.encode()).hexdigest()[:20] + "-" + hashlib.sha1(name.encode()).hexdigest()[:20]


@pytest.mark.parametrize(
    "labels",
    [
        pytest.param({}, id="unlabelled-service-owner-object"),
        pytest.param({f"{LINK}/servlet": "someone-else"}, id="another-servlets-copy"),
        pytest.param(
            {
                f"{LINK}/servlet": "tom",
                f"{LINK}/remote-object-cluster": "tenant2",
                f"{LINK}/remote-object-name-hash": hashlib.sha1(b"victim").hexdigest(),
                f"{LINK}/remote-object-namespace-hash": hashlib.sha1(b"default").hexdigest(),
            },
            id="copy-of-another-tenants-object",
        ),
    ],
)
def test_a_name_that_collides_with_an_existing_local_object_is_a_conflict_never_an_overwrite(
    labels: dict[str, str],
) -> None:
    local_name = _default_local_name("default", "squatter")
    widget = in_workspace(remote_object("Widget", "squatter", namespace="default", size=1), "tenant1")
    result = plan([*good_world(), widget, _local_widget(cluster="tenant1", name=local_name, labels=labels)])
    actions = actions_for(result, name="squatter")
    assert "conflict" in actions, actions
    assert not {"create", "patch", "adopt", "deleteLocal"} & set(actions), actions
    assert_good_still_served(result)


def test_two_remote_objects_named_onto_one_local_name_never_share_it() -> None:
    fixed = published_resource("bad", kind="Widget", naming={"namespace": "shared", "name": "the-one"})
    first = in_workspace(remote_object("Widget", "first", namespace="default"), "tenant1")
    second = in_workspace(remote_object("Widget", "second", namespace="default"), "tenant2")
    owner = _local_widget(
        cluster="shared",
        name="the-one",
        labels={
            f"{LINK}/servlet": "tom",
            f"{LINK}/remote-object-cluster": "tenant1",
            f"{LINK}/remote-object-name-hash": hashlib.sha1(b"first").hexdigest(),
            f"{LINK}/remote-object-namespace-hash": hashlib.sha1(b"default").hexdigest(),
        },
    )
    result = plan([widget_crd(), fixed, first, second, owner])
    assert "conflict" in actions_for(result, name="second"), actions_for(result, name="second")
    assert not {"create", "patch", "adopt"} & set(actions_for(result, name="second"))


# Python's backtracking `re` needs about 2^n steps for this pattern on n a's and a "!": 28
# characters froze the servlet for 9 to 25 s, 40 would take days.
CATASTROPHIC_PATTERN = "^(a+)+$"
CATASTROPHIC_VALUE = "a" * 40 + "!"


def _widget_pair(name: str, *, note: str) -> list[dict[str, Any]]:
    """A user's Widget and its local copy, so that its related objects are planned too."""
    remote = in_workspace(remote_object("Widget", name, namespace="default", note=note), "tenant1")
    local = _local_widget(
        cluster="tenant1",
        name=default_local_name(namespace="default", name=name),
        labels=link_labels(cluster="tenant1", namespace="default", name=name),
    )
    local["spec"] = {"note": note}
    return [remote, local]


def test_a_catastrophic_regex_on_a_long_tenant_value_is_planned_at_once() -> None:
    bad = published_resource(
        "bad",
        kind="Widget",
        related=[
            _related(
                reference={
                    "name": {"path": "spec.note", "regex": {"pattern": CATASTROPHIC_PATTERN, "replacement": "creds"}}
                }
            )
        ],
    )
    creds = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "tenant1"},
        "data": {"token": "dG9w"},
    }
    result = plan(
        [
            widget_crd(),
            bad,
            *_widget_pair("hostile", note=CATASTROPHIC_VALUE),
            *_widget_pair("matching", note="a" * 40),
            creds,
            gadget_crd(),
            published_resource("gadgets", kind="Gadget"),
            in_workspace(remote_object("Gadget", "fine"), GOOD_CLUSTER),
        ]
    )
    # The pattern does not match, so the value stays as it is, which is no Secret name.
    (error,) = [e for e in result["errors"] if "hostile" in e["object"]]
    assert error["field"] == "spec.related[0].reference.name" and CATASTROPHIC_VALUE in error["message"]
    # The same pattern on a value it matches names the Secret, which is copied up.
    assert "createRelated" in actions_for(result, name="matching")
    assert "create" in actions_for(result, name="fine", cluster=GOOD_CLUSTER)


# ---- OpenAPI v3 documents describing built-in types (issue 17) ----------------------------------
REF = "#/components/schemas/"


def _openapi(definitions: dict[str, Any], *, kind_definition: str = "D0") -> dict[str, Any]:
    """A group-version document serving `Thing` (group things.example.org), whose schema is `kind_definition`."""
    gvk = {"group": "things.example.org", "version": "v1", "kind": "Thing"}
    definitions = copy.deepcopy(definitions)
    definitions[kind_definition]["x-kubernetes-group-version-kind"] = [gvk]
    path = "/apis/things.example.org/v1/namespaces/{namespace}/things/{name}"
    return {
        "openapi": "3.0.0",
        "paths": {path: {"get": {"x-kubernetes-group-version-kind": gvk}}},
        "components": {"schemas": definitions},
    }


def _chain(length: int, *, fan_out: int) -> dict[str, Any]:
    """D0 -> D1 -> ... each naming the next `fan_out` times: inlined, fan_out ** length nodes."""
    return {
        f"D{i}": {"type": "object", "properties": {f"p{j}": {"$ref": f"{REF}D{i + 1}"} for j in range(fan_out)}}
        for i in range(length)
    } | {f"D{length}": {"type": "string"}}


HOSTILE_DOCUMENTS: list[tuple[str, dict[str, Any], list[str]]] = [
    (
        "dangling-reference",
        _openapi({"D0": {"type": "object", "properties": {"a": {"$ref": REF + "Nowhere"}}}}),
        ["'Nowhere'", "does not define"],
    ),
    ("reference-fan-out-bomb", _openapi(_chain(40, fan_out=2)), [f"more than {MAX_NODES} nodes"]),
    ("reference-chain-too-deep", _openapi(_chain(400, fan_out=1)), ["deeper than 100 levels"]),
    ("reference-not-a-string", _openapi({"D0": {"type": "object", "properties": {"a": {"$ref": 7}}}}), ["'7'"]),
]


@pytest.mark.parametrize("document, words", [c[1:] for c in HOSTILE_DOCUMENTS], ids=[c[0] for c in HOSTILE_DOCUMENTS])
def test_a_hostile_openapi_document_is_reported_in_a_bounded_time_and_the_rest_is_served(
    document: dict[str, Any], words: list[str]
) -> None:
    started = time.monotonic()
    result = plan([*good_world(), document, published_resource("bad", kind="Thing", api_group="things.example.org")])
    assert time.monotonic() - started < 20, "a hostile document took too long to resolve"
    mine = [e for e in result["errors"] if e["object"].startswith("doc#3")]
    assert any(all(w in e["message"] for w in words) for e in mine), result["errors"]
    # What could not be described keeps unknown fields: the type is still published, nothing is dropped.
    assert any(step["publishedResource"] == "bad" for step in result["schemas"]), result["schemas"]
    assert_good_still_served(result)


def test_a_document_that_only_looks_like_openapi_is_an_input_error_not_a_crash() -> None:
    lookalike = {"openapi": "3.0.0", "paths": ["not", "a", "mapping"]}
    result = plan([*good_world(), lookalike])
    assert [e["message"] for e in result["errors"] if e["object"] == "doc#3"] == ["the document has no apiVersion"]
    assert_good_still_served(result)
