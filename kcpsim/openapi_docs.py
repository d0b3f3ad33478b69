"""OpenAPI documents of what a cluster serves, as kube-apiserver and kcp publish them.

`/openapi/v3` lists one document per group-version (`api/v1`, `apis/<group>/<version>`); each holds
the schemas of its kinds under Kubernetes' definition names (`components.schemas`) and a path per
resource, its `/status` where that subresource exists, every operation tagged with
`x-kubernetes-action` and `x-kubernetes-group-version-kind` and listing the query parameters the
server honours (kubectl looks for `fieldValidation` on PATCH to trust the server with validation).
Built-in kinds come from openapi_builtin.py; custom resources (CRDs, kcp's APIResourceSchemas)
from their structural schema with `apiVersion`, `kind` and `metadata` put in as
apiextensions-apiserver does; a kind without a schema (kcp's own types) keeps unknown fields.
`/openapi/v2` is the same set of kinds in one Swagger 2.0 document.
"""

from __future__ import annotations

import copy
import hashlib
from collections.abc import Callable, Iterable
from typing import Any

import msgspec

from kcpsim.openapi_builtin import BUILTIN_SCHEMAS, KIND_DEFINITIONS, LIST_SCHEMA, META, ref
from kcpsim.resources import ResourceDef

VerbsFor = Callable[[ResourceDef], list[str]]
_ALL_VERBS = ["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"]
_EXTRA: dict[str, Any] = {
    META + "Patch": {
        "type": "object",
        "description": "The body of a patch request, in the format its content type names.",
    },
    META + "Status": {"type": "object", "description": "The result of an operation that returns no object."},
    META + "DeleteOptions": {
        "type": "object",
        "description": "Options of a delete request.",
        "properties": {
            "dryRun": {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "atomic"},
            "gracePeriodSeconds": {"type": "integer", "format": "int64"},
            "propagationPolicy": {"type": "string"},
        },
    },
}
_WRITE_PARAMS = {
    "dryRun": "When present, the change is not persisted; All is the only valid value.",
    "fieldManager": "The name of the actor making the change.",
    "fieldValidation": "Ignore, Warn or Strict: what to do about unknown or duplicate fields.",
}
_LIST_PARAMS = {
    "allowWatchBookmarks": "Ask for BOOKMARK watch events.",
    "continue": "The token of the next page.",
    "fieldSelector": "Restrict the list by fields.",
    "labelSelector": "Restrict the list by labels.",
    "limit": "The most items to return.",
    "resourceVersion": "Which version of the list to serve.",
    "resourceVersionMatch": "How resourceVersion applies.",
    "sendInitialEvents": "Start a watch with the current objects.",
    "timeoutSeconds": "How long a list or watch may take.",
    "watch": "Watch for changes instead of listing.",
}
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)


def _reversed_group(group: str) -> str:
    return ".".join(reversed(group.split("."))) if group else "io.k8s.api.core"


def definition_name(rdef: ResourceDef, version: str) -> str:
    """Kubernetes' definition name of a kind: `io.k8s.api.core.v1.ConfigMap`, `io.example.v1.Widget`."""
    if rdef.builtin:
        return KIND_DEFINITIONS.get((rdef.group, rdef.kind), "")
    return f"{_reversed_group(rdef.group)}.{version}.{rdef.kind}"


def _gvk(rdef: ResourceDef, version: str, kind: str) -> dict[str, str]:
    return {"group": rdef.group, "kind": kind, "version": version}


