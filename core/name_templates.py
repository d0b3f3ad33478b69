"""Go-template naming patterns: their context, their checks and what they reveal about namespaces.

A pattern holding `{{` is a Go template (as in the peer; its `$` placeholders are then plain
text). The context is the peer's: `.Object` (the whole remote object), `.ClusterName` (the
logical cluster name) and `.ClusterPath` (the workspace path). The servlet reads a workspace's
path only for a PublishedResource with `spec.enableWorkspacePaths: true`, so without it
`.ClusterPath` is refused when the PublishedResource is validated (`path_problem`), rather than
failing for every object later; with it, the path is a planning input (`gather.py` reads it).

Deliberately not here: the template language (`templates.py`) and the DNS rules (`naming.py`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from servlet.core.model import RemoteKey
from servlet.core.template_functions import GO_SPACE
from servlet.core.templates import (
    Call,
    Constant,
    Field,
    Pipeline,
    Template,
    TemplateError,
    parse_template,
    render,
)

OBJECT, CLUSTER_NAME, CLUSTER_PATH = "Object", "ClusterName", "ClusterPath"
# Each root of the context, and whether it has fields of its own.
NAMING_FIELDS: Mapping[str, bool] = {OBJECT: True, CLUSTER_NAME: False, CLUSTER_PATH: False}
ENABLE_PATHS = "spec.enableWorkspacePaths"
# Functions whose output has one length whatever their input (given constant arguments).
_FIXED_LENGTH = frozenset({"sha3sum", "sha3short", "shortHash", "sha256sum"})


@functools.lru_cache(maxsize=256)
def parsed(pattern: str) -> Template | TemplateError:
    """`pattern` parsed once, or why it is refused."""
    try:
        return parse_template(pattern, fields=NAMING_FIELDS)
    except TemplateError as error:
        return error


def needs_workspace_path(template: Template) -> bool:
    return CLUSTER_PATH in template.fields()


def path_problem(template: Template, *, workspace_paths: bool) -> TemplateError | None:
    """Why the template cannot be used by a PublishedResource, given whether it reads workspace paths."""
    if workspace_paths or not needs_workspace_path(template):
        return None
    return TemplateError(
        f".{CLUSTER_PATH} is not available: the servlet reads workspace paths only with "
        f"{ENABLE_PATHS}: true (set it, or use .{CLUSTER_NAME})"
    )


def computed(
    template: Template,
    *,
    remote: RemoteKey,
    remote_object: Mapping[str, Any] | None,
    limit: int,
    cluster_path: str | None = None,
) -> str:
    """The template's output for one remote object; TemplateError when an action fails.

    `cluster_path` is the workspace path of `remote.cluster`, None when it is not known."""
    if remote_object is None:  # a caller that has only the key: the fields a key knows
        metadata = {"name": remote.name} | ({"namespace": remote.namespace} if remote.namespace else {})
        remote_object = {"metadata": metadata}
    context: dict[str, object] = {OBJECT: remote_object, CLUSTER_NAME: remote.cluster}
    if cluster_path is not None:
        context[CLUSTER_PATH] = cluster_path
    elif needs_workspace_path(template):
        raise TemplateError(f"the workspace path of workspace {remote.cluster} is not known")
    return render(template, context=context, limit=limit)


def literal_text(template: Template) -> str:
    """The text the template writes whatever the object, white space left out (it may be trimmed)."""
    texts = [segment for segment in template.segments if isinstance(segment, str)]
    return "".join(character for character in "".join(texts) if character not in GO_SPACE)


def leading_text(template: Template) -> str:
    """The constant start of every output: the text before the first action."""
    first = template.segments[0] if template.segments else ""
    return first.lstrip(GO_SPACE) if isinstance(first, str) else ""


def reads_tenant_data(template: Template) -> bool:
    """Whether the output depends on anything but the logical cluster name."""
    return bool(template.fields() - {CLUSTER_NAME})


def is_per_workspace(template: Template) -> bool:
    """Whether two workspaces can never share an output: the `namespace_safety.is_per_workspace` argument.

    Every action prints `.ClusterName` verbatim or a hash of fixed length, and at least one
    prints `.ClusterName`; the output's length then gives the cluster name's length and place.
    """
    actions = [segment for segment in template.segments if isinstance(segment, Pipeline)]
    return any(_is_cluster_name(action) for action in actions) and all(
        _is_cluster_name(action) or _is_fixed_length(action) for action in actions
    )


def _is_cluster_name(action: Pipeline) -> bool:
    return action.commands == (Field((CLUSTER_NAME,)),)


def _is_fixed_length(action: Pipeline) -> bool:
    last = action.commands[-1]
    if not isinstance(last, Call) or last.function not in _FIXED_LENGTH:
        return False
    # Without a pipe the first argument is the input; every other one (a length) must be constant.
    lengths = last.args if len(action.commands) > 1 else last.args[1:]
    return all(isinstance(arg, Constant) for arg in lengths)
