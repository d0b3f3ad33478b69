"""Related objects of any type: `group`/`version`/`resource` parsed, resolved against the service
cluster's CRDs, synced as whole objects (but metadata and status), and claimed in the APIExport."""

from __future__ import annotations

from typing import Any

import attrs
import pytest

from servlet.core.actions import CreateRelated, Error, PatchRelated, PatchRemoteStatus, RecordRelatedState, Side
from servlet.core.apiexport import plan_export
from servlet.core.model import (
    Origin,
    Problem,
    PublishedResource,
    PublishedResourceSpec,
    RelatedAPI,
    RelatedKind,
    RelatedReference,
    RelatedResource,
    ResourceType,
    SourceResource,
    ValueReference,
)
from servlet.core.parsing import parse_published_resource
from servlet.core.patch import decode_state
from servlet.core.related import (
    Coordinates,
    RelatedKey,
    RelatedSnapshot,
    Resolved,
    absences_to_confirm,
    plan_related,
    plan_related_cleanup,
    resolve,
)
from servlet.core.related_types import Claim, required_claims, resolve_related_types
from servlet.core.targets import SECRET_TYPE
from tests.unit.test_related import CLUSTER, LOCAL_NS, local_primary, primaries, remote_primary

DB_GROUP = "databases.example.org"
IDENTITY = "9f2c61d0a4"
DATABASE_TYPE = ResourceType(DB_GROUP, "v1", "Database", "databases", True)
DATABASE = RelatedResource(
    identifier="database",
    origin=Origin.SERVICE,
    kind=None,
    reference=RelatedReference(name=ValueReference(path="spec.secretName")),
    api=RelatedAPI(group=DB_GROUP, version="v1", resource="databases", identity_hash=IDENTITY),
    resolved=DATABASE_TYPE,
)


def database_crd(*, version: str = "v1", scope: str = "Namespaced") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"databases.{DB_GROUP}", "resourceVersion": "7"},
        "spec": {
            "group": DB_GROUP,
            "scope": scope,
            "names": {"kind": "Database", "plural": "databases"},
            "versions": [{"name": version, "served": True, "storage": True}],
        },
    }


def database(namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{DB_GROUP}/v1",
        "kind": "Database",
        "metadata": {"namespace": namespace, "name": name, "uid": "u-1", "resourceVersion": "3"},
        "spec": spec,
        "status": {"phase": "Ready"},
    }


def manifest(*related: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": "widgets"},
        "spec": {"resource": {"apiGroup": "example.com", "kind": "Widget"}, "related": list(related)},
    }


def entry(**fields: Any) -> dict[str, Any]:
    return {"identifier": "database", "origin": "service", "reference": {"name": {"path": "spec.db"}}, **fields}


# --- parsing -----------------------------------------------------------------------------------


def test_group_version_resource_and_identity_hash_parse_into_the_related_type() -> None:
    parsed = parse_published_resource(
        manifest(entry(group=DB_GROUP, version="v1", resource="databases", identityHash=IDENTITY))
    )
    assert parsed.problems == ()
    assert parsed.value is not None
    (item,) = parsed.value.spec.related
    assert item.kind is None
    assert item.api == RelatedAPI(DB_GROUP, "v1", "databases", IDENTITY)


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        (
            {"kind": "Secret", "group": DB_GROUP, "version": "v1", "resource": "databases"},
            ["spec.related[0].kind"],
        ),
        ({"group": DB_GROUP}, ["spec.related[0].version", "spec.related[0].resource"]),
        ({"identityHash": IDENTITY}, ["spec.related[0].version", "spec.related[0].resource"]),
        ({"version": "v1", "resource": "Databases!"}, ["spec.related[0].resource"]),
        ({"version": "v1", "resource": 3}, ["spec.related[0].resource"]),
        ({}, ["spec.related[0].kind"]),
    ],
    ids=["kind-and-resource", "group-alone", "identity-alone", "bad-resource", "not-a-string", "no-type"],
)
def test_impossible_type_combinations_are_problems_naming_the_field(
    fields: dict[str, Any], expected: list[str]
) -> None:
    problems = parse_published_resource(manifest(entry(**fields))).problems
    assert [problem.field for problem in problems] == expected


