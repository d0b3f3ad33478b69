"""Kubernetes object semantics on the service cluster and in workspaces, through lightkube."""

from __future__ import annotations

import pytest
from lightkube import ApiError, Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Namespace, Secret
from lightkube.types import PatchType

from tests.integration.kcpsim.helpers import Raw, Widget, widget_crd


@pytest.fixture
def widgets(service: Client) -> Client:
    service.create(widget_crd())
    service.create(Namespace(metadata=ObjectMeta(name="demo")))
    return service


def _widget(name: str, size: int = 1, **meta: object) -> Widget:
    return Widget(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": name, "namespace": "demo", **meta},
            "spec": {"size": size},
        }
    )


def test_create_sets_uid_timestamp_generation_and_a_global_resource_version(widgets: Client, team_a: Client) -> None:
    first = widgets.create(_widget("a"))
    in_workspace = team_a.create(ConfigMap(metadata=ObjectMeta(name="x", namespace="default")))
    second = widgets.create(_widget("b"))
    assert first.metadata.uid and first.metadata.uid != second.metadata.uid
    assert first.metadata.creationTimestamp is not None
    assert first.metadata.generation == 1
    versions = [int(o.metadata.resourceVersion) for o in (first, in_workspace, second)]
    assert versions == sorted(versions) and len(set(versions)) == 3


def test_generation_grows_on_spec_changes_only(widgets: Client) -> None:
    widgets.create(_widget("a"))
    labelled = widgets.patch(
        Widget, "a", {"metadata": {"labels": {"x": "y"}}}, namespace="demo", patch_type=PatchType.MERGE
    )
    assert labelled.metadata.generation == 1
    resized = widgets.patch(Widget, "a", {"spec": {"size": 2}}, namespace="demo", patch_type=PatchType.MERGE)
    assert resized.metadata.generation == 2


def test_an_update_that_changes_nothing_keeps_the_resource_version(widgets: Client) -> None:
    created = widgets.create(_widget("a"))
    same = widgets.patch(Widget, "a", {"spec": {"size": 1}}, namespace="demo", patch_type=PatchType.MERGE)
    assert same.metadata.resourceVersion == created.metadata.resourceVersion


def test_put_with_a_stale_resource_version_is_a_conflict(widgets: Client) -> None:
    created = widgets.create(_widget("a"))
    widgets.patch(Widget, "a", {"spec": {"size": 2}}, namespace="demo", patch_type=PatchType.MERGE)
    created["spec"]["size"] = 3
    with pytest.raises(ApiError) as caught:
        widgets.replace(created)
    assert (caught.value.status.code, caught.value.status.reason) == (409, "Conflict")


def test_put_of_a_custom_resource_needs_a_resource_version_but_a_configmap_does_not(widgets: Client) -> None:
    widgets.create(_widget("a"))
    with pytest.raises(ApiError) as caught:
        widgets.replace(_widget("a", size=5))
    assert caught.value.status.code == 422
    widgets.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="demo"), data={"a": "1"}))
    replaced = widgets.replace(ConfigMap(metadata=ObjectMeta(name="c", namespace="demo"), data={"a": "2"}))
    assert replaced.data == {"a": "2"}


def test_creating_an_existing_name_is_already_exists(widgets: Client) -> None:
    widgets.create(_widget("a"))
    with pytest.raises(ApiError) as caught:
        widgets.create(_widget("a"))
    assert (caught.value.status.code, caught.value.status.reason) == (409, "AlreadyExists")


def test_creating_in_a_missing_namespace_is_not_found(service: Client) -> None:
    with pytest.raises(ApiError) as caught:
        service.create(Secret(metadata=ObjectMeta(name="s", namespace="nowhere")))
    assert caught.value.status.code == 404
    assert caught.value.status.message == 'namespaces "nowhere" not found'


