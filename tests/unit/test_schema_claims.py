"""Which PublishedResource keeps a schema that several of them project to (`schema_taken_by`)."""

from __future__ import annotations

import itertools

import pytest

from servlet.core.apiexport import SchemaClaim, schema_taken_by

WIDGETS = "v1a2b3c4d.widgets.certificates.example.corp"
GADGETS = "v5e6f7a8b.gadgets.certificates.example.corp"
MONDAY = "2025-03-03T09:00:00Z"
TUESDAY = "2025-03-04T09:00:00Z"


def test_published_resources_with_different_schemas_take_nothing_from_each_other() -> None:
    claims = [SchemaClaim("widgets", WIDGETS, MONDAY), SchemaClaim("gadgets", GADGETS, TUESDAY)]
    assert schema_taken_by(claims) == {}


def test_the_oldest_keeps_the_schema_even_when_its_name_sorts_last() -> None:
    claims = [SchemaClaim("zeta", WIDGETS, MONDAY), SchemaClaim("alpha", WIDGETS, TUESDAY)]
    assert schema_taken_by(claims) == {"alpha": "zeta"}


def test_created_in_the_same_second_the_lowest_name_keeps_the_schema() -> None:
    claims = [SchemaClaim("widgets-b", WIDGETS, MONDAY), SchemaClaim("widgets-a", WIDGETS, MONDAY)]
    assert schema_taken_by(claims) == {"widgets-b": "widgets-a"}


def test_without_timestamps_the_lowest_name_keeps_the_schema() -> None:
    claims = [SchemaClaim("widgets-b", WIDGETS), SchemaClaim("widgets-a", WIDGETS)]
    assert schema_taken_by(claims) == {"widgets-b": "widgets-a"}


def test_one_without_a_timestamp_counts_as_the_newest() -> None:
    # A manifest from a file next to one read from the cluster: the existing one keeps its schema.
    claims = [SchemaClaim("a-from-a-file", WIDGETS), SchemaClaim("z-in-the-cluster", WIDGETS, TUESDAY)]
    assert schema_taken_by(claims) == {"a-from-a-file": "z-in-the-cluster"}


def test_every_loser_names_the_one_keeper_of_its_own_schema() -> None:
    claims = [
        SchemaClaim("w1", WIDGETS, MONDAY),
        SchemaClaim("w2", WIDGETS, TUESDAY),
        SchemaClaim("w3", WIDGETS, TUESDAY),
        SchemaClaim("g2", GADGETS, TUESDAY),
        SchemaClaim("g1", GADGETS, MONDAY),
    ]
    assert schema_taken_by(claims) == {"w2": "w1", "w3": "w1", "g2": "g1"}


CLAIMS = (
    SchemaClaim("c", WIDGETS, TUESDAY),
    SchemaClaim("b", WIDGETS, MONDAY),
    SchemaClaim("a", WIDGETS, TUESDAY),
    SchemaClaim("d", WIDGETS),
    SchemaClaim("e", GADGETS),
)


@pytest.mark.parametrize(
    "order",
    list(itertools.permutations(CLAIMS)),
    ids=lambda order: "".join(claim.published_resource for claim in order),
)
def test_the_order_the_claims_arrive_in_changes_nothing(order: tuple[SchemaClaim, ...]) -> None:
    assert schema_taken_by(order) == {"a": "b", "c": "b", "d": "b"}


def test_a_generator_is_read_once_and_answered_in_full() -> None:
    claims = (claim for claim in CLAIMS)
    assert schema_taken_by(claims) == {"a": "b", "c": "b", "d": "b"}
