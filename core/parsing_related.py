"""Reading `spec.related` of a PublishedResource: entries, references, value paths and regex rules.

Called from `parsing.py`, with its conventions: never raise, report every problem under the
manifest's field path. A related entry is checked against the naming rules too
(`namespace_safety.related_namespace_problem`): under tenant-chosen namespaces a service-origin
object must not be read from a namespace the tenant names.
"""

from __future__ import annotations

from collections.abc import Mapping

from jsonpath_ng.parser import parse as parse_json_path

from servlet.core import related_templates, rewrite
from servlet.core.fields import as_mapping, describe, one_form, read_enum, read_string, report_unknown
from servlet.core.model import (
    Naming,
    Origin,
    Problem,
    RegexRule,
    RelatedKind,
    RelatedReference,
    RelatedResource,
    ValueReference,
)
from servlet.core.namespace_safety import related_namespace_problem
from servlet.core.naming import is_dns1123_label
from servlet.core.parsing_related_extras import EXTRA_FIELDS, parse_related_extras
from servlet.core.parsing_related_selector import parse_selector
from servlet.core.parsing_related_types import parse_api, parse_projection, projected_api
from servlet.core.templates import TemplateError

# Related identifiers end up in annotation keys of the local primary, which bound their length.
IDENTIFIER_MAX = 40


def parse_related_list(data: object, *, naming: Naming, problems: list[Problem]) -> tuple[RelatedResource, ...]:
    path = "spec.related"
    if data is None:
        return ()
    if not isinstance(data, list):
        problems.append(Problem(field=path, message=f"must be a list of related resources, not {describe(data)}"))
        return ()
    related: list[RelatedResource] = []
    first_use: dict[str, int] = {}
    for index, item in enumerate(data):
        parsed = _parse_related(item, path=f"{path}[{index}]", problems=problems)
        if parsed is not None and (unsafe := related_namespace_problem(naming, parsed, path=f"{path}[{index}]")):
            problems.append(unsafe)
        identifier = item.get("identifier") if isinstance(item, Mapping) else None
        if isinstance(identifier, str) and identifier in first_use:
            problems.append(
                Problem(
                    field=f"{path}[{index}].identifier",
                    message=f"{describe(identifier)} is already used by {path}[{first_use[identifier]}]; "
                    "identifiers must be unique",
                )
            )
        elif isinstance(identifier, str):
            first_use[identifier] = index
        if parsed is not None:
            related.append(parsed)
    return tuple(related)


def _parse_related(data: object, *, path: str, problems: list[Problem]) -> RelatedResource | None:
    related = as_mapping(data, path=path, problems=problems)
    if related is None:
        return None
    report_unknown(
        related,
        path=path,
        known=(
            "identifier",
            "origin",
            "kind",
            "group",
            "version",
            "resource",
            "identityHash",
            "projection",
            "reference",
            "object",
            "cleanup",
            "syncStatus",
            *EXTRA_FIELDS,
        ),
        problems=problems,
    )
    identifier = read_string(related, "identifier", path=path, problems=problems, required=True)
    if identifier is not None and (len(identifier) > IDENTIFIER_MAX or not is_dns1123_label(identifier)):
        problems.append(
            Problem(
                field=f"{path}.identifier",
                message=f"must be a DNS-1123 label of at most {IDENTIFIER_MAX} characters (lower-case letters, digits "
                f"and '-'), not {describe(identifier)}",
            )
        )
        identifier = None
    origin = read_enum(related, "origin", Origin, path=path, problems=problems, required=True)
    before = len(problems)
    api = parse_api(related, path=path, problems=problems)
    kind = None
    if api is None and len(problems) == before:
        kind = read_enum(related, "kind", RelatedKind, path=path, problems=problems, required=True)
    projection = parse_projection(related.get("projection"), path=f"{path}.projection", problems=problems)
    cleanup, sync_status = related.get("cleanup", True), related.get("syncStatus", False)
    for key, value in (("cleanup", cleanup), ("syncStatus", sync_status)):
        if not isinstance(value, bool):
            problems.append(Problem(field=f"{path}.{key}", message=f"must be true or false, not {describe(value)}"))
    if sync_status is True and origin is Origin.PLATFORM and related.get("kind") is not None:
        problems.append(
            Problem(
                field=f"{path}.syncStatus",
                message="with origin platform writes the copy's status to the workspace object's status subresource, "
                "which Secrets and ConfigMaps do not have",
            )
        )
    if related.get("object") is not None and related.get("reference") is not None:
        problems.append(Problem(field=f"{path}.object", message="cannot be combined with reference; set one of them"))
        reference = None
    elif related.get("object") is not None:
        reference = _parse_object(related.get("object"), path=f"{path}.object", problems=problems)
    else:
        reference = _parse_reference(related.get("reference"), path=f"{path}.reference", problems=problems)
    mutation, watch = parse_related_extras(related, reference=reference, path=path, problems=problems)
    if identifier is None or origin is None or (kind is None and api is None) or reference is None:
        return None
    return RelatedResource(
        identifier=identifier,
        origin=origin,
        kind=kind,
        reference=reference,
        api=api,
        projection=None if projection is None else projected_api(kind=kind, api=api, projection=projection),
        cleanup=cleanup is not False,
        sync_status=sync_status is True,
        mutation=mutation,
        watch=watch,
    )


