"""Which PublishedResources get a sync worker, which running workers stop, and whose finalizers go.

The daemon's sync manager makes these choices on every reconcile; they depend only on what the
catalog resolved, which schemas the APIExport lists and which workers run, so they are made here
where a test can pin each rule without starting a worker.

Deliberately not here: starting and stopping workers, and sending the releases (the sync manager).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Mapping

from attrs import frozen

from servlet.core.apiexport import SchemaClaim, schema_taken_by
from servlet.core.conditions import Condition, ConditionType
from servlet.core.context import SyncContext
from servlet.core.model import PublishedResource, ResourceType

# Reasons of a `Syncing=False` condition for a PublishedResource that resolved but is not synced.
RESOURCE_TAKEN = "ResourceTaken"
WAITING_FOR_EXPORT = "WaitingForExport"
# The reason of `Syncing=True` for a schema-only PublishedResource: nothing to sync is as asked.
SYNCHRONIZATION_DISABLED = "SynchronizationDisabled"
SCHEMA_ONLY_MESSAGE = (
    "synchronization is disabled (spec.synchronization.enabled: false): the schema is published "
    "and exported, and no objects are synced"
)


def syncs_objects(published: PublishedResource) -> bool:
    """Whether objects of the PublishedResource are synced at all, or only its schema is published.

    The daemon starts no sync worker for a schema-only one and `servlet plan` plans none of its
    objects; both ask here."""
    return published.spec.synchronization.enabled


def schema_only_condition() -> Condition:
    """`Syncing` of a schema-only PublishedResource: True, as nothing to sync is what was asked.

    Also before kcp publishes the virtual workspace URL: a schema-only one never needs it."""
    return Condition.true(ConditionType.SYNCING, reason=SYNCHRONIZATION_DISABLED, message=SCHEMA_ONLY_MESSAGE)


@frozen
class Candidate:
    """A PublishedResource as the choice sees it: `context` is None when it cannot be published now."""

    name: str
    context: SyncContext | None
    created: str = ""  # metadata.creationTimestamp: of two with one schema, the older keeps it


@frozen
class WorkerChoice:
    """The workers that must run, and why the other PublishedResources have none."""

    run: Mapping[str, SyncContext]  # PublishedResource name -> what its worker syncs
    unsyncable: frozenset[str]  # cannot be published now (invalid, or no CRD to project)
    # Could be published, but have no worker: `Syncing=False` saying why, or `Syncing=True` for the
    # schema-only ones, whose objects are not meant to be synced.
    held: Mapping[str, Condition]
    # Workers whose local resource another worker also writes: an orphan scan would take the
    # other's copies for orphans, so it is off for them.
    orphan_scan_off: frozenset[str]
    schema_only: frozenset[str] = frozenset()  # synchronization disabled: no worker, by design


def choose_workers(candidates: Iterable[Candidate], *, exported: Collection[str]) -> WorkerChoice:
    """A worker for each PublishedResource that can be published, keeps its schema, and is in the APIExport.

    `exported` names the APIResourceSchemas the APIExport lists.
    """
    candidates = list(candidates)
    taken = schema_taken_by(
        SchemaClaim(
            published_resource=candidate.name,
            schema_name=candidate.context.projected.schema_name,
            created=candidate.created,
        )
        for candidate in candidates
        if candidate.context is not None
    )
    run: dict[str, SyncContext] = {}
    held: dict[str, Condition] = {}
    unsyncable: set[str] = set()
    schema_only: set[str] = set()
    for candidate in candidates:
        context = candidate.context
        if context is None:
            unsyncable.add(candidate.name)
        elif candidate.name in taken:
            held[candidate.name] = Condition.false(
                ConditionType.SYNCING,
                reason=RESOURCE_TAKEN,
                message=f"nothing is synced for this PublishedResource: PublishedResource {taken[candidate.name]} "
                f"syncs these objects with the same APIResourceSchema {context.projected.schema_name}",
            )
        elif not syncs_objects(context.published):
            schema_only.add(candidate.name)
            held[candidate.name] = schema_only_condition()
        elif context.projected.schema_name not in exported:
            held[candidate.name] = Condition.false(
                ConditionType.SYNCING,
                reason=WAITING_FOR_EXPORT,
                message=f"waiting for APIResourceSchema {context.projected.schema_name} to be in the APIExport",
            )
        else:
            run[candidate.name] = context
    sharing = Counter(context.projected.local for context in run.values())
    shared = frozenset(name for name, context in run.items() if sharing[context.projected.local] > 1)
    return WorkerChoice(
        run=run,
        unsyncable=frozenset(unsyncable),
        held=held,
        orphan_scan_off=shared,
        schema_only=frozenset(schema_only),
    )


def workers_to_stop(
    running: Mapping[str, SyncContext], choice: WorkerChoice, *, existing: Collection[str]
) -> dict[str, bool]:
    """The running workers to stop (by name), each with whether its objects' finalizers must be released.

    A worker stops when its PublishedResource is not chosen any more or now projects differently;
    `existing` names the PublishedResources that still exist. The finalizers go when nothing will
    sync those objects again until the PublishedResource or its CRD is back: left on, they would
    block the objects' deletion meanwhile, and nothing syncs the objects of a schema-only one.
    """
    return {
        name: name not in existing or name in choice.unsyncable or name in choice.schema_only
        for name, context in running.items()
        if choice.run.get(name) != context
    }


def release_superseded(remote: ResourceType, running: Iterable[SyncContext]) -> bool:
    """Whether pending releases of the objects of remote resource `remote` are to be dropped.

    They are when a running worker syncs that resource again (the PublishedResource or its CRD is
    back, or another PublishedResource took over): those objects keep its finalizer.
    """
    return any(context.projected.remote == remote for context in running)
