"""Converting the peer's `spec.related` entries: what maps onto the servlet's related objects.

Called from `convert.py`, with its conventions: every field of an entry is carried over, mapped,
or named in a note with the reason. The servlet relates objects of any type (`kind` for the core
Secret and ConfigMap, else `group`/`version`/`resource` with `identityHash`, and a `projection`),
found by a path in the primary object (with an optional regex; gjson's `items.#.name` becomes
`items[*].name`, one object per item), by a template that reads only what the servlet's related
templates offer (`.Object`), or by a label selector with a rewrite, and carries the entry's spec
mutations and its `watch` (`byOwner`, `bySelector`: the same fields; a malformed one is dropped
alone); an entry it cannot express that way (a type without a version, a template reading
`.Side`, `.ClusterName` or `.ClusterPath`, a template in a selector) is dropped whole, with the
reason, since half of an entry would sync something else.

Deliberately not here: checking the converted entry (our parser does, in `convert_checked.py`).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from servlet.core.convert_mutation import convert_mutation, servlet_replacement
from servlet.core.convert_notes import Notes
from servlet.core.fields import describe
from servlet.core.filtering import parse_label_selector
from servlet.core.templates import TemplateError, parse_template

_ORIGINS = {"service": "service", "kcp": "platform"}
_CORE_KINDS = {"secrets": "Secret", "configmaps": "ConfigMap"}
_KNOWN = (
    "identifier",
    "origin",
    "group",
    "version",
    "resource",
    "kind",
    "identityHash",
    "cleanup",
    "projection",
    "object",
    "mutation",
    "watch",
)
# `{{ .Object.spec.secretName }}`: a template that only reads one field is a path.
_PLAIN_FIELD = re.compile(r"\{\{-?\s*\.Object\.([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\s*-?\}\}")
# gjson's `items.#.name`: the `name` of every item of `items`, which the servlet writes `items[*].name`.
_EACH_ITEM = re.compile(
    r"(?P<list>[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\.#\.(?P<field>[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)"
)
# gjson's modifiers, wildcards, queries and escapes, which a JSONPath reads otherwise.
_GJSON_ONLY = re.compile(r"[#|@*?\\]")


def convert_related(related: object, notes: Notes) -> list[tuple[int, dict[str, Any]]]:
    """The entries the servlet can express, each with its index in the peer's list."""
    if related is None:
        return []
    if not isinstance(related, list):
        notes.add("spec.related", f"must be a list, not {describe(related)}; dropped")
        return []
    converted = (
        (index, _entry(entry, path=f"spec.related[{index}]", notes=notes)) for index, entry in enumerate(related)
    )
    return [(index, entry) for index, entry in converted if entry is not None]


def _entry(entry: object, *, path: str, notes: Notes) -> dict[str, Any] | None:
    if not isinstance(entry, Mapping):
        notes.add(path, f"must be a map, not {describe(entry)}; dropped")
        return None
    api, why_not = _type(entry)
    projection, projection_why_not = _projection(entry.get("projection"), path=f"{path}.projection")
    why_not = why_not or projection_why_not
    found = entry.get("object")
    by_labels = isinstance(found, Mapping) and found.get("selector") is not None
    converter = _selector_object if by_labels else _object
    reference, reference_why_not = converter(found, path=f"{path}.object")
    why_not = why_not or reference_why_not
    if why_not is not None:
        notes.add(path, f"entry dropped: {why_not}")
        return None
    for key in entry:
        if key not in _KNOWN:
            notes.add(f"{path}.{key}", "unknown field; dropped")
    if entry.get("cleanup") is not True:
        notes.add(
            f"{path}.cleanup",
            "not true: the servlet deletes the copies it provably made once they are no longer needed "
            "(as the api-syncagent does with cleanup: true), where the api-syncagent would keep them",
        )
    watch = _watch(entry.get("watch"), path=f"{path}.watch", notes=notes)
    mutation = convert_mutation(
        entry.get("mutation"),
        path=f"{path}.mutation",
        notes=notes,
        status_dropped="the servlet's status steps of a related entry change the status syncStatus copies, which "
        "the api-syncagent's entries do not have; dropped",
    )
    _note_literal_backslashes(entry.get("object"), path=f"{path}.object", notes=notes)
    origin = entry.get("origin")
    converted = {
        "identifier": entry.get("identifier"),
        "origin": _ORIGINS.get(origin, origin) if isinstance(origin, str) else origin,
        **api,
        **({"projection": projection} if projection else {}),
        ("object" if by_labels or "object" in reference else "reference"): reference.get("object", reference),
    }
    if mutation is not None:
        converted["mutation"] = mutation
    if watch is not None:
        converted["watch"] = watch
    return converted


