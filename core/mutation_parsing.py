"""Reading `spec.mutation` of a PublishedResource: two lists of steps, each checked before any object.

Called from `parsing.py`, with its conventions: never raise, report every problem under the
manifest's field path. A step holds exactly one of `delete`, `regex`, `template` and `cel`; its
path must be one the evaluator can write (`mutation_path.py`), its pattern compile with RE2 and
its replacement use `\\1` (`rewrite.py`, as for the other regexes), its template parse with the
mutation context, and its CEL expression compile. The compilers are the ones `mutation.py`
runs, cached by source text, so validating a step also prepares it.

Deliberately not here: what a step does to an object.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core.cel import CelError, compile_expression
from servlet.core.fields import as_mapping, describe, one_form, report_unknown
from servlet.core.model import Problem, RegexRule
from servlet.core.mutation import template_for
from servlet.core.mutation_path import PathError, parse_path
from servlet.core.mutation_steps import CelStep, DeleteStep, Mutation, MutationStep, RegexStep, TemplateStep
from servlet.core.rewrite import compile_rule
from servlet.core.templates import TemplateError

__all__ = ["parse_mutation"]

_KINDS = {
    "delete": ("path",),
    "regex": ("path", "pattern", "replacement"),
    "template": ("path", "template"),
    "cel": ("path", "expression"),
}


def parse_mutation(data: object, *, path: str, problems: list[Problem]) -> Mutation:
    """`spec.mutation` as a Mutation; every problem found is added to `problems`."""
    mutation = None if data is None else as_mapping(data, path=path, problems=problems)
    if mutation is None:
        return Mutation()
    report_unknown(mutation, path=path, known=("spec", "status"), problems=problems)
    spec = _parse_steps(mutation.get("spec"), path=f"{path}.spec", problems=problems)
    status = _parse_steps(mutation.get("status"), path=f"{path}.status", problems=problems)
    return Mutation(spec=spec, status=status)


def _parse_steps(data: object, *, path: str, problems: list[Problem]) -> tuple[MutationStep, ...]:
    if data is None:
        return ()
    if not isinstance(data, list):
        problems.append(Problem(field=path, message=f"must be a list of steps, not {describe(data)}"))
        return ()
    steps = (_parse_step(item, path=f"{path}[{index}]", problems=problems) for index, item in enumerate(data))
    return tuple(step for step in steps if step is not None)


def _parse_step(data: object, *, path: str, problems: list[Problem]) -> MutationStep | None:
    step = as_mapping(data, path=path, problems=problems)
    if step is None:
        return None
    report_unknown(step, path=path, known=_KINDS, problems=problems)
    kind = one_form(step, tuple(_KINDS), path=path, problems=problems)
    if kind is None:
        return None
    where = f"{path}.{kind}"
    body = as_mapping(step[kind], path=where, problems=problems)
    if body is None:
        return None
    before = len(problems)
    report_unknown(body, path=where, known=_KINDS[kind], problems=problems)
    texts = {
        key: _text(body, key, path=where, problems=problems, required=key in ("path", "expression"))
        for key in _KINDS[kind]
    }
    step_path = texts["path"]
    if step_path is not None:
        try:
            parse_path(step_path)
        except PathError as error:
            problems.append(Problem(field=f"{where}.path", message=str(error)))
    _check_compiles(kind, texts, path=where, problems=problems)
    if len(problems) > before:
        return None
    return _built(kind, texts)


def _text(body: Mapping[str, Any], key: str, *, path: str, problems: list[Problem], required: bool) -> str | None:
    """A string at `path.key`; empty text allowed where the peer allows it ("" sets an empty value)."""
    value = body.get(key)
    if value is None:
        if required:
            problems.append(Problem(field=f"{path}.{key}", message="is required"))
            return None
        return ""
    if not isinstance(value, str):
        problems.append(Problem(field=f"{path}.{key}", message=f"must be a string, not {describe(value)}"))
        return None
    if required and not value:
        problems.append(Problem(field=f"{path}.{key}", message="must not be empty"))
        return None
    return value


def _check_compiles(kind: str, texts: Mapping[str, str | None], *, path: str, problems: list[Problem]) -> None:
    if kind == "regex" and texts["pattern"] and texts["replacement"] is not None:
        compiled = compile_rule(RegexRule(pattern=texts["pattern"], replacement=texts["replacement"]), field=path)
        if isinstance(compiled, Problem):
            problems.append(compiled)
    elif kind == "template" and texts["template"] is not None:
        try:
            template_for(texts["template"])
        except TemplateError as error:
            problems.append(Problem(field=f"{path}.template", message=str(error)))
    elif kind == "cel" and texts["expression"] is not None:
        try:
            compile_expression(texts["expression"])
        except CelError as error:
            problems.append(Problem(field=f"{path}.expression", message=str(error)))


def _built(kind: str, texts: Mapping[str, str | None]) -> MutationStep:
    text = {key: value or "" for key, value in texts.items()}
    if kind == "delete":
        return DeleteStep(path=text["path"])
    if kind == "regex":
        return RegexStep(path=text["path"], pattern=text["pattern"], replacement=text["replacement"])
    if kind == "template":
        return TemplateStep(path=text["path"], template=text["template"])
    return CelStep(path=text["path"], expression=text["expression"])
