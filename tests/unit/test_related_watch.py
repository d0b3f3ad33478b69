"""`spec.related[].watch`: which ownerReferences and selectors count (`core/related_watch.py`), and the
primaries a related event wakes, looked up in the sync worker's caches (`app/controllers/related_watch.py`)."""

from __future__ import annotations

from typing import Any

from servlet.app.controllers.caches import Cache
from servlet.app.controllers.related_watch import WatchWakes
from servlet.app.runtime.stores import MAX_OWNER_REFERENCES, identity_of
from servlet.core import metadata
from servlet.core.actions import Side
from servlet.core.context import SyncContext
from servlet.core.model import LabelSelector, PublishedResource, RemoteKey, ResourceType, ServletIdentity
from servlet.core.parsing import parse_published_resource
from servlet.core.projection import Projected
from servlet.core.related_watch import OwnerReference, owners_of_type, selectors_of, watching
from servlet.core.targets import CONFIGMAP_TYPE, SECRET_TYPE
from tests.fake_informer import FakeInformer

REMOTE_TYPE = ResourceType("example.com", "v1", "Widget", "widgets", True)
LOCAL_TYPE = ResourceType("example.com", "v1", "Widget", "widgets", True)
TEAM_A, TEAM_B = "k7v2m9x4q1w8z3r5", "p4n8c2l6t0y9h1j3"
SERVLET = "tom"


def _entry(identifier: str, origin: str, kind: str, watch: dict[str, Any] | None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "identifier": identifier,
        "origin": origin,
        "kind": kind,
        "reference": {"name": {"path": "spec.secretName"}},
    }
    if watch is not None:
        entry["watch"] = watch
    return entry


def _context(*related: dict[str, Any]) -> SyncContext:
    result = parse_published_resource(
        {
            "apiVersion": "services.kdp.k8c.io/v1alpha1",
            "kind": "PublishedResource",
            "metadata": {"name": "widgets"},
            "spec": {"resource": {"apiGroup": "example.com", "kind": "Widget"}, "related": list(related)},
        }
    )
    assert result.problems == () and result.value is not None
    projected = Projected(
        schema_name="v0.widgets.example.com",
        schema_spec={},
        has_status_subresource=False,
        local=LOCAL_TYPE,
        remote=REMOTE_TYPE,
    )
    published = PublishedResource(name="widgets", spec=result.value.spec)
    return SyncContext(
        servlet=ServletIdentity(name=SERVLET, api_group="example.com"), published=published, projected=projected
    )


def _obj(name: str, *, uid: str = "", labels: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "default", "uid": uid or f"uid-{name}", "labels": labels or {}, **meta},
    }


def _owned(name: str, *owners: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "ownerReferences": list(owners)},
    }


def _ref(name: str, uid: str, api_version: str = "example.com/v1", kind: str = "Widget") -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid}


def _copy(
    name: str, remote: RemoteKey, *, labels: dict[str, str] | None = None, servlet: str = SERVLET
) -> dict[str, Any]:
    obj = _obj(name, labels={**(labels or {}), **metadata.link_labels(servlet_name=servlet, remote=remote)})
    obj["metadata"]["namespace"] = remote.cluster
    obj["metadata"]["annotations"] = metadata.link_annotations(remote=remote)
    return obj


def _wakes(context: SyncContext) -> tuple[WatchWakes, FakeInformer, FakeInformer]:
    remote, local = FakeInformer(), FakeInformer()
    wakes = WatchWakes(
        context=context,
        servlet_name=SERVLET,
        remote=Cache(remote),  # type: ignore[arg-type]
        local=Cache(local),  # type: ignore[arg-type]
    )
    return wakes, remote, local


# --- core -----------------------------------------------------------------------------------------


def test_owners_of_the_primarys_group_and_kind_count_in_any_version_each_once() -> None:
    before = _owned("c", _ref("w", "1"), _ref("x", "2", kind="Gadget"))
    after = _owned("c", _ref("w", "1", api_version="example.com/v2"), _ref("y", "3", api_version="other.io/v1"))
    broken = {"metadata": {"ownerReferences": [{"name": "z"}, "w", {**_ref("v", "4"), "uid": 5}]}}
    assert owners_of_type([after, before, broken, None], REMOTE_TYPE) == [OwnerReference(name="w", uid="1")]


