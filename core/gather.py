"""What one plan reads: the one place that decides it, for the daemon and both kinds of `servlet plan`.

`plan_object` is a pure function of a `PlanInputs`. Three callers build those inputs: the daemon
(from its informer caches), the offline `servlet plan` (from the given manifests) and the live
`servlet plan` (with GET requests). The rules of *what* to read live here once: `plan_reads` is a
generator that asks for reads in rounds and receives their answers, and a reader only answers.
`gather` and `gather_async` drive it for a synchronous and an asynchronous reader.

The reads, and who needs them:

- `LinkedCopies`: the local objects carrying exactly the link labels of a remote object (SPEC 7
  step 1). Exact, not a superset: a copy whose labels name more than the remote object is not its
  copy, and all three callers must agree on that.
- `ObjectAt`: one object by coordinates (the object at the computed local name, related objects).
  The daemon caches every object of the local type, not only its copies, so a foreign object at
  the computed name is known before anything is written (a conflict writes nothing). An absent
  related origin whose copy would be deleted is read again `fresh` (from the API server): losing
  sight of an object (a claim the tenant rejected) empties a cache too, and is no deletion.
- `ObjectsMatching`: the objects of one namespace a related entry's label selector finds (read
  first: each found object is then read as an `ObjectAt`).
- `NamespaceAt`: whether a namespace exists.
- `ObjectAt` a workspace's `LogicalCluster`, with `spec.enableWorkspacePaths` only: the workspace
  path, for `.ClusterPath` and the copy's annotation (`workspace_paths.py`).
- `SameLocalName`: the other remote objects of the resource whose computed local name is the same.
  Two fresh objects may collide on one local name; the planner gives the name to the first by
  (workspace, namespace, name) and reports a conflict for the others, whatever order they are
  reconciled in, so the plan and the daemon agree.

Deliberately not here: answering reads (caches, lists, HTTP) and deciding anything from what was
read (`plan.py`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import Any, TypeAlias

import attrs
from attrs import frozen

from servlet.core import metadata, naming
from servlet.core.context import SyncContext
from servlet.core.filtering import filter_admits
from servlet.core.keys import is_deleting, local_key_of, metadata_of, remote_key_of, string, string_map
from servlet.core.model import LabelSelector, LocalKey, RemoteKey, ResourceType
from servlet.core.related import Primaries, RelatedKey, RelatedSnapshot, absences_to_confirm, related_reads
from servlet.core.related_selector import matching_names, selector_queries
from servlet.core.targets import ObjectRef, Side
from servlet.core.workspace_paths import LOGICAL_CLUSTER_NAME, LOGICAL_CLUSTER_TYPE, workspace_path_of

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = [
    "UNREADABLE",
    "LinkedCopies",
    "NamespaceAt",
    "ObjectAt",
    "ObjectsMatching",
    "PlanInputs",
    "Read",
    "SameLocalName",
    "gather",
    "plan_reads",
]


@frozen
class LinkedCopies:
    """The local objects of `resource` whose link labels are exactly `labels`."""

    resource: ResourceType
    labels: tuple[tuple[str, str], ...]


@frozen
class ObjectAt:
    """One object; `cluster` is the workspace on the remote side and "" locally.

    `fresh`: read it from the API server, not a cache. Asked only to confirm that a related
    origin is gone before its copy is deleted: a cache also misses what the servlet lost sight of.
    """

    side: Side
    resource: ResourceType
    cluster: str
    namespace: str
    name: str
    fresh: bool = False


class _Unreadable:
    """The answer to an ObjectAt that could not be read (forbidden, a claim not accepted)."""

    def __repr__(self) -> str:
        return "UNREADABLE"


UNREADABLE = _Unreadable()


@frozen
class ObjectsMatching:
    """The objects of `resource` in one namespace whose labels match `selector` (a related entry's
    `object.selector`); answered by a sequence of objects (their metadata suffices) or UNREADABLE."""

    side: Side
    resource: ResourceType
    cluster: str
    namespace: str
    selector: LabelSelector


@frozen
class NamespaceAt:
    side: Side
    cluster: str
    name: str


@frozen
class SameLocalName:
    """The remote objects of the context's resource whose computed local key is `local`."""

    local: LocalKey


Read: TypeAlias = LinkedCopies | ObjectAt | ObjectsMatching | NamespaceAt | SameLocalName
# What a reader answers, position by position: a sequence of objects for LinkedCopies,
# ObjectsMatching (or UNREADABLE) and SameLocalName, an object, None or UNREADABLE for ObjectAt, a bool for NamespaceAt.
Answer: TypeAlias = Any
Gathering: TypeAlias = Generator[tuple[Read, ...], Sequence[Answer], "PlanInputs"]