def _watch(data: object, *, path: str, notes: Notes) -> dict[str, Any] | None:
    """`watch` as the servlet reads it (the same fields); one it would refuse is dropped alone,
    with the reason, so that the entry still syncs (its changes then wake at the next sync)."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        notes.add(path, f"must be a map, not {describe(data)}; dropped")
        return None
    for key in data:
        if key not in ("byOwner", "bySelector"):
            notes.add(f"{path}.{key}", "unknown field; dropped")
    forms = [form for form in ("byOwner", "bySelector") if data.get(form) is not None]
    if len(forms) != 1:
        notes.add(path, "needs exactly one of byOwner and bySelector; dropped")
        return None
    value = data[forms[0]]
    if forms == ["byOwner"] and value != {}:
        notes.add(f"{path}.byOwner", f"takes no fields, not {describe(value)}; dropped")
        return None
    if forms == ["bySelector"]:
        _, problems = parse_label_selector(value, path=f"{path}.bySelector")
        if problems:
            notes.add(problems[0].field, f"{problems[0].message}; watch dropped")
            return None
    return {forms[0]: copy.deepcopy(value)}


def _selector_object(data: Any, *, path: str) -> tuple[dict[str, Any], str | None]:
    """`object.selector` with its `rewrite`, carried over where the servlet reads it the same way.

    Templates in the selector run in the api-syncagent's context (`.LocalObject`, `.RemoteObject`),
    which the servlet's has not; a rewrite template may read only `.Value` for the same reason."""
    unknown = sorted(str(key) for key in data if key != "selector")
    if unknown:
        return (
            {},
            f"{path}: a selector entry with {', '.join(unknown)} is not supported (a namespace is never found by labels here)",
        )
    selector = data["selector"]
    if not isinstance(selector, Mapping):
        return {}, f"{path}.selector must be a map, not {describe(selector)}"
    labels = selector.get("matchLabels") or {}
    if not isinstance(labels, Mapping) or any("{{" in str(text) for pair in labels.items() for text in pair):
        return {}, (
            f"{path}.selector.matchLabels: templates in a selector are not carried over (the api-syncagent's "
            "template context differs); write them with .Object, the origin side's primary"
        )
    converted: dict[str, Any] = {key: selector[key] for key in ("matchLabels", "matchExpressions") if key in selector}
    rewrite = selector.get("rewrite")
    regex = rewrite.get("regex") if isinstance(rewrite, Mapping) else None
    template = rewrite.get("template") if isinstance(rewrite, Mapping) else None
    if isinstance(regex, Mapping) and regex.get("pattern") and template is None:
        replacement = servlet_replacement(str(regex.get("replacement") or ""))
        converted["rewrite"] = {"regex": {"pattern": regex["pattern"], "replacement": replacement}}
    elif isinstance(template, Mapping) and regex is None and not _OBJECTS_READ.search(str(template.get("template"))):
        converted["rewrite"] = {"template": {"template": template.get("template")}}
    else:
        return {}, (
            f"{path}.selector.rewrite: only a regex with a pattern or a template reading .Value alone is carried over"
        )
    return {"selector": converted}, None


# The api-syncagent's related-template fields the servlet's templates do not have.
_OBJECTS_READ = re.compile(r"\.(?:LocalObject|RemoteObject|Object)\b")


_BACKSLASH_GROUP = re.compile(r"\\[0-9]")


