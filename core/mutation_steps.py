"""The values of `spec.mutation`: ordered steps, each a path and exactly one way to change its value.

Plain data, as written in the PublishedResource; `mutation_parsing.py` checks them (paths,
patterns, templates and CEL expressions compile) and `mutation.py` runs them. The compiled forms
are cached by their source text there, so these values stay hashable and comparable.

Deliberately not here: anything that reads the manifest or an object.
"""

from __future__ import annotations

from attrs import frozen

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["CelStep", "DeleteStep", "Mutation", "MutationStep", "RegexStep", "TemplateStep"]


@frozen
class DeleteStep:
    """`delete: {path}`: the value at `path` removed; a missing value is left missing."""

    path: str


@frozen
class RegexStep:
    """`regex: {path, pattern, replacement}`: every RE2 match in the value's text replaced.

    An empty pattern sets the value to `replacement` as it is."""

    path: str
    pattern: str
    replacement: str


@frozen
class TemplateStep:
    """`template: {path, template}`: the value replaced by the Go template's (trimmed) output."""

    path: str
    template: str


@frozen
class CelStep:
    """`cel: {path, expression}`: the value replaced by the CEL expression's result."""

    path: str
    expression: str


MutationStep = DeleteStep | RegexStep | TemplateStep | CelStep


@frozen
class Mutation:
    """`spec.mutation`: steps for the content going down (`spec`) and the status going up (`status`)."""

    spec: tuple[MutationStep, ...] = ()
    status: tuple[MutationStep, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.spec or self.status)