def test_core_group_owners_are_read_from_a_plain_version() -> None:
    secret = _owned("c", _ref("cfg", "9", api_version="v1", kind="ConfigMap"))
    assert owners_of_type([secret], CONFIGMAP_TYPE) == [OwnerReference(name="cfg", uid="9")]


def test_only_entries_born_on_the_events_side_in_its_type_watch() -> None:
    selector = {"matchLabels": {"shop": "main"}}
    related = _context(
        _entry("a", "platform", "ConfigMap", {"byOwner": {}}),
        _entry("b", "platform", "Secret", {"bySelector": selector}),
        _entry("c", "service", "ConfigMap", {"bySelector": selector}),
        _entry("d", "platform", "ConfigMap", None),
    ).published.spec.related
    main = LabelSelector({"shop": "main"})
    assert watching(related, side=Side.REMOTE, resource=CONFIGMAP_TYPE) == (True, ())
    assert watching(related, side=Side.REMOTE, resource=SECRET_TYPE) == (False, (main,))
    assert watching(related, side=Side.LOCAL, resource=CONFIGMAP_TYPE) == (False, (main,))
    assert watching(related, side=Side.LOCAL, resource=SECRET_TYPE) == (False, ())
    assert selectors_of(related, Side.REMOTE) == (main,) == selectors_of(related, Side.LOCAL)


# --- byOwner --------------------------------------------------------------------------------------


def test_a_workspace_owner_wakes_the_primary_of_that_name_and_uid_in_the_events_workspace_only() -> None:
    wakes, remote, _ = _wakes(_context(_entry("cfg", "platform", "ConfigMap", {"byOwner": {}})))
    remote.put(TEAM_A, _obj("w", uid="a-uid"))
    remote.put(TEAM_B, _obj("w", uid="b-uid"))
    related = FakeInformer()

    def woken(cluster: str, *owners: dict[str, Any]) -> set[RemoteKey]:
        created = related.put(cluster, _owned(f"c{len(related.stored)}", *owners))  # a new object each time
        return wakes.primaries(Side.REMOTE, CONFIGMAP_TYPE, created)

    assert woken(TEAM_A, _ref("w", "a-uid")) == {RemoteKey(TEAM_A, "default", "w")}
    assert woken(TEAM_A, _ref("w", "b-uid")) == set(), "team-b's uid names nothing in team-a"
    assert woken(TEAM_B, _ref("w", "b-uid")) == {RemoteKey(TEAM_B, "default", "w")}
    assert woken(TEAM_A, _ref("w", "a-uid", kind="Gadget")) == set()
    assert woken(TEAM_A, _ref("gone", "a-uid")) == set()
    # A Secret event: no entry of that type watches.
    event = related.put(TEAM_A, _owned("s", _ref("w", "a-uid")))
    assert wakes.primaries(Side.REMOTE, SECRET_TYPE, event) == set()


def test_a_removed_owner_reference_still_wakes_its_primary_once() -> None:
    wakes, remote, _ = _wakes(_context(_entry("cfg", "platform", "ConfigMap", {"byOwner": {}})))
    remote.put(TEAM_A, _obj("w", uid="a-uid"))
    related = FakeInformer()
    related.put(TEAM_A, _owned("c", _ref("w", "a-uid")))
    event = related.put(TEAM_A, _owned("c"))
    assert wakes.primaries(Side.REMOTE, CONFIGMAP_TYPE, event) == {RemoteKey(TEAM_A, "default", "w")}


def test_a_service_owner_wakes_the_remote_object_its_local_copy_links_to() -> None:
    wakes, _, local = _wakes(_context(_entry("tls", "service", "Secret", {"byOwner": {}})))
    mine = RemoteKey(TEAM_A, "default", "w")
    local.put("", _copy("w-copy", mine))
    local.put("", {**_copy("other-copy", RemoteKey(TEAM_A, "default", "o"), servlet="jerry")})
    secrets = FakeInformer()

    def woken(*owners: dict[str, Any]) -> set[RemoteKey]:
        secret = _owned(f"s{len(secrets.stored)}", *owners)
        secret["metadata"]["namespace"] = TEAM_A
        return wakes.primaries(Side.LOCAL, SECRET_TYPE, secrets.put("", secret))

    assert woken(_ref("w-copy", "uid-w-copy")) == {mine}
    assert woken(_ref("w-copy", "another-uid")) == set()
    assert woken(_ref("other-copy", "uid-other-copy")) == set(), "another servlet's copy"


