"""The safety invariants of syncing (docs/safety.md), checked by a stateful model test.

Hypothesis interleaves what tenants, the service owner and the platform do with the servlet's own
work: reconciles of single objects planned from a stale view of the world (the daemon's caches
after a cut watch), writes that fail (injected API faults, and the refusals a stale view causes),
relists and restarts. After every step the servlet must not have touched what it did not create;
at each quiet point (a restarted servlet reconciling until nothing is written, no faults) every
invariant must hold.

The servlet here is the core itself: `core.gather` answered by a `World`, `core.plan`, and the
world's API-server rules for writes; what the daemon adds (caches, queues) is modelled by the
stale view and the partial executions. Run many more examples with
`SYNC_MODEL_EXAMPLES=2000 python -m pytest tests/property/test_sync_model.py`.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import attrs
from hypothesis import HealthCheck, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from servlet.core import metadata
from servlet.core.actions import ObjectRef, Release, Side
from servlet.core.dryrun import plan_once, settle
from servlet.core.gather import admitted, computed_local_key
from servlet.core.keys import is_deleting, metadata_of, remote_key_of
from servlet.core.model import (
    LabelSelector,
    Naming,
    Origin,
    PublishedResource,
    PublishedResourceSpec,
    RegexRule,
    RelatedAPI,
    RelatedReference,
    RelatedResource,
    RelatedSelector,
    ResourceFilter,
    ResourceType,
    ServletIdentity,
    SourceResource,
    ValueReference,
)
from servlet.core.mutation_steps import CelStep, Mutation, TemplateStep
from servlet.core.plan import SyncContext
from servlet.core.projection import Projected
from servlet.core.world import World, WriteFailure

CLUSTERS = ("wsaaaaaaaaaaaaaa", "wsbbbbbbbbbbbbbb")
NAMESPACES = ("default", "prod")
NAMES = ("a", "b", "c")
SERVLET = ServletIdentity("tom", "example.corp")
LOCAL = ResourceType("example.com", "v1", "Widget", "widgets", True)
SIZES = st.integers(min_value=0, max_value=3)
# Related objects of a type of any group (SPEC 8): Databases, named by `spec.up` (born on the
# service, copied up) and `spec.down` (born in the workspace, copied down) of a Widget. Each entry
# mutates what it copies: a step reading the origin's whole metadata and one reading the copy's
# identity, so a copy is current only with the mutated content, and quiet only if that is a fixed point.
DATABASE = ResourceType("databases.example.org", "v1", "Database", "databases", True)
DB_NAMES = ("d1", "d2")
DB_NAME_OR_NONE = st.sampled_from((None, *DB_NAMES))
RELATED = tuple(
    RelatedResource(
        identifier=identifier,
        origin=origin,
        kind=None,
        reference=RelatedReference(name=ValueReference(path=path)),
        api=RelatedAPI(DATABASE.group, DATABASE.version, DATABASE.plural, identity_hash="f00d"),
        resolved=DATABASE,
        mutation=Mutation(
            spec=(
                CelStep("spec.origin", "self.metadata.name + '/' + string(size(self.metadata))"),
                TemplateStep("spec.copy", "{{ .RemoteObject.metadata.namespace }}"),
            )
        ),
    )
    for identifier, origin, path in (
        ("up", Origin.SERVICE, "spec.up"),
        ("down", Origin.PLATFORM, "spec.down"),
        # A path into a list: one Database per item, paired by position on the two Widgets.
        ("many", Origin.PLATFORM, "spec.many[*]"),
    )
)
# Databases found by labels (issue 15): `ups` finds the service owner's labelled Databases and
# renames them (d1 and dd1 both become sel1: a collision, which must write nothing); `downs` finds
# the tenant's Databases labelled with the Widget's name and renames them so that one can land
# on the owner's dd1 (a conflict, which must not overwrite it).
SELECTED = (
    attrs.evolve(
        RELATED[0],
        identifier="ups",
        reference=RelatedReference(
            name="",
            object_form=True,
            selector=RelatedSelector(
                match_labels=(("bundle", "gold"),), match_expressions=(), rewrite=RegexRule("^d+(\\d)$", "sel\\1")
            ),
        ),
    ),
    attrs.evolve(
        RELATED[1],
        identifier="downs",
        reference=RelatedReference(
            name="",
            object_form=True,
            selector=RelatedSelector(
                match_labels=(("share", "{{ .Object.metadata.name }}"),),
                match_expressions=(),
                rewrite="d{{ .Value }}",
            ),
        ),
    ),
)
OWNER_DB_NAMES = ("d1", "dd1")
TENANT_DB_NAMES = ("d1", "d2", "sel1")


def _mutated_spec(origin: dict[str, Any], *, copy_namespace: str) -> dict[str, Any]:
    """What the copy of a Database carries: its origin's spec as the related entries' steps change it."""
    meta = {key: value for key, value in origin["metadata"].items() if key not in ("resourceVersion", "managedFields")}
    return {**origin["spec"], "origin": f"{meta['name']}/{len(meta)}", "copy": copy_namespace}


def _context(kind: str, plural: str, *, naming: Naming, related: tuple[RelatedResource, ...] = ()) -> SyncContext:
    spec = PublishedResourceSpec(
        resource=SourceResource(api_group="example.com", kind="Widget", version="v1"),
        naming=naming,
        filter=ResourceFilter(labels=LabelSelector(match_labels=(("sync", "yes"),))),
        related=related,
    )
    remote = ResourceType("example.corp", "v1", kind, plural, True)
    projected = Projected(
        schema_name=f"v1.{plural}.example.corp", schema_spec={}, local=LOCAL, remote=remote, has_status_subresource=True
    )
    return SyncContext(servlet=SERVLET, published=PublishedResource(name=plural, spec=spec), projected=projected)


# Two PublishedResources publish the one local Widget type: their copies must never meet. The
# second names copies by remote name only, so objects of two namespaces can collide.
PRIMARY = _context("Widget", "widgets", naming=Naming(), related=(*RELATED, *SELECTED))
TWIN = _context("Twin", "twins", naming=Naming(namespace="$remoteClusterName", name="$remoteName"))
RESOURCES = {"widgets": PRIMARY, "twins": TWIN}


def _database(
    namespace: str, name: str, *, size: int, cluster: str = "", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if cluster:
        meta["annotations"] = {"kcp.io/cluster": cluster}
    return {"apiVersion": DATABASE.api_version, "kind": DATABASE.kind, "metadata": meta, "spec": {"size": size}}


def _db_key(side: Side, cluster: str, namespace: str, name: str) -> Any:
    return (side, DATABASE.api_version, DATABASE.kind, cluster if side is Side.REMOTE else "", namespace, name)


def _remote(
    context: SyncContext,
    cluster: str,
    namespace: str,
    name: str,
    *,
    size: int,
    synced: bool,
    forged: bool,
    up: str | None = None,
    down: str | None = None,
) -> dict[str, Any]:
    labels = {"sync": "yes" if synced else "no"}
    if forged:  # a tenant forging a link: it must never be copied or believed
        labels.update(
            metadata.link_labels(
                servlet_name=SERVLET.name,
                remote=remote_key_of(
                    {"metadata": {"namespace": namespace, "name": "other", "annotations": {"kcp.io/cluster": cluster}}}
                ),
            )
        )
    remote = context.projected.remote
    return {
        "apiVersion": remote.api_version,
        "kind": remote.kind,
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": labels,
            "annotations": {"kcp.io/cluster": cluster},
        },
        "spec": {"size": size, **({"up": up} if up else {}), **({"down": down} if down else {})},
    }


@attrs.define
class Fault:
    """The next `count` writes fail (the API server answers 500)."""

    count: int = 0


class SyncModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.world = World()
        self.view = World()  # what the servlet's caches hold
        self.contexts: list[SyncContext] = [PRIMARY, TWIN]
        self.foreign: dict[tuple[str, str], dict[str, Any]] = {}  # local objects of the service owner
        self.owner_databases: dict[tuple[str, str], dict[str, Any]] = {}  # service-origin Databases
        self.tenant_databases: set[Any] = set()  # workspace Databases the tenants made
        self.fault = Fault()

    # -- tenants ---------------------------------------------------------------------------------

    @rule(
        resource=st.sampled_from(sorted(RESOURCES)),
        cluster=st.sampled_from(CLUSTERS),
        namespace=st.sampled_from(NAMESPACES),
        name=st.sampled_from(NAMES),
        size=SIZES,
        synced=st.booleans(),
        forged=st.booleans(),
        up=DB_NAME_OR_NONE,
        down=DB_NAME_OR_NONE,
    )
    def tenant_writes(
        self,
        resource: str,
        cluster: str,
        namespace: str,
        name: str,
        size: int,
        synced: bool,
        forged: bool,
        up: str | None = None,
        down: str | None = None,
    ) -> None:
        """A tenant creates or edits an object (spec and the Databases it names, filter label, forged links)."""
        context = RESOURCES[resource]
        wanted = _remote(context, cluster, namespace, name, size=size, synced=synced, forged=forged, up=up, down=down)
        current = self.world.get(self._remote_key(context, cluster, namespace, name))
        if current is not None:
            if is_deleting(current):
                return
            wanted["metadata"]["finalizers"] = current["metadata"].get("finalizers", [])
            wanted["metadata"]["uid"] = current["metadata"].get("uid")
        self.world.put(Side.REMOTE, wanted)

    @rule(data=st.data(), size=SIZES)
    def tenant_edits_an_object(self, data: st.DataObject, size: int) -> None:
        """A tenant changes the spec of one of the objects that exist (the common case)."""
        remotes = [obj for obj in self.world.listed(Side.REMOTE) if not is_deleting(obj)]
        if remotes:
            edited = copy.deepcopy(data.draw(st.sampled_from(remotes)))
            edited["spec"] = {"size": size}
            self.world.put(Side.REMOTE, edited)

    @rule(data=st.data(), size=SIZES)
    def tenant_mirrors_an_object(self, data: st.DataObject, size: int) -> None:
        """The same workspace, namespace and name in the other PublishedResource's resource."""
        remotes = self.world.listed(Side.REMOTE)
        if remotes:
            original = data.draw(st.sampled_from(remotes))
            other = TWIN if original["kind"] == PRIMARY.projected.remote.kind else PRIMARY
            key = remote_key_of(original)
            self.tenant_writes(
                other.published.name, key.cluster, key.namespace, key.name, size, synced=True, forged=False
            )

    @rule(
        resource=st.sampled_from(sorted(RESOURCES)),
        cluster=st.sampled_from(CLUSTERS),
        namespace=st.sampled_from(NAMESPACES),
        name=st.sampled_from(NAMES),
    )
    def tenant_deletes(self, resource: str, cluster: str, namespace: str, name: str) -> None:
        current = self.world.get(self._remote_key(RESOURCES[resource], cluster, namespace, name))
        if current is not None:
            self.world.remove(Side.REMOTE, current)

    @rule(data=st.data())
    def tenant_points_a_widget_at_databases(self, data: st.DataObject) -> None:
        """A tenant names Databases that exist (the service's to go up, its own to come down)."""
        widgets = [
            obj
            for obj in self.world.listed(Side.REMOTE)
            if obj["kind"] == PRIMARY.projected.remote.kind and not is_deleting(obj)
        ]
        if not widgets:
            return
        edited = copy.deepcopy(data.draw(st.sampled_from(widgets)))
        key = remote_key_of(edited)
        ups = sorted(name for cluster, name in self.owner_databases if cluster == key.cluster)
        downs = sorted(k[5] for k in self.tenant_databases if k[3:5] == (key.cluster, key.namespace))
        for field_name, names in (("up", ups), ("down", downs)):
            if names:
                edited["spec"][field_name] = data.draw(st.sampled_from(names))
        # Any names, in any order: items may name Databases that do not exist (yet).
        edited["spec"]["many"] = data.draw(st.lists(st.sampled_from(DB_NAMES), max_size=2, unique=True))
        self.world.put(Side.REMOTE, edited)

    @rule(
        cluster=st.sampled_from(CLUSTERS),
        namespace=st.sampled_from(NAMESPACES),
        name=st.sampled_from(TENANT_DB_NAMES),
        size=SIZES,
        delete=st.booleans(),
        share=st.sampled_from((None, *NAMES)),
    )
    def tenant_writes_a_database(
        self, cluster: str, namespace: str, name: str, size: int, delete: bool, share: str | None = None
    ) -> None:
        """A tenant's own Database in the workspace: the origin of a copy down, or in the way of a copy up."""
        key = _db_key(Side.REMOTE, cluster, namespace, name)
        current = self.world.get(key)
        if delete:
            if current is not None:
                self.world.remove(Side.REMOTE, current)
                self.tenant_databases.discard(key)
            return
        if current is None:
            self.tenant_databases.add(key)
        labels = {"share": share} if share else {}
        self.world.put(Side.REMOTE, _database(namespace, name, size=size, cluster=cluster, labels=labels))

    # -- the service owner -----------------------------------------------------------------------

    @rule(
        cluster=st.sampled_from(CLUSTERS),
        name=st.sampled_from(OWNER_DB_NAMES),
        size=SIZES,
        delete=st.sampled_from((False, False, True)),
        labelled=st.sampled_from((True, True, False)),
    )
    def owner_writes_a_database(self, cluster: str, name: str, size: int, delete: bool, labelled: bool = False) -> None:
        """The operator's Database next to the copies (their namespace): the origin of a copy up."""
        current = self.world.get(_db_key(Side.LOCAL, "", cluster, name))
        if current is not None and (cluster, name) not in self.owner_databases:
            return  # the servlet's copy of a workspace Database: not the owner's to edit here
        if delete:
            if current is not None:
                self.world.remove(Side.LOCAL, current)
                self.owner_databases.pop((cluster, name), None)
            return
        labels = {"bundle": "gold"} if labelled else {}
        self.owner_databases[(cluster, name)] = copy.deepcopy(
            self.world.put(Side.LOCAL, _database(cluster, name, size=size, labels=labels))
        )

    @rule(cluster=st.sampled_from(CLUSTERS), name=st.sampled_from(NAMES), size=SIZES)
    def owner_creates_a_local_object(self, cluster: str, name: str, size: int) -> None:
        """A Widget of the service owner, sometimes exactly at a name a copy would take."""
        if self.world.get((Side.LOCAL, LOCAL.api_version, LOCAL.kind, "", cluster, name)) is not None:
            return
        obj = {
            "apiVersion": LOCAL.api_version,
            "kind": LOCAL.kind,
            "metadata": {"name": name, "namespace": cluster, "labels": {"owner": "service"}},
            "spec": {"size": size},
        }
        self.foreign[(cluster, name)] = copy.deepcopy(self.world.put(Side.LOCAL, obj))

    @rule(data=st.data())
    def someone_edits_or_deletes_a_copy(self, data: st.DataObject) -> None:
        copies = [
            obj
            for obj in self.world.listed(Side.LOCAL)
            if obj["kind"] == LOCAL.kind
            and (metadata_of(obj)["namespace"], metadata_of(obj)["name"]) not in self.foreign
        ]
        if not copies:
            return
        target = copy.deepcopy(data.draw(st.sampled_from(copies)))
        change = data.draw(st.sampled_from(["drift", "drop-annotation", "delete", "delete-slowly"]))
        if change == "drift":
            target["spec"] = {"size": 99}
            self.world.put(Side.LOCAL, target)
        elif change == "drop-annotation":
            target["metadata"].get("annotations", {}).pop(metadata.REMOTE_NAME_ANNOTATION, None)
            self.world.put(Side.LOCAL, target)
        else:
            if change == "delete-slowly":  # another controller's finalizer keeps it a while
                target["metadata"]["finalizers"] = ["backup.example.com/keep"]
                self.world.put(Side.LOCAL, target)
            self.world.remove(Side.LOCAL, target)

    @rule(data=st.data())
    def owner_replaces_a_copy(self, data: st.DataObject) -> None:
        """The service owner deletes a copy and puts its own object at that name, at once."""
        copies = [
            obj
            for obj in self.world.listed(Side.LOCAL)
            if obj["kind"] == LOCAL.kind
            and not is_deleting(obj)
            and (metadata_of(obj)["namespace"], metadata_of(obj)["name"]) not in self.foreign
        ]
        if not copies:
            return
        target = data.draw(st.sampled_from(copies))
        namespace, name = metadata_of(target)["namespace"], metadata_of(target)["name"]
        del self.world.objects[self._key_of(Side.LOCAL, target)]
        obj = {
            "apiVersion": LOCAL.api_version,
            "kind": LOCAL.kind,
            "metadata": {"name": name, "namespace": namespace, "labels": {"owner": "service"}},
            "spec": {"size": 7},
        }
        self.foreign[(namespace, name)] = copy.deepcopy(self.world.put(Side.LOCAL, obj))

    @rule()
    def slow_deletions_finish(self) -> None:
        for obj in self.world.listed(Side.LOCAL):
            if is_deleting(obj) and obj["metadata"].get("finalizers") == ["backup.example.com/keep"]:
                self.world.objects.pop(self._key_of(Side.LOCAL, obj))

    @rule()
    def twin_published_resource_toggles(self) -> None:
        """The second PublishedResource is created, or deleted (its finalizers are released)."""
        if TWIN in self.contexts:
            self.contexts.remove(TWIN)
            for obj in self.world.listed(Side.REMOTE):
                if obj["kind"] == TWIN.projected.remote.kind and metadata.FINALIZER in obj["metadata"].get(
                    "finalizers", []
                ):
                    self._write(
                        Release(
                            target=_remote_ref(obj),
                            finalizers=tuple(f for f in obj["metadata"]["finalizers"] if f != metadata.FINALIZER),
                        ),
                        faults=False,
                    )
        else:
            self.contexts.append(TWIN)

    # -- the servlet -----------------------------------------------------------------------------

    @rule(count=st.integers(min_value=1, max_value=3))
    def api_faults(self, count: int) -> None:
        self.fault.count = count

    @rule()
    def relist(self) -> None:
        """The informers relist (after a cut watch, a 410, a restart): the view catches up."""
        self.view = self.world.copy()

    @rule(side=st.sampled_from([Side.REMOTE, Side.LOCAL]))
    def one_informer_relists(self, side: Side) -> None:
        """Informers are per resource: one side's view catches up while the other's stays stale."""
        for key in [key for key in self.view.objects if key[0] is side]:
            del self.view.objects[key]
        for key, obj in self.world.objects.items():
            if key[0] is side:
                self.view.objects[key] = copy.deepcopy(obj)

    @rule(data=st.data())
    def reconcile_one_object(self, data: st.DataObject) -> None:
        """One reconcile of one object, planned from the (maybe stale) view, with faults."""
        remotes = [obj for obj in self.view.listed(Side.REMOTE) if self._context_of(obj) is not None]
        if not remotes:
            return
        remote = data.draw(st.sampled_from(remotes))
        context = self._context_of(remote)
        assert context is not None
        for action in plan_once(self.view, context, remote).actions:
            if action.is_write and not self._write(action, faults=True):
                return

    # -- invariants ------------------------------------------------------------------------------

    @invariant()
    def nothing_the_servlet_did_not_create_was_touched(self) -> None:
        for (namespace, name), written in self.foreign.items():
            now = self.world.get((Side.LOCAL, LOCAL.api_version, LOCAL.kind, "", namespace, name))
            assert now == written, f"the service owner's Widget {namespace}/{name} was changed or deleted"
        for (namespace, name), written in self.owner_databases.items():
            now = self.world.get(_db_key(Side.LOCAL, "", namespace, name))
            assert now == written, f"the service owner's Database {namespace}/{name} was changed or deleted"
        for key in self.tenant_databases:
            assert self.world.get(key) is not None, f"the tenant's Database {key[3:]} was deleted"

    @rule()
    def quiet_point(self) -> None:
        """A restarted servlet, no faults, reconciles until nothing is written; then every invariant holds.

        Quiet means every controller is done: other controllers' finalizers on copies finish too.
        """
        self.fault.count = 0
        self.slow_deletions_finish()
        plans = settle(self.world, self.contexts)
        assert not any(
            "does not settle" in action.to_dict().get("reason", "") for plan in plans for action in plan.actions
        ), "planning does not settle"
        self.view = self.world.copy()
        self._check_quiet()

    def _check_quiet(self) -> None:
        copies: dict[tuple[str, str], dict[str, Any]] = {
            (metadata_of(obj)["namespace"], metadata_of(obj)["name"]): obj
            for obj in self.world.listed(Side.LOCAL)
            if obj["kind"] == LOCAL.kind
        }
        claimed: dict[tuple[str, str], Any] = {}
        for remote in self.world.listed(Side.REMOTE):
            key = remote_key_of(remote)
            context = self._context_of(remote)
            finalizers = remote["metadata"].get("finalizers", [])
            if context is None:
                assert metadata.FINALIZER not in finalizers, f"{key}: a finalizer without a PublishedResource"
                continue
            plan = plan_once(self.world, context, remote)
            assert not plan.writes, f"the dry run of the quiet world still writes for {key}: {plan.actions}"
            assert not is_deleting(remote), f"{key} is still being deleted once the servlet is quiet"
            if not admitted(context, remote, key):
                continue
            linked = [
                obj
                for obj in copies.values()
                if metadata.link_labels_of(obj)
                == metadata.link_labels(servlet_name=SERVLET.name, remote=key, resource=context.projected.remote)
            ]
            place = computed_local_key(context, key)
            assert place is not None
            if not linked:
                # Only a name held by something else keeps an object without a copy, and then
                # the object carries no finalizer of ours.
                assert (place.namespace, place.name) in copies, f"{key} has no copy and nothing holds its name"
                assert metadata.FINALIZER not in finalizers, f"{key}: a finalizer on an object in conflict"
                continue
            assert len(linked) == 1, f"{key} has {len(linked)} copies"
            (found,) = linked
            where = (metadata_of(found)["namespace"], metadata_of(found)["name"])
            assert where == (place.namespace, place.name), f"{key}'s copy is at {where}, not at {place}"
            assert where[0] == key.cluster, f"{key}'s copy left its workspace's namespace"
            assert found["spec"] == remote["spec"], f"{key}'s copy does not have the desired content"
            assert metadata.remote_key_named_by(found) == key, f"{key}'s copy lacks complete link metadata"
            assert where not in claimed, f"{key} and {claimed[where]} share the copy {where}"
            claimed[where] = key
            if context is PRIMARY:
                self._check_related_databases(key, remote)
                self._check_selected_databases(key)

    def _check_related_databases(self, key: Any, remote: dict[str, Any]) -> None:
        """Once quiet, the Databases a synced Widget names are copied with their origin's content."""
        up, down = remote["spec"].get("up"), remote["spec"].get("down")
        for name in [down, *remote["spec"].get("many", [])]:
            if name:
                self._check_database_came_down(key, name)
        origin = self.owner_databases.get((key.cluster, up)) if up else None
        if origin is not None and not is_deleting(origin):
            copied = self.world.get(_db_key(Side.REMOTE, key.cluster, key.namespace, up))
            wanted = _mutated_spec(origin, copy_namespace=key.namespace)
            assert copied is not None and copied["spec"] == wanted, f"{key}: Database {up} did not go up"

    def _check_database_came_down(self, key: Any, down: str) -> None:
        source = self.world.get(_db_key(Side.REMOTE, key.cluster, key.namespace, down))
        if source is None or (key.cluster, down) in self.owner_databases:
            return  # nothing to copy down, or the owner's Database holds the name (a conflict)
        local = self.world.get(_db_key(Side.LOCAL, "", key.cluster, down))
        assert local is not None, f"{key}: Database {down} did not come down"
        origin_key = remote_key_of(source)
        if metadata.links_to(local, servlet_name=SERVLET.name, remote=origin_key):
            wanted = _mutated_spec(source, copy_namespace=key.cluster)
            assert local["spec"] == wanted, f"{key}: the copy of Database {down} is not current"

    def _check_selected_databases(self, key: Any) -> None:
        """Once quiet, the owner's labelled Databases are copied up under their rewritten names,
        unless two of them share a name (then none is); a tenant's labelled Database is copied
        down where its name is free or its own copy."""
        labelled = sorted(
            name
            for (cluster, name), obj in self.owner_databases.items()
            if cluster == key.cluster and obj["metadata"]["labels"].get("bundle") == "gold" and not is_deleting(obj)
        )
        renamed = ["sel" + name[-1] for name in labelled]
        if len(set(renamed)) == len(renamed):
            for name, copy_name in zip(labelled, renamed):
                copied = self.world.get(_db_key(Side.REMOTE, key.cluster, key.namespace, copy_name))
                origin = self.owner_databases[(key.cluster, name)]
                wanted = _mutated_spec(origin, copy_namespace=key.namespace)
                assert copied is not None and copied["spec"] == wanted, f"{key}: {name} did not go up"
        for db_key in self.tenant_databases:
            source = self.world.get(db_key)
            if db_key[3:5] != (key.cluster, key.namespace) or source is None:
                continue
            if source["metadata"]["labels"].get("share") != key.name:
                continue
            local = self.world.get(_db_key(Side.LOCAL, "", key.cluster, "d" + db_key[5]))
            if (key.cluster, "d" + db_key[5]) in self.owner_databases:
                continue  # the owner's Database holds the name: a conflict, never an overwrite
            assert local is not None, f"{key}: the tenant's {db_key[5]} did not come down"
            if metadata.links_to(local, servlet_name=SERVLET.name, remote=remote_key_of(source)):
                wanted = _mutated_spec(source, copy_namespace=key.cluster)
                assert local["spec"] == wanted, f"{key}: the copy of {db_key[5]} is not current"

    # -- helpers ---------------------------------------------------------------------------------

    def _write(self, action: Any, *, faults: bool) -> bool:
        if faults and self.fault.count > 0:
            self.fault.count -= 1
            return False
        try:
            result = self.world.apply(action)
        except WriteFailure:
            return False
        key = self._target_key(action)
        if result is None or self.world.get(key) is None:
            self.view.objects.pop(key, None)
        else:
            self.view.objects[key] = copy.deepcopy(result)  # the cache remembers its own writes
        return True

    def _context_of(self, obj: dict[str, Any]) -> SyncContext | None:
        return next((context for context in self.contexts if obj["kind"] == context.projected.remote.kind), None)

    @staticmethod
    def _remote_key(context: SyncContext, cluster: str, namespace: str, name: str) -> Any:
        remote = context.projected.remote
        return (Side.REMOTE, remote.api_version, remote.kind, cluster, namespace, name)

    @staticmethod
    def _key_of(side: Side, obj: dict[str, Any]) -> Any:
        cluster = remote_key_of(obj).cluster if side is Side.REMOTE else ""
        return (
            side,
            obj["apiVersion"],
            obj["kind"],
            cluster,
            metadata_of(obj).get("namespace", ""),
            metadata_of(obj)["name"],
        )

    @staticmethod
    def _target_key(action: Any) -> Any:
        target = action.target
        resource = target.resource
        cluster = target.cluster if target.side is Side.REMOTE else ""
        return (
            target.side,
            resource.api_version,
            resource.kind,
            cluster,
            target.namespace if resource.namespaced else "",
            target.name,
        )


