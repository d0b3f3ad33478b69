"""The sync plan for one remote object (SPEC 7): find, filter, delete, create or adopt, patch, status.

`plan_object` is a pure function of a `PlanInputs` (`gather.py` says what is read): the remote
object, the local objects carrying its link labels, the object at the computed local name, the
remote objects contending for that name, and the related objects. It returns the ordered actions
that move the world one step closer to the remote object, or says what the plan waits for.

Plans are prefix-closed: executing the first actions of a plan and planning again gives the rest
(a law in `tests/property/test_plan_laws.py`). So the daemon executes a plan, stops at the first
failure, and plans again after each plan it executed until a plan writes nothing; a plan that waits
(a local copy still being deleted) is planned again later, never left to a watch event that a
relist may never deliver. Every decision lives here, so `servlet plan` prints what the daemon does.

Deliberately not here: reading or writing anything, retries, and the order in which objects are
reconciled. Related objects are planned in `related.py`; this module only decides when.

Reconciles until convergence for a fresh remote object: one (finalizer, namespace, create), then
one for the status and the related objects that need the local primary to exist.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from attrs import frozen

from servlet.core import metadata, naming, patch
from servlet.core.actions import (
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
    Release,
    RemoveFinalizer,
    Side,
)
from servlet.core.context import SyncContext
from servlet.core.gather import PlanInputs, admitted
from servlet.core.json_values import is_mapping
from servlet.core.keys import (
    CLUSTER_ANNOTATION,
    finalizers_of,
    guarded,
    is_deleting,
    local_key_of,
    metadata_of,
    remote_key_of_metadata,
    string,
    uid_of,
)
from servlet.core.model import LocalKey, Problem, RemoteKey, ResourceType
from servlet.core.object_plan import ObjectPlan, plan_writes
from servlet.core.related import Primaries, RelatedSnapshot, plan_related, plan_related_cleanup
from servlet.core.targets import NAMESPACE_TYPE
from servlet.core.workspace_paths import copy_annotations, missing_path_reason, with_path_annotation

__all__ = ["ObjectPlan", "PlanInputs", "SyncContext", "plan_object", "plan_writes"]


def _local_key_or_none(local: Mapping[str, Any] | None) -> LocalKey | None:
    return None if local is None else local_key_of(local)


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
    deleting: bool
    workspace_path: str | None  # with spec.enableWorkspacePaths, when known

    @classmethod
    def of(cls, context: SyncContext, remote: Mapping[str, Any], path: str | None) -> _Subject:
        meta = metadata_of(remote)
        key = remote_key_of_metadata(meta)
        finalizers, resource_version = finalizers_of(meta), string(meta.get("resourceVersion"))
        return cls(context, remote, key, finalizers, resource_version, bool(meta.get("deletionTimestamp")), path)

    @property
    def ref(self) -> ObjectRef:
        """The remote object as actions name it; built on demand, as a converged plan has no action."""
        key = self.key
        return _ref(
            self.context.projected.remote, side=Side.REMOTE, namespace=key.namespace, name=key.name, cluster=key.cluster
        )

    @property
    def has_finalizer(self) -> bool:
        return metadata.FINALIZER in self.finalizers

    def without_finalizer(self) -> tuple[str, ...]:
        return tuple(item for item in self.finalizers if item != metadata.FINALIZER)

    def plan(self, local: LocalKey | None, actions: Iterable[Action], *, waiting: str = "") -> ObjectPlan:
        projected = self.context.projected
        remote_type, local_type = projected.remote, projected.local
        return ObjectPlan(self.key, local, tuple(actions), remote_type, local_type, waiting)

    def local_ref(self, key: LocalKey) -> ObjectRef:
        return _ref(self.context.projected.local, side=Side.LOCAL, namespace=key.namespace, name=key.name)

    def primaries(self, local: Mapping[str, Any], local_ref: ObjectRef) -> Primaries:
        return Primaries(
            servlet_name=self.context.servlet.name,
            remote_key=self.key,
            remote=self.remote,
            local=local,
            local_ref=local_ref,
        )


def plan_object(*, context: SyncContext, inputs: PlanInputs) -> ObjectPlan:
    """The actions for one remote object, in execution order (SPEC 7 and 8)."""
    subject = _Subject.of(context, inputs.remote, inputs.workspace_path)
    if not subject.key.cluster:
        return subject.plan(
            None,
            [
                Error(
                    target=subject.ref,
                    reason=f"the remote object {subject.key.namespace}/{subject.key.name} carries no "
                    f"{CLUSTER_ANNOTATION} annotation, so its workspace is unknown",
                )
            ],
        )

    # 1. Find.
    candidates = inputs.candidates
    if len(candidates) > 1:
        found = ", ".join(sorted(_describe_local(candidate) for candidate in candidates))
        return subject.plan(
            None,
            [
                Error(
                    target=subject.ref,
                    reason=f"{len(candidates)} local objects carry the link labels of this "
                    f"remote object ({found}); refusing to pick one",
                )
            ],
        )
    local = candidates[0] if candidates else None

    # 2. Filter.
    if not admitted(context, subject.remote, subject.key):
        released = (
            [
                Release(
                    target=subject.ref,
                    finalizers=subject.without_finalizer(),
                    resource_version=subject.resource_version,
                )
            ]
            if subject.has_finalizer
            else []
        )
        return subject.plan(_local_key_or_none(local), released)

    # 3. Deletion.
    if subject.deleting:
        return _deletion(subject, local, inputs.related)

    # 4. Existence.
    if local is None:
        return _existence(subject, inputs)
    local_meta = metadata_of(local)
    local_key = LocalKey(string(local_meta.get("namespace")), string(local_meta.get("name")))
    local_ref = subject.local_ref(local_key)
    if local_meta.get("deletionTimestamp"):
        # Someone else is deleting the copy: leave it alone until it is gone, then create it anew.
        return subject.plan(
            local_key,
            _add_finalizer(subject),
            waiting=f"local {_describe_ref(local_ref)} is being deleted; it is created again once gone",
        )
    repair = metadata.link_repair(
        local_meta,
        servlet_name=subject.context.servlet.name,
        remote=subject.key,
        resource=subject.context.projected.remote,
        labels_match=True,
    )
    adopt = [Adopt(target=local_ref, patch=guarded(repair, local))] if repair else []
    return subject.plan(
        local_key, [*_add_finalizer(subject), *adopt, *_sync(subject, local, local_ref, inputs.related)]
    )


def _add_finalizer(subject: _Subject) -> list[Action]:
    if subject.has_finalizer:
        return []
    return [
        AddFinalizer(
            target=subject.ref,
            finalizers=(*subject.finalizers, metadata.FINALIZER),
            resource_version=subject.resource_version,
        )
    ]


def _remove_finalizer(subject: _Subject) -> list[Action]:
    if not subject.has_finalizer:
        return []
    return [
        RemoveFinalizer(
            target=subject.ref, finalizers=subject.without_finalizer(), resource_version=subject.resource_version
        )
    ]


def _deletion(subject: _Subject, local: Mapping[str, Any] | None, related: RelatedSnapshot) -> ObjectPlan:
    """Related copies and the local copy go first; the finalizer only once the local copy is gone."""
    if not subject.has_finalizer:
        return subject.plan(_local_key_or_none(local), ())
    if local is None:
        return subject.plan(None, _remove_finalizer(subject))
    local_key = local_key_of(local)
    local_ref = subject.local_ref(local_key)
    # Related copies first: the service-origin ones are known only from the local primary.
    actions = list(
        plan_related_cleanup(
            primaries=subject.primaries(local, local_ref),
            related=subject.context.published.spec.related,
            snapshot=related,
        )
    )
    if is_deleting(local):
        return subject.plan(
            local_key,
            actions,
            waiting=f"local {_describe_ref(local_ref)} is being deleted; the finalizer goes once it is gone",
        )
    actions.append(DeleteLocal(target=local_ref, uid=uid_of(local)))
    return subject.plan(local_key, actions)


def _existence(subject: _Subject, inputs: PlanInputs) -> ObjectPlan:
    """No linked local copy yet: create one, adopt the occupant that is provably ours, or refuse.

    A refusal writes nothing but takes off a finalizer of ours that an earlier attempt left (the
    daemon's cache may not have held the occupant yet): nothing here waits for the servlet.
    """
    projected = subject.context.projected
    if unknown := missing_path_reason(subject.context.published, subject.key.cluster, subject.workspace_path):
        return subject.plan(None, [Error(target=subject.ref, reason=unknown)], waiting=unknown)  # asked again
    computed = naming.local_key_for(
        naming=subject.context.published.spec.naming,
        remote=subject.key,
        local_namespaced=projected.local.namespaced,
        remote_namespaced=projected.remote.namespaced,
        protected_namespaces=subject.context.servlet.protected_namespaces,
        remote_object=subject.remote,
        cluster_path=subject.workspace_path,
    )
    if isinstance(computed, Problem):
        return subject.plan(None, [Error.of(computed, target=subject.ref)])
    local_ref = subject.local_ref(computed)
    occupant = inputs.occupant

    def planned(*actions: Action) -> ObjectPlan:
        return subject.plan(computed, actions)

    if occupant is None and inputs.contenders:
        first = inputs.contenders[0]
        return planned(
            Conflict(target=local_ref, reason=_contended_reason(local_ref, first)), *_remove_finalizer(subject)
        )
    if occupant is None:
        created = _create(subject, local_ref, namespace_exists=inputs.namespace_exists)
        if any(isinstance(action, Error) for action in created):
            return planned(*created)  # nothing can be created: leave no finalizer either
        return planned(*_add_finalizer(subject), *created)
    if not metadata.links_to(
        occupant,
        servlet_name=subject.context.servlet.name,
        remote=subject.key,
        resource=subject.context.projected.remote,
    ):
        return planned(
            Conflict(target=local_ref, reason=_conflict_reason(local_ref, subject.key)), *_remove_finalizer(subject)
        )
    if is_deleting(occupant):
        return subject.plan(
            computed,
            _add_finalizer(subject),
            waiting=f"local {_describe_ref(local_ref)} is being deleted; it is created again once gone",
        )
    repair = metadata.link_repair(
        metadata_of(occupant),
        servlet_name=subject.context.servlet.name,
        remote=subject.key,
        resource=subject.context.projected.remote,
    )
    adopt = [Adopt(target=local_ref, patch=guarded(repair, occupant))] if repair else []
    return planned(*_add_finalizer(subject), *adopt, *_sync(subject, occupant, local_ref, inputs.related))


def _sync(subject: _Subject, local: Mapping[str, Any], local_ref: ObjectRef, related: RelatedSnapshot) -> list[Action]:
    """Content down, status up, then the related objects: the steps once a local copy exists."""
    change = patch.content_patch(desired=patch.primary_content_view(subject.remote), live=local)
    if isinstance(change, Problem):
        return [Error.of(change, target=local_ref)]
    content = with_path_annotation(change.patch, local, subject.workspace_path)
    actions: list[Action] = [Patch(target=local_ref, patch=guarded(content, local))] if content else []
    status_update = _status_update(subject, local)
    if status_update is not None:
        actions.append(status_update)
    related_resources = subject.context.published.spec.related
    if related_resources:
        actions.extend(
            plan_related(primaries=subject.primaries(local, local_ref), related=related_resources, snapshot=related)
        )
    return actions


def _describe_local(obj: Mapping[str, Any]) -> str:
    key = local_key_of(obj)
    return f"{key.namespace}/{key.name}" if key.namespace else key.name


def _describe_ref(ref: ObjectRef) -> str:
    return f"{ref.resource.kind} {ref.namespace}/{ref.name}" if ref.namespace else f"{ref.resource.kind} {ref.name}"


def _conflict_reason(local_ref: ObjectRef, remote_key: RemoteKey) -> str:
    remote = f"{remote_key.namespace}/{remote_key.name}" if remote_key.namespace else remote_key.name
    return (
        f"local {_describe_ref(local_ref)} already exists and its link labels and annotations do not name "
        f"remote object {remote} in workspace {remote_key.cluster} and this servlet; it is never overwritten"
    )


def _contended_reason(local_ref: ObjectRef, first: RemoteKey) -> str:
    where = f"{first.namespace}/{first.name}" if first.namespace else first.name
    return (
        f"local {_describe_ref(local_ref)} is also the computed name of remote object {where} in workspace "
        f"{first.cluster}, which comes first by workspace, namespace and name and gets it"
    )


def _create(subject: _Subject, local_ref: ObjectRef, *, namespace_exists: bool) -> list[Action]:
    """The local copy with link metadata, content and last-known-state; its namespace first."""
    local_type = subject.context.projected.local
    meta: dict[str, Any] = {"name": local_ref.name}
    if local_type.namespaced:
        meta["namespace"] = local_ref.namespace
    remote_type = subject.context.projected.remote
    meta["labels"] = metadata.link_labels(
        servlet_name=subject.context.servlet.name, remote=subject.key, resource=remote_type
    )
    meta["annotations"] = copy_annotations(remote=subject.key, resource=remote_type, path=subject.workspace_path)
    skeleton = {"apiVersion": local_type.api_version, "kind": local_type.kind, "metadata": meta}
    created = patch.created_object(skeleton=skeleton, desired=patch.primary_content_view(subject.remote))
    if isinstance(created, Problem):
        return [Error.of(created, target=local_ref)]
    actions: list[Action] = []
    if local_type.namespaced and not namespace_exists:
        actions.append(
            CreateNamespace(
                target=ObjectRef(side=Side.LOCAL, resource=NAMESPACE_TYPE, namespace="", name=local_ref.namespace)
            )
        )
    actions.append(Create(target=local_ref, object=created))
    return actions


def _status_update(subject: _Subject, local: Mapping[str, Any]) -> PatchRemoteStatus | None:
    """The remote status made equal to the local one, only through a status subresource."""
    if not subject.context.projected.has_status_subresource or "status" not in local:
        return None
    local_status = local["status"]
    remote_status = subject.remote.get("status")
    if local_status is None or not patch.statuses_differ(local_status, remote_status):
        return None
    if is_mapping(local_status) and is_mapping(remote_status):
        # Last-known = live = the remote status: fields only the remote has are removed, so the
        # remote status ends up equal to the local one, not a union of both.
        diff = patch.three_way_patch(last_known=remote_status, desired=local_status, live=remote_status)
        status_patch: dict[str, Any] = {"status": diff}
    else:
        status_patch = {"status": local_status}
    return PatchRemoteStatus(target=subject.ref, status=local_status, patch=status_patch)
