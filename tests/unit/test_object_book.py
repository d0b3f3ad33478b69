"""What a sync worker remembers per remote object is forgotten whole once the object is gone."""

from __future__ import annotations

from servlet.app.controllers.links import RelatedObjectKey
from servlet.app.controllers.object_book import ObjectBook, Report
from servlet.core.actions import Side
from servlet.core.model import LocalKey, RelatedKind, RemoteKey

KEY = RemoteKey(cluster="k7v2m9x4q1w8z3r5", namespace="default", name="w")
OTHER = RemoteKey(cluster="k7v2m9x4q1w8z3r5", namespace="default", name="v")
NAME = LocalKey(namespace="k7v2m9x4q1w8z3r5", name="w")
TLS = RelatedObjectKey(side=Side.LOCAL, resource=RelatedKind.SECRET, cluster="", namespace="team", name="tls")
CONFLICT = Report(type="conflict", target=None, identifier="", reason="the name is taken")


def book() -> ObjectBook:
    return ObjectBook(compute_name=lambda key: LocalKey(namespace=key.cluster, name=key.name), clock=lambda: 0.0)


def test_a_recreated_object_reports_its_old_conflict_again_and_waits_for_nothing() -> None:
    memory = book()
    memory.names.index(KEY)
    memory.names.wait(KEY, NAME)
    memory.set_reported(KEY, [CONFLICT])
    memory.related.set(KEY, [TLS])
    memory.related.set(OTHER, [TLS])

    assert memory.gone(KEY) == []  # the other object still reads the Secret
    assert memory.reported(KEY) == frozenset()
    assert memory.names.waiting(NAME) == []
    assert memory.names.holders(NAME) == []
    assert memory.related.primaries(TLS) == [OTHER]
    assert memory.gone(OTHER) == [TLS]


def test_a_report_that_went_away_counts_as_new_when_it_returns() -> None:
    memory = book()
    memory.set_reported(KEY, [CONFLICT])
    memory.set_reported(KEY, [])
    assert CONFLICT not in memory.reported(KEY)
