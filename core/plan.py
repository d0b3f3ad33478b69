"""The sync plan for one remote object (SPEC 7): find, filter, delete, create or adopt, patch, status.

`plan_object` is a pure function of what the caller read: the remote object, the local objects
found by its link labels, the local object (if any) at the computed local name, and the related
objects. It returns the ordered actions that move the world one step closer to the remote object;
the daemon executes them in order, stops at the first failure and plans again from fresh state.
Every decision lives here, so an adapter never has to choose, and `servlet plan` can print the same
plan the daemon would execute.

Deliberately not here: reading or writing anything, retries, and the order in which objects are
reconciled. Related objects are planned in `related.py`; this module only decides when.

Reconciles until convergence for a fresh remote object: one (finalizer, namespace, create), then
one for the status and the related objects that need the local primary to exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from attrs import frozen

from servlet.core import filtering, metadata, naming, patch
from servlet.core.actions import (
    NAMESPACE_TYPE,
    Action,
    AddFinalizer,
    Adopt,
    Conflict,
    Create,
    CreateNamespace,
    DeleteLocal,
    Error,
    ObjectRef,
    Patch,
    PatchRemoteStatus,
    redacted,
    Release,
    RemoveFinalizer,
    Side,
)
from servlet.core.model import LocalKey, Problem, PublishedResource, RemoteKey, ResourceType, ServletIdentity
from servlet.core.projection import Projected
from servlet.core.related import (
    Primaries,
    RelatedKey,
    RelatedSnapshot,
    plan_related,
    plan_related_cleanup,
    related_reads,
)

CLUSTER_ANNOTATION = "kcp.io/cluster"


@frozen
class SyncContext:
    """What is fixed for every object of one PublishedResource."""

    servlet: ServletIdentity
    published: PublishedResource
    projected: Projected


@frozen
class ObjectPlan:
    """The ordered actions for one remote object; `local` is None when naming failed."""

    remote: RemoteKey
    local: LocalKey | None
    actions: tuple[Action, ...]
    # The resource types on both sides, for readers of the plan (None when built by hand).
    remote_type: ResourceType | None = None
    local_type: ResourceType | None = None

    @property
    def writes(self) -> bool:
        return plan_writes(self)

    @property
    def problems(self) -> tuple[Problem, ...]:
        """The errors and conflicts of the plan as Problems, for reports that list them apart."""
        found: list[Problem] = []
        for action in self.actions:
            if isinstance(action, Error):
                prefix = f"{action.field}: "
                message = action.reason
                if action.field and message.startswith(prefix):
                    message = message[len(prefix):]
                found.append(Problem(field=action.field, message=message))
            elif isinstance(action, Conflict):
                found.append(Problem(field="", message=action.reason))
        return tuple(found)

    def describe(self) -> str:
        """The remote object as a person finds it: `cluster:namespace/name`."""
        where = f"{self.remote.namespace}/{self.remote.name}" if self.remote.namespace else self.remote.name
        return f"{self.remote.cluster}:{where}" if self.remote.cluster else where

    def to_dict(self) -> dict[str, Any]:
        remote: dict[str, Any] = {**_type_dict(self.remote_type), "cluster": self.remote.cluster,
                                  "namespace": self.remote.namespace, "name": self.remote.name}
        local: dict[str, Any] | None = None
        if self.local is not None:
            local = {**_type_dict(self.local_type), "namespace": self.local.namespace, "name": self.local.name}
        # Plans are printed for people and tools to read: Secret values never leave in that form.
        return {"remote": remote, "local": local, "actions": [redacted(action) for action in self.actions]}


def _type_dict(resource: ResourceType | None) -> dict[str, str]:
    return {} if resource is None else {"apiVersion": resource.api_version, "kind": resource.kind}


def plan_writes(plan: ObjectPlan) -> bool:
    """Whether executing the plan would write anything (conflicts and errors are only reports)."""
    return any(action.is_write for action in plan.actions)


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if patch.is_mapping(value) else {}


def _string(value: object) -> str:
    return value if isinstance(value, str) else ""


def _string_map(value: object) -> dict[str, str]:
    if not patch.is_mapping(value):
        return {}
    return {key: item for key, item in value.items() if isinstance(key, str) and isinstance(item, str)}


def remote_key_of(remote: Mapping[str, Any]) -> RemoteKey:
    """Where a remote object lives; the cluster is "" when kcp's cluster annotation is missing."""
    return _remote_key(_metadata(remote))