def _note_literal_backslashes(data: object, *, path: str, notes: Notes) -> None:
    """`\\1` in a replacement is literal text for Go, whatever the api-syncagent's guide says: say so."""
    sources = [(path, data)]
    if isinstance(data, Mapping):
        sources.append((f"{path}.namespace", data.get("namespace")))
    for where, source in sources:
        reference = source.get("reference") if isinstance(source, Mapping) else None
        regex = reference.get("regex") if isinstance(reference, Mapping) else None
        if not isinstance(regex, Mapping) or not regex.get("pattern"):
            continue  # an empty pattern makes the replacement a constant, taken as it is
        replacement = regex.get("replacement")
        if isinstance(replacement, str) and _BACKSLASH_GROUP.search(replacement):
            notes.add(
                f"{where}.reference.regex.replacement",
                f"{describe(replacement)}: the api-syncagent expands it as Go does, where \\1 is literal text "
                "($1 is the group); carried over as that literal text. Write \\1 for the group in the servlet",
            )


def _type(entry: Mapping[str, Any]) -> tuple[dict[str, Any], str | None]:
    """The related type as the servlet writes it (`kind` for the core Secret and ConfigMap, else
    group, version, resource and identityHash), or why it cannot be written."""
    kind, resource, identity = entry.get("kind"), entry.get("resource"), entry.get("identityHash")
    group, version = entry.get("group") or "", entry.get("version") or ""
    if not resource:
        if kind in _CORE_KINDS.values() and not (group or version or identity):
            return {"kind": kind}, None
        return {}, f"names no type the servlet relates (kind {describe(kind)}; Secret or ConfigMap, else a resource)"
    if resource in _CORE_KINDS and group == "" and version in ("", "v1") and not identity and kind is None:
        return {"kind": _CORE_KINDS[str(resource)]}, None  # the shorthand, as the servlet's own examples write it
    if not version:
        shown = "/".join(str(part) for part in (group or "core", resource))
        return {}, (
            f"{shown} has no version: the api-syncagent takes each side's preferred version, the servlet needs the "
            "version (the type must be the same on both sides); add version to the entry"
        )
    api: dict[str, Any] = {**({"group": group} if group else {}), "version": version, "resource": resource}
    if kind is not None:
        api["kind"] = kind  # the api-syncagent refuses both too; our parser names the conflict
    if identity:
        api["identityHash"] = identity
    return api, None


def _projection(data: object, *, path: str) -> tuple[dict[str, Any], str | None]:
    """`projection` (group, version, resource), field by field: the same meaning in the servlet."""
    if data is None:
        return {}, None
    if not isinstance(data, Mapping):
        return {}, f"{path} must be a map, not {describe(data)}"
    unknown = sorted(str(key) for key in data if key not in ("group", "version", "resource"))
    if unknown:
        return {}, f"{path} has fields the servlet does not know: {', '.join(unknown)}"
    # An empty field keeps the origin's, in both projects: only the set ones are written.
    return {key: data[key] for key in ("group", "version", "resource") if data.get(key)}, None


def _object(data: object, *, path: str) -> tuple[dict[str, Any], str | None]:
    """`object` as the servlet's `reference` (name and namespace), or why it cannot be one."""
    if not isinstance(data, Mapping):
        return {}, f"{path} must say where the related object is, not {describe(data)}"
    unknown = sorted(str(key) for key in data if key not in ("reference", "template", "selector", "namespace"))
    if unknown:
        return {}, f"{path} has fields the servlet does not know: {', '.join(unknown)}"
    name, why_not = _value_reference(data, path=path)
    if why_not is not None:
        return {}, why_not
    reference: dict[str, Any] = {"name": name}
    namespace = data.get("namespace")
    if namespace is not None:
        if not isinstance(namespace, Mapping):
            return {}, f"{path}.namespace must be a map, not {describe(namespace)}"
        found, why_not = _value_reference(namespace, path=f"{path}.namespace")
        if why_not is not None:
            return {}, why_not
        reference["namespace"] = found
    if not any("template" in part for part in reference.values()):
        return reference, None
    # A template is written in the servlet's `object` form, which holds paths and templates alike.
    converted = _object_form(reference["name"])
    if "namespace" in reference:
        converted["namespace"] = _object_form(reference["namespace"])
    return {"object": converted}, None