@pytest.mark.parametrize("name", ["Upper", "under_score", "-dash", "x" * 254, "trailing."])
def test_invalid_names_are_rejected_as_invalid(service: Client, name: str) -> None:
    with pytest.raises(ApiError) as caught:
        service.create(ConfigMap(metadata=ObjectMeta(name=name, namespace="default")))
    assert (caught.value.status.code, caught.value.status.reason) == (422, "Invalid")
    assert "metadata.name" in caught.value.status.message


def test_namespace_names_must_be_dns_labels(service: Client) -> None:
    with pytest.raises(ApiError) as caught:
        service.create(Namespace(metadata=ObjectMeta(name="a.b")))
    assert caught.value.status.code == 422


def test_merge_patch_deletes_with_null_and_json_patch_applies_operations(widgets: Client) -> None:
    widgets.create(_widget("a", labels={"keep": "1", "drop": "1"}))
    merged = widgets.patch(
        Widget, "a", {"metadata": {"labels": {"drop": None}}}, namespace="demo", patch_type=PatchType.MERGE
    )
    assert merged.metadata.labels == {"keep": "1"}
    patched = widgets.patch(
        Widget,
        "a",
        [{"op": "add", "path": "/spec/color", "value": "red"}, {"op": "replace", "path": "/spec/size", "value": 7}],
        namespace="demo",
        patch_type=PatchType.JSON,
    )
    assert patched["spec"] == {"size": 7, "color": "red"}


def test_a_failing_json_patch_test_operation_is_invalid(widgets: Client) -> None:
    widgets.create(_widget("a"))
    with pytest.raises(ApiError) as caught:
        widgets.patch(
            Widget,
            "a",
            [{"op": "test", "path": "/spec/size", "value": 99}],
            namespace="demo",
            patch_type=PatchType.JSON,
        )
    assert caught.value.status.code == 422


def test_strategic_merge_works_for_built_ins_and_merges_finalizers(service: Client) -> None:
    service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="default", finalizers=["a/one"]), data={"x": "1"}))
    patched = service.patch(
        ConfigMap, "c", {"metadata": {"finalizers": ["b/two"]}, "data": {"y": "2"}}, namespace="default"
    )
    # Merged as a set; apimachinery puts the patch's new item before the server's.
    assert patched.metadata.finalizers == ["b/two", "a/one"]
    assert patched.data == {"x": "1", "y": "2"}


def test_strategic_merge_on_a_custom_resource_is_unsupported_media_type(widgets: Client) -> None:
    widgets.create(_widget("a"))
    with pytest.raises(ApiError) as caught:
        widgets.patch(Widget, "a", {"spec": {"size": 2}}, namespace="demo")
    assert (caught.value.status.code, caught.value.status.reason) == (415, "UnsupportedMediaType")


def test_server_side_apply_creates_tracks_owners_and_detects_conflicts(widgets: Client) -> None:
    created = widgets.apply(_widget("a", size=1), field_manager="alice")
    assert [e.manager for e in created.metadata.managedFields] == ["alice"]
    with pytest.raises(ApiError) as caught:
        widgets.apply(_widget("a", size=2), field_manager="bob")
    assert caught.value.status.code == 409 and 'conflict with "alice"' in caught.value.status.message
    forced = widgets.apply(_widget("a", size=2), field_manager="bob", force=True)
    assert forced["spec"]["size"] == 2
    assert {e.manager for e in forced.metadata.managedFields} == {"bob"}


def test_a_forced_apply_takes_only_the_fields_in_conflict(widgets: Client) -> None:
    first = _widget("a", size=1)
    first["spec"]["color"] = "red"
    widgets.apply(first, field_manager="alice")
    second = _widget("a", size=2)
    second["spec"]["color"] = "red"
    forced = widgets.apply(second, field_manager="bob", force=True)
    owned = {entry.manager: entry.fieldsV1 for entry in forced.metadata.managedFields}
    # size changed hands; color, applied with alice's value, is now owned by both.
    assert owned["alice"] == {"f:spec": {"f:color": {}}}
    assert owned["bob"] == {"f:spec": {"f:color": {}, "f:size": {}}}


