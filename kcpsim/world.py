"""Kubernetes semantics of create/get/list/update/patch/delete over the store.

`World` is what the HTTP layer calls once it knows which resource, cluster and namespace a
request is about. It owns uid/creationTimestamp/generation, optimistic concurrency, status
subresource rules, finalizers and deletion, namespace lifecycle, paging and validation of names
and schemas. kcp-specific admission and controllers plug in through `mutators` and
`controllers` (see kcp.py); this module does not parse URLs or render HTTP.
"""

from __future__ import annotations

import base64
import bisect
import datetime as _dt
import json
import random
import string
import uuid
from collections.abc import Callable
from typing import Any

import attrs

from kcpsim import errors, patching
from kcpsim.cel_rules import compiled_rules, rule_problems
from kcpsim.defaulting import default_custom_resource, defaulted_for_read
from kcpsim.naming import label_problem, subdomain_problem
from kcpsim.patching import clone
from kcpsim.resources import SERVICE_CLUSTER, Catalog, ResourceDef
from kcpsim.store import Event, Obj, Store
from kcpsim.strategic import strategic_merge_patch
from kcpsim.validation import validate_custom_resource

NAMESPACE_KEY = "/namespaces"
_POLICY_FINALIZERS = {"Foreground": "foregroundDeletion", "Orphan": "orphan"}
CLUSTER_ANNOTATION = "kcp.io/cluster"

Mutator = Callable[["WriteContext"], None]
Render = Callable[[ResourceDef, Obj, str], Obj]


@attrs.define
class ClusterInfo:
    name: str
    path: str | None  # None for the service cluster
    kcp: bool


@attrs.define
class WriteContext:
    """What admission plugins see: the resource, the cluster, the old and the new object."""

    world: World
    rdef: ResourceDef
    cluster: str
    operation: str  # CREATE | UPDATE | DELETE
    subresource: str
    old: Obj | None
    new: Obj


@attrs.define
class Controller:
    keys: frozenset[str]  # storage keys whose events wake it up; empty = every event
    run: Callable[[list[Event]], None]


@attrs.frozen
class ListResult:
    items: list[Obj]
    rv: int
    continue_token: str


def now() -> str:
    return _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _defaults(rdef: ResourceDef, obj: Obj) -> Obj:
    """Built-in defaulting the servlet can observe: Secret `stringData` folds into `data`."""
    if rdef.group == "" and rdef.plural == "secrets":
        obj.setdefault("type", "Opaque")
        string_data = obj.pop("stringData", None) or {}
        if string_data:
            encoded = {k: base64.b64encode(str(v).encode()).decode() for k, v in string_data.items()}
            obj["data"] = {**(obj.get("data") or {}), **encoded}
    return obj