# --- resolution --------------------------------------------------------------------------------


def published(*related: RelatedResource) -> PublishedResource:
    spec = PublishedResourceSpec(resource=SourceResource(api_group="example.com", kind="Widget"), related=related)
    return PublishedResource(name="widgets", spec=spec)


def unresolved(api: RelatedAPI) -> RelatedResource:
    return attrs.evolve(DATABASE, api=api, resolved=None)


@pytest.mark.parametrize(
    ("api", "crds", "expected"),
    [
        (RelatedAPI(DB_GROUP, "v1", "databases"), [database_crd()], DATABASE_TYPE),
        (RelatedAPI(DB_GROUP, "v2", "databases"), [database_crd()], None),
        (RelatedAPI(DB_GROUP, "v1", "databases"), [], None),
        (RelatedAPI("", "v1", "secrets"), [], SECRET_TYPE),
        (
            RelatedAPI(DB_GROUP, "v1", "databases"),
            [database_crd(scope="Cluster")],
            attrs.evolve(DATABASE_TYPE, namespaced=False),
        ),
    ],
    ids=["crd", "version-not-served", "no-crd", "built-in", "cluster-scoped"],
)
def test_a_related_type_resolves_against_the_service_clusters_types(
    api: RelatedAPI, crds: list[dict[str, Any]], expected: ResourceType | None
) -> None:
    (item,) = resolve_related_types(published(unresolved(api)), crds).spec.related
    assert item.resolved == expected


def test_an_unserved_type_is_an_error_for_its_entry_while_the_others_keep_syncing() -> None:
    tls = RelatedResource(
        identifier="tls",
        origin=Origin.SERVICE,
        kind=RelatedKind.SECRET,
        reference=RelatedReference(name=ValueReference(path="spec.secretName")),
    )
    missing = unresolved(RelatedAPI(DB_GROUP, "v1", "databases"))
    source = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"namespace": LOCAL_NS, "name": "cert-1-tls"},
        "data": {"a": "Yg=="},
    }
    actions = plan_related(
        primaries=primaries(),
        related=[missing, tls],
        snapshot=RelatedSnapshot(objects={RelatedKey(Side.LOCAL, SECRET_TYPE, LOCAL_NS, "cert-1-tls"): source}),
    )
    error = actions[0]
    assert isinstance(error, Error) and error.field == "spec.related[0].resource"
    assert "not served on the service cluster" in error.reason and "databases" in error.reason
    assert any(isinstance(action, CreateRelated) and action.identifier == "tls" for action in actions)


# --- content -----------------------------------------------------------------------------------


def test_a_service_database_is_copied_whole_but_its_metadata_and_status() -> None:
    source = database(LOCAL_NS, "cert-1-tls", engine="postgres", size=1)
    source["metadata"]["labels"] = {"team": "a"}
    actions = plan_related(
        primaries=primaries(),
        related=[DATABASE],
        snapshot=RelatedSnapshot(objects={RelatedKey(Side.LOCAL, DATABASE_TYPE, LOCAL_NS, "cert-1-tls"): source}),
    )
    create, record = actions
    assert isinstance(create, CreateRelated)
    assert create.target.resource == DATABASE_TYPE and create.target.cluster == CLUSTER
    assert create.object == {
        "apiVersion": f"{DB_GROUP}/v1",
        "kind": "Database",
        "metadata": {"name": "api-tls", "namespace": "prod", "labels": {"team": "a"}},
        "spec": {"engine": "postgres", "size": 1},
    }
    assert isinstance(record, RecordRelatedState)