def _parse_reference(data: object, *, path: str, problems: list[Problem]) -> RelatedReference | None:
    if data is None:
        problems.append(Problem(field=path, message="is required (where the related object's name is found)"))
        return None
    reference = as_mapping(data, path=path, problems=problems)
    if reference is None:
        return None
    report_unknown(reference, path=path, known=("name", "namespace"), problems=problems)
    name_data = reference.get("name")
    if name_data is None:
        problems.append(Problem(field=f"{path}.name", message="is required (a map with path and optional regex)"))
        name = None
    else:
        name = _parse_value_reference(name_data, path=f"{path}.name", problems=problems)
    namespace_data = reference.get("namespace")
    namespace = None
    if namespace_data is not None:
        namespace = _parse_value_reference(namespace_data, path=f"{path}.namespace", problems=problems)
        if namespace is not None:
            _check_namespace_source(namespace, field=f"{path}.namespace.path", problems=problems)
    if name is None or (namespace_data is not None and namespace is None):
        return None
    return RelatedReference(name=name, namespace=namespace)


_OBJECT_FORMS = ("reference", "template", "selector")


def _parse_object(data: object, *, path: str, problems: list[Problem]) -> RelatedReference | None:
    """`object`: the name by `reference` (a path) or `template`, the namespace alike (optional)."""
    found = as_mapping(data, path=path, problems=problems)
    if found is None:
        return None
    report_unknown(found, path=path, known=(*_OBJECT_FORMS, "namespace"), problems=problems)
    before = len(problems)
    if found.get("selector") is not None and not any(found.get(form) is not None for form in ("reference", "template")):
        selector = parse_selector(found["selector"], path=f"{path}.selector", problems=problems)
        name: ValueReference | str | None = ""
    else:
        selector = None
        name = _parse_object_form(found, path=path, problems=problems, namespace=False)
    namespace = None
    if found.get("namespace") is not None:
        namespace_data = as_mapping(found.get("namespace"), path=f"{path}.namespace", problems=problems)
        if namespace_data is not None:
            report_unknown(namespace_data, path=f"{path}.namespace", known=_OBJECT_FORMS, problems=problems)
            namespace = _parse_object_form(namespace_data, path=f"{path}.namespace", problems=problems, namespace=True)
    if name is None or len(problems) > before:
        return None
    return RelatedReference(name=name, namespace=namespace, object_form=True, selector=selector)


def _parse_object_form(
    data: Mapping[str, object], *, path: str, problems: list[Problem], namespace: bool
) -> ValueReference | str | None:
    form = one_form(data, _OBJECT_FORMS, path=path, problems=problems)
    if form is None:
        return None
    if form == "selector":
        # A namespace found by labels could be any namespace: the namespace rules allow none of that.
        problems.append(
            Problem(field=f"{path}.selector", message="is not supported for a namespace; use reference or template")
        )
        return None
    if form == "reference":
        reference = _parse_value_reference(data["reference"], path=f"{path}.reference", problems=problems)
        if reference is not None and namespace:
            _check_namespace_source(reference, field=f"{path}.reference.path", problems=problems)
        return reference
    holder = as_mapping(data["template"], path=f"{path}.template", problems=problems)
    if holder is None:
        return None
    report_unknown(holder, path=f"{path}.template", known=("template",), problems=problems)
    source = read_string(holder, "template", path=f"{path}.template", problems=problems, required=True)
    if source is None:
        return None
    template = related_templates.parsed(source)
    if isinstance(template, TemplateError):
        problems.append(Problem(field=f"{path}.template.template", message=f"{describe(source)}: {template}"))
        return None
    chosen = related_templates.tenant_chosen_fields(template) if namespace else []
    if chosen:
        problems.append(
            Problem(
                field=f"{path}.template.template",
                message=f"reads {', '.join(chosen)}, which the tenant writes on the local object too, so a tenant could "
                "choose any namespace of the service cluster; read only .Object.status, .Object.metadata.namespace "
                "or .Side",
            )
        )
        return None
    return source