def _remote_key(meta: Mapping[str, Any]) -> RemoteKey:
    annotations = meta.get("annotations")
    cluster = _string(annotations.get(CLUSTER_ANNOTATION) if patch.is_mapping(annotations) else None)
    namespace, name = _string(meta.get("namespace")), _string(meta.get("name"))
    return RemoteKey(cluster, namespace, name)  # positional: a class called with keywords costs a dict per call


def local_key_of(local: Mapping[str, Any]) -> LocalKey:
    meta = _metadata(local)
    return LocalKey(namespace=_string(meta.get("namespace")), name=_string(meta.get("name")))


def _local_key_or_none(local: Mapping[str, Any] | None) -> LocalKey | None:
    return None if local is None else local_key_of(local)


def _finalizers(meta: Mapping[str, Any]) -> tuple[str, ...]:
    value = meta.get("finalizers")
    return tuple(item for item in value if isinstance(item, str)) if isinstance(value, list) else ()


def _is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(_metadata(obj).get("deletionTimestamp"))


def _ref(resource: ResourceType, *, side: Side, namespace: str, name: str, cluster: str = "") -> ObjectRef:
    if not resource.namespaced:
        namespace = ""
    return ObjectRef(side, resource, namespace, name, cluster)


@frozen
class _Subject:
    """The remote object being planned and what every step needs to know about it."""

    context: SyncContext
    remote: Mapping[str, Any]
    key: RemoteKey
    finalizers: tuple[str, ...]
    resource_version: str

    @classmethod
    def of(cls, context: SyncContext, remote: Mapping[str, Any]) -> _Subject:
        meta = _metadata(remote)
        key = _remote_key(meta)
        finalizers, resource_version = _finalizers(meta), _string(meta.get("resourceVersion"))
        return cls(context, remote, key, finalizers, resource_version)

    @property
    def ref(self) -> ObjectRef:
        """The remote object as actions name it; built on demand, as a converged plan has no action."""
        key = self.key
        return _ref(self.context.projected.remote, side=Side.REMOTE, namespace=key.namespace, name=key.name,
                    cluster=key.cluster)

    def admitted(self) -> bool:
        """Whether `spec.filter` syncs the object; its labels are read only for a label selector."""
        resource_filter = self.context.published.spec.filter
        labels = {} if resource_filter.labels is None else _string_map(_metadata(self.remote).get("labels"))
        return filtering.filter_admits(resource_filter, namespace=self.key.namespace, labels=labels)

    @property
    def has_finalizer(self) -> bool:
        return metadata.FINALIZER in self.finalizers

    def without_finalizer(self) -> tuple[str, ...]:
        return tuple(item for item in self.finalizers if item != metadata.FINALIZER)

    def plan(self, local: LocalKey | None, actions: Iterable[Action]) -> ObjectPlan:
        projected = self.context.projected
        remote_type, local_type = projected.remote, projected.local
        return ObjectPlan(self.key, local, tuple(actions), remote_type, local_type)

    def local_ref(self, key: LocalKey) -> ObjectRef:
        return _ref(self.context.projected.local, side=Side.LOCAL, namespace=key.namespace, name=key.name)

    def primaries(self, local: Mapping[str, Any], local_ref: ObjectRef) -> Primaries:
        return Primaries(servlet_name=self.context.servlet.name, remote_key=self.key, remote=self.remote,
                         local=local, local_ref=local_ref)


