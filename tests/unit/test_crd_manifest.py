"""The PublishedResource CRD manifest: a valid apiextensions.k8s.io/v1 CRD whose schema accepts
the bundled example and rejects broken PublishedResources.

There is no API server here, so the manifest is checked structurally and PublishedResources are
validated by a small validator for the subset of OpenAPI v3 the schema uses. Unknown fields are
rejected, as `kubectl apply` does with strict field validation.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from lightkube import ApiError
from lightkube.codecs import load_all_yaml
from lightkube.generic_resource import create_global_resource
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.types import PatchType

from kcpsim.sim import KcpSim

REPO = Path(__file__).resolve().parents[2]
CRD_PATH = REPO / "charts" / "servlet" / "crds" / "publishedresources.yaml"
EXAMPLE_PATH = REPO / "examples" / "certificates" / "publishedresource.yaml"

# Keywords of a structural schema this manifest may use; anything else (oneOf, $ref, ...) is a
# mistake here.
KNOWN_KEYWORDS = {
    "type",
    "description",
    "properties",
    "required",
    "items",
    "enum",
    "pattern",
    "maxLength",
    "minLength",
    "minimum",
    "format",
    "additionalProperties",
    "x-kubernetes-validations",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
}
TYPES = {"object", "array", "string", "integer", "number", "boolean"}
PRINTER_COLUMN_TYPES = {"integer", "number", "string", "boolean", "date"}


def _load_crd() -> dict[str, Any]:
    document = yaml.safe_load(CRD_PATH.read_text())
    assert isinstance(document, dict)
    return document


CRD = _load_crd()
VERSION = CRD["spec"]["versions"][0]
SCHEMA: dict[str, Any] = VERSION["schema"]["openAPIV3Schema"]


def _walk(schema: dict[str, Any], path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from _walk(child, f"{path}.{name}")
    if "items" in schema:
        yield from _walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], f"{path}.*")


def _type_matches(expected: str, value: Any) -> bool:
    if expected == "object":
        return isinstance(value, dict)
    if expected == "array":
        return isinstance(value, list)
    if expected == "string":
        return isinstance(value, str)
    if expected == "boolean":
        return isinstance(value, bool)
    if expected == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def validate(schema: dict[str, Any], value: Any, path: str = "") -> list[str]:
    """Errors of `value` against `schema` (the subset of OpenAPI v3 used by the manifest)."""
    where = path or "<root>"
    if not _type_matches(schema["type"], value):
        return [f"{where}: expected {schema['type']}, got {type(value).__name__}"]
    errors: list[str] = []
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: {value!r} is not one of {schema['enum']}")
    if isinstance(value, str):
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{where}: longer than {schema['maxLength']}")
        if "minLength" in schema and len(value) < schema["minLength"]:
            errors.append(f"{where}: shorter than {schema['minLength']}")
        if "pattern" in schema and not re.search(schema["pattern"], value):
            errors.append(f"{where}: {value!r} does not match {schema['pattern']}")
    if isinstance(value, int) and "minimum" in schema and value < schema["minimum"]:
        errors.append(f"{where}: below {schema['minimum']}")
    if isinstance(value, dict):
        errors += _validate_object(schema, value, path)
    if isinstance(value, list):
        for index, item in enumerate(value):
            errors += validate(schema["items"], item, f"{path}[{index}]")
        keys = schema.get("x-kubernetes-list-map-keys")
        if keys:
            seen = [tuple(item.get(key) for key in keys) for item in value if isinstance(item, dict)]
            if len(seen) != len(set(seen)):
                errors.append(f"{where}: duplicate entries for key {keys}")
    return errors


def _validate_object(schema: dict[str, Any], value: dict[str, Any], path: str) -> list[str]:
    errors = [f"{path}.{name}: required" for name in schema.get("required", []) if name not in value]
    properties = schema.get("properties")
    extra = schema.get("additionalProperties")
    for name, item in value.items():
        if properties is not None and name in properties:
            errors += validate(properties[name], item, f"{path}.{name}")
        elif isinstance(extra, dict):
            errors += validate(extra, item, f"{path}.{name}")
        elif properties is not None:
            errors.append(f"{path}.{name}: unknown field")
    return errors


def _example() -> dict[str, Any]:
    document = yaml.safe_load(EXAMPLE_PATH.read_text())
    assert isinstance(document, dict)
    return document


FULL: dict[str, Any] = {
    "apiVersion": "services.kdp.k8c.io/v1alpha1",
    "kind": "PublishedResource",
    "metadata": {"name": "publish-everything", "labels": {"team": "a"}},
    "spec": {
        "resource": {"apiGroup": "cert-manager.io", "kind": "Certificate", "version": "v1"},
        "filter": {
            "namespace": "my-app",
            "resource": {
                "matchLabels": {"foo": "bar"},
                "matchExpressions": [
                    {"key": "tier", "operator": "In", "values": ["gold", "silver"]},
                    {"key": "legacy", "operator": "DoesNotExist"},
                ],
            },
        },
        "projection": {
            "version": "v1beta1",
            "kind": "Zertifikat",
            "plural": "zertifikate",
            "shortNames": ["zerts"],
            "categories": ["security"],
            "scope": "Namespaced",
        },
        "naming": {
            "namespace": "$remoteClusterName",
            "name": "cert-$remoteNamespaceHash-$remoteNameHash",
            "allowSharedNamespaces": False,
        },
        "mutation": {
            "spec": [
                {"delete": {"path": "spec.privateKey.rotationPolicy"}},
                {"regex": {"path": "spec.secretName", "pattern": "^(.*)$", "replacement": "\\1-tls"}},
                {"template": {"path": "spec.commonName", "template": "{{ .Value.String | lower }}"}},
                {"cel": {"path": "spec.duration", "expression": 'value == null ? "2160h" : value'}},
            ],
            "status": [
                {"delete": {"path": "status.privateKey"}},
                {"regex": {"path": "status.secretName", "pattern": "-tls$", "replacement": ""}},
                {"template": {"path": "status.issuer", "template": "{{ .RemoteObject.spec.issuerRef.name }}"}},
                {"cel": {"path": "status.secretName", "expression": "other.spec.secretName"}},
            ],
        },
        "synchronization": {"enabled": True},
        "enableWorkspacePaths": True,
        "related": [
            {
                "identifier": "tls-secret",
                "origin": "service",
                "kind": "Secret",
                "reference": {"name": {"path": "spec.secretName"}},
                "watch": {"byOwner": {}},
            },
            {
                "identifier": "settings",
                "origin": "platform",
                "kind": "ConfigMap",
                "reference": {
                    "name": {"path": "spec.secretName", "regex": {"pattern": "^(.*)$", "replacement": "\\1-cfg"}},
                    "namespace": {"path": "metadata.uid", "regex": {"pattern": "", "replacement": "kube-system"}},
                },
            },
            {
                "identifier": "database",
                "origin": "service",
                "group": "databases.example.org",
                "version": "v1",
                "resource": "databases",
                "identityHash": "4f8c0e7d",
                "projection": {"group": "kcp.example.org", "version": "v1beta1", "resource": "dbs"},
                "reference": {"name": {"path": "spec.secretName"}},
            },
            {
                "identifier": "kubeconfig",
                "origin": "service",
                "kind": "Secret",
                "cleanup": False,
                "syncStatus": True,
                "mutation": {
                    "spec": [
                        {"delete": {"path": "data.ca\\.crt"}},
                        {"regex": {"path": "metadata.labels.tier", "pattern": "^(.*)$", "replacement": "\\1-copy"}},
                        {"template": {"path": "metadata.labels.copy", "template": "{{ .RemoteObject.metadata.name }}"}},
                        {"cel": {"path": "metadata.annotations.origin", "expression": "self.metadata.name"}},
                    ],
                    "status": [
                        {"delete": {"path": "status.internal"}},
                        {"regex": {"path": "status.phase", "pattern": "^Ready$", "replacement": "Up"}},
                        {"template": {"path": "status.copy", "template": "{{ .RemoteObject.metadata.name }}"}},
                        {"cel": {"path": "status.ready", "expression": "value == true"}},
                    ],
                },
                "object": {
                    "template": {"template": "{{ .Object.metadata.name }}-kubeconfig"},
                    "namespace": {"reference": {"path": "metadata.uid", "regex": {"pattern": "", "replacement": "x"}}},
                },
            },
            {
                "identifier": "issued",
                "origin": "service",
                "kind": "Secret",
                "object": {
                    "selector": {
                        "matchLabels": {"issued-by": "{{ .Object.metadata.name }}"},
                        "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}],
                        "rewrite": {"regex": {"pattern": "^internal-(.+)$", "replacement": "public-\\1"}},
                    }
                },
            },
            {
                "identifier": "shared",
                "origin": "platform",
                "kind": "ConfigMap",
                "object": {
                    "selector": {
                        "matchLabels": {"share": "yes"},
                        "rewrite": {"template": {"template": "{{ .Value }}-of-{{ .Object.metadata.name }}"}},
                    }
                },
                "watch": {
                    "bySelector": {
                        "matchLabels": {"shop": "main"},
                        "matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["test"]}],
                    }
                },
            },
            {
                "identifier": "settings-copy",
                "origin": "platform",
                "kind": "ConfigMap",
                "object": {
                    "reference": {"path": "spec.secretName", "regex": {"pattern": "^(.*)$", "replacement": "\\1-cm"}},
                    "namespace": {"template": {"template": "{{ .Object.metadata.namespace }}"}},
                },
            },
        ],
    },
    "status": {
        "resourceSchemaName": "v1a2b3c4d.zertifikate.certificates.example.corp",
        "conditions": [
            {
                "type": "Ready",
                "status": "False",
                "reason": "WaitingForVirtualWorkspace",
                "message": "the APIExport has no virtual workspace URL yet",
                "observedGeneration": 1,
                "lastTransitionTime": "2026-01-01T00:00:00Z",
            },
        ],
    },
}


# The version fields come in a one-version and a list form that exclude each other: this is
# FULL with the list forms.
FULL_SEVERAL_VERSIONS: dict[str, Any] = copy.deepcopy(FULL)
FULL_SEVERAL_VERSIONS["spec"]["resource"] = {
    "apiGroup": "cert-manager.io",
    "kind": "Certificate",
    "versions": ["v1", "v1alpha2"],
}
del FULL_SEVERAL_VERSIONS["spec"]["projection"]["version"]
FULL_SEVERAL_VERSIONS["spec"]["projection"]["versions"] = {"v1": "v1beta1"}


def test_manifest_is_a_cluster_scoped_apiextensions_v1_crd_for_published_resources() -> None:
    assert CRD["apiVersion"] == "apiextensions.k8s.io/v1"
    assert CRD["kind"] == "CustomResourceDefinition"
    spec = CRD["spec"]
    assert spec["group"] == "services.kdp.k8c.io"
    assert spec["scope"] == "Cluster"
    assert spec["names"] == {
        "kind": "PublishedResource",
        "listKind": "PublishedResourceList",
        "plural": "publishedresources",
        "singular": "publishedresource",
        "shortNames": ["pr"],
        "categories": ["kdp"],
    }
    # The API server requires the name to be <plural>.<group>.
    assert CRD["metadata"]["name"] == f"{spec['names']['plural']}.{spec['group']}"


def test_the_one_version_is_v1alpha1_served_and_stored_with_a_status_subresource() -> None:
    assert len(CRD["spec"]["versions"]) == 1
    assert VERSION["name"] == "v1alpha1"
    assert VERSION["served"] is True and VERSION["storage"] is True
    assert VERSION["subresources"] == {"status": {}}


def test_spec_is_immutable_through_a_cel_rule() -> None:
    spec = SCHEMA["properties"]["spec"]
    assert spec["x-kubernetes-validations"] == [{"rule": "self == oldSelf", "message": "spec is immutable"}]
    assert "spec" in SCHEMA["required"]


@pytest.mark.parametrize("path,node", list(_walk(SCHEMA)), ids=lambda v: v if isinstance(v, str) else "")
def test_every_schema_node_is_structural(path: str, node: dict[str, Any]) -> None:
    assert node.get("type") in TYPES, f"{path or '<root>'} has no valid type"
    assert set(node) <= KNOWN_KEYWORDS, f"{path}: unexpected keywords {set(node) - KNOWN_KEYWORDS}"
    assert not ("properties" in node and "additionalProperties" in node), path
    assert ("items" in node) == (node["type"] == "array"), f"{path}: arrays, and only arrays, need items"
    for name in node.get("required", []):
        assert name in node.get("properties", {}), f"{path}: required {name} is not a property"
    if "x-kubernetes-list-type" in node or "x-kubernetes-list-map-keys" in node:
        assert node["type"] == "array", path
    if "x-kubernetes-map-type" in node:
        assert node["type"] == "object", path
    if "pattern" in node:
        re.compile(node["pattern"])


def _is_scalar_item(path: str, node: dict[str, Any]) -> bool:
    return path.endswith(("[]", ".*")) and node["type"] not in ("object", "array")


@pytest.mark.parametrize(
    "path,node",
    [(p, n) for p, n in _walk(SCHEMA) if p != ".metadata" and not _is_scalar_item(p, n)],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_every_field_has_a_description(path: str, node: dict[str, Any]) -> None:
    # `.metadata` is the exception: the API server forbids anything but `type: object` there.
    # Strings inside lists and maps are described by their list or map.
    assert node.get("description", "").strip(), f"{path or '<root>'} has no description"


def test_root_metadata_is_only_type_object() -> None:
    assert SCHEMA["properties"]["metadata"] == {"type": "object"}


@pytest.mark.parametrize(
    "path,node",
    [(p, n) for p, n in _walk(SCHEMA) if "x-kubernetes-list-map-keys" in n],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_list_map_keys_are_required_strings(path: str, node: dict[str, Any]) -> None:
    assert node["x-kubernetes-list-type"] == "map"
    for key in node["x-kubernetes-list-map-keys"]:
        assert key in node["items"]["required"], f"{path}: map key {key} must be required"
        assert node["items"]["properties"][key]["type"] == "string"


@pytest.mark.parametrize(
    "path,expected",
    [
        (".spec.resource.apiGroup", {"type": "string"}),
        (".spec.filter.resource.matchExpressions[].operator", {"enum": ["In", "NotIn", "Exists", "DoesNotExist"]}),
        (".spec.projection.scope", {"enum": ["Namespaced", "Cluster"]}),
        (".spec.related[].identifier", {"maxLength": 40}),
        (".spec.related[].origin", {"enum": ["service", "platform"]}),
        (".spec.related[].kind", {"enum": ["Secret", "ConfigMap"]}),
        (".spec.related", {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["identifier"]}),
        (".status.conditions[].observedGeneration", {"type": "integer"}),
    ],
)
def test_schema_constrains_the_documented_fields(path: str, expected: dict[str, Any]) -> None:
    nodes = dict(_walk(SCHEMA))
    assert {key: nodes[path].get(key) for key in expected} == expected


def _schema_at(json_path: str) -> dict[str, Any]:
    """The schema node a printer column's JSONPath reads (a filter `[?(...)]` selects items)."""
    node = SCHEMA
    for step in re.findall(r"\.(\w+)|\[\?\([^]]*\)\]", json_path):
        node = node["properties"][step] if step else node["items"]
    return node