def _object_form(part: dict[str, Any]) -> dict[str, Any]:
    if "template" in part:
        return {"template": {"template": part["template"]}}
    return {"reference": part}


# The actions of Go templates the servlet's have not: the parser would stop at an argument first.
_CONTROL = re.compile(r"\{\{-?\s*(if|else|range|with|define|block|template|break|continue)\b")
_READS_SIDE = re.compile(r"(?<![\w.])\.Side\b")
# The api-syncagent's context for related templates (v0.7); the servlet's has `.Object` and `.Side`.
_PEER_CONTEXT = {"Object": True, "Side": False, "ClusterName": False, "ClusterPath": False}


def _template_why_not(text: object, *, path: str) -> str | None:
    """Why a related template would not name the same object in the servlet, or None.

    Both evaluate it once per side with `.Object`, that side's primary. What the servlet's
    language refuses (`if`, a function it lacks) is left to our parser, which says why."""
    if not isinstance(text, str):
        return f"{path} must be a string, not {describe(text)}"
    side = (
        "reads .Side, which is 'kcp' in the workspace for the api-syncagent and 'platform' for the servlet, so "
        "the name would differ there"
    )
    try:
        read = parse_template(text, fields=_PEER_CONTEXT).fields()
    except TemplateError:
        control = _CONTROL.search(text)
        if control is None:
            return None  # our parser refuses it in the converted entry, with its own reason
        also = f"; it also {side}" if _READS_SIDE.search(text) else ""
        return f"{path}: '{control[1]}' is not supported in the servlet's templates (no branches){also}"
    if "Side" in read:
        return f"{path} {side}"
    cluster = sorted(f".{name}" for name in read if name.startswith("Cluster"))
    if cluster:
        return f"{path} reads {', '.join(cluster)}, which the servlet's related templates do not have (only .Object, .Side)"
    return None


def _value_reference(data: Mapping[str, Any], *, path: str) -> tuple[dict[str, Any], str | None]:
    """One of the peer's ways to find a value (reference, template, selector) as a path with a regex."""
    if data.get("selector") is not None:
        return {}, f"{path}.selector: label selectors for related objects are not supported yet"
    template = data.get("template")
    if template is not None:
        text = template.get("template") if isinstance(template, Mapping) else None
        match = _PLAIN_FIELD.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is not None:
            return {"path": match.group(1)}, None  # a template that reads one field is a path
        why_not = _template_why_not(text, path=f"{path}.template.template")
        return ({}, why_not) if why_not is not None else ({"template": text}, None)
    reference = data.get("reference")
    if not isinstance(reference, Mapping):
        return {}, f"{path} needs a reference (path and regex) to find the related object"
    value_path = reference.get("path")
    each = _EACH_ITEM.fullmatch(value_path) if isinstance(value_path, str) else None
    if each is not None and not path.endswith(".namespace"):
        value_path = f"{each['list']}[*].{each['field']}"  # one related object per item, as in the peer
    elif isinstance(value_path, str) and _GJSON_ONLY.search(value_path):
        return {}, f"{path}.reference.path {describe(value_path)}: gjson modifiers and wildcards are not supported"
    unknown = sorted(str(key) for key in reference if key not in ("path", "regex"))
    if unknown:
        return {}, f"{path}.reference has fields the servlet does not know: {', '.join(unknown)}"
    converted: dict[str, Any] = {"path": value_path}
    regex = reference.get("regex")
    if isinstance(regex, Mapping) and regex.get("pattern") and isinstance(regex.get("replacement"), str):
        # The api-syncagent expands the replacement as Go does ($1); the servlet spells groups \1.
        regex = {**regex, "replacement": servlet_replacement(regex["replacement"])}
    if regex is not None:
        converted["regex"] = regex
    return converted, None