def plan_object(
    *,
    context: SyncContext,
    remote: Mapping[str, Any],
    local_candidates: Sequence[Mapping[str, Any]],
    occupant: Mapping[str, Any] | None,
    local_namespace_exists: bool,
    related: RelatedSnapshot = RelatedSnapshot(),
) -> ObjectPlan:
    """The actions for one remote object, in execution order (SPEC 7 and 8).

    `local_candidates` are the local objects carrying the link labels of `remote`; `occupant` is
    whatever local object sits at the computed local namespace/name (it matters only when there
    is no candidate); `local_namespace_exists` is about the computed local namespace.
    """
    subject = _Subject.of(context, remote)
    if not subject.key.cluster:
        return subject.plan(None, [Error(
            target=subject.ref, reason=f"the remote object {subject.key.namespace}/{subject.key.name} carries no "
            f"{CLUSTER_ANNOTATION} annotation, so its workspace is unknown")])

    # 1. Find.
    if len(local_candidates) > 1:
        found = ", ".join(sorted(_describe_local(candidate) for candidate in local_candidates))
        return subject.plan(None, [Error(
            target=subject.ref, reason=f"{len(local_candidates)} local objects carry the link labels of this "
            f"remote object ({found}); refusing to pick one")])
    local = local_candidates[0] if local_candidates else None

    # 2. Filter.
    if not subject.admitted():
        released = [Release(target=subject.ref, finalizers=subject.without_finalizer(),
                            resource_version=subject.resource_version)] if subject.has_finalizer else []
        return subject.plan(_local_key_or_none(local), released)

    # 3. Deletion.
    if _is_deleting(remote):
        return subject.plan(_local_key_or_none(local), _deletion(subject, local, related))

    # 4. Existence.
    if local is None:
        return _existence(subject, occupant=occupant, namespace_exists=local_namespace_exists, related=related)
    local_key = local_key_of(local)
    actions = [*_add_finalizer(subject), *_sync(subject, local, subject.local_ref(local_key), related)]
    return subject.plan(local_key, actions)


def _add_finalizer(subject: _Subject) -> list[Action]:
    if subject.has_finalizer:
        return []
    return [AddFinalizer(target=subject.ref, finalizers=(*subject.finalizers, metadata.FINALIZER),
                         resource_version=subject.resource_version)]


def _deletion(subject: _Subject, local: Mapping[str, Any] | None, related: RelatedSnapshot) -> tuple[Action, ...]:
    """Related copies and the local copy go first; the finalizer only once the local copy is gone."""
    if not subject.has_finalizer:
        return ()
    if local is None:
        return (RemoveFinalizer(target=subject.ref, finalizers=subject.without_finalizer(),
                                resource_version=subject.resource_version),)
    local_ref = subject.local_ref(local_key_of(local))
    # Related copies first: the service-origin ones are known only from the local primary.
    actions = list(plan_related_cleanup(primaries=subject.primaries(local, local_ref),
                                        related=subject.context.published.spec.related, snapshot=related))
    if not _is_deleting(local):
        actions.append(DeleteLocal(target=local_ref))
    return tuple(actions)


def _existence(
    subject: _Subject, *, occupant: Mapping[str, Any] | None, namespace_exists: bool, related: RelatedSnapshot
) -> ObjectPlan:
    """No linked local copy yet: create one, adopt the occupant that is provably ours, or refuse."""
    projected = subject.context.projected
    computed = naming.local_key_for(
        naming=subject.context.published.spec.naming, remote=subject.key,
        local_namespaced=projected.local.namespaced, remote_namespaced=projected.remote.namespaced,
        protected_namespaces=subject.context.servlet.protected_namespaces,
    )
    if isinstance(computed, Problem):
        return subject.plan(None, [Error.of(computed, target=subject.ref)])
    local_ref = subject.local_ref(computed)

    def planned(*actions: Action) -> ObjectPlan:
        return subject.plan(computed, actions)

    if occupant is None:
        created = _create(subject, local_ref, namespace_exists=namespace_exists)
        if any(isinstance(action, Error) for action in created):
            return planned(*created)  # nothing can be created: leave no finalizer either
        return planned(*_add_finalizer(subject), *created)
    if not metadata.links_to(occupant, servlet_name=subject.context.servlet.name, remote=subject.key):
        # No write at all, not even the finalizer: nothing here is ours yet.
        return planned(Conflict(target=local_ref, reason=_conflict_reason(local_ref, subject.key)))
    repair = _link_repair(subject, occupant)
    adopt = [Adopt(target=local_ref, patch=repair)] if repair else []
    return planned(*_add_finalizer(subject), *adopt, *_sync(subject, occupant, local_ref, related))


