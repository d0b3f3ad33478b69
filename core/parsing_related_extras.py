"""Reading the fields of a `spec.related[]` entry added after the first forms: `mutation`.

Called once from `parsing_related.py`, with the parser's conventions: never raise, report
every problem under the manifest's field path.

- `mutation`: steps as in `spec.mutation` (`mutation_parsing.py`, the same checks), run on the
  origin object before it is copied (`related_mutation.py`). Status steps change the status
  that `syncStatus` copies, so without `syncStatus: true` they could never take effect: an error
  rather than a silent no-op.

Deliberately not here: the fields of the first forms (`parsing_related.py`).
"""

from __future__ import annotations

from collections.abc import Mapping

from servlet.core.model import Problem
from servlet.core.mutation_parsing import parse_mutation
from servlet.core.mutation_steps import Mutation

# The fields of a related entry read here (the entry's reader reports any other as unknown).
EXTRA_FIELDS = ("mutation",)


def parse_related_mutation(related: Mapping[str, object], *, path: str, problems: list[Problem]) -> Mutation:
    """The entry's `mutation`, empty when absent; every problem found is added to `problems`."""
    mutation = parse_mutation(related.get("mutation"), path=f"{path}.mutation", problems=problems)
    if mutation.status and related.get("syncStatus") is not True:
        problems.append(
            Problem(
                field=f"{path}.mutation.status",
                message="changes the status that syncStatus copies, so it needs syncStatus: true",
            )
        )
    return mutation
