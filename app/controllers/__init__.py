"""The servlet's controllers (SPEC 9) and the small pieces they share.

- `schemas`: PublishedResources + CRDs -> APIResourceSchemas in the org workspace;
- `apiexport`: every published schema (and the claims related resources need) -> the APIExport;
- `syncmanager`: waits for the virtual workspace, runs one `sync` worker per PublishedResource;
- `sync`: one PublishedResource's objects, both ways (primaries, related objects, orphans);
- `status`: the one writer of PublishedResource status, fed by the others' reports;
- `catalog`, `caches`, `queues`: what they share (parsed PublishedResources, informer caches that
  remember the servlet's own writes, work queues wired to metrics and logs);
- `leading`: the set of controllers that runs only while this replica leads.

Every decision is made by `servlet.core`; a controller reads caches, asks the core, and hands the
resulting actions to an executor.
"""
