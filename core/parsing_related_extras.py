"""Reading what a `spec.related[]` entry gained after its first forms: `mutation`, `watch`, paths into lists.

Called once from `parsing_related.py`, with the parser's conventions: never raise, report
every problem under the manifest's field path.

- `mutation`: steps as in `spec.mutation` (`mutation_parsing.py`, the same checks), run on the
  origin object before it is copied (`related_mutation.py`). Status steps change the status
  that `syncStatus` copies, so without `syncStatus: true` they could never take effect: an error
  rather than a silent no-op.
- `watch`: exactly one of `byOwner: {}` and `bySelector` (a label selector on the primaries, as
  in `spec.filter.resource`).

Deliberately not here: the fields of the first forms (`parsing_related.py`).
"""

from __future__ import annotations

from collections.abc import Mapping

from servlet.core.fields import as_mapping, describe, one_form, report_unknown
from servlet.core.filtering import parse_label_selector
from servlet.core.model import Problem, RelatedReference, RelatedWatch, ValueReference
from servlet.core.mutation_parsing import parse_mutation
from servlet.core.mutation_steps import Mutation
from servlet.core.related_lists import LIST_MARK

# The fields of a related entry read here (the entry's reader reports any other as unknown).
EXTRA_FIELDS = ("mutation", "watch")


def parse_related_extras(
    related: Mapping[str, object], *, reference: RelatedReference | None, path: str, problems: list[Problem]
) -> tuple[Mutation, RelatedWatch | None]:
    """The entry's `mutation` (empty when absent) and `watch`, its reference checked for list paths;
    every problem found is added to `problems`."""
    if reference is not None:
        _check_list_paths(reference, path=path, problems=problems)
    mutation = parse_mutation(related.get("mutation"), path=f"{path}.mutation", problems=problems)
    if mutation.status and related.get("syncStatus") is not True:
        problems.append(
            Problem(
                field=f"{path}.mutation.status",
                message="changes the status that syncStatus copies, so it needs syncStatus: true",
            )
        )
    watch = (
        None
        if related.get("watch") is None
        else _parse_watch(related["watch"], path=f"{path}.watch", problems=problems)
    )
    return mutation, watch


def _parse_watch(data: object, *, path: str, problems: list[Problem]) -> RelatedWatch | None:
    watch = as_mapping(data, path=path, problems=problems)
    if watch is None:
        return None
    forms = ("byOwner", "bySelector")
    report_unknown(watch, path=path, known=forms, problems=problems)
    form = one_form(watch, forms, path=path, problems=problems)
    if form is None:
        return None
    if form == "byOwner":
        owner = watch["byOwner"]
        if owner != {}:
            problems.append(
                Problem(field=f"{path}.byOwner", message=f"takes no fields; write byOwner: {{}}, not {describe(owner)}")
            )
            return None
        return RelatedWatch(by_owner=True)
    selector, found = parse_label_selector(watch["bySelector"], path=f"{path}.bySelector")
    problems.extend(found)
    if selector is None or found:
        return None
    return RelatedWatch(selector=selector)  # an empty selector matches every primary, as in Kubernetes


def _check_list_paths(reference: RelatedReference, *, path: str, problems: list[Problem]) -> None:
    base = f"{path}.object" if reference.object_form else f"{path}.reference"
    name_field = f"{base}.reference.path" if reference.object_form else f"{base}.name.path"
    namespace_field = f"{base}.namespace.reference.path" if reference.object_form else f"{base}.namespace.path"
    if isinstance(reference.name, ValueReference) and reference.name.path.count(LIST_MARK) > 1:
        problems.append(
            Problem(
                field=name_field,
                message=f"{reference.name.path!r} holds {LIST_MARK} more than once; the objects of the two sides are "
                "paired by the position in one list",
            )
        )
    if isinstance(reference.namespace, ValueReference) and LIST_MARK in reference.namespace.path:
        problems.append(
            Problem(
                field=namespace_field,
                message=f"{reference.namespace.path!r} runs through a list, but names the one namespace of the "
                "related objects; only the name path may hold " + LIST_MARK,
            )
        )