def _meta(obj: Obj) -> dict[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


class World:
    def __init__(self, *, history_size: int, seed: int | None = None) -> None:
        self.store = Store(history_size=history_size)
        self.clusters: dict[str, ClusterInfo] = {SERVICE_CLUSTER: ClusterInfo(SERVICE_CLUSTER, None, False)}
        self.paths: dict[str, str] = {}
        self.catalog = Catalog(self.store, kcp_clusters=())
        self.mutators: list[Mutator] = []
        self.controllers: list[Controller] = []
        self.converters: dict[tuple[str, str], tuple[Render, Callable[[ResourceDef, Obj, str, Obj | None], Obj]]] = {}
        self.terminating_namespaces: set[tuple[str, str]] = set()
        self._pending: list[Event] = []
        self._settling = False
        self._tick_scheduled = False
        self.controller_delay = 0.0
        self.schedule: Callable[[float, Callable[[], None]], object] | None = None
        self._rng = random.Random(seed)
        self.store.listeners.append(self._pending.append)

    # ---- clusters ------------------------------------------------------------------------------
    def add_cluster(self, name: str, path: str) -> ClusterInfo:
        info = ClusterInfo(name, path, True)
        self.clusters[name] = info
        self.paths[path] = name
        self.catalog.kcp_clusters.add(name)
        self.catalog.invalidate()
        return info

    def resolve(self, path_or_name: str) -> str | None:
        if path_or_name in self.paths:
            return self.paths[path_or_name]
        if path_or_name in self.clusters and path_or_name != SERVICE_CLUSTER:
            return path_or_name
        return None

    def is_kcp(self, cluster: str) -> bool:
        return cluster in self.clusters and self.clusters[cluster].kcp

    def new_uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    # ---- rendering -----------------------------------------------------------------------------
    def render(self, rdef: ResourceDef, obj: Obj, version: str) -> Obj:
        """The stored object as seen through `version` (conversion for multi-version kcp types)."""
        conv = self.converters.get((rdef.group, rdef.plural))
        if conv is not None:
            return conv[0](rdef, obj, version)
        obj = defaulted_for_read(obj, rdef.schema_for(version)) if rdef.schemas else obj
        if obj.get("apiVersion") == rdef.api_version(version):
            return obj
        return {**obj, "apiVersion": rdef.api_version(version)}

    def _to_storage(self, rdef: ResourceDef, body: Obj, version: str, old: Obj | None) -> Obj:
        conv = self.converters.get((rdef.group, rdef.plural))
        if conv is not None:
            return conv[1](rdef, body, version, old)
        body["apiVersion"] = rdef.api_version(rdef.versions[0])
        body["kind"] = rdef.kind
        return body

    # ---- reads ---------------------------------------------------------------------------------
    def get(self, rdef: ResourceDef, cluster: str, namespace: str, name: str) -> Obj:
        obj = self.store.get(rdef.storage_key, cluster, namespace if rdef.namespaced else "", name)
        if obj is None:
            raise errors.not_found(group=rdef.group, plural=rdef.plural, name=name)
        return obj

    def list(
        self,
        rdef: ResourceDef,
        cluster: str | None,
        namespace: str | None,
        *,
        match: Callable[[Obj], bool],
        limit: int,
        continue_token: str | None,
    ) -> ListResult:
        start_after: tuple[str, str, str] | None = None
        list_rv = self.store.rv
        if continue_token:
            try:
                decoded = json.loads(base64.urlsafe_b64decode(continue_token.encode()))
                list_rv = int(decoded["rv"])
                cluster_key, ns_key, name_key = (str(part) for part in decoded["start"])
                start_after = (cluster_key, ns_key, name_key)
            except (ValueError, KeyError, TypeError):
                raise errors.bad_request(
                    "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"
                ) from None
            if list_rv < self.store.compacted_rv:
                raise errors.gone(
                    "The provided continue parameter is too old to display a consistent list result. "
                    "You can start a new list without the continue parameter."
                )
        items: list[Obj] = []
        token = ""
        keys = self.store.sorted_keys(rdef.storage_key, cluster, namespace)
        start = bisect.bisect_right(keys, start_after) if start_after is not None else 0
        for index in range(start, len(keys)):
            key = keys[index]
            obj = self.store.get_by_key(rdef.storage_key, key)
            if not match(obj):
                continue
            if limit and len(items) == limit:
                last = _meta(items[-1])
                last_key = (
                    last.get("annotations", {}).get(CLUSTER_ANNOTATION, "") if cluster is None else cluster,
                    last.get("namespace") or "",
                    last["name"],
                )
                token = base64.urlsafe_b64encode(json.dumps({"rv": list_rv, "start": list(last_key)}).encode()).decode()
                break
            items.append(obj)
        return ListResult(items=items, rv=list_rv, continue_token=token)

    # ---- writes --------------------------------------------------------------------------------
    def create(
        self,
        rdef: ResourceDef,
        cluster: str,
        namespace: str,
        body: Obj,
        *,
        version: str,
        manager: str,
        dry_run: bool = False,
        apply_config: Obj | None = None,
    ) -> Obj:
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        self._check_type(rdef, body, version)
        obj = self._to_storage(rdef, clone(body), version, None)
        meta = _meta(obj)
        ns = self._check_namespace_of(rdef, meta, namespace)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(
                self._rng.choice(string.ascii_lowercase + string.digits) for _ in range(5)
            )
        name = meta.get("name") or ""
        if not name:
            raise errors.invalid(
                group=rdef.group,
                kind=rdef.kind,
                name="",
                causes=[("metadata.name", "Required value: name or generateName is required")],
            )
        self._check_name(rdef, name)
        if rdef.namespaced:
            self._check_namespace_usable(cluster, ns)
        if self.store.get(rdef.storage_key, cluster, ns, name) is not None:
            raise errors.already_exists(group=rdef.group, plural=rdef.plural, name=name)
        if rdef.status and not rdef.builtin:
            obj.pop("status", None)
        for field in ("resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"):
            meta.pop(field, None)
        meta["uid"] = self.new_uid()
        meta["creationTimestamp"] = now()
        if rdef.generation:
            meta["generation"] = 1
        else:
            meta.pop("generation", None)
        if rdef.plural == "namespaces" and rdef.group == "":
            obj["status"] = {"phase": "Active"}
            obj.setdefault("spec", {"finalizers": ["kubernetes"]})
        obj = self._validate_schema(rdef, _defaults(rdef, obj), version)
        self._check_rules(rdef, version, obj, None)
        self._stamp_cluster(cluster, obj)
        ctx = WriteContext(self, rdef, cluster, "CREATE", "", None, obj)
        for mutator in self.mutators:
            mutator(ctx)
        obj = ctx.new
        if apply_config is not None:
            applied = patching.apply(None, apply_config, manager=manager, force=True)
            _meta(obj)["managedFields"] = _meta(applied)["managedFields"]
        else:
            patching.record_update(None, obj, manager=manager)
        if dry_run:
            return obj
        stored = self.store.put(rdef.storage_key, cluster, obj, old=None)
        self.settle()
        return stored

    def update(
        self,
        rdef: ResourceDef,
        cluster: str,
        namespace: str,
        name: str,
        body: Obj,
        *,
        version: str,
        manager: str,
        subresource: str = "",
        dry_run: bool = False,
        require_rv: bool = True,
        old: Obj | None = None,
        managed_fields_done: bool = False,
    ) -> Obj:
        ns = namespace if rdef.namespaced else ""
        old = old if old is not None else self.get(rdef, cluster, ns, name)
        if not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object")
        self._check_type(rdef, body, version)
        incoming = self._to_storage(rdef, clone(body), version, old)
        meta = _meta(incoming)
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        if rdef.namespaced and meta.get("namespace") and meta["namespace"] != ns:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        old_meta = old["metadata"]
        body_rv = str(meta.get("resourceVersion") or "")
        if not body_rv and require_rv and not rdef.unconditional_update:
            raise errors.invalid(
                group=rdef.group,
                kind=rdef.kind,
                name=name,
                causes=[("metadata.resourceVersion", "Invalid value: 0x0: must be specified for an update")],
            )
        if body_rv and body_rv != old_meta["resourceVersion"]:
            raise errors.conflict(group=rdef.group, plural=rdef.plural, name=name)
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            raise errors.conflict(
                group=rdef.group,
                plural=rdef.plural,
                name=name,
                why=f"Precondition failed: UID in precondition: {meta['uid']}, UID in object meta: {old_meta.get('uid')}",
            )
        if subresource == "status":
            new = clone(old)
            if "status" in incoming:
                new["status"] = incoming["status"]
            else:
                new.pop("status", None)
        else:
            new = incoming
            new_meta = _meta(new)
            kept = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation")
            for field in kept if managed_fields_done else (*kept, "managedFields"):
                if field in old_meta:
                    new_meta[field] = old_meta[field]
                else:
                    new_meta.pop(field, None)
            new_meta["name"] = name
            if rdef.namespaced:
                new_meta["namespace"] = ns
            else:
                new_meta.pop("namespace", None)
            if rdef.status and (not rdef.builtin or rdef.plural == "namespaces"):
                if "status" in old:
                    new["status"] = clone(old["status"])
                else:
                    new.pop("status", None)
        new_meta = _meta(new)
        new_meta["resourceVersion"] = old_meta["resourceVersion"]
        if old_meta.get("deletionTimestamp"):
            added = [f for f in new_meta.get("finalizers") or [] if f not in (old_meta.get("finalizers") or [])]
            if added:
                raise errors.invalid(
                    group=rdef.group,
                    kind=rdef.kind,
                    name=name,
                    causes=[
                        (
                            "metadata.finalizers",
                            f"Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers {json.dumps(added)}",
                        )
                    ],
                )
        new = self._validate_schema(rdef, _defaults(rdef, new), version)
        self._check_rules(rdef, version, new, old)
        self._stamp_cluster(cluster, new)
        if rdef.generation and self._spec_changed(rdef, old, new):
            new_meta["generation"] = int(old_meta.get("generation") or 0) + 1
        ctx = WriteContext(self, rdef, cluster, "UPDATE", subresource, old, new)
        for mutator in self.mutators:
            mutator(ctx)
        new = ctx.new
        if not managed_fields_done:
            patching.record_update(old, new, manager=manager, subresource=subresource)
        if self._same(old, new):
            return old
        if dry_run:
            return new
        if old_meta.get("deletionTimestamp") and not _meta(new).get("finalizers") and rdef.plural != "namespaces":
            gone = self.store.remove(rdef.storage_key, cluster, ns, name)
            self.settle()
            if gone is None:
                return new
            # As the API server answers: the object as updated (no finalizers left), at the
            # version of its removal.
            answer: dict[str, Any] = clone(new)
            _meta(answer)["resourceVersion"] = _meta(gone)["resourceVersion"]
            return answer
        stored = self.store.put(rdef.storage_key, cluster, new, old=old)
        self.settle()
        return stored

    def patch(
        self,
        rdef: ResourceDef,
        cluster: str,
        namespace: str,
        name: str,
        *,
        patch_type: str,
        body: Any,
        version: str,
        manager: str | None,
        subresource: str = "",
        force: bool = False,
        dry_run: bool = False,
    ) -> Obj:
        ns = namespace if rdef.namespaced else ""
        old = self.store.get(rdef.storage_key, cluster, ns, name)
        if patch_type == "apply":
            if not manager:
                raise errors.bad_request("PATCH requests of type apply must provide a fieldManager")
            if not isinstance(body, dict):
                raise errors.bad_request("apply configuration must be an object")
            if old is None:
                if subresource:
                    raise errors.not_found(group=rdef.group, plural=rdef.plural, name=name)
                config = {**body, "metadata": {**(body.get("metadata") or {}), "name": name}}
                if rdef.namespaced:
                    config["metadata"]["namespace"] = ns
                return self.create(
                    rdef, cluster, ns, config, version=version, manager=manager, dry_run=dry_run, apply_config=config
                )
            current = self.render(rdef, old, version)
            merged = patching.apply(current, body, manager=manager, force=force, subresource=subresource)
            rv = str((body.get("metadata") or {}).get("resourceVersion") or old["metadata"]["resourceVersion"])
            merged["metadata"]["resourceVersion"] = rv
            return self.update(
                rdef,
                cluster,
                ns,
                name,
                merged,
                version=version,
                manager=manager,
                subresource=subresource,
                dry_run=dry_run,
                old=old,
                managed_fields_done=True,
            )
        if old is None:
            raise errors.not_found(group=rdef.group, plural=rdef.plural, name=name)
        current = self.render(rdef, old, version)
        if patch_type == "merge":
            patched = patching.merge_patch(current, body)
        elif patch_type == "json":
            patched = patching.json_patch(current, body)
        elif patch_type == "strategic":
            if not rdef.builtin:
                raise errors.unsupported_media_type("application/strategic-merge-patch+json")
            patched = strategic_merge_patch(current, body, group=rdef.group, kind=rdef.kind)
        else:
            raise errors.unsupported_media_type(patch_type)
        if not isinstance(patched, dict):
            raise errors.bad_request("the patch must result in an object")
        _meta(patched).setdefault("resourceVersion", old["metadata"]["resourceVersion"])
        return self.update(
            rdef,
            cluster,
            ns,
            name,
            patched,
            version=version,
            manager=manager or "unknown",
            subresource=subresource,
            dry_run=dry_run,
            old=old,
        )

    def delete(
        self,
        rdef: ResourceDef,
        cluster: str,
        namespace: str,
        name: str,
        *,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
        propagation: str | None = None,
    ) -> Obj:
        ns = namespace if rdef.namespaced else ""
        old = self.get(rdef, cluster, ns, name)
        meta = old["metadata"]
        pre = preconditions or {}
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise errors.conflict(
                group=rdef.group,
                plural=rdef.plural,
                name=name,
                why=f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise errors.conflict(
                group=rdef.group,
                plural=rdef.plural,
                name=name,
                why=f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )
        ctx = WriteContext(self, rdef, cluster, "DELETE", "", old, old)
        for mutator in self.mutators:
            mutator(ctx)
        if dry_run:
            return old
        is_namespace = rdef.plural == "namespaces" and rdef.group == ""
        if meta.get("deletionTimestamp"):
            return old
        # Foreground and Orphan leave the owner to the garbage collector (gc.py), marked by a finalizer.
        finalizers = list(meta.get("finalizers") or [])
        policy_finalizer = _POLICY_FINALIZERS.get(propagation or "")
        if policy_finalizer and not is_namespace and policy_finalizer not in finalizers:
            finalizers.append(policy_finalizer)
        if finalizers or is_namespace:
            new = clone(old)
            if finalizers:
                new["metadata"]["finalizers"] = finalizers
            new["metadata"]["deletionTimestamp"] = now()
            new["metadata"]["deletionGracePeriodSeconds"] = 0
            if is_namespace:
                new["status"] = {"phase": "Terminating"}
                self.terminating_namespaces.add((cluster, name))
            stored = self.store.put(rdef.storage_key, cluster, new, old=old)
            self.settle()
            return self.store.get(rdef.storage_key, cluster, ns, name) or stored
        gone = self.store.remove(rdef.storage_key, cluster, ns, name)
        self.settle()
        assert gone is not None
        return gone

    # ---- helpers -------------------------------------------------------------------------------
    @staticmethod
    def _check_type(rdef: ResourceDef, body: Obj, version: str) -> None:
        expected = rdef.api_version(version)
        if body.get("apiVersion") not in (None, "", expected):
            raise errors.bad_request(
                f"the API version in the data ({body['apiVersion']}) does not match the expected API version ({expected})"
            )
        if body.get("kind") not in (None, "", rdef.kind):
            raise errors.bad_request(
                f"the kind in the data ({body['kind']}) does not match the expected kind ({rdef.kind})"
            )

    def _check_namespace_of(self, rdef: ResourceDef, meta: dict[str, Any], namespace: str) -> str:
        if not rdef.namespaced:
            meta.pop("namespace", None)
            return ""
        if meta.get("namespace") and namespace and meta["namespace"] != namespace:
            raise errors.bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        ns = namespace or meta.get("namespace") or ""
        meta["namespace"] = ns
        return str(ns)

    def _check_name(self, rdef: ResourceDef, name: str) -> None:
        if rdef.group == "" and rdef.plural == "namespaces":
            problem = label_problem(name)
        elif rdef.group == "core.kcp.io" and rdef.plural == "logicalclusters":
            problem = None if name == "cluster" else f'Unsupported value: "{name}": supported values: "cluster"'
        else:
            problem = subdomain_problem(name)
        if problem:
            raise errors.invalid(group=rdef.group, kind=rdef.kind, name=name, causes=[("metadata.name", problem)])

    def _check_namespace_usable(self, cluster: str, namespace: str) -> None:
        ns_obj = self.store.get(NAMESPACE_KEY, cluster, "", namespace)
        if ns_obj is None:
            raise errors.not_found(group="", plural="namespaces", name=namespace)
        if ns_obj["metadata"].get("deletionTimestamp"):
            raise errors.StatusError(
                403,
                "Forbidden",
                f"unable to create new content in namespace {namespace} because it is being terminated",
                details={
                    "name": namespace,
                    "kind": "namespaces",
                    "causes": [
                        {
                            "reason": "NamespaceTerminating",
                            "message": f"namespace {namespace} is being terminated",
                            "field": "metadata.namespace",
                        }
                    ],
                },
            )

    def _validate_schema(self, rdef: ResourceDef, obj: Obj, version: str) -> Obj:
        schema = rdef.schema_for(version) or rdef.schema_for(rdef.versions[0])
        if not schema:
            return obj
        pruned, problems = validate_custom_resource(default_custom_resource(obj, schema), schema)
        if problems:
            raise errors.invalid(group=rdef.group, kind=rdef.kind, name=_meta(obj).get("name", ""), causes=problems)
        return pruned

    def _check_rules(self, rdef: ResourceDef, version: str, new: Obj, old: Obj | None) -> None:
        """The schema's `x-kubernetes-validations` rules; `old` is the stored object on update."""
        schema = rdef.schema_for(version) or rdef.schema_for(rdef.versions[0])
        rules = compiled_rules(schema) if isinstance(schema, dict) else None
        if rules is None:
            return
        previous = None if old is None else self.render(rdef, old, version)
        problems = rule_problems(rules, new, previous, updating=old is not None)
        if problems:
            raise errors.invalid(group=rdef.group, kind=rdef.kind, name=_meta(new).get("name", ""), causes=problems)

    def _stamp_cluster(self, cluster: str, obj: Obj) -> None:
        meta = _meta(obj)
        if self.is_kcp(cluster):
            meta["annotations"] = {**(meta.get("annotations") or {}), CLUSTER_ANNOTATION: cluster}

    @staticmethod
    def _spec_changed(rdef: ResourceDef, old: Obj, new: Obj) -> bool:
        skip = {"metadata", "apiVersion", "kind"} | ({"status"} if rdef.status else set())
        keys = (set(old) | set(new)) - skip
        return any(old.get(k) != new.get(k) for k in keys)

    @staticmethod
    def _same(old: Obj, new: Obj) -> bool:
        def strip(obj: Obj) -> Obj:
            meta = {k: v for k, v in obj["metadata"].items() if k not in ("managedFields", "resourceVersion")}
            # Ownership changes are real changes; only the timestamps of entries are not.
            meta["managedFields"] = [
                {k: v for k, v in e.items() if k != "time"} for e in obj["metadata"].get("managedFields") or []
            ]
            return {**obj, "metadata": meta}

        return strip(old) == strip(new)

    # ---- controllers ---------------------------------------------------------------------------
    def settle(self) -> None:
        """Run controllers on the events so far: now, or one round per `controller_delay` seconds.

        With a delay, every round of reconciles (e.g. export identity, then its hash, then the
        endpoint slice) becomes visible one delay after the previous one, like kcp's controllers.
        """
        if self.controller_delay > 0 and self.schedule is not None:
            if not self._tick_scheduled:
                self._tick_scheduled = True
                self.schedule(self.controller_delay, self._tick)
            return
        self._run_controllers(rounds=20)

    def _tick(self) -> None:
        self._tick_scheduled = False
        self._run_controllers(rounds=1)
        if self._pending or self.terminating_namespaces:
            self.settle()

    def _run_controllers(self, *, rounds: int) -> None:
        if self._settling:
            return
        self._settling = True
        try:
            for _ in range(rounds):
                events, self._pending[:] = list(self._pending), []
                if not events and not self.terminating_namespaces:
                    return
                self._namespace_controller()
                keys = {e.storage_key for e in events}
                for controller in self.controllers:
                    if not controller.keys or controller.keys & keys:
                        controller.run(events)
                if not self._pending:
                    return
        finally:
            self._settling = False

    def _namespace_controller(self) -> None:
        for cluster, name in list(self.terminating_namespaces):
            remaining = 0
            for key in self.store.storage_keys():
                for (_, ns, obj_name), obj in list(self.store.iter(key, cluster, name)):
                    remaining += 1
                    if obj["metadata"].get("deletionTimestamp"):
                        continue
                    if obj["metadata"].get("finalizers"):
                        marked = clone(obj)
                        marked["metadata"]["deletionTimestamp"] = now()
                        marked["metadata"]["deletionGracePeriodSeconds"] = 0
                        self.store.put(key, cluster, marked, old=obj)
                    else:
                        self.store.remove(key, cluster, ns, obj_name)
                        remaining -= 1
            if remaining == 0:
                self.terminating_namespaces.discard((cluster, name))
                self.store.remove(NAMESPACE_KEY, cluster, "", name)
