"""Mutation steps run on one object: `(steps, object, other)` to the changed object, or a Problem.

The evaluator for `spec.mutation` of a PublishedResource, and for any other object a caller
wants to change the same way: it knows nothing of sides or sync, only a list of steps, the
object they change (`self` in CEL, `.LocalObject` in templates) and the object on the other side
of the sync (`other`, `.RemoteObject`; None when there is none). `mutation_sync.py` says which
objects those are for a primary object.

Steps run in order, each on the result of the one before. The first step that fails ends the
run with a Problem naming its field (`spec.mutation.spec[2].cel.expression`), and no partial
result escapes: the caller writes the whole mutated object or nothing. The input objects are
never changed (each step copies only the maps and lists on its path), and a run depends on
nothing but its arguments, so equal inputs give equal outputs.

What each step reads at its path, as in the peer: CEL's `value` is the JSON value there (null
when missing); a regex works on the value as text (a missing value or null is "", a number or
a boolean its JSON spelling, a map or a list its compact JSON); a template reads `.Value`, which
prints as that text and has the fields `String`, `Int`, `Bool`, `Exists` and `Raw`.

Deliberately not here: checking the steps' syntax (`mutation_parsing.py`, which calls the same
compilers, so a step that passed validation is the step that runs).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from servlet.core import jsontext
from servlet.core.cel import CelError, compile_expression, evaluate
from servlet.core.model import Problem, RegexRule
from servlet.core.mutation_path import MISSING, PathError, delete_value, parse_path, read_value, set_value
from servlet.core.mutation_steps import CelStep, DeleteStep, MutationStep, RegexStep, TemplateStep
from servlet.core.rewrite import compile_rule, replace_all
from servlet.core.template_functions import Printed
from servlet.core.templates import Template, TemplateError, parse_template, render

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["apply_mutation", "step_kind"]

VALUE, LOCAL_OBJECT, REMOTE_OBJECT = "Value", "LocalObject", "RemoteObject"
# The roots of a mutation template's context (the peer's names), each with fields of its own.
TEMPLATE_FIELDS: Mapping[str, bool] = {VALUE: True, LOCAL_OBJECT: True, REMOTE_OBJECT: True}
# A template's output replaces one value; far above any field a CRD holds, a bound on work.
TEMPLATE_OUTPUT_MAX = 256 * 1024


def step_kind(step: MutationStep) -> str:
    """The step's key in the manifest: `delete`, `regex`, `template` or `cel`."""
    return {DeleteStep: "delete", RegexStep: "regex", TemplateStep: "template", CelStep: "cel"}[type(step)]


@functools.lru_cache(maxsize=256)
def template_for(source: str) -> Template:
    """A mutation template parsed once; TemplateError when it is refused."""
    return parse_template(source, fields=TEMPLATE_FIELDS)


def apply_mutation(
    steps: tuple[MutationStep, ...],
    obj: Mapping[str, Any],
    *,
    other: Mapping[str, Any] | None,
    field: str,
) -> Mapping[str, Any] | Problem:
    """`obj` changed by every step in order, or a Problem under `field[index]` for the first that fails.

    `field` is where the steps are written (`spec.mutation.spec`). With no steps, `obj` itself.
    """
    for index, step in enumerate(steps):
        kind = step_kind(step)
        where = f"{field}[{index}].{kind}"
        try:
            obj = _applied(step, obj, other=other, path=parse_path(step.path))
        except PathError as error:
            return Problem(field=f"{where}.path", message=str(error))
        except _StepFailed as failed:
            return Problem(field=f"{where}.{failed.key}", message=failed.message)
    return obj


class _StepFailed(Exception):
    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key, self.message = key, message


def _applied(
    step: MutationStep, obj: Mapping[str, Any], *, other: Mapping[str, Any] | None, path: tuple[str, ...]
) -> Any:
    if isinstance(step, DeleteStep):
        return delete_value(obj, path)
    current = read_value(obj, path)
    if isinstance(step, RegexStep):
        return set_value(obj, path, _regex_result(step, current))
    if isinstance(step, TemplateStep):
        try:
            context = {
                VALUE: _value_view(current),
                LOCAL_OBJECT: obj,
                REMOTE_OBJECT: MISSING if other is None else other,
            }
            output = render(template_for(step.template), context=context, limit=TEMPLATE_OUTPUT_MAX)
        except TemplateError as error:
            raise _StepFailed("template", str(error)) from None
        return set_value(obj, path, output)
    try:
        result = evaluate(
            compile_expression(step.expression), value=None if current is MISSING else current, self=obj, other=other
        )
    except CelError as error:
        raise _StepFailed("expression", str(error)) from None
    return set_value(obj, path, result)


def _regex_result(step: RegexStep, current: Any) -> str:
    if not step.pattern:
        return step.replacement  # the peer's way to set a fixed text
    compiled = compile_rule(RegexRule(pattern=step.pattern, replacement=step.replacement), field="")
    if isinstance(compiled, Problem):
        raise _StepFailed(compiled.field.lstrip("."), compiled.message)
    try:
        return replace_all(compiled, as_text(current))
    except UnicodeError:
        raise _StepFailed("path", "the value found is not valid Unicode text") from None


def as_text(value: Any) -> str:
    """The value as a regex or a template sees it: text itself, "" for none, else its compact JSON."""
    if value is MISSING or value is None:
        return ""
    if isinstance(value, str):
        return value
    return jsontext.sorted_text(value)


def _value_view(value: Any) -> Printed:
    text = as_text(value)
    exists = value is not MISSING
    raw = (
        "" if not exists else text if value is not None and not isinstance(value, str) else jsontext.sorted_text(value)
    )
    return Printed(
        {
            "String": text,
            "Int": _as_int(value),
            "Bool": value is True or (isinstance(value, str) and value.lower() in ("true", "1", "t")),
            "Exists": exists,
            "Raw": raw,
        },
        text=text,
    )


def _as_int(value: Any) -> int:
    # As the peer's reader: booleans 1 and 0, numbers truncated, numeric text parsed, else 0.
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and abs(value) < 2**63:
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return 0
    return 0
