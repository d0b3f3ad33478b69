"""What the running daemon tells its operators: logs, Prometheus metrics and health probes.

`logs.py` configures stdlib logging (JSON or console) with Secret data redacted; `metrics.py`
holds the `servlet_` metrics in a private registry; `probes.py` serves `/healthz`, `/readyz` and
`/metrics`. None of them decides anything about syncing: controllers call into them.
"""