@pytest.mark.parametrize(
    "name,json_path,column_type",
    [
        ("Kind", ".spec.resource.kind", "string"),
        ("API Group", ".spec.resource.apiGroup", "string"),
        ("Schema", ".status.resourceSchemaName", "string"),
        ("Ready", '.status.conditions[?(@.type=="Ready")].status', "string"),
        ("Age", ".metadata.creationTimestamp", "date"),
    ],
)
def test_printer_columns(name: str, json_path: str, column_type: str) -> None:
    columns = {column["name"]: column for column in VERSION["additionalPrinterColumns"]}
    assert columns[name]["jsonPath"] == json_path
    assert columns[name]["type"] == column_type
    if not json_path.startswith(".metadata"):
        assert _schema_at(json_path)["type"] == "string"


def test_printer_columns_are_well_formed() -> None:
    columns = VERSION["additionalPrinterColumns"]
    assert [column["name"] for column in columns] == ["Kind", "API Group", "Schema", "Ready", "Age"]
    for column in columns:
        assert column["type"] in PRINTER_COLUMN_TYPES
        assert column["jsonPath"].startswith(".")


def test_bundled_example_is_valid() -> None:
    assert validate(SCHEMA, _example()) == []


def test_a_published_resource_using_every_field_is_valid() -> None:
    assert validate(SCHEMA, FULL) == []
    assert validate(SCHEMA, FULL_SEVERAL_VERSIONS) == []


