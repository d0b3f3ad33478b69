"""End-to-end tests: `servlet run` as a real subprocess against an in-process kcpsim.

Run them with `python -m pytest tests/integration/e2e` (about a minute on two cores). Each test
starts a fresh simulated world and the servlet processes it needs; a failing test shows the tail
of every servlet's JSON log. The pieces: `kcpsim.harness.world` (kcpsim, URLs, a REST client,
who-called log), `kcpsim.harness.process` (the servlet process and live `servlet plan`),
`kcpsim.waiting` (`eventually`, `consistently`), shared with the newcomer demo (`kcpsim demo`);
here, `manifests` (CRDs, PublishedResources, objects and the names SPEC promises) and `env` (the
`E2E` object tests use).
"""