def _remote_ref(obj: dict[str, Any]) -> ObjectRef:
    key = remote_key_of(obj)
    return ObjectRef(
        Side.REMOTE, RESOURCES[obj["kind"].lower() + "s"].projected.remote, key.namespace, key.name, key.cluster
    )


SyncModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("SYNC_MODEL_EXAMPLES", "60")),
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_sync_model = SyncModel.TestCase


def test_a_tenants_database_synced_into_is_kept_when_its_service_origin_goes() -> None:
    """The story the random search finds rarely, spelled out: a service Database copied up into
    the tenant's own Database of that name must not take the tenant's object with it."""
    model = SyncModel()
    cluster = CLUSTERS[0]
    model.tenant_writes_a_database(cluster, "default", "d1", size=1, delete=False)
    model.owner_writes_a_database(cluster, "d1", size=2, delete=False)
    model.tenant_writes("widgets", cluster, "default", "a", size=1, synced=True, forged=False, up="d1")
    model.quiet_point()
    copied = model.world.get(_db_key(Side.REMOTE, cluster, "default", "d1"))["spec"]
    assert copied == _mutated_spec(model.owner_databases[(cluster, "d1")], copy_namespace="default")
    assert copied["size"] == 2
    model.owner_writes_a_database(cluster, "d1", size=2, delete=True)
    model.quiet_point()
    model.nothing_the_servlet_did_not_create_was_touched()


