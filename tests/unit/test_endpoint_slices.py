"""Which slice `--apiexportendpointslice` names, and whether it serves the servlet's export."""

from __future__ import annotations

import pytest

from servlet.core.endpoint_slices import SliceChoice, parse_slice_choice, slice_mismatch
from servlet.core.model import Problem

ORG_PATH, ORG_CLUSTER, EXPORT = "root:myorg", "abc123xyz", "certificates.example.corp"


def _slice(path: str, name: str = EXPORT) -> dict[str, object]:
    return {"spec": {"export": {"path": path, "name": name}} if path or name else {}}


@pytest.mark.parametrize(
    ("choice", "endpoint_slice"),
    [
        (SliceChoice(name="s"), _slice("")),  # no path: the slice's own workspace, the org's here
        (SliceChoice(name="s"), _slice(ORG_PATH)),
        (SliceChoice(name="s", workspace="root:shared"), _slice(ORG_PATH)),
        (SliceChoice(name="s", workspace="root:shared"), _slice(ORG_CLUSTER)),  # a logical cluster name
    ],
)
def test_a_slice_pointing_at_the_export_serves(choice: SliceChoice, endpoint_slice: dict[str, object]) -> None:
    assert (
        slice_mismatch(endpoint_slice, choice=choice, export_name=EXPORT, org_path=ORG_PATH, org_cluster=ORG_CLUSTER)
        is None
    )


@pytest.mark.parametrize(
    ("choice", "endpoint_slice", "named"),
    [
        (SliceChoice(name="s"), _slice(ORG_PATH, "other.example.corp"), "root:myorg:other.example.corp"),
        (SliceChoice(name="s"), _slice("root:elsewhere"), f"root:elsewhere:{EXPORT}"),
        # No path in another workspace: an export there, not the org's.
        (SliceChoice(name="s", workspace="root:shared"), _slice(""), f"its own workspace:{EXPORT}"),
        (SliceChoice(name="s"), {"spec": {}}, "its own workspace:(none)"),
    ],
)
def test_a_slice_for_another_export_is_named_with_the_flag(
    choice: SliceChoice, endpoint_slice: dict[str, object], named: str
) -> None:
    message = slice_mismatch(
        endpoint_slice, choice=choice, export_name=EXPORT, org_path=ORG_PATH, org_cluster=ORG_CLUSTER
    )
    assert message is not None
    assert message.startswith("--apiexportendpointslice: ") and f"for the APIExport {named}," in message


@pytest.mark.parametrize("text", ["", "Certs", "root:My_Org:certs", ":certs", "root::certs"])
def test_a_flag_value_that_names_no_slice_is_a_problem_of_the_flag(text: str) -> None:
    problem = parse_slice_choice(text)
    assert isinstance(problem, Problem) and problem.field == "--apiexportendpointslice"