def test_apply_removes_fields_its_manager_stopped_applying(widgets: Client) -> None:
    first = _widget("a")
    first["spec"]["color"] = "red"
    widgets.apply(first, field_manager="alice")
    again = widgets.apply(_widget("a"), field_manager="alice")
    assert again["spec"] == {"size": 1}


def test_same_value_from_two_appliers_is_not_a_conflict(widgets: Client) -> None:
    widgets.apply(_widget("a", size=3), field_manager="alice")
    shared = widgets.apply(_widget("a", size=3), field_manager="bob")
    assert {e.manager for e in shared.metadata.managedFields} == {"alice", "bob"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("app=web", {"w1"}),
        ("app==web", {"w1"}),
        ("app!=web", {"w2", "w3"}),
        ("app in (web,db)", {"w1", "w2"}),
        ("app notin (web)", {"w2", "w3"}),
        ("tier", {"w1", "w3"}),
        ("!tier", {"w2"}),
        ("app=web,tier=front", {"w1"}),
    ],
)
def test_label_selectors(service: Client, selector: str, expected: set[str]) -> None:
    labels = {"w1": {"app": "web", "tier": "front"}, "w2": {"app": "db"}, "w3": {"tier": "back"}}
    for name, lab in labels.items():
        service.create(ConfigMap(metadata=ObjectMeta(name=name, namespace="default", labels=lab)))
    found = {c.metadata.name for c in service.list(ConfigMap, namespace="default", labels=_lightkube_labels(selector))}
    assert found == expected


def _lightkube_labels(selector: str) -> dict[str, object]:
    """lightkube takes selectors as a dict; translate the string form the test reads best in."""
    from lightkube import operators

    out: dict[str, object] = {}
    for part in [p.strip() for p in selector.replace(" in (", " in(").split(",") if p.strip()]:
        if " notin (" in selector and part.startswith("app notin"):
            out["app"] = operators.not_in(["web"])
        elif part.startswith("app in("):
            out["app"] = operators.in_(["web", "db"])
        elif part.startswith("db)"):
            continue
        elif "!=" in part:
            key, value = part.split("!=")
            out[key] = operators.not_equal(value)
        elif "==" in part or "=" in part:
            key, value = part.replace("==", "=").split("=")
            out[key] = value
        elif part.startswith("!"):
            out[part[1:]] = operators.not_exists()
        else:
            out[part] = operators.exists()
    return out


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"metadata.name": "a"}, {("one", "a"), ("two", "a")}),
        ({"metadata.namespace": "two"}, {("two", "a"), ("two", "b")}),
        ({"metadata.name": "a", "metadata.namespace": "one"}, {("one", "a")}),
    ],
)
def test_field_selectors_on_name_and_namespace(
    service: Client, fields: dict[str, str], expected: set[tuple[str, str]]
) -> None:
    for ns, name in (("one", "a"), ("two", "a"), ("two", "b")):
        if ns not in {n.metadata.name for n in service.list(Namespace)}:
            service.create(Namespace(metadata=ObjectMeta(name=ns)))
        service.create(ConfigMap(metadata=ObjectMeta(name=name, namespace=ns)))
    found = {(c.metadata.namespace, c.metadata.name) for c in service.list(ConfigMap, namespace="*", fields=fields)}
    assert found == expected


