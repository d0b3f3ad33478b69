"""The `syncmanager` controller: one `sync` worker per PublishedResource whose schema is exported.

One key. It waits until kcp publishes the export's virtual workspace URL (the endpoint slice, or
the export's status on older kcp; none exists before the first binding), points the VW
connections there, and then makes the set of running workers match the PublishedResources:

- a worker runs for each PublishedResource that can be published and whose schema is in the
  APIExport (until then `Syncing=False` says what it waits for);
- a worker whose PublishedResource is gone, became unusable or now projects differently (the CRD
  changed) is stopped, and a new one started once the new schema is exported;
- workers are keyed by PublishedResource name and a new one only starts after the old one has
  stopped, so two never run for one PublishedResource.

When the VW URL changes, every worker is stopped before the connections move, since their watches
point at the old URL.

Deliberately not here: syncing objects (the workers) and the export itself.
"""

from __future__ import annotations

from collections import Counter
from typing import Protocol

from servlet.app.controllers.apiexport import exported_schemas
from servlet.app.controllers.caches import Cache
from servlet.app.controllers.catalog import Catalog
from servlet.app.controllers.status import StatusBoard
from servlet.app.controllers.sync import SyncEnvironment, SyncWorker
from servlet.app.observability.logs import FieldLogger
from servlet.core.apiexport import virtual_workspace_url
from servlet.core.conditions import Condition, ConditionType
from servlet.core.plan import SyncContext

CONTROLLER = "syncmanager"
KEY = "syncmanager"


class VirtualWorkspaceLocation(Protocol):
    """Where the VW clients point (the daemon's connections)."""

    @property
    def virtual_workspace_url(self) -> str | None: ...

    def set_virtual_workspace_url(self, url: str) -> None: ...


class SyncManager:
    """Starts and stops `SyncWorker`s so exactly the exported PublishedResources are synced."""

    def __init__(self, *, export_name: str, catalog: Catalog, exports: Cache, slices: Cache,
                 location: VirtualWorkspaceLocation, env: SyncEnvironment, board: StatusBoard,
                 log: FieldLogger) -> None:
        self._export_name = export_name
        self._catalog = catalog
        self._exports = exports
        self._slices = slices
        self._location = location
        self._env = env
        self._board = board
        self._log = log
        self.workers: dict[str, SyncWorker] = {}

    async def reconcile(self, _: str = KEY) -> None:
        export = self._exports.get(self._exports.key(self._export_name))
        slice_ = self._slices.get(self._slices.key(self._export_name))
        url = virtual_workspace_url(endpoint_slice=slice_, export=export)
        entries = self._catalog.entries()
        if url is None:
            await self.stop()
            for entry in entries:
                self._board.report(entry.name, Condition.false(
                    ConditionType.SYNCING, reason="WaitingForVirtualWorkspace",
                    message="kcp has not published the APIExport's virtual workspace URL yet "
                    "(it does once a workspace binds the export)"))
            return
        if url.rstrip("/") != self._location.virtual_workspace_url:
            await self.stop()
            self._location.set_virtual_workspace_url(url)
            self._log.info("virtual workspace found", url=url)

        listed = exported_schemas(export)
        desired: dict[str, SyncContext] = {}
        for entry in entries:
            context = entry.context(self._catalog.servlet)
            if context is None:
                self._board.report(entry.name, Condition.false(
                    ConditionType.SYNCING, reason="NotPublished",
                    message="nothing is synced until the PublishedResource is valid"))
            elif context.projected.schema_name not in listed:
                self._board.report(entry.name, Condition.false(
                    ConditionType.SYNCING, reason="WaitingForExport",
                    message=f"waiting for APIResourceSchema {context.projected.schema_name} to be in the APIExport"))
            else:
                desired[entry.name] = context

        for name, worker in list(self.workers.items()):
            if desired.get(name) != worker.context:
                del self.workers[name]
                await worker.stop()
        sharing = Counter(context.projected.local for context in desired.values())
        for name, context in desired.items():
            if name not in self.workers:
                started = SyncWorker(name=name, context=context, env=self._env)
                self.workers[name] = started
                started.start()
            worker = self.workers[name]
            shared = sharing[context.projected.local] > 1
            if shared and worker.orphans_enabled:
                self._log.warning("orphan detection is off: another PublishedResource publishes the same local "
                                  "resource", published_resource=name, local=context.projected.local.api_version)
            worker.orphans_enabled = not shared

    async def stop(self) -> None:
        workers, self.workers = list(self.workers.values()), {}
        for worker in workers:
            await worker.stop()