# --- bySelector -----------------------------------------------------------------------------------


def test_a_workspace_event_wakes_the_matching_primaries_of_its_workspace_as_their_labels_change() -> None:
    selector = {"matchLabels": {"shop": "main"}}
    context = _context(_entry("cfg", "platform", "ConfigMap", {"bySelector": selector}))
    remote = FakeInformer()
    remote.put(TEAM_A, _obj("early", labels={"shop": "main"}))  # cached before the worker started
    wakes = WatchWakes(context=context, servlet_name=SERVLET, remote=Cache(remote), local=Cache(FakeInformer()))  # type: ignore[arg-type]
    for cluster, name, shop in ((TEAM_A, "w", "main"), (TEAM_A, "v", "outlet"), (TEAM_B, "w", "main")):
        wakes.on_remote(remote.put(cluster, _obj(name, labels={"shop": shop})))
    related = FakeInformer()

    def woken(cluster: str) -> set[RemoteKey]:
        return wakes.primaries(Side.REMOTE, CONFIGMAP_TYPE, related.put(cluster, _owned("c")))

    assert woken(TEAM_A) == {RemoteKey(TEAM_A, "default", "early"), RemoteKey(TEAM_A, "default", "w")}
    assert woken(TEAM_B) == {RemoteKey(TEAM_B, "default", "w")}
    wakes.on_remote(remote.put(TEAM_A, _obj("w", labels={"shop": "outlet"})))
    wakes.on_remote(remote.put(TEAM_A, _obj("v", labels={"shop": "main"})))
    wakes.on_remote(remote.delete(TEAM_A, "default", "early"))
    assert woken(TEAM_A) == {RemoteKey(TEAM_A, "default", "v")}
    assert woken("elsewhere") == set()
    # A workspace handed to another replica (--buckets) is dropped without events: forgotten here.
    wakes.forget_workspaces(lambda cluster: cluster == TEAM_A)
    assert (woken(TEAM_A), woken(TEAM_B)) == (set(), {RemoteKey(TEAM_B, "default", "w")})


def test_a_service_event_wakes_the_remote_objects_whose_local_copies_match() -> None:
    selector = {"matchExpressions": [{"key": "shop", "operator": "In", "values": ["main"]}]}
    wakes, _, local = _wakes(_context(_entry("tls", "service", "Secret", {"bySelector": selector})))
    w, v = RemoteKey(TEAM_A, "default", "w"), RemoteKey(TEAM_B, "default", "v")
    for event in (
        local.put("", _copy("w-copy", w, labels={"shop": "main"})),
        local.put("", _copy("v-copy", v, labels={"shop": "outlet"})),
        local.put("", _copy("x-copy", RemoteKey(TEAM_A, "default", "x"), labels={"shop": "main"}, servlet="jerry")),
        local.put("", {**_obj("stray", labels={"shop": "main"})}),
    ):
        wakes.on_local(event)
    secrets = FakeInformer()

    def woken() -> set[RemoteKey]:
        return wakes.primaries(Side.LOCAL, SECRET_TYPE, secrets.put("", _owned("s")))

    assert woken() == {w}
    wakes.on_local(local.put("", _copy("v-copy", v, labels={"shop": "main"})))
    wakes.on_local(local.delete("", TEAM_A, "w-copy"))
    assert woken() == {v}


# --- what a metadata-only cache keeps -------------------------------------------------------------


def test_a_metadata_only_cache_keeps_the_naming_fields_of_the_first_owner_references() -> None:
    references = [{**_ref(f"w{i}", f"uid-{i}"), "controller": True, "blockOwnerDeletion": True} for i in range(12)]
    obj = _owned("c", *references)
    obj["metadata"]["labels"] = {"big": "x" * 60}
    kept = identity_of(obj)["metadata"]
    assert kept["ownerReferences"] == [_ref(f"w{i}", f"uid-{i}") for i in range(MAX_OWNER_REFERENCES)]
    assert "labels" not in kept
    assert "ownerReferences" not in identity_of(_owned("d"))["metadata"]