# Fields of the local primary a tenant cannot write: the service sets `status`, the servlet picks
# the namespace. Everything else (spec, labels, annotations) is copied from the tenant's object.
_TENANT_PROOF_PATHS = ("status", "metadata.namespace")


def _check_namespace_source(reference: ValueReference, *, field: str, problems: list[Problem]) -> None:
    """A related object's namespace must not be the tenant's choice.

    It is read from the local primary too, and that copy's spec is the tenant's: a path into it
    would let a tenant have Secrets of any service-cluster namespace copied up into their
    workspace (origin service), or written into any namespace (origin platform).
    """
    constant = reference.regex is not None and reference.regex.pattern == ""
    tenant_proof = any(reference.path == root or reference.path.startswith(f"{root}.") for root in _TENANT_PROOF_PATHS)
    if not constant and not tenant_proof:
        problems.append(
            Problem(
                field=field,
                message=(
                    f"{reference.path!r} is read from the tenant's object, so a tenant could choose any namespace of the "
                    "service cluster; use a path under status (set by the service), metadata.namespace, or a constant "
                    "(regex with an empty pattern and the namespace as replacement)"
                ),
            )
        )


def _parse_value_reference(data: object, *, path: str, problems: list[Problem]) -> ValueReference | None:
    reference = as_mapping(data, path=path, problems=problems)
    if reference is None:
        return None
    report_unknown(reference, path=path, known=("path", "regex"), problems=problems)
    before = len(problems)
    json_path = read_string(reference, "path", path=path, problems=problems, required=True)
    if json_path is not None:
        _check_json_path(json_path, field=f"{path}.path", problems=problems)
    regex = None
    if reference.get("regex") is not None:
        regex = _parse_regex(reference.get("regex"), path=f"{path}.regex", problems=problems)
    if len(problems) > before or json_path is None:
        return None
    return ValueReference(path=json_path, regex=regex)


def _check_json_path(json_path: str, *, field: str, problems: list[Problem]) -> None:
    if json_path.startswith((".", "$")):
        problems.append(
            Problem(
                field=field,
                message=f"{describe(json_path)} starts with {json_path[0]!r}; write paths without a leading dot or $, "
                "as in spec.secretName",
            )
        )
        return
    try:
        parse_json_path(json_path)
    except Exception as error:  # jsonpath_ng raises several unrelated types for bad input
        problems.append(Problem(field=field, message=f"{describe(json_path)} is not a valid JSONPath: {error}"))


def _parse_regex(data: object, *, path: str, problems: list[Problem]) -> RegexRule | None:
    regex = as_mapping(data, path=path, problems=problems)
    if regex is None:
        return None
    report_unknown(regex, path=path, known=("pattern", "replacement"), problems=problems)
    before = len(problems)
    texts = {}
    for key in ("pattern", "replacement"):
        value = regex.get(key, "")
        if value is None:
            value = ""
        if not isinstance(value, str):
            problems.append(Problem(field=f"{path}.{key}", message=f"must be a string, not {describe(value)}"))
            value = ""
        texts[key] = value
    pattern, replacement = texts["pattern"], texts["replacement"]
    if len(problems) > before:
        return None
    if not pattern and not replacement:
        problems.append(Problem(field=path, message="sets neither pattern nor replacement"))
        return None
    rule = RegexRule(pattern=pattern, replacement=replacement)
    # The engine and replacement syntax the planner runs, so a rule valid here works there.
    compiled = rewrite.compile_rule(rule, field=path)
    if isinstance(compiled, Problem):
        problems.append(compiled)
        return None
    return rule