def test_two_entries_naming_one_database_both_ways_settle_when_its_service_origin_goes() -> None:
    """Found by the model: `up` and `down` naming the same Database. The service's Database is
    copied up, the workspace copy is in the way of a copy down; once the service's goes, the
    servlet's own local copy must not be taken for the service's and copied up again."""
    model = SyncModel()
    cluster = CLUSTERS[0]
    model.owner_writes_a_database(cluster, "d2", size=0, delete=False)
    model.tenant_writes("widgets", cluster, "default", "a", size=0, synced=True, forged=False, up="d2", down="d2")
    model.quiet_point()
    model.owner_writes_a_database(cluster, "d2", size=0, delete=True)
    model.quiet_point()
    model.nothing_the_servlet_did_not_create_was_touched()


def test_each_item_of_a_list_path_brings_its_own_database_down_and_takes_it_when_it_goes() -> None:
    """The list-path entry spelled out: two items, two copies, each paired by its position; an
    emptied list leaves none, and the tenant's Databases are untouched throughout."""
    model = SyncModel()
    cluster = CLUSTERS[0]
    for name in DB_NAMES:
        model.tenant_writes_a_database(cluster, "default", name, size=1, delete=False)
    model.tenant_writes("widgets", cluster, "default", "a", size=1, synced=True, forged=False)
    widget = model.world.get(model._remote_key(PRIMARY, cluster, "default", "a"))
    model.world.put(Side.REMOTE, {**widget, "spec": {**widget["spec"], "many": list(reversed(DB_NAMES))}})
    model.quiet_point()
    assert {name for name in DB_NAMES if model.world.get(_db_key(Side.LOCAL, "", cluster, name))} == set(DB_NAMES)
    model.tenant_writes("widgets", cluster, "default", "a", size=1, synced=True, forged=False)
    model.quiet_point()
    assert not [name for name in DB_NAMES if model.world.get(_db_key(Side.LOCAL, "", cluster, name))]
    model.nothing_the_servlet_did_not_create_was_touched()


def test_two_labelled_databases_renamed_to_one_name_write_nothing_and_settle() -> None:
    """The collision rule, spelled out: `ups` renames both d1 and dd1 to sel1. Writing both would
    make the two fight over one copy; neither is written, and the world is quiet."""
    model = SyncModel()
    cluster = CLUSTERS[0]
    model.owner_writes_a_database(cluster, "d1", size=1, delete=False, labelled=True)
    model.owner_writes_a_database(cluster, "dd1", size=2, delete=False, labelled=True)
    model.tenant_writes("widgets", cluster, "default", "a", size=1, synced=True, forged=False)
    model.quiet_point()
    assert model.world.get(_db_key(Side.REMOTE, cluster, "default", "sel1")) is None
    model.owner_writes_a_database(cluster, "dd1", size=2, delete=True)
    model.quiet_point()
    copied = model.world.get(_db_key(Side.REMOTE, cluster, "default", "sel1"))
    assert copied["spec"] == _mutated_spec(model.owner_databases[(cluster, "d1")], copy_namespace="default")