def _sync(
    subject: _Subject, local: Mapping[str, Any], local_ref: ObjectRef, related: RelatedSnapshot
) -> list[Action]:
    """Content down, status up, then the related objects: the steps once a local copy exists."""
    change = patch.content_patch(desired=patch.primary_content_view(subject.remote), live=local)
    if isinstance(change, Problem):
        return [Error.of(change, target=local_ref)]
    actions: list[Action] = [Patch(target=local_ref, patch=change.patch)] if change.patch else []
    status_update = _status_update(subject, local)
    if status_update is not None:
        actions.append(status_update)
    related_resources = subject.context.published.spec.related
    if related_resources:
        actions.extend(plan_related(primaries=subject.primaries(local, local_ref), related=related_resources,
                                    snapshot=related))
    return actions


def _describe_local(obj: Mapping[str, Any]) -> str:
    key = local_key_of(obj)
    return f"{key.namespace}/{key.name}" if key.namespace else key.name


def _describe_ref(ref: ObjectRef) -> str:
    return f"{ref.resource.kind} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.resource.kind} {ref.name}"


def _conflict_reason(local_ref: ObjectRef, remote_key: RemoteKey) -> str:
    remote = f"{remote_key.namespace}/{remote_key.name}" if remote_key.namespace else remote_key.name
    return (f"local {_describe_ref(local_ref)} already exists and its link labels and annotations do not name "
            f"remote object {remote} in workspace {remote_key.cluster} and this servlet; it is never overwritten")


def _create(subject: _Subject, local_ref: ObjectRef, *, namespace_exists: bool) -> list[Action]:
    """The local copy with link metadata, content and last-known-state; its namespace first."""
    local_type = subject.context.projected.local
    meta: dict[str, Any] = {"name": local_ref.name}
    if local_type.namespaced:
        meta["namespace"] = local_ref.namespace
    meta["labels"] = metadata.link_labels(servlet_name=subject.context.servlet.name, remote=subject.key)
    meta["annotations"] = metadata.link_annotations(remote=subject.key)
    skeleton = {"apiVersion": local_type.api_version, "kind": local_type.kind, "metadata": meta}
    created = patch.created_object(skeleton=skeleton, desired=patch.primary_content_view(subject.remote))
    if isinstance(created, Problem):
        return [Error.of(created, target=local_ref)]
    actions: list[Action] = []
    if local_type.namespaced and not namespace_exists:
        actions.append(CreateNamespace(target=ObjectRef(side=Side.LOCAL, resource=NAMESPACE_TYPE, namespace="",
                                                        name=local_ref.namespace)))
    actions.append(Create(target=local_ref, object=created))
    return actions


_LINK_LABEL_KEYS = (
    metadata.SERVLET_LABEL, metadata.REMOTE_CLUSTER_LABEL,
    metadata.REMOTE_NAMESPACE_HASH_LABEL, metadata.REMOTE_NAME_HASH_LABEL,
)
_LINK_ANNOTATION_KEYS = (metadata.REMOTE_NAMESPACE_ANNOTATION, metadata.REMOTE_NAME_ANNOTATION)