def test_events_are_selected_by_the_object_they_are_about(raw: Raw) -> None:
    """`kubectl describe` finds an object's Events by `involvedObject.*`; `get events` by reason and type."""
    about = {"web": ("Widget", "u1", "Warning", "NameConflict"), "db": ("Widget", "u2", "Normal", "Synced")}
    for name, (kind, uid, type_, reason) in about.items():
        raw(
            "POST",
            "/api/v1/namespaces/default/events",
            {
                "metadata": {"generateName": f"{name}."},
                "type": type_,
                "reason": reason,
                "message": "m",
                "involvedObject": {
                    "apiVersion": "example.com/v1",
                    "kind": kind,
                    "namespace": "default",
                    "name": name,
                    "uid": uid,
                },
            },
        )

    def found(selector: str, path: str = "/api/v1/events") -> set[str]:
        response = raw("GET", path, params={"fieldSelector": selector})
        assert response.status_code == 200, response.text
        return {item["involvedObject"]["name"] for item in response.json()["items"]}

    describe = (
        "involvedObject.name=web,involvedObject.namespace=default,involvedObject.kind=Widget,involvedObject.uid=u1"
    )
    assert found(describe) == {"web"}
    assert found(describe, "/api/v1/namespaces/default/events") == {"web"}
    assert found("involvedObject.uid=u3") == set()
    assert found("type=Warning") == {"web"}
    assert found("reason!=NameConflict") == {"db"}
    # Only Events have these fields: a ConfigMap list refuses them, as the API server does.
    assert raw("GET", "/api/v1/configmaps", params={"fieldSelector": "reason=x"}).status_code == 400


def test_unsupported_field_selector_is_a_bad_request(raw: Raw) -> None:
    response = raw("GET", "/api/v1/configmaps", params={"fieldSelector": "spec.x=1"})
    assert response.status_code == 400
    assert response.json()["reason"] == "BadRequest"


def test_limit_and_continue_page_through_a_list(service: Client, raw: Raw) -> None:
    for i in range(5):
        service.create(ConfigMap(metadata=ObjectMeta(name=f"c{i}", namespace="default")))
    first = raw("GET", "/api/v1/namespaces/default/configmaps", params={"limit": "2"}).json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["c0", "c1"]
    assert first["metadata"]["continue"]
    second = raw(
        "GET", "/api/v1/namespaces/default/configmaps", params={"limit": "2", "continue": first["metadata"]["continue"]}
    ).json()
    assert [i["metadata"]["name"] for i in second["items"]] == ["c2", "c3"]
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    names = [c.metadata.name for c in service.list(ConfigMap, namespace="default", chunk_size=2)]
    assert names == [f"c{i}" for i in range(5)]


def test_delete_with_finalizers_marks_and_removing_the_last_finalizer_removes(widgets: Client) -> None:
    widgets.create(_widget("a", finalizers=["example.com/hold"]))
    widgets.delete(Widget, "a", namespace="demo")
    marked = widgets.get(Widget, "a", namespace="demo")
    assert marked.metadata.deletionTimestamp is not None
    widgets.patch(Widget, "a", {"metadata": {"finalizers": None}}, namespace="demo", patch_type=PatchType.MERGE)
    with pytest.raises(ApiError) as caught:
        widgets.get(Widget, "a", namespace="demo")
    assert caught.value.status.code == 404


def test_no_new_finalizer_on_an_object_being_deleted(widgets: Client) -> None:
    widgets.create(_widget("a", finalizers=["example.com/hold"]))
    widgets.delete(Widget, "a", namespace="demo")
    with pytest.raises(ApiError) as caught:
        widgets.patch(
            Widget,
            "a",
            {"metadata": {"finalizers": ["example.com/hold", "example.com/more"]}},
            namespace="demo",
            patch_type=PatchType.MERGE,
        )
    assert caught.value.status.code == 422


def test_deleting_a_namespace_deletes_its_contents(service: Client) -> None:
    service.create(Namespace(metadata=ObjectMeta(name="gone")))
    service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="gone")))
    service.delete(Namespace, "gone")
    assert [c.metadata.name for c in service.list(ConfigMap, namespace="gone")] == []
    assert "gone" not in {n.metadata.name for n in service.list(Namespace)}


