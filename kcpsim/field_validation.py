"""Server-side field validation (`?fieldValidation=Ignore|Warn|Strict`), as kube-apiserver does it.

A create, update or patch body is checked for fields its kind's schema does not declare (the
schemas published under `/openapi`). With `Strict` the request fails with 400 BadRequest,
`strict decoding error: unknown field "spec.foo"` (a create or update says first that the kind
`cannot be handled`); with `Warn`, the default, it goes on and each field is named in a
`Warning: 299 - "unknown field \"spec.foo\""` header; `Ignore` says nothing. Whatever the
directive, a built-in kind drops unknown fields, as decoding into its Go type does (an object
without declared properties takes anything), and a custom resource loses them to its structural
schema's pruning (validation.py). JSON patches and kinds without a schema are not checked, and
duplicate fields are not detected (the body is decoded before this runs).
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from kcpsim import errors
from kcpsim.openapi_builtin import BUILTIN_SCHEMAS, META
from kcpsim.openapi_docs import definition_name
from kcpsim.resources import ResourceDef
from kcpsim.strategic import without_directives

_DIRECTIVES = ("Ignore", "Warn", "Strict")
_STRING = {"type": "string"}


def _resolve(schema: Any) -> Any:
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        schema = BUILTIN_SCHEMAS.get(schema["$ref"], {})
    return schema


Path = tuple[str | int, ...]


def unknown_fields(value: Any, schema: Any, *, path: Path = (), free_form: bool) -> list[Path]:
    """The paths of fields in `value` that `schema` does not declare.

    `free_form`: an object schema without properties takes any field (built-ins, as Go's decoder
    reads a raw field); otherwise it takes none, as structural pruning drops them.
    """
    if isinstance(schema, dict) and "$ref" in schema:
        free_form = True  # a built-in type (a custom resource's metadata too) decodes as Go does
        schema = _resolve(schema)
    if not isinstance(schema, dict):
        return []
    if isinstance(value, list):
        items = schema.get("items")
        return [
            found
            for index, item in enumerate(value)
            for found in unknown_fields(item, items, path=(*path, index), free_form=free_form)
        ]
    if not isinstance(value, dict):
        return []
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    keeps_all = schema.get("x-kubernetes-preserve-unknown-fields") is True or extra is True
    if properties is None and extra is None and (free_form or keeps_all or schema.get("type") != "object"):
        return []
    out: list[Path] = []
    for key, item in value.items():
        if properties and key in properties:
            out += unknown_fields(item, properties[key], path=(*path, key), free_form=free_form)
        elif isinstance(extra, dict):
            out += unknown_fields(item, extra, path=(*path, key), free_form=free_form)
        elif not keeps_all:
            out.append((*path, key))
    return out


def field_path(path: Path) -> str:
    """`spec.items[0].foo`, as the apiserver names a field."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text


def _drop(value: Any, path: Path) -> None:
    for step in path[:-1]:
        value = value[step]
    del value[path[-1]]


def _schema(rdef: ResourceDef, version: str) -> tuple[Any, bool] | None:
    if rdef.builtin:
        name = definition_name(rdef, version)
        return (BUILTIN_SCHEMAS[name], True) if name else None
    schema = rdef.schema_for(version)
    if schema is None:
        return None
    # The object's envelope, as openapi_docs publishes it, without copying the schema on every write.
    envelope = {"apiVersion": _STRING, "kind": _STRING, "metadata": {"$ref": META + "ObjectMeta"}}
    return {**schema, "type": "object", "properties": {**(schema.get("properties") or {}), **envelope}}, False


def check(request: web.Request, rdef: ResourceDef, version: str, body: Any, *, patch_type: str = "") -> list[str]:
    """The warnings for a write's body; raises 400 for unknown fields under `Strict`."""
    directive = request.query.get("fieldValidation", "Warn") or "Warn"
    if directive not in _DIRECTIVES:
        raise errors.bad_request(f"fieldValidation must be one of Ignore, Warn or Strict, not {directive!r}")
    found = _schema(rdef, version)
    if found is None or patch_type == "json" or not isinstance(body, dict):
        return []
    schema, free_form = found
    checked = without_directives(body) if patch_type == "strategic" else body
    paths = unknown_fields(checked, schema, free_form=free_form)
    fields = [field_path(path) for path in paths]
    if fields and directive == "Strict":
        listed = ", ".join(f'unknown field "{field}"' for field in fields)
        if patch_type:
            raise errors.bad_request(f"strict decoding error: {listed}")
        kind = rdef.kind
        raise errors.bad_request(
            f'{kind} in version "{version}" cannot be handled as a {kind}: strict decoding error: {listed}'
        )
    if rdef.builtin:
        for path in reversed(paths):
            _drop(body, path)
    return [f'unknown field "{field}"' for field in fields] if directive == "Warn" else []


def with_warnings(response: web.Response, warnings: list[str]) -> web.Response:
    for text in warnings:
        escaped = text.replace("\\", "\\\\").replace('"', '\\"')
        response.headers.add("Warning", f'299 - "{escaped}"')
    return response
