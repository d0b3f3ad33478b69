"""The servlet's metrics as Prometheus scrapes them: names, labels and values in the text format."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from prometheus_client.parser import text_string_to_metric_families

from servlet.app.observability.metrics import (
    CONTENT_TYPE,
    METRIC_NAMES,
    ApiTarget,
    Metrics,
    ReconcileResult,
)


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of the rendered exposition, keyed by name and sorted labels."""
    text = metrics.render().decode("utf-8")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _exposed_names(metrics: Metrics) -> set[str]:
    """Family names from the `# TYPE` lines, without the `_created` companions of counters."""
    text = metrics.render().decode("utf-8")
    names = {line.split()[2] for line in text.splitlines() if line.startswith("# TYPE ")}
    return {name.removesuffix("_total") for name in names if not name.endswith("_created")}


def test_every_metric_name_has_the_servlet_prefix_and_is_unique() -> None:
    assert all(name.startswith("servlet_") for name in METRIC_NAMES)
    assert len(set(METRIC_NAMES)) == len(METRIC_NAMES)


def test_every_listed_metric_is_exposed_and_nothing_else() -> None:
    metrics = Metrics(version="1.2.3")
    metrics.count_sync_conflict(published_resource="certs")
    # prometheus_client versions differ in whether `# TYPE` names a counter with `_total`.
    assert _exposed_names(metrics) == {name.removesuffix("_total") for name in METRIC_NAMES}


def test_build_info_carries_the_version_and_leader_starts_at_zero() -> None:
    samples = _samples(Metrics(version="1.2.3"))
    assert samples[("servlet_build_info", (("version", "1.2.3"),))] == 1
    assert samples[("servlet_leader", ())] == 0


@pytest.mark.parametrize("is_leader,expected", [(True, 1), (False, 0)])
def test_leader_status(is_leader: bool, expected: int) -> None:
    metrics = Metrics(version="dev")
    metrics.set_leader(True)
    metrics.set_leader(is_leader)
    assert _samples(metrics)[("servlet_leader", ())] == expected


def test_reconciles_are_counted_by_controller_and_result_and_timed() -> None:
    metrics = Metrics(version="dev")
    metrics.observe_reconcile(controller="sync", result=ReconcileResult.SUCCESS, seconds=0.02)
    metrics.observe_reconcile(controller="sync", result=ReconcileResult.SUCCESS, seconds=3.0)
    metrics.observe_reconcile(controller="apiexport", result=ReconcileResult.ERROR, seconds=0.2)
    samples = _samples(metrics)
    assert samples[("servlet_reconciles_total", (("controller", "sync"), ("result", "success")))] == 2
    assert samples[("servlet_reconciles_total", (("controller", "apiexport"), ("result", "error")))] == 1
    assert samples[("servlet_reconcile_duration_seconds_count", (("controller", "sync"),))] == 2
    assert samples[("servlet_reconcile_duration_seconds_sum", (("controller", "sync"),))] == pytest.approx(3.02)
    assert samples[("servlet_reconcile_duration_seconds_bucket", (("controller", "sync"), ("le", "0.025")))] == 1
    assert samples[("servlet_reconcile_duration_seconds_bucket", (("controller", "sync"), ("le", "+Inf")))] == 2


@pytest.mark.parametrize(
    "target,verb,code,labels",
    [
        (ApiTarget.SERVICE, "get", 200, (("code", "200"), ("target", "service"), ("verb", "get"))),
        (ApiTarget.ORG, "PATCH", 409, (("code", "409"), ("target", "org"), ("verb", "patch"))),
        (ApiTarget.VIRTUAL_WORKSPACE, "watch", None, (("code", "error"), ("target", "vw"), ("verb", "watch"))),
    ],
)
def test_api_requests_by_target_verb_and_code(
    target: ApiTarget,
    verb: str,
    code: int | None,
    labels: tuple[tuple[str, str], ...],
) -> None:
    metrics = Metrics(version="dev")
    metrics.count_api_request(target=target, verb=verb, code=code)
    metrics.count_api_request(target=target, verb=verb, code=code)
    assert _samples(metrics)[("servlet_api_requests_total", labels)] == 2


Record = Callable[[Metrics], None]


@pytest.mark.parametrize(
    "record,name,labels,value",
    [
        (
            lambda m: m.set_queue_depth(controller="sync", depth=7),
            "servlet_workqueue_depth",
            (("controller", "sync"),),
            7,
        ),
        (
            lambda m: m.count_watch_restart(resource="secrets"),
            "servlet_watch_restarts_total",
            (("resource", "secrets"),),
            1,
        ),
        (
            lambda m: m.count_watch_relist(resource="secrets"),
            "servlet_watch_relists_total",
            (("resource", "secrets"),),
            1,
        ),
        (
            lambda m: m.set_managed_objects(published_resource="certs", count=12),
            "servlet_managed_objects",
            (("published_resource", "certs"),),
            12,
        ),
        (
            lambda m: m.count_sync_conflict(published_resource="certs"),
            "servlet_sync_conflicts_total",
            (("published_resource", "certs"),),
            1,
        ),
        (
            lambda m: m.set_orphaned_objects(published_resource="certs", count=3),
            "servlet_orphaned_objects",
            (("published_resource", "certs"),),
            3,
        ),
        (
            lambda m: m.count_orphan_deleted(published_resource="certs"),
            "servlet_orphans_deleted_total",
            (("published_resource", "certs"),),
            1,
        ),
        (
            lambda m: m.count_error(controller="sync", kind="conflict"),
            "servlet_errors_total",
            (("controller", "sync"), ("kind", "conflict")),
            1,
        ),
    ],
)
def test_each_recording_method_shows_in_the_exposition(
    record: Record,
    name: str,
    labels: tuple[tuple[str, str], ...],
    value: float,
) -> None:
    metrics = Metrics(version="dev")
    record(metrics)
    assert _samples(metrics)[(name, labels)] == value


def test_two_instances_do_not_share_numbers() -> None:
    first, second = Metrics(version="a"), Metrics(version="b")
    first.count_sync_conflict(published_resource="certs")
    key = ("servlet_sync_conflicts_total", (("published_resource", "certs"),))
    assert _samples(first)[key] == 1
    assert key not in _samples(second)


def test_a_deleted_published_resource_leaves_no_series_behind() -> None:
    metrics = Metrics(version="dev")
    metrics.set_managed_objects(published_resource="certs", count=4)
    metrics.set_managed_objects(published_resource="dbs", count=1)
    metrics.count_sync_conflict(published_resource="certs")
    metrics.forget_published_resource("certs")
    metrics.forget_published_resource("never-seen")
    labels = {dict(labels).get("published_resource") for _, labels in _samples(metrics)}
    assert "certs" not in labels
    assert "dbs" in labels


def test_content_type_is_the_classic_text_format() -> None:
    assert CONTENT_TYPE.startswith("text/plain; version=0.0.4")