def test_writes_to_the_main_resource_ignore_status_and_status_writes_change_only_status(widgets: Client) -> None:
    created = widgets.create(_widget("a"))
    assert "status" not in created
    created["status"] = {"phase": "sneaky"}
    created["spec"]["size"] = 2
    updated = widgets.replace(created)
    assert "status" not in updated and updated["spec"]["size"] == 2
    status_body = Widget.Status(
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {
                "name": "a",
                "namespace": "demo",
                "labels": {"ignored": "yes"},
                "resourceVersion": updated.metadata.resourceVersion,
            },
            "spec": {"size": 99},
            "status": {"phase": "Ready"},
        }
    )
    written = widgets.replace(status_body)
    assert written["status"] == {"phase": "Ready"}
    assert written["spec"]["size"] == 2 and not written.metadata.labels
    assert written.metadata.generation == updated.metadata.generation


def test_status_subresource_is_not_found_when_the_crd_does_not_declare_it(service: Client, raw: Raw) -> None:
    service.create(widget_crd(status=False))
    service.create(Namespace(metadata=ObjectMeta(name="demo")))
    widget = _widget("a")
    widget["status"] = {"phase": "kept"}
    assert service.create(widget)["status"] == {"phase": "kept"}
    assert raw("GET", "/apis/example.com/v1/namespaces/demo/widgets/a/status").status_code == 404


@pytest.mark.parametrize(
    ("method", "path", "code", "reason"),
    [
        ("GET", "/api/v1/namespaces/default/configmaps/missing", 404, "NotFound"),
        ("GET", "/apis/nothing.example/v1/things", 404, "NotFound"),
        ("POST", "/api/v1/namespaces/default/configmaps/named", 405, "MethodNotAllowed"),
        ("POST", "/api/v1/namespaces/default/configmaps", 400, "BadRequest"),
    ],
)
def test_errors_are_status_objects_with_the_exact_json_content_type(
    raw: Raw, method: str, path: str, code: int, reason: str
) -> None:
    response = raw(method, path, b"{not json" if method == "POST" else None)
    assert response.status_code == code
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()
    assert (body["kind"], body["status"], body["code"], body["reason"]) == ("Status", "Failure", code, reason)


def test_unknown_patch_content_type_is_unsupported_media_type(service: Client, raw: Raw) -> None:
    service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="default")))
    response = raw("PATCH", "/api/v1/namespaces/default/configmaps/c", {"data": {}}, content_type="text/plain")
    assert response.status_code == 415


def test_delete_preconditions_are_checked(service: Client, raw: Raw) -> None:
    service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="default")))
    response = raw("DELETE", "/api/v1/namespaces/default/configmaps/c", {"preconditions": {"uid": "not-it"}})
    assert response.status_code == 409


def test_leases_support_optimistic_concurrency_for_leader_election(service: Client) -> None:
    from lightkube.models.coordination_v1 import LeaseSpec
    from lightkube.resources.coordination_v1 import Lease

    lease = service.create(
        Lease(
            metadata=ObjectMeta(name="tom.certificates.example.corp", namespace="default"),
            spec=LeaseSpec(holderIdentity="pod-1", leaseDurationSeconds=15),
        )
    )
    lease.spec.holderIdentity = "pod-2"
    taken = service.replace(lease)
    lease.spec.holderIdentity = "pod-3"
    with pytest.raises(ApiError) as caught:
        service.replace(lease)
    assert caught.value.status.code == 409
    assert service.get(Lease, lease.metadata.name, namespace="default").spec.holderIdentity == "pod-2"
    assert taken.metadata.resourceVersion != lease.metadata.resourceVersion


def test_events_can_be_recorded(service: Client) -> None:
    from lightkube.models.core_v1 import ObjectReference
    from lightkube.resources.core_v1 import Event

    created = service.create(
        Event(
            metadata=ObjectMeta(name="e1", namespace="default"),
            reason="Synced",
            message="copied",
            type="Normal",
            involvedObject=ObjectReference(kind="ConfigMap", name="c", namespace="default"),
        )
    )
    assert [e.reason for e in service.list(Event, namespace="default")] == [created.reason]


