"""The `syncmanager` controller: one `sync` worker per PublishedResource whose schema is exported.

One key. It waits until kcp publishes the export's virtual workspace URLs (the endpoint slice, or
the export's status on older kcp; none exists before the first binding; a sharded kcp lists one
per shard with a bound workspace), points the VW connections there, and then makes the set of
running workers match the PublishedResources:

- a worker runs for each PublishedResource that can be published and whose schema is in the
  APIExport (until then `Syncing=False` says what it waits for);
- a worker whose PublishedResource is gone, became unusable or now projects differently (the CRD
  changed) is stopped, and a new one started once the new schema is exported;
- workers are keyed by PublishedResource name and a new one only starts after the old one has
  stopped, so two never run for one PublishedResource;
- of PublishedResources that keep the same schema, only the one `core.apiexport.schema_taken_by`
  names gets a worker; the others report `Syncing=False` naming it;
- when a PublishedResource is deleted, or its CRD is (or changes so it can no longer be
  projected), its worker is stopped and then the servlet's finalizer is taken off every remote
  object it had (local copies are kept): with no worker left to clean up, a finalizer would block
  the user's deletion until the PublishedResource or CRD is back. Releases that fail are retried;
  those not done yet when a worker for the same resource runs again are dropped. `Syncing=False`
  says what was released. With `--buckets` each replica releases its own share, and a worker's
  cache may not hold all of it (a bucket got while it was stopping, or whose list had not ended):
  so a replica also releases from a fresh list of the resource, once when the worker stops and
  again whenever it gets more buckets, until no object of the resource carries the finalizer.

When the VW URLs change (a shard gains its first binding or loses its last), every worker is
stopped before the connections move and started again over the new URLs, since each watches every
URL. The workspaces last read from a URL that left are remembered as unreadable: their objects
are not gone, only out of sight, so the orphan scans never delete their copies for it.

The choices above are `core.worker_choice`'s and the releases `core.releases`'; this module
starts and stops the workers and sends the releases.

Deliberately not here: syncing objects (the workers) and the export itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from servlet.app.controllers.apiexport import exported_schemas
from servlet.app.controllers.caches import Cache
from servlet.app.controllers.catalog import Catalog, Entry
from servlet.app.controllers.status import StatusBoard
from servlet.app.controllers.sync import SyncWorker
from servlet.app.controllers.sync_env import SyncEnvironment
from servlet.app.observability.logs import FieldLogger
from servlet.core.actions import Release
from servlet.core.apiexport import virtual_workspace_urls
from servlet.core.conditions import Condition, ConditionType
from servlet.core.endpoint_slices import SliceChoice, slice_mismatch, slice_missing
from servlet.core.errors import Conflict, NotFound
from servlet.core.model import ResourceType
from servlet.core.ports import VirtualWorkspaceLocation, WorkspaceIdentity
from servlet.core.releases import finalizer_releases, retry_after_conflict
from servlet.core.resolution import CRD_NOT_FOUND
from servlet.core.worker_choice import (
    Candidate,
    choose_workers,
    release_superseded,
    schema_only_condition,
    syncs_objects,
    workers_to_stop,
)

CONTROLLER = "syncmanager"
KEY = "syncmanager"
_PAGE_SIZE = 500


@attrs.frozen
class EndpointSliceUse:
    """The slice `--apiexportendpointslice` chose, and the org workspace whose export it must serve."""

    choice: SliceChoice
    org: WorkspaceIdentity


@attrs.define
class _Releasing:
    """The finalizers to take off the objects of a stopped worker, and what the condition says of them."""

    releases: list[Release]
    total: int
    remote: ResourceType
    crd: str  # the local CRD's name

    @classmethod
    def of(cls, worker: SyncWorker) -> _Releasing:
        releases = worker.releases()
        local = worker.context.projected.local
        return cls(
            releases=releases,
            total=len(releases),
            remote=worker.context.projected.remote,
            crd=f"{local.plural}.{local.group}",
        )


class SyncManager:
    """Starts and stops `SyncWorker`s so exactly the exported PublishedResources are synced."""

    def __init__(
        self,
        *,
        export_name: str,
        catalog: Catalog,
        exports: Cache,
        slices: Cache,
        location: VirtualWorkspaceLocation,
        endpoint_slice: EndpointSliceUse | None = None,
        env: SyncEnvironment,
        board: StatusBoard,
        log: FieldLogger,
    ) -> None:
        self._export_name = export_name
        self._catalog = catalog
        self._exports = exports
        self._slices = slices
        self._chosen = endpoint_slice
        self._location = location
        self._env = env
        self._board = board
        self._log = log
        self.workers: dict[str, SyncWorker] = {}
        # Finalizers still to take off the objects of stopped workers nothing replaces, by name.
        self._to_release: dict[str, _Releasing] = {}
        # Those taken off the objects of PublishedResources that still exist, for their condition.
        self._released: dict[str, _Releasing] = {}
        # With `--buckets`: the remote resources released here whose objects may still carry the
        # finalizer in other buckets, and whether a sweep of this replica's buckets is due.
        self._sweeps: dict[ResourceType, bool] = {}

    def claim(self, buckets: frozenset[int]) -> None:
        """With `--buckets`: every worker queues the objects of the buckets this replica just got,
        and the next reconcile releases those of released resources (`_sweep`)."""
        for worker in self.workers.values():
            worker.claim(buckets)
        self._sweeps = dict.fromkeys(self._sweeps, True)

    def give_up(self, buckets: frozenset[int]) -> None:
        """With `--buckets`: every worker forgets the objects of the buckets this replica handed back."""
        for worker in self.workers.values():
            worker.give_up(buckets)

    async def reconcile(self, _: str = KEY) -> None:
        export = self._exports.get(self._exports.key(self._export_name))
        entries = self._catalog.entries()
        urls, unusable = self._urls(export)
        if unusable is not None or not urls:
            await self.stop()
            waiting = Condition.false(
                ConditionType.SYNCING,
                reason="WaitingForVirtualWorkspace",
                message="kcp has not published the APIExport's virtual workspace URL yet "
                "(it does once a workspace binds the export)",
            )
            if unusable is not None:
                waiting = Condition.false(ConditionType.SYNCING, reason="EndpointSliceUnusable", message=unusable)
            for entry in entries:
                if entry.published is not None and not syncs_objects(entry.published):
                    self._board.report(entry.name, schema_only_condition())
                    continue
                self._board.report(entry.name, waiting)
            return
        if urls != self._location.virtual_workspace_urls:
            await self.stop()
            unreadable = self._location.set_virtual_workspace_urls(urls)
            self._env.unreadable_workspaces.update(unreadable)
            self._log.info("virtual workspace found", urls=list(urls), unreadable_workspaces=sorted(unreadable))

        choice = choose_workers(
            (
                Candidate(name=entry.name, context=entry.context(self._catalog.servlet), created=entry.created)
                for entry in entries
            ),
            exported=exported_schemas(export),
        )
        for name, condition in choice.held.items():
            self._board.report(name, condition)
        unsyncable = {entry.name: entry for entry in entries if entry.name in choice.unsyncable}

        still_there = set(self._catalog.names())
        running = {name: worker.context for name, worker in self.workers.items()}
        for name, release in workers_to_stop(running, choice, existing=still_there).items():
            worker = self.workers.pop(name)
            # Stopped first, so no reconcile of the old worker puts a finalizer back.
            await worker.stop()
            if release:
                self._to_release[name] = _Releasing.of(worker)
                if self._env.buckets is not None:
                    self._sweeps[worker.context.projected.remote] = True
        for name, context in choice.run.items():
            if name not in self.workers:
                started = SyncWorker(name=name, context=context, env=self._env)
                self.workers[name] = started
                started.start()
            worker = self.workers[name]
            shared = name in choice.orphan_scan_off
            if shared and worker.orphans_enabled:
                self._log.warning(
                    "orphan detection is off: another PublishedResource publishes the same local resource",
                    published_resource=name,
                    local=context.projected.local.api_version,
                )
            worker.orphans_enabled = not shared
        for name in list(self._released):
            if name not in unsyncable:
                del self._released[name]
        for entry in unsyncable.values():
            self._board.report(entry.name, self._not_syncing(entry))
        # Last, so a release that fails (and fails the reconcile) holds up no other worker.
        await self._release_stopped(still_there=still_there, unsyncable=unsyncable)

    def _urls(self, export: Mapping[str, Any] | None) -> tuple[tuple[str, ...], str | None]:
        """The VW URLs, and why the slice `--apiexportendpointslice` chose cannot give them (None: it can)."""
        if self._chosen is None:
            slice_ = self._slices.get(self._slices.key(self._export_name))
            return virtual_workspace_urls(endpoint_slice=slice_, export=export), None
        choice, org = self._chosen.choice, self._chosen.org
        # The cache holds the slices of the chosen slice's workspace only: the name is unique there.
        slice_ = next((obj for obj in self._slices.objects() if obj["metadata"].get("name") == choice.name), None)
        if slice_ is None:
            return (), slice_missing(choice, org_path=org.path)
        mismatch = slice_mismatch(
            slice_, choice=choice, export_name=self._export_name, org_path=org.path, org_cluster=org.name
        )
        # Only the chosen slice: falling back to the export would watch URLs nobody asked for.
        return virtual_workspace_urls(endpoint_slice=slice_, export=None), mismatch

    def _not_syncing(self, entry: Entry) -> Condition:
        """`Syncing=False` for a PublishedResource that cannot be synced, and what became of its finalizers."""
        pending, done = self._to_release.get(entry.name), self._released.get(entry.name)
        note = ""
        if pending is not None:
            note = (
                f"; taking the servlet's finalizer off the {pending.total} object(s) that have it, "
                "so they can be deleted meanwhile"
            )
        elif done is not None:
            note = (
                f"; the servlet's finalizers were released from the {done.total} object(s) that had them, "
                "so they can be deleted meanwhile"
            )
        if entry.reason != CRD_NOT_FOUND:
            return Condition.false(
                ConditionType.SYNCING,
                reason="NotPublished",
                message=f"nothing is synced until the PublishedResource is valid{note}",
            )
        known = pending or done
        if known is not None:
            missing = f"CustomResourceDefinition {known.crd} is gone from the service cluster (or being deleted)"
        else:  # no worker ran since this process started: the catalog's words (its first problem)
            missing = entry.problems[0].message
        return Condition.false(
            ConditionType.SYNCING, reason=CRD_NOT_FOUND, message=f"{missing}: nothing is synced until it is back{note}"
        )

    async def _release_stopped(self, *, still_there: set[str], unsyncable: Mapping[str, Entry]) -> None:
        running = [worker.context for worker in self.workers.values()]
        for name, releasing in list(self._to_release.items()):
            if release_superseded(releasing.remote, running):
                del self._to_release[name]
                continue
            await self._send(releasing.releases)
            del self._to_release[name]
            if name not in still_there:
                self._log.info("released the objects of a deleted PublishedResource", published_resource=name)
                continue
            self._log.info(
                "released the objects of a PublishedResource nothing syncs now",
                published_resource=name,
                objects=releasing.total,
            )
            entry = unsyncable.get(name)
            if entry is not None:
                self._released[name] = releasing
                self._board.report(name, self._not_syncing(entry))
        for remote, due in list(self._sweeps.items()):
            if release_superseded(remote, running):
                del self._sweeps[remote]
            elif due:
                await self._sweep(remote)

    async def _send(self, releases: list[Release]) -> None:
        """Send `releases`, last first, for the workspaces this replica owns; each one sent leaves
        the list, so a failure raises and the retried reconcile sends only the rest."""
        while releases:
            cluster = releases[-1].target.cluster
            try:
                if self._env.owns(cluster):  # with --buckets, the others release their own share
                    async with self._env.writing(cluster):
                        await self._env.executor.execute(releases[-1])
            except NotFound:
                pass  # the object is gone already
            except Conflict:
                releases[-1] = retry_after_conflict(releases[-1])
                raise
            releases.pop()

    async def _sweep(self, remote: ResourceType) -> None:
        """With `--buckets`: release, from a fresh list, the objects of `remote` in this replica's
        buckets that still carry the finalizer (a cache holds only what it had listed). Page by
        page, so the list is never held whole."""
        carrying = False
        for source in self._env.sources.virtual_workspace_sources(remote):
            token = ""
            while True:
                try:
                    page = await source.collection.list_page(limit=_PAGE_SIZE, continue_token=token, metadata_only=True)
                except NotFound:
                    break  # not served at this URL (any more): nothing there to release
                releases = finalizer_releases(page.items, resource=remote)
                carrying = carrying or bool(releases)
                await self._send(releases)
                token = page.continue_token
                if not token:
                    break
        # Other replicas' objects may still carry it, and their buckets may come here later.
        if carrying:
            self._sweeps[remote] = False
        else:
            del self._sweeps[remote]

    async def stop(self) -> None:
        workers, self.workers = list(self.workers.values()), {}
        for worker in workers:
            await worker.stop()