@frozen
class PlanInputs:
    """Everything `plan_object` decides from, for one remote object.

    `candidates`: the local objects with its link labels. `occupant`: whatever sits at the computed
    local name (read only when there is no candidate). `contenders`: fresh remote objects that
    claim the same local name and come first. `related`: the related objects and namespaces.
    `workspace_path`: the path of the object's workspace, read only with `spec.enableWorkspacePaths`
    (None: not read, or unknown).
    """

    remote: Mapping[str, Any]
    candidates: tuple[Mapping[str, Any], ...] = ()
    occupant: Mapping[str, Any] | None = None
    namespace_exists: bool = True
    contenders: tuple[RemoteKey, ...] = ()
    related: RelatedSnapshot = RelatedSnapshot()
    workspace_path: str | None = None


def link_read(context: SyncContext, key: RemoteKey) -> LinkedCopies:
    labels = metadata.link_labels(servlet_name=context.servlet.name, remote=key, resource=context.projected.remote)
    return LinkedCopies(context.projected.local, tuple(sorted(labels.items())))


def admitted(context: SyncContext, remote: Mapping[str, Any], key: RemoteKey) -> bool:
    """Whether `spec.filter` syncs the object; its labels are read only for a label selector."""
    resource_filter = context.published.spec.filter
    labels = {} if resource_filter.labels is None else string_map(metadata_of(remote).get("labels"))
    return filter_admits(resource_filter, namespace=key.namespace, labels=labels)


def computed_local_key(
    context: SyncContext,
    key: RemoteKey,
    *,
    remote_object: Mapping[str, Any] | None = None,
    cluster_path: str | None = None,
) -> LocalKey | None:
    """The computed local key; None when the naming rules give none (also for want of a workspace path)."""
    projected = context.projected
    computed = naming.local_key_for(
        naming=context.published.spec.naming,
        remote=key,
        local_namespaced=projected.local.namespaced,
        remote_namespaced=projected.remote.namespaced,
        protected_namespaces=context.servlet.protected_namespaces,
        remote_object=remote_object,
        cluster_path=cluster_path,
    )
    return computed if isinstance(computed, LocalKey) else None


def plan_reads(context: SyncContext, remote: Mapping[str, Any]) -> Gathering:
    """Ask for what the plan of `remote` needs, round by round; returns the PlanInputs."""
    key = remote_key_of(remote)
    if not key.cluster:
        return PlanInputs(remote)  # planned as an error without reading anything
    first: tuple[Read, ...] = (link_read(context, key),)
    if context.published.spec.workspace_paths:
        first += (ObjectAt(Side.REMOTE, LOGICAL_CLUSTER_TYPE, key.cluster, "", LOGICAL_CLUSTER_NAME),)
    answers = yield first
    candidates = tuple(answers[0])
    path = workspace_path_of(answers[1], cluster=key.cluster) if len(first) > 1 else None
    occupant: Mapping[str, Any] | None = None
    namespace_exists = True
    contenders: tuple[RemoteKey, ...] = ()
    if not candidates and not is_deleting(remote) and admitted(context, remote, key):
        computed = computed_local_key(context, key, remote_object=remote, cluster_path=path)
        if computed is not None:
            occupant, namespace_exists, contenders = yield from _at_computed_name(context, key, computed)
    local_primary = candidates[0] if len(candidates) == 1 else None
    if (
        local_primary is None
        and occupant is not None
        and metadata.links_to(
            occupant, servlet_name=context.servlet.name, remote=key, resource=context.projected.remote
        )
    ):
        local_primary = occupant
    related = RelatedSnapshot()
    if context.published.spec.related and local_primary is not None:
        related = yield from _related(context, key, remote, local_primary)
    return PlanInputs(remote, candidates, occupant, namespace_exists, contenders, related, workspace_path=path)


def _at_computed_name(
    context: SyncContext, key: RemoteKey, computed: LocalKey
) -> Generator[tuple[Read, ...], Sequence[Answer], tuple[Mapping[str, Any] | None, bool, tuple[RemoteKey, ...]]]:
    local_type = context.projected.local
    reads: list[Read] = [
        ObjectAt(Side.LOCAL, local_type, "", computed.namespace, computed.name),
        SameLocalName(computed),
    ]
    if local_type.namespaced:
        reads.append(NamespaceAt(Side.LOCAL, "", computed.namespace))
    answers = yield tuple(reads)
    occupant: Mapping[str, Any] | None = answers[0]
    namespace_exists = bool(answers[2]) if local_type.namespaced else True
    if occupant is not None:
        return occupant, namespace_exists, ()
    earlier = sorted(
        other_key
        for other in answers[1]
        if (other_key := remote_key_of(other)) < key and not is_deleting(other) and admitted(context, other, other_key)
    )
    if not earlier:
        return None, namespace_exists, ()
    # An earlier object that already has a copy elsewhere does not need this name. A copy found
    # at this very name holds it: a reader answering rounds at different moments (the daemon
    # between awaits) can see it now though the first round found the name free.
    copies = yield tuple(link_read(context, other_key) for other_key in earlier)
    for found in copies:
        here = next((copy for copy in found if local_key_of(copy) == computed), None)
        if here is not None:
            return here, namespace_exists, ()
    return None, namespace_exists, tuple(other for other, found in zip(earlier, copies) if not found)


