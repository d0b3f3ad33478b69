"""Benchmarks of the servlet: planning speed, API economy, sync throughput, latency and growth.

A runnable harness (`python -m bench`), not timed unit tests: it prints a table and writes the
figures as JSON. It checks no target itself; docs/performance.md compares the figures with them.
"""