def _link_repair(subject: _Subject, occupant: Mapping[str, Any]) -> dict[str, Any]:
    """The merge patch that sets every link label and annotation, and drops stale ones."""
    meta = _metadata(occupant)
    repair: dict[str, Any] = {}
    servlet_name = subject.context.servlet.name
    for section, keys, wanted in (
        ("labels", _LINK_LABEL_KEYS, metadata.link_labels(servlet_name=servlet_name, remote=subject.key)),
        ("annotations", _LINK_ANNOTATION_KEYS, metadata.link_annotations(remote=subject.key)),
    ):
        current = _string_map(meta.get(section))
        changes = {key: wanted.get(key) for key in keys if current.get(key) != wanted.get(key)}
        if changes:
            repair[section] = changes
    return {"metadata": repair} if repair else {}


def _status_update(subject: _Subject, local: Mapping[str, Any]) -> PatchRemoteStatus | None:
    """The remote status made equal to the local one, only through a status subresource."""
    if not subject.context.projected.has_status_subresource or "status" not in local:
        return None
    local_status = local["status"]
    remote_status = subject.remote.get("status")
    if local_status is None or not patch.statuses_differ(local_status, remote_status):
        return None
    if patch.is_mapping(local_status) and patch.is_mapping(remote_status):
        # Last-known = live = the remote status: fields only the remote has are removed, so the
        # remote status ends up equal to the local one, not a union of both.
        diff = patch.three_way_patch(last_known=remote_status, desired=local_status, live=remote_status)
        status_patch: dict[str, Any] = {"status": diff}
    else:
        status_patch = {"status": local_status}
    return PatchRemoteStatus(target=subject.ref, status=local_status, patch=status_patch)


# --- a whole world at once ---------------------------------------------------------------------


def _is_of(obj: Mapping[str, Any], resource: ResourceType) -> bool:
    return obj.get("apiVersion") == resource.api_version and obj.get("kind") == resource.kind


@frozen
class _Index:
    """Objects of one side by (apiVersion, kind, cluster, namespace, name), plus known namespaces."""

    objects: dict[tuple[str, str, str, str, str], Mapping[str, Any]]
    namespaces: frozenset[tuple[str, str]]

    @classmethod
    def of(cls, objects: Sequence[Mapping[str, Any]]) -> _Index:
        by_key: dict[tuple[str, str, str, str, str], Mapping[str, Any]] = {}
        namespaces: set[tuple[str, str]] = set()
        for obj in objects:
            key = remote_key_of(obj)
            type_key = (_string(obj.get("apiVersion")), _string(obj.get("kind")))
            by_key[(*type_key, key.cluster, key.namespace, key.name)] = obj
            # A namespace exists when its object is given or when anything lives in it.
            if _is_of(obj, NAMESPACE_TYPE):
                namespaces.add((key.cluster, key.name))
            elif key.namespace:
                namespaces.add((key.cluster, key.namespace))
        return cls(objects=by_key, namespaces=frozenset(namespaces))


def plan_world(
    *, contexts: Sequence[SyncContext], remote_objects: Iterable[Mapping[str, Any]],
    local_objects: Iterable[Mapping[str, Any]],
) -> tuple[ObjectPlan, ...]:
    """The plan of every remote object, given everything that exists on both sides.

    For the offline `servlet plan` and for tests: it answers the daemon's reads (candidates by
    link labels, the occupant, the namespace, related objects) from the given lists. Remote
    objects that no context publishes (Secrets, ConfigMaps, Namespaces) only feed related planning.
    """
    remotes = list(remote_objects)
    locals_ = list(local_objects)
    remote_index, local_index = _Index.of(remotes), _Index.of(locals_)
    plans: list[ObjectPlan] = []
    for remote in remotes:
        context = next((c for c in contexts if _is_of(remote, c.projected.remote)), None)
        if context is not None:
            plans.append(_plan_in_world(context, remote, locals_, remote_index, local_index))
    return tuple(plans)


