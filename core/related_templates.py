"""Templates that name a related object (`object.template`, `object.namespace.template`).

The template language is the naming one (`templates.py`). Its context is the peer's for related
objects: `.Object`, the primary object on the side the template is evaluated for (it runs once
per side, like a reference path), and `.Side`, that side as an origin word (`service` for the
service cluster, `platform` for the workspace).

A namespace template must not let a tenant choose a service-cluster namespace: it is evaluated
on the local primary too, whose spec, labels and annotations are the tenant's. So it may read
only `.Side`, `.Object.status` (the service writes it) and `.Object.metadata.namespace` (the
servlet chose it), as a namespace reference path may.

Deliberately not here: evaluating reference paths (`related_objects.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from servlet.core.actions import Side
from servlet.core.templates import Call, Field, Pipeline, Template, TemplateError, parse_template, render

OBJECT, SIDE = "Object", "Side"
_FIELDS: Mapping[str, bool] = {OBJECT: True, SIDE: False}
# Names and namespaces are DNS names; a longer output is refused rather than cut.
OUTPUT_LIMIT = 253
_TENANT_PROOF = (("Object", "status"), ("Object", "metadata", "namespace"))


@functools.lru_cache(maxsize=256)
def parsed(source: str) -> Template | TemplateError:
    """`source` parsed once, or why it is refused."""
    try:
        return parse_template(source, fields=_FIELDS)
    except TemplateError as error:
        return error


def tenant_chosen_fields(template: Template) -> list[str]:
    """The fields of `.Object` the template reads that a tenant writes on the local primary."""
    return sorted(
        "." + ".".join(path)
        for path in _field_paths(template.segments)
        if path[0] == OBJECT and not any(path[: len(root)] == root for root in _TENANT_PROOF)
    )


def reads_namespace(source: str) -> bool:
    """Whether the template reads `.Object.metadata.namespace` (the primary's namespace)."""
    template = parsed(source)
    return not isinstance(template, TemplateError) and (OBJECT, "metadata", "namespace") in _field_paths(
        template.segments
    )


def rendered(source: str, *, primary: Mapping[str, Any], side: Side) -> str | TemplateError:
    """The template's output on one side; TemplateError when it cannot be evaluated there."""
    template = parsed(source)
    if isinstance(template, TemplateError):
        return template
    origin_word = "service" if side is Side.LOCAL else "platform"
    try:
        return render(template, context={OBJECT: primary, SIDE: origin_word}, limit=OUTPUT_LIMIT)
    except TemplateError as error:
        return error


def _field_paths(nodes: tuple[object, ...]) -> list[tuple[str, ...]]:
    paths: list[tuple[str, ...]] = []
    for node in nodes:
        if isinstance(node, Field):
            paths.append(node.path)
        elif isinstance(node, Pipeline):
            paths.extend(_field_paths(node.commands))
        elif isinstance(node, Call):
            paths.extend(_field_paths(node.args))
    return paths