def custom_schema(rdef: ResourceDef, version: str) -> dict[str, Any]:
    """A custom resource's structural schema with the object's envelope, as apiextensions publishes it."""
    schema = copy.deepcopy(rdef.schema_for(version)) or {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    schema["type"] = "object"
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string", "description": "The versioned schema of this representation."}
    properties["kind"] = {"type": "string", "description": "The REST resource this object represents."}
    properties["metadata"] = ref(META + "ObjectMeta", "Standard object's metadata.")
    return schema


def _references(schema: Any, found: set[str]) -> None:
    if isinstance(schema, dict):
        target = schema.get("$ref")
        if isinstance(target, str) and target not in found:
            found.add(target)
            _references(BUILTIN_SCHEMAS.get(target) or _EXTRA.get(target), found)
        for value in schema.values():
            _references(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _references(value, found)


def schemas(rdefs: Iterable[ResourceDef], version: str) -> dict[str, Any]:
    """Every definition a group-version's kinds need, in the neutral `{"$ref": NAME}` form."""
    out: dict[str, Any] = {}
    for rdef in rdefs:
        name = definition_name(rdef, version)
        if not name:
            continue
        kind_schema = copy.deepcopy(BUILTIN_SCHEMAS[name]) if rdef.builtin else custom_schema(rdef, version)
        out[name] = {**kind_schema, "x-kubernetes-group-version-kind": [_gvk(rdef, version, rdef.kind)]}
        out[name + "List"] = {
            **LIST_SCHEMA(name, f"A list of {rdef.kind} objects."),
            "x-kubernetes-group-version-kind": [_gvk(rdef, version, rdef.list_kind)],
        }
    needed: set[str] = {META + "Patch", META + "Status", META + "DeleteOptions"}
    _references(out, needed)
    for name in sorted(needed - out.keys()):
        out[name] = copy.deepcopy(BUILTIN_SCHEMAS.get(name) or _EXTRA[name])
    return dict(sorted(out.items()))


def _operation(
    rdef: ResourceDef, version: str, action: str, verb: str, *, namespaced: bool, v3: bool
) -> dict[str, Any]:
    name = definition_name(rdef, version)
    kind = rdef.list_kind if action == "list" else rdef.kind
    returned = name + "List" if action == "list" else META + "Status" if action == "deletecollection" else name
    group_part = "".join(part.capitalize() for part in (rdef.group or "core").split(".")[:1])
    scope = "Namespaced" if namespaced else ""
    params: dict[str, str] = {}
    if verb in ("post", "put", "patch"):
        params |= _WRITE_PARAMS
    if verb == "patch":
        params["force"] = "Take fields other managers own (apply patches only)."
    if action in ("list", "deletecollection"):
        params |= _LIST_PARAMS
    operation: dict[str, Any] = {
        "tags": [f"{rdef.group or 'core'}_{version}"],
        "description": f"{action} {rdef.kind}",
        "operationId": f"{action}{group_part}{version.capitalize()}{scope}{kind}",
        "parameters": [_query_param(param, text, v3=v3) for param, text in params.items()],
        "responses": _responses(returned, created=verb == "post", v3=v3),
        "x-kubernetes-action": "post" if verb == "post" else action,
        "x-kubernetes-group-version-kind": _gvk(rdef, version, rdef.kind),
    }
    if verb in ("post", "put", "patch", "delete"):
        body_type = {"patch": META + "Patch", "delete": META + "DeleteOptions"}.get(verb, name)
        media = [t for t in _PATCH_TYPES if rdef.builtin or "strategic" not in t] if verb == "patch" else ["*/*"]
        if v3:
            operation["requestBody"] = {
                "content": {m: {"schema": {"$ref": body_type}} for m in media},
                "required": verb != "delete",
            }
        else:
            operation["consumes"] = media
            operation["parameters"].append(
                {"name": "body", "in": "body", "required": verb != "delete", "schema": {"$ref": body_type}}
            )
    return operation


def _query_param(name: str, description: str, *, v3: bool) -> dict[str, Any]:
    kind = {"limit": "integer", "timeoutSeconds": "integer", "force": "boolean", "watch": "boolean"}.get(name, "string")
    kind = "boolean" if name in ("allowWatchBookmarks", "sendInitialEvents") else kind
    if v3:
        return {"name": name, "in": "query", "description": description, "schema": {"type": kind, "uniqueItems": True}}
    return {"name": name, "in": "query", "description": description, "type": kind, "uniqueItems": True}


def _responses(returned: str, *, created: bool, v3: bool) -> dict[str, Any]:
    codes = {"200": "OK", "201": "Created", "202": "Accepted"} if created else {"200": "OK"}
    if v3:
        body = {"application/json": {"schema": {"$ref": returned}}, "application/yaml": {"schema": {"$ref": returned}}}
        answers: dict[str, Any] = {code: {"description": text, "content": body} for code, text in codes.items()}
    else:
        answers = {code: {"description": text, "schema": {"$ref": returned}} for code, text in codes.items()}
    answers["401"] = {"description": "Unauthorized"}
    return answers


def _path_param(name: str, *, v3: bool) -> dict[str, Any]:
    description = {"name": "name of the object", "namespace": "object name and auth scope, such as for teams"}[name]
    if v3:
        return {
            "name": name,
            "in": "path",
            "description": description,
            "required": True,
            "schema": {"type": "string", "uniqueItems": True},
        }
    return {
        "name": name,
        "in": "path",
        "description": description,
        "required": True,
        "type": "string",
        "uniqueItems": True,
    }


_ONE = {"get": ("get", "get"), "put": ("put", "update"), "patch": ("patch", "patch"), "delete": ("delete", "delete")}
_COLLECTION = {"get": ("list", "list"), "post": ("post", "create"), "delete": ("deletecollection", "deletecollection")}


def _path_item(
    rdef: ResourceDef,
    version: str,
    verbs: set[str],
    operations: dict[str, tuple[str, str]],
    params: list[str],
    *,
    namespaced: bool,
    v3: bool,
) -> dict[str, Any] | None:
    """A path's operations (method: (action, verb)) that the resource's verbs allow; None if none."""
    allowed = {method: op for method, op in operations.items() if op[1] in verbs}
    if not allowed:
        return None
    entry: dict[str, Any] = {
        method: _operation(rdef, version, action, method, namespaced=namespaced, v3=v3)
        for method, (action, _) in allowed.items()
    }
    entry["parameters"] = [_path_param(p, v3=v3) for p in params]
    return entry


def paths(rdefs: Iterable[ResourceDef], version: str, verbs_for: VerbsFor, *, v3: bool) -> dict[str, Any]:
    """A path per resource: collection, object, `/status` where served, and the all-namespaces list."""
    out: dict[str, Any] = {}
    for rdef in rdefs:
        if not definition_name(rdef, version):
            continue
        verbs = set(rdef.verbs or verbs_for(rdef))
        prefix = f"/apis/{rdef.group}/{version}" if rdef.group else f"/api/{version}"
        collection = (
            f"{prefix}/namespaces/{{namespace}}/{rdef.plural}" if rdef.namespaced else f"{prefix}/{rdef.plural}"
        )
        scoped = ["namespace"] if rdef.namespaced else []
        wanted = [(collection, scoped, _COLLECTION), (f"{collection}/{{name}}", [*scoped, "name"], _ONE)]
        if rdef.status:
            status = {method: op for method, op in _ONE.items() if method != "delete"}
            wanted.append((f"{collection}/{{name}}/status", [*scoped, "name"], status))
        for path, params, operations in wanted:
            entry = _path_item(rdef, version, verbs, operations, params, namespaced=rdef.namespaced, v3=v3)
            if entry is not None:
                out[path] = entry
        if rdef.namespaced:
            entry = _path_item(rdef, version, verbs, {"get": ("list", "list")}, [], namespaced=False, v3=v3)
            if entry is not None:
                out[f"{prefix}/{rdef.plural}"] = entry
    return dict(sorted(out.items()))


def _render(value: Any, *, v3: bool) -> Any:
    """Turn neutral `{"$ref": NAME}` references into the form of the OpenAPI version."""
    if isinstance(value, list):
        return [_render(item, v3=v3) for item in value]
    if not isinstance(value, dict):
        return value
    rendered = {key: _render(item, v3=v3) for key, item in value.items()}
    target = rendered.pop("$ref", None)
    if not isinstance(target, str):
        return rendered
    if not v3:
        return {"$ref": f"#/definitions/{target}", **rendered}
    if not rendered:
        return {"$ref": f"#/components/schemas/{target}"}
    # Real v3 documents wrap a described reference in allOf; an object carries `default: {}`.
    definition: dict[str, Any] = BUILTIN_SCHEMAS.get(target) or _EXTRA.get(target) or {}
    is_object = definition.get("type") == "object"
    return {"allOf": [{"$ref": f"#/components/schemas/{target}"}], **({"default": {}} if is_object else {}), **rendered}


def group_versions(served: Iterable[ResourceDef]) -> dict[str, list[tuple[ResourceDef, str]]]:
    """The published kinds per document key (`api/v1`, `apis/<group>/<version>`)."""
    out: dict[str, list[tuple[ResourceDef, str]]] = {}
    for rdef in served:
        for version in rdef.versions:
            if definition_name(rdef, version):
                key = f"apis/{rdef.group}/{version}" if rdef.group else f"api/{version}"
                out.setdefault(key, []).append((rdef, version))
    return out


def v3_document(published: list[tuple[ResourceDef, str]], verbs_for: VerbsFor) -> dict[str, Any]:
    version = published[0][1]
    rdefs = [rdef for rdef, _ in published]
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.31.0"},
        "paths": _render(paths(rdefs, version, verbs_for, v3=True), v3=True),
        "components": {
            "schemas": _render(schemas(rdefs, version), v3=True),
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer token",
                    "name": "authorization",
                    "in": "header",
                }
            },
        },
        "security": [{"BearerToken": []}],
    }


def v2_document(served: Iterable[ResourceDef], verbs_for: VerbsFor) -> dict[str, Any]:
    all_paths: dict[str, Any] = {}
    definitions: dict[str, Any] = {}
    for published in group_versions(served).values():
        version = published[0][1]
        rdefs = [rdef for rdef, _ in published]
        all_paths |= paths(rdefs, version, verbs_for, v3=False)
        definitions |= schemas(rdefs, version)
    return {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": "v1.31.0"},
        "paths": _render(dict(sorted(all_paths.items())), v3=False),
        "definitions": _render(dict(sorted(definitions.items())), v3=False),
        "securityDefinitions": {
            "BearerToken": {"type": "apiKey", "description": "Bearer token", "name": "authorization", "in": "header"}
        },
        "security": [{"BearerToken": []}],
    }


def encode(document: Any) -> tuple[bytes, str]:
    """The document's bytes and its hash (upper-case SHA-512 hex, kube-openapi's ETag)."""
    data = msgspec.json.encode(document)
    return data, hashlib.sha512(data).hexdigest().upper()


def default_verbs(rdef: ResourceDef) -> list[str]:
    return list(rdef.verbs) or _ALL_VERBS