def _related(
    context: SyncContext, key: RemoteKey, remote: Mapping[str, Any], local: Mapping[str, Any]
) -> Generator[tuple[Read, ...], Sequence[Answer], RelatedSnapshot]:
    """The related objects; an absence that would lead to a deletion is confirmed by a fresh read."""
    related = context.published.spec.related
    matched: dict[str, tuple[str, ...] | None] = {}
    queries = selector_queries(related, remote=remote, local=local)
    if queries:
        lists = yield tuple(
            ObjectsMatching(
                query.side,
                query.resource,
                key.cluster if query.side is Side.REMOTE else "",
                query.namespace,
                query.selector,
            )
            for query in queries
        )
        for query, listed in zip(queries, lists):
            matched[query.identifier] = None if listed is UNREADABLE else matching_names(query, listed)
    wanted = related_reads(related=related, remote=remote, local=local, matched=matched)
    if not wanted.objects and not wanted.namespaces:
        return RelatedSnapshot(matched=matched)
    reads: list[Read] = [_object_at(key, item) for item in wanted.objects]
    reads.extend(
        NamespaceAt(side, key.cluster if side is Side.REMOTE else "", name) for side, name in wanted.namespaces
    )
    answers = yield tuple(reads)
    count = len(wanted.objects)
    found = dict(zip(wanted.objects, answers[:count]))
    namespaces = frozenset(namespace for namespace, exists in zip(wanted.namespaces, answers[count:]) if exists)
    snapshot = attrs.evolve(_snapshot(found, namespaces, unconfirmed=True), matched=matched)
    local_type = context.projected.local
    meta = metadata_of(local)
    primaries = Primaries(
        servlet_name=context.servlet.name,
        remote_key=key,
        remote=remote,
        local=local,
        local_ref=ObjectRef(
            Side.LOCAL,
            local_type,
            string(meta.get("namespace")) if local_type.namespaced else "",
            string(meta.get("name")),
        ),
    )
    to_confirm = sorted(
        absences_to_confirm(primaries=primaries, related=related, snapshot=snapshot),
        key=lambda item: (item.side.value, item.resource.api_version, item.resource.plural, item.namespace, item.name),
    )
    if to_confirm:
        confirmed = yield tuple(attrs.evolve(_object_at(key, item), fresh=True) for item in to_confirm)
        found.update(zip(to_confirm, confirmed))
    return attrs.evolve(_snapshot(found, namespaces, unconfirmed=False), matched=matched)


def _object_at(key: RemoteKey, item: RelatedKey) -> ObjectAt:
    return ObjectAt(
        item.side,
        item.resource,
        key.cluster if item.side is Side.REMOTE else "",
        item.namespace,
        item.name,
    )


def _snapshot(
    found: Mapping[RelatedKey, Answer], namespaces: frozenset[tuple[Side, str]], *, unconfirmed: bool
) -> RelatedSnapshot:
    """`found` as a snapshot: objects, the unreadable ones, and absences (unconfirmed until read fresh)."""
    return RelatedSnapshot(
        objects={item: obj for item, obj in found.items() if obj is not None and obj is not UNREADABLE},
        namespaces=namespaces,
        unreadable=frozenset(item for item, obj in found.items() if obj is UNREADABLE),
        unconfirmed=frozenset(item for item, obj in found.items() if obj is None) if unconfirmed else frozenset(),
    )


def gather(
    context: SyncContext, remote: Mapping[str, Any], answer: Callable[[tuple[Read, ...]], Sequence[Answer]]
) -> PlanInputs:
    """The PlanInputs of `remote`, with `answer` reading each round synchronously."""
    steps = plan_reads(context, remote)
    try:
        reads = next(steps)
        while True:
            reads = steps.send(answer(reads))
    except StopIteration as done:
        result: PlanInputs = done.value
        return result


async def gather_async(
    context: SyncContext, remote: Mapping[str, Any], answer: Callable[[tuple[Read, ...]], Awaitable[Sequence[Answer]]]
) -> PlanInputs:
    """The same as `gather` for a reader that awaits (the live plan reads a round in parallel)."""
    steps = plan_reads(context, remote)
    try:
        reads = next(steps)
        while True:
            reads = steps.send(await answer(reads))
    except StopIteration as done:
        result: PlanInputs = done.value
        return result