def _plan_in_world(
    context: SyncContext, remote: Mapping[str, Any], locals_: Sequence[Mapping[str, Any]],
    remote_index: _Index, local_index: _Index,
) -> ObjectPlan:
    local_type = context.projected.local
    remote_key = remote_key_of(remote)
    wanted = metadata.link_labels(servlet_name=context.servlet.name, remote=remote_key)
    candidates = [
        obj for obj in locals_
        if _is_of(obj, local_type)
        and {k: v for k, v in _string_map(_metadata(obj).get("labels")).items() if k in _LINK_LABEL_KEYS} == wanted
    ]
    occupant = None
    namespace_exists = True
    if not candidates:
        computed = naming.local_key_for(
            naming=context.published.spec.naming, remote=remote_key,
            local_namespaced=local_type.namespaced, remote_namespaced=context.projected.remote.namespaced,
        )
        if not isinstance(computed, Problem):
            occupant = local_index.objects.get(
                (local_type.api_version, local_type.kind, "", computed.namespace, computed.name))
            namespace_exists = ("", computed.namespace) in local_index.namespaces
    local_primary = candidates[0] if len(candidates) == 1 else occupant
    reads = related_reads(related=context.published.spec.related, remote=remote, local=local_primary)
    found: dict[RelatedKey, Mapping[str, Any]] = {}
    for key in reads.objects:
        index, cluster = (remote_index, remote_key.cluster) if key.side is Side.REMOTE else (local_index, "")
        obj = index.objects.get(("v1", key.kind.value, cluster, key.namespace, key.name))
        if obj is not None:
            found[key] = obj
    namespaces = frozenset(
        (side, name) for side, name in reads.namespaces
        if (remote_key.cluster if side is Side.REMOTE else "", name)
        in (remote_index if side is Side.REMOTE else local_index).namespaces
    )
    return plan_object(
        context=context, remote=remote, local_candidates=candidates, occupant=occupant,
        local_namespace_exists=namespace_exists, related=RelatedSnapshot(objects=found, namespaces=namespaces),
    )


# --- orphans -----------------------------------------------------------------------------------


@frozen
class Orphan:
    """A local copy whose remote object no longer exists; `remote` as its link annotations name it."""

    local: LocalKey
    remote: RemoteKey


def find_orphans(
    *, servlet_name: str, local_objects: Iterable[Mapping[str, Any]], remote_keys: Iterable[RemoteKey]
) -> tuple[Orphan, ...]:
    """The local copies made by this servlet that no remote object in `remote_keys` links to.

    `remote_keys` must cover every remote object of the resource, also those outside the filter:
    a released copy is kept on purpose and is not an orphan while its remote object lives.
    """
    by_labels: set[tuple[tuple[str, str], ...]] = set()
    by_annotations: set[RemoteKey] = set()
    for key in remote_keys:
        by_labels.add(tuple(sorted(metadata.link_labels(servlet_name=servlet_name, remote=key).items())))
        by_annotations.add(key)
    orphans: list[Orphan] = []
    for obj in local_objects:
        meta = _metadata(obj)
        labels = _string_map(meta.get("labels"))
        if labels.get(metadata.SERVLET_LABEL) != servlet_name:
            continue
        annotations = _string_map(meta.get("annotations"))
        named = RemoteKey(
            cluster=labels.get(metadata.REMOTE_CLUSTER_LABEL, ""),
            namespace=annotations.get(metadata.REMOTE_NAMESPACE_ANNOTATION, ""),
            name=annotations.get(metadata.REMOTE_NAME_ANNOTATION, ""),
        )
        link = tuple(sorted((key, value) for key, value in labels.items() if key in _LINK_LABEL_KEYS))
        if link in by_labels or named in by_annotations:
            continue
        orphans.append(Orphan(local=local_key_of(obj), remote=named))
    return tuple(sorted(orphans, key=lambda orphan: (orphan.local.namespace, orphan.local.name)))


def delete_orphans(*, orphans: Iterable[Orphan], resource: ResourceType) -> tuple[DeleteLocal, ...]:
    """The deletions for `--delete-orphans`; without that flag orphans are only reported."""
    return tuple(
        DeleteLocal(target=_ref(resource, side=Side.LOCAL, namespace=orphan.local.namespace, name=orphan.local.name))
        for orphan in orphans
    )