def test_a_key_the_origin_dropped_is_removed_from_the_copy_by_the_three_way_rule() -> None:
    before = database(LOCAL_NS, "cert-1-tls", engine="postgres", size=1)
    actions = plan_related(
        primaries=primaries(),
        related=[DATABASE],
        snapshot=RelatedSnapshot(objects={RelatedKey(Side.LOCAL, DATABASE_TYPE, LOCAL_NS, "cert-1-tls"): before}),
    )
    record = actions[-1]
    assert isinstance(record, RecordRelatedState)
    state = record.patch["metadata"]["annotations"][next(iter(record.patch["metadata"]["annotations"]))]
    local = local_primary(annotations={next(iter(record.patch["metadata"]["annotations"])): state})
    assert decode_state(state) is not None

    after = database(LOCAL_NS, "cert-1-tls", engine="postgres")
    copy = database("prod", "api-tls", engine="postgres", size=1)
    actions = plan_related(
        primaries=primaries(remote_primary(), local),
        related=[DATABASE],
        snapshot=RelatedSnapshot(
            objects={
                RelatedKey(Side.LOCAL, DATABASE_TYPE, LOCAL_NS, "cert-1-tls"): after,
                RelatedKey(Side.REMOTE, DATABASE_TYPE, "prod", "api-tls"): copy,
            }
        ),
    )
    patch = next(action for action in actions if isinstance(action, PatchRelated))
    assert patch.patch["spec"] == {"size": None}


# --- claims ------------------------------------------------------------------------------------


def test_claims_name_the_identity_of_a_foreign_type_and_skip_the_exports_own() -> None:
    own = attrs.evolve(DATABASE, identifier="own", api=RelatedAPI("certificates.example.corp", "v1", "widgets"))
    roles = attrs.evolve(DATABASE, identifier="roles", api=RelatedAPI("rbac.authorization.k8s.io", "v1", "roles"))
    # kcp serves no Deployments of its own: without an identity hash it would refuse the claim.
    deployments = attrs.evolve(DATABASE, identifier="apps", api=RelatedAPI("apps", "v1", "deployments"))
    nameless = attrs.evolve(DATABASE, identifier="nameless", api=RelatedAPI("other.example.org", "v1", "things"))
    claims = required_claims(
        [DATABASE, own, roles, deployments, nameless], exported={("certificates.example.corp", "widgets")}
    )
    assert claims == {Claim(DB_GROUP, "databases", IDENTITY), Claim("rbac.authorization.k8s.io", "roles")}


def test_the_export_gains_the_identity_claim_once_and_is_left_alone_after() -> None:
    change = plan_export(export={"spec": {}}, schema_names=["v1.widgets.certificates.example.corp"], related=[DATABASE])
    assert change is not None
    claims = change.spec["permissionClaims"]
    assert {"group": DB_GROUP, "resource": "databases", "identityHash": IDENTITY, "all": True} in claims
    assert {"group": "", "resource": "namespaces", "all": True} in claims
    assert (
        plan_export(
            export={"spec": change.spec}, schema_names=["v1.widgets.certificates.example.corp"], related=[DATABASE]
        )
        is None
    )


# --- projection --------------------------------------------------------------------------------


def test_a_projection_replaces_only_the_fields_it_sets() -> None:
    parsed = parse_published_resource(
        manifest(entry(kind="ConfigMap", projection={"resource": "secrets"}), entry(identifier="other", **_db_fields()))
    )
    assert parsed.problems == ()
    assert parsed.value is not None
    configmap, other = parsed.value.spec.related
    assert configmap.projection == RelatedAPI("", "v1", "secrets")
    assert other.projection == RelatedAPI("kcp.example.org", "v1", "databases", IDENTITY)


def _db_fields() -> dict[str, Any]:
    return {
        "group": DB_GROUP,
        "version": "v1",
        "resource": "databases",
        "identityHash": IDENTITY,
        "projection": {"group": "kcp.example.org"},
    }


@pytest.mark.parametrize(
    ("projection", "field"),
    [({}, "spec.related[0].projection"), ({"resource": "Secrets!"}, "spec.related[0].projection.resource")],
)
def test_an_empty_or_bad_projection_is_a_problem_naming_the_field(projection: dict[str, str], field: str) -> None:
    problems = parse_published_resource(manifest(entry(kind="ConfigMap", projection=projection))).problems
    assert [problem.field for problem in problems] == [field]