def test_secret_string_data_is_stored_base64_encoded_in_data(service: Client) -> None:
    created = service.create(
        Secret(
            metadata=ObjectMeta(name="s", namespace="default"),
            stringData={"password": "hunter2"},
            data={"user": "YWxpY2U="},
        )
    )
    assert created.data == {"user": "YWxpY2U=", "password": "aHVudGVyMg=="}
    assert created.stringData is None and created.type == "Opaque"


def test_deletecollection_deletes_what_the_selector_matches(service: Client, raw: Raw) -> None:
    # lightkube's deletecollection takes no selector, hence raw HTTP.
    for name, app in (("a", "web"), ("b", "web"), ("c", "db")):
        service.create(ConfigMap(metadata=ObjectMeta(name=name, namespace="default", labels={"app": app})))
    response = raw("DELETE", "/api/v1/namespaces/default/configmaps", params={"labelSelector": "app=web"})
    assert [i["metadata"]["name"] for i in response.json()["items"]] == ["a", "b"]
    assert [c.metadata.name for c in service.list(ConfigMap, namespace="default")] == ["c"]


def test_a_body_of_another_version_or_kind_is_a_bad_request(raw: Raw) -> None:
    response = raw(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        {"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "c"}},
    )
    assert response.status_code == 400 and "does not match the expected API version" in response.json()["message"]
    response = raw(
        "POST",
        "/api/v1/namespaces/default/configmaps",
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c"}},
    )
    assert response.status_code == 400


def test_put_with_another_uid_is_a_conflict(service: Client) -> None:
    service.create(ConfigMap(metadata=ObjectMeta(name="c", namespace="default")))
    with pytest.raises(ApiError) as caught:
        service.replace(ConfigMap(metadata=ObjectMeta(name="c", namespace="default", uid="someone-else")))
    assert caught.value.status.code == 409 and "Precondition failed" in caught.value.status.message


def _owned_secret(service: Client, owner: ConfigMap) -> None:
    from lightkube.models.meta_v1 import OwnerReference

    service.create(
        Secret(
            metadata=ObjectMeta(
                name="dependent",
                namespace="default",
                ownerReferences=[
                    OwnerReference(apiVersion="v1", kind="ConfigMap", name=owner.metadata.name, uid=owner.metadata.uid)
                ],
            )
        )
    )


def test_dependents_are_garbage_collected_with_their_owner(service: Client) -> None:
    owner = service.create(ConfigMap(metadata=ObjectMeta(name="owner", namespace="default")))
    _owned_secret(service, owner)
    service.delete(ConfigMap, "owner", namespace="default")
    assert [s.metadata.name for s in service.list(Secret, namespace="default")] == []


def test_orphan_propagation_keeps_dependents_and_drops_the_reference(service: Client) -> None:
    from lightkube.types import CascadeType

    owner = service.create(ConfigMap(metadata=ObjectMeta(name="owner", namespace="default")))
    _owned_secret(service, owner)
    service.delete(ConfigMap, "owner", namespace="default", cascade=CascadeType.ORPHAN)
    kept = service.get(Secret, "dependent", namespace="default")
    assert kept.metadata.ownerReferences is None


def test_appliers_own_their_finalizers_one_by_one(widgets: Client) -> None:
    widgets.apply(_widget("a", finalizers=["example.com/a"]), field_manager="alice")
    both = widgets.apply(_widget("a", finalizers=["example.com/b"]), field_manager="bob")
    assert both.metadata.finalizers == ["example.com/a", "example.com/b"]
    alice_gone = widgets.apply(_widget("a"), field_manager="alice")
    assert alice_gone.metadata.finalizers == ["example.com/b"]