def test_the_smallest_published_resource_is_valid() -> None:
    smallest = {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": "x"},
        "spec": {"resource": {"apiGroup": "example.com", "kind": "Thing"}},
    }
    assert validate(SCHEMA, smallest) == []


def _set(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `document` with the value at a dotted path (list indexes as numbers) replaced;
    the value `...` deletes the field."""
    result = copy.deepcopy(document)
    *parents, last = path.split(".")
    node: Any = result
    for step in parents:
        node = node[int(step)] if isinstance(node, list) else node[step]
    key: Any = int(last) if isinstance(node, list) else last
    if value is ...:
        del node[key]
    else:
        node[key] = value
    return result


@pytest.mark.parametrize(
    "path,value,error",
    [
        ("spec", ..., ".spec: required"),
        ("spec.resource", ..., ".spec.resource: required"),
        ("spec.resource.kind", ..., ".spec.resource.kind: required"),
        ("spec.resource.apiGroup", 5, ".spec.resource.apiGroup: expected string"),
        ("spec.resource.version", 1, ".spec.resource.version: expected string"),
        ("spec.resource.versions", "v1", ".spec.resource.versions: expected array"),
        ("spec.projection.versions", ["v1"], ".spec.projection.versions: expected object"),
        ("spec.naming.nmae", "$remoteName", ".spec.naming.nmae: unknown field"),
        ("spec.mutation.spec.0.delete.pattern", "x", ".spec.mutation.spec[0].delete.pattern: unknown field"),
        ("spec.mutation.status.3.cel.expression", ..., ".spec.mutation.status[3].cel.expression: required"),
        ("spec.mutation.status.3.cel.expression", "x" * 4097, ".spec.mutation.status[3].cel.expression: longer than"),
        ("spec.filter.resource.matchLabels", {"foo": 1}, ".spec.filter.resource.matchLabels.foo: expected string"),
        ("spec.filter.resource.matchExpressions.0.operator", "Gt", "is not one of"),
        ("spec.filter.resource.matchExpressions.0.key", ..., "matchExpressions[0].key: required"),
        ("spec.projection.scope", "Global", ".spec.projection.scope: 'Global' is not one of"),
        ("spec.projection.shortNames", "zerts", ".spec.projection.shortNames: expected array"),
        ("spec.related.0.identifier", "x" * 41, ".spec.related[0].identifier: longer than 40"),
        ("spec.related.0.identifier", "TLS_Secret", ".spec.related[0].identifier: 'TLS_Secret' does not match"),
        ("spec.related.0.identifier", "-tls", "does not match"),
        ("spec.related.0.identifier", ..., ".spec.related[0].identifier: required"),
        ("spec.related.1.identifier", "tls-secret", ".spec.related: duplicate entries"),
        ("spec.related.0.origin", "cluster", ".spec.related[0].origin: 'cluster' is not one of"),
        ("spec.related.0.kind", "Deployment", ".spec.related[0].kind: 'Deployment' is not one of"),
        ("spec.related.0.reference.name", ..., ".spec.related[0].reference.name: required"),
        ("spec.related.0.reference.name.path", ..., ".spec.related[0].reference.name.path: required"),
        ("spec.related.1.reference.namespace.regex.flags", "i", "regex.flags: unknown field"),
        (
            "spec.related.3.mutation.spec.0.delete.pattern",
            "x",
            ".spec.related[3].mutation.spec[0].delete.pattern: unknown",
        ),
        (
            "spec.related.3.mutation.status.3.cel.expression",
            ...,
            ".spec.related[3].mutation.status[3].cel.expression: req",
        ),
        ("spec.related.4.object.selector.rewrite", ..., ".spec.related[4].object.selector.rewrite: required"),
        ("spec.related.5.watch.bySelector.matchExpressions.0.operator", "Gt", "is not one of"),
        ("spec.related.5.watch.bySelector.matchLabels", {"shop": 1}, "matchLabels.shop: expected string"),
        ("spec.related.4.object.selector.matchExpressions.0.operator", "Gt", "is not one of"),
        ("spec.related.4.object.selector.rewrite.regex.pattern", "", "regex.pattern: shorter than 1"),
        ("status.conditions.0.status", "Maybe", ".status.conditions[0].status: 'Maybe' is not one of"),
        ("status.conditions.0.observedGeneration", -1, "observedGeneration: below 0"),
        ("status.phase", "Ready", ".status.phase: unknown field"),
    ],
)
def test_broken_published_resources_are_rejected(path: str, value: Any, error: str) -> None:
    errors = validate(SCHEMA, _set(FULL, path, value))
    assert any(error in message for message in errors), errors


def test_an_identifier_of_exactly_40_characters_is_allowed() -> None:
    assert validate(SCHEMA, _set(FULL, "spec.related.0.identifier", "a" * 40)) == []


# The schema and the servlet's parser must agree on which fields exist: a field the CRD accepts but
# the parser does not know would be reported as invalid by the servlet after kubectl accepted it,
# and a field only the parser knows could never be set.


def _object_locations(schema: dict[str, Any], value: Any, path: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Every map in `value` whose schema lists its properties, with its parser-style path."""
    if isinstance(value, dict) and "properties" in schema:
        yield path, schema
        for name, item in value.items():
            if name in schema["properties"]:
                yield from _object_locations(schema["properties"][name], item, f"{path}.{name}")
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            yield from _object_locations(schema["items"], item, f"{path}[{index}]")


def _paths_in(schema: dict[str, Any], value: Any, path: str = "") -> set[str]:
    """The schema paths (lists as `[]`) that `value` actually uses."""
    used = {path}
    if isinstance(value, dict) and "properties" in schema:
        for name, item in value.items():
            used |= _paths_in(schema["properties"][name], item, f"{path}.{name}")
    if isinstance(value, dict) and isinstance(schema.get("additionalProperties"), dict):
        for item in value.values():
            used |= _paths_in(schema["additionalProperties"], item, f"{path}.*")
    if isinstance(value, list) and "items" in schema:
        for item in value:
            used |= _paths_in(schema["items"], item, f"{path}[]")
    return used


def _set_at(document: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """Like `_set`, for a parser-style path such as `spec.related[1].reference`."""
    return _set(document, re.sub(r"\[(\d+)\]", r".\1", path), value)


SPEC_LOCATIONS = [(p[1:], n) for p, n in _object_locations(SCHEMA["properties"]["spec"], FULL["spec"], ".spec")]


def test_the_full_example_uses_every_spec_field_of_the_schema() -> None:
    in_schema = {path for path, _ in _walk(SCHEMA) if path.startswith(".spec")}
    used = {
        path
        for full in (FULL, FULL_SEVERAL_VERSIONS)
        for path in _paths_in(SCHEMA["properties"]["spec"], full["spec"], ".spec")
    }
    assert used == in_schema


def test_the_parser_accepts_every_field_the_schema_allows() -> None:
    from servlet.core.parsing import parse_published_resource

    assert parse_published_resource(FULL).problems == ()
    assert parse_published_resource(FULL_SEVERAL_VERSIONS).problems == ()


@pytest.mark.parametrize("path,node", SPEC_LOCATIONS, ids=[p for p, _ in SPEC_LOCATIONS])
def test_schema_and_parser_both_reject_an_unknown_field(path: str, node: dict[str, Any]) -> None:
    from servlet.core.parsing import parse_published_resource

    parent = _set_at(FULL, path, {**_value_at(FULL, path), "surplus": "x"})
    assert f"{_schema_style(path)}.surplus: unknown field" in validate(SCHEMA, parent)
    fields = [problem.field for problem in parse_published_resource(parent).problems]
    assert fields == [f"{path}.surplus"]


@pytest.mark.parametrize(
    "path,name",
    [(path, name) for path, node in SPEC_LOCATIONS for name in node.get("required", [])],
)
def test_schema_and_parser_both_require_the_same_fields(path: str, name: str) -> None:
    from servlet.core.parsing import parse_published_resource

    broken = _set_at(FULL, f"{path}.{name}", ...)
    assert f"{_schema_style(path)}.{name}: required" in validate(SCHEMA, broken)
    fields = [problem.field for problem in parse_published_resource(broken).problems]
    assert f"{path}.{name}" in fields


@pytest.mark.parametrize(
    "path,value",
    [
        ("spec.projection.categories", []),
        ("spec.projection.scope", "Cluster"),
        ("spec.projection.scope", "Namespaced"),
        ("spec.related[0].origin", "platform"),
        ("spec.related[0].kind", "ConfigMap"),
        ("spec.filter.resource.matchExpressions[0]", {"key": "tier", "operator": "NotIn", "values": ["x"]}),
        ("spec.filter.resource.matchExpressions[0]", {"key": "tier", "operator": "Exists"}),
    ],
)
def test_the_parser_accepts_every_enum_value_and_empty_list_of_the_schema(path: str, value: Any) -> None:
    from servlet.core.parsing import parse_published_resource

    variant = _set_at(FULL, path, value)
    assert validate(SCHEMA, variant) == []
    assert parse_published_resource(variant).problems == ()


def _value_at(document: dict[str, Any], path: str) -> Any:
    node: Any = document
    for step in re.sub(r"\[(\d+)\]", r".\1", path).split("."):
        node = node[int(step)] if isinstance(node, list) else node[step]
    return node


def _schema_style(path: str) -> str:
    return "." + path


def test_the_manifest_installs_and_serves_published_resources_with_status(kcpsim: KcpSim) -> None:
    """On an API server (the simulator): established, the example stored as written, a broken one
    refused, and status written through the status subresource."""
    resource = create_global_resource("services.kdp.k8c.io", "v1alpha1", "PublishedResource", "publishedresources")
    client = kcpsim.client(kcpsim.service_config())
    try:
        client.create(load_all_yaml(CRD_PATH.read_text())[0])
        crd = client.get(CustomResourceDefinition, name=CRD["metadata"]["name"])
        assert crd.status is not None and crd.status.conditions is not None
        assert {(c.type, c.status) for c in crd.status.conditions} >= {("Established", "True")}

        created = client.create(resource(_example()))
        assert created["spec"] == _example()["spec"]
        with pytest.raises(ApiError) as refused:
            client.create(
                resource(_set(_set(_example(), "metadata.name", "broken"), "spec.related.0.origin", "cluster"))
            )
        assert refused.value.status.code == 422

        status = {"status": FULL["status"]}
        patched = client.patch(resource.Status, "publish-certmanager-certs", status, patch_type=PatchType.MERGE)
        assert patched["status"] == FULL["status"]
    finally:
        client.close()


# The CEL rules of a related entry, evaluated here with the servlet's own CEL implementation
# (the simulator's API server does not evaluate them; kcp's does).
RELATED_RULES: list[dict[str, str]] = SCHEMA["properties"]["spec"]["properties"]["related"]["items"][
    "x-kubernetes-validations"
]


def _refused_by(entry: dict[str, Any]) -> list[str]:
    from servlet.core.cel import compile_expression, evaluate

    return [
        rule["message"]
        for rule in RELATED_RULES
        if evaluate(compile_expression(rule["rule"]), value=None, self=entry, other=None) is not True
    ]


def test_every_rule_of_a_related_entry_holds_for_the_full_examples_entries() -> None:
    assert [_refused_by(entry) for entry in FULL["spec"]["related"]] == [[]] * len(FULL["spec"]["related"])


def test_schema_and_parser_both_refuse_related_status_steps_without_sync_status() -> None:
    from servlet.core.parsing import parse_published_resource

    broken = _set(FULL, "spec.related.3.syncStatus", False)
    assert _refused_by(broken["spec"]["related"][3]) == [
        "mutation.status changes the status that syncStatus copies, so it needs syncStatus"
    ]
    assert [problem.field for problem in parse_published_resource(broken).problems] == [
        "spec.related[3].mutation.status"
    ]


def _with_path(value: Any, path: str) -> Any:
    """`value` with each "{p}" in it replaced by `path`."""
    if isinstance(value, dict):
        return {key: _with_path(item, path) for key, item in value.items()}
    return path if value == "{p}" else value


def _path_rules(*keys: str) -> list[dict[str, str]]:
    node: Any = SCHEMA["properties"]["spec"]["properties"]["related"]["items"]
    for key in keys:
        node = node["properties"][key]
    return list(node["x-kubernetes-validations"])


@pytest.mark.parametrize(
    ("reference", "where", "rules", "path", "refused"),
    [
        ({"reference": {"name": {"path": "{p}"}}}, "reference.name.path", ("reference", "name"), "a[*].b[*]", True),
        ({"reference": {"name": {"path": "{p}"}}}, "reference.name.path", ("reference", "name"), "a[*].b", False),
        (
            {"reference": {"name": {"path": "spec.x"}, "namespace": {"path": "{p}"}}},
            "reference.namespace.path",
            ("reference", "namespace"),
            "status.namespaces[*]",
            True,
        ),
        (
            {"object": {"reference": {"path": "{p}"}}},
            "object.reference.path",
            ("object", "reference"),
            "a[*].b[*]",
            True,
        ),
        ({"object": {"reference": {"path": "{p}"}}}, "object.reference.path", ("object", "reference"), "a[*].b", False),
        (
            {"object": {"reference": {"path": "spec.x"}, "namespace": {"reference": {"path": "{p}"}}}},
            "object.namespace.reference.path",
            ("object", "namespace", "reference"),
            "status.n[*]",
            True,
        ),
    ],
)
def test_schema_and_parser_agree_on_paths_into_lists(
    reference: dict[str, Any], where: str, rules: tuple[str, ...], path: str, refused: bool
) -> None:
    """The CEL rules on the path fields, evaluated with the servlet's CEL, refuse what the parser does."""
    from servlet.core.cel import compile_expression, evaluate
    from servlet.core.parsing import parse_published_resource

    entry = _with_path(reference, path)
    manifest = _set(FULL, "spec.related", [{"identifier": "x", "origin": "service", "kind": "Secret", **entry}])
    fields = [problem.field for problem in parse_published_resource(manifest).problems]
    failed = [
        rule["message"]
        for rule in _path_rules(*rules)
        if evaluate(compile_expression(rule["rule"]), value=None, self={"path": path}, other=None) is not True
    ]
    assert (fields == [f"spec.related[0].{where}"]) is refused, fields
    assert bool(failed) is refused, failed


@pytest.mark.parametrize("typed", [True, False], ids=["database", "secret"])
def test_schema_and_parser_agree_on_platform_sync_status(typed: bool) -> None:
    """Origin platform writes the copy's status to the workspace object's status subresource:
    any type may have one, a Secret or ConfigMap never has."""
    from servlet.core.parsing import parse_published_resource

    kind = {"group": "databases.example.org", "version": "v1", "resource": "databases"} if typed else {"kind": "Secret"}
    entry = {"identifier": "x", "origin": "platform", "syncStatus": True, **kind, "reference": {"name": {"path": "a"}}}
    refused = _refused_by(entry)
    fields = [problem.field for problem in parse_published_resource(_set(FULL, "spec.related", [entry])).problems]
    assert (refused == [], fields == []) == (typed, typed), (refused, fields)