def _projected(origin: Origin, kind: RelatedKind, projection: str) -> RelatedResource:
    parsed = parse_published_resource(
        manifest(entry(origin=origin.value, kind=kind.value, projection={"resource": projection}))
    )
    assert parsed.value is not None
    (item,) = resolve_related_types(parsed.value, []).spec.related
    return attrs.evolve(item, reference=RelatedReference(name=ValueReference(path="spec.secretName")))


def test_an_operators_configmap_goes_up_as_a_secret_with_its_text_in_base64() -> None:
    item = _projected(Origin.SERVICE, RelatedKind.CONFIGMAP, "secrets")
    source = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"namespace": LOCAL_NS, "name": "cert-1-tls"},
        "data": {"color": "blue"},
        "binaryData": {"logo": "AAE="},
    }
    snapshot = RelatedSnapshot(objects={RelatedKey(Side.LOCAL, RelatedKind.CONFIGMAP, LOCAL_NS, "cert-1-tls"): source})
    create = plan_related(primaries=primaries(), related=[item], snapshot=snapshot)[0]
    assert isinstance(create, CreateRelated) and create.target.resource == SECRET_TYPE
    assert create.object["kind"] == "Secret"
    assert create.object["data"] == {"color": "Ymx1ZQ==", "logo": "AAE="}
    # The Secret's values stay out of the record on the local primary.
    assert required_claims([item], exported=()) == {Claim("", "secrets")}


def test_a_tenants_secret_comes_down_as_a_configmap_with_text_where_it_is_text() -> None:
    item = _projected(Origin.PLATFORM, RelatedKind.SECRET, "configmaps")
    source = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"namespace": "prod", "name": "api-tls", "uid": "u-2"},
        "data": {"user": "YWxpY2U=", "key": "/w=="},
    }
    snapshot = RelatedSnapshot(objects={RelatedKey(Side.REMOTE, RelatedKind.SECRET, "prod", "api-tls"): source})
    create = next(
        action
        for action in plan_related(primaries=primaries(), related=[item], snapshot=snapshot)
        if isinstance(action, CreateRelated)
    )
    assert create.target.resource.kind == "ConfigMap" and create.target.side is Side.LOCAL
    assert create.object["data"] == {"user": "alice"} and create.object["binaryData"] == {"key": "/w=="}
    assert required_claims([item], exported=()) == {Claim("", "secrets")}


# --- object: reference, template, namespace ----------------------------------------------------


def _object_entry(obj: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return {"identifier": "creds", "origin": "service", "kind": "Secret", "object": obj, **fields}


@pytest.mark.parametrize(
    ("obj", "fields", "expected"),
    [
        ({"reference": {"path": "a"}, "template": {"template": "b"}}, {}, "spec.related[0].object"),
        ({}, {}, "spec.related[0].object"),
        ({"selector": {"matchLabels": {"a": "b"}}}, {}, "spec.related[0].object.selector.rewrite"),
        ({"template": {"template": "{{ .Nope }}"}}, {}, "spec.related[0].object.template.template"),
        (
            {"template": {"template": "x"}, "namespace": {"template": {"template": "{{ .Object.spec.ns }}"}}},
            {},
            "spec.related[0].object.namespace.template.template",
        ),
        (
            {"template": {"template": "x"}, "namespace": {"reference": {"path": "spec.ns"}}},
            {},
            "spec.related[0].object.namespace.reference.path",
        ),
        ({"reference": {"path": "spec.x"}}, {"reference": {"name": {"path": "spec.x"}}}, "spec.related[0].object"),
    ],
    ids=[
        "two-forms",
        "no-form",
        "selector-without-rewrite",
        "unknown-field",
        "tenant-namespace",
        "tenant-namespace-path",
        "both",
    ],
)
def test_impossible_object_forms_are_problems_naming_the_field(
    obj: dict[str, Any], fields: dict[str, Any], expected: str
) -> None:
    problems = parse_published_resource(manifest(_object_entry(obj, **fields))).problems
    assert [problem.field for problem in problems] == [expected]


def _object_item(obj: dict[str, Any]) -> RelatedResource:
    parsed = parse_published_resource(manifest(_object_entry(obj)))
    assert parsed.problems == ()
    assert parsed.value is not None
    return parsed.value.spec.related[0]


def test_a_template_is_evaluated_on_each_sides_primary_with_the_side() -> None:
    item = _object_item(
        {
            "template": {"template": "{{ .Object.metadata.name }}-creds"},
            "namespace": {"template": {"template": "{{ .Side }}-creds"}},
        }
    )
    resolved = resolve(item, index=0, remote=remote_primary(), local=local_primary())
    assert resolved == Resolved(
        remote=Coordinates("platform-creds", "api-creds"), local=Coordinates("service-creds", "cert-1-creds")
    )


def test_a_template_reading_a_field_not_set_yet_leaves_the_object_pending() -> None:
    item = _object_item({"template": {"template": "{{ .Object.spec.credentials }}"}})
    assert resolve(item, index=0, remote=remote_primary(), local=local_primary()) == Resolved(None, None)


def test_object_reference_is_the_reference_name_path() -> None:
    item = _object_item({"reference": {"path": "spec.secretName"}})
    resolved = resolve(item, index=0, remote=remote_primary(), local=local_primary())
    assert resolved == Resolved(remote=Coordinates("prod", "api-tls"), local=Coordinates(LOCAL_NS, "cert-1-tls"))


def test_a_template_yielding_no_dns_name_is_a_problem_on_the_template() -> None:
    item = _object_item({"template": {"template": "{{ .Object.kind }}"}})
    problem = resolve(item, index=2, remote=remote_primary(), local=local_primary())
    assert isinstance(problem, Problem) and problem.field == "spec.related[2].object.template"


# --- cleanup -----------------------------------------------------------------------------------


def test_without_cleanup_no_copy_is_deleted_neither_with_its_primary_nor_its_origin() -> None:
    item = attrs.evolve(DATABASE, cleanup=False)
    source = database(LOCAL_NS, "cert-1-tls", engine="postgres")
    origin_key = RelatedKey(Side.LOCAL, DATABASE_TYPE, LOCAL_NS, "cert-1-tls")
    _create, record = plan_related(
        primaries=primaries(), related=[item], snapshot=RelatedSnapshot(objects={origin_key: source})
    )
    assert isinstance(record, RecordRelatedState)
    ((key, state),) = record.patch["metadata"]["annotations"].items()
    local = local_primary(annotations={key: state})
    copy_key = RelatedKey(Side.REMOTE, DATABASE_TYPE, "prod", "api-tls")
    copy = database("prod", "api-tls", engine="postgres")
    both = RelatedSnapshot(objects={origin_key: source, copy_key: copy})
    assert plan_related_cleanup(primaries=primaries(remote_primary(), local), related=[item], snapshot=both) == ()
    assert plan_related_cleanup(primaries=primaries(remote_primary(), local), related=[DATABASE], snapshot=both)
    gone = plan_related(
        primaries=primaries(remote_primary(), local), related=[item], snapshot=RelatedSnapshot(objects={copy_key: copy})
    )
    assert [type(action).__name__ for action in gone] == ["RecordRelatedState"]


def test_cleanup_must_be_a_boolean() -> None:
    problems = parse_published_resource(manifest(entry(kind="Secret", cleanup="no"))).problems
    assert [problem.field for problem in problems] == ["spec.related[0].cleanup"]


# --- syncStatus --------------------------------------------------------------------------------


def _with_copy(item: RelatedResource, *, status: dict[str, Any]) -> tuple[Any, ...]:
    """The plan once the copy exists and its state is recorded, the origin now having `status`."""
    source = database(LOCAL_NS, "cert-1-tls", engine="pg")
    origin_key = RelatedKey(Side.LOCAL, DATABASE_TYPE, LOCAL_NS, "cert-1-tls")
    record = plan_related(
        primaries=primaries(), related=[item], snapshot=RelatedSnapshot(objects={origin_key: source})
    )[-1]
    assert isinstance(record, RecordRelatedState)
    local = local_primary(annotations=dict(record.patch["metadata"]["annotations"]))
    copy = database("prod", "api-tls", engine="pg")
    copy.pop("status")
    source = {**source, "status": status}
    snapshot = RelatedSnapshot(
        objects={origin_key: source, RelatedKey(Side.REMOTE, DATABASE_TYPE, "prod", "api-tls"): copy}
    )
    return plan_related(primaries=primaries(remote_primary(), local), related=[item], snapshot=snapshot)


def test_sync_status_goes_through_the_status_subresource_where_the_type_has_one() -> None:
    item = attrs.evolve(DATABASE, sync_status=True, status_subresource=True)
    actions = _with_copy(item, status={"phase": "Ready"})
    (status,) = [action for action in actions if isinstance(action, PatchRemoteStatus)]
    assert status.patch == {"status": {"phase": "Ready"}} and status.target.name == "api-tls"
    assert not any(isinstance(action, PatchRemoteStatus) for action in _with_copy(DATABASE, status={"phase": "Ready"}))


def test_sync_status_without_a_subresource_writes_status_with_the_content() -> None:
    item = attrs.evolve(DATABASE, sync_status=True)
    (patch,) = [action for action in _with_copy(item, status={"phase": "Ready"}) if isinstance(action, PatchRelated)]
    assert patch.patch["status"] == {"phase": "Ready"}


def test_the_status_subresource_is_read_from_the_destination_types_crd() -> None:
    crd = database_crd()
    crd["spec"]["versions"][0]["subresources"] = {"status": {}}
    item = attrs.evolve(DATABASE, resolved=None, sync_status=True)
    (resolved,) = resolve_related_types(published(item), [crd]).spec.related
    assert resolved.status_subresource and resolved.resolved == DATABASE_TYPE
    (plain,) = resolve_related_types(published(item), [database_crd()]).spec.related
    assert not plain.status_subresource


def test_sync_status_of_a_platform_secret_is_refused_naming_the_field() -> None:
    problems = parse_published_resource(manifest(entry(kind="Secret", origin="platform", syncStatus=True))).problems
    assert [problem.field for problem in problems] == ["spec.related[0].syncStatus"]


def test_without_cleanup_an_origin_missing_from_a_cache_needs_no_fresh_read() -> None:
    """The fresh read of a missing origin only guards a deletion; an entry that never deletes
    asks for none, and reports no error on every resync."""
    origin_key = RelatedKey(Side.LOCAL, DATABASE_TYPE, LOCAL_NS, "cert-1-tls")
    first = plan_related(
        primaries=primaries(),
        related=[DATABASE],
        snapshot=RelatedSnapshot(objects={origin_key: database(LOCAL_NS, "cert-1-tls", engine="pg")}),
    )
    record = first[-1]
    assert isinstance(record, RecordRelatedState)
    local = local_primary(annotations=dict(record.patch["metadata"]["annotations"]))
    copy_key = RelatedKey(Side.REMOTE, DATABASE_TYPE, "prod", "api-tls")
    missing = RelatedSnapshot(
        objects={copy_key: database("prod", "api-tls", engine="pg")}, unconfirmed=frozenset({origin_key})
    )
    pair = primaries(remote_primary(), local)
    assert absences_to_confirm(primaries=pair, related=[DATABASE], snapshot=missing) == {origin_key}
    kept = attrs.evolve(DATABASE, cleanup=False)
    assert absences_to_confirm(primaries=pair, related=[kept], snapshot=missing) == frozenset()
    actions = plan_related(primaries=pair, related=[kept], snapshot=missing)
    assert [type(action).__name__ for action in actions] == ["RecordRelatedState"]
