"""The meta and core (`v1`) types kcpsim serves, as OpenAPI schemas, and how they are written.

Written from the Kubernetes API's field names, types and list/map extensions (1.31), trimmed to
the kinds kcpsim serves and with short descriptions of our own. References are spelt
`{"$ref": NAME}` here; openapi_docs.py turns them into the form each OpenAPI version uses. The
other groups are in openapi_builtin.py, which publishes them all.
"""

from __future__ import annotations

from typing import Any

META = "io.k8s.apimachinery.pkg.apis.meta.v1."
CORE = "io.k8s.api.core.v1."
RBAC = "io.k8s.api.rbac.v1."
CRD = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."

_STR = {"type": "string"}
_BOOL = {"type": "boolean"}
_INT32 = {"type": "integer", "format": "int32"}
_INT64 = {"type": "integer", "format": "int64"}


def _s(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def ref(name: str, description: str = "") -> dict[str, Any]:
    return {"$ref": name, **({"description": description} if description else {})}


def _strings(description: str, list_type: str = "atomic") -> dict[str, Any]:
    return {
        "type": "array",
        "items": {**_STR, "default": ""},
        "description": description,
        "x-kubernetes-list-type": list_type,
    }


def _string_map(description: str, **item: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": {**_STR, "default": "", **item}, "description": description}


def _obj(
    properties: dict[str, Any], description: str, *, required: tuple[str, ...] = (), atomic: bool = False
) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "description": description, "properties": properties}
    if required:
        schema["required"] = list(required)
    if atomic:  # replaced as a whole by merges and applies
        schema["x-kubernetes-map-type"] = "atomic"
    return schema


def _top(kind: str, description: str, properties: dict[str, Any], *, required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A kind's schema: apiVersion, kind and metadata first, as every Kubernetes object has them."""
    head = {
        "apiVersion": _s("The versioned schema of this representation of an object."),
        "kind": _s("The REST resource this object represents."),
        "metadata": ref(META + "ObjectMeta", "Standard object's metadata."),
    }
    return _obj({**head, **properties}, description, required=required)


def _list(item: str, description: str) -> dict[str, Any]:
    return _obj(
        {
            "apiVersion": _s("The versioned schema of this representation of an object."),
            "items": {"type": "array", "items": ref(item), "description": "The listed objects."},
            "kind": _s("The REST resource this object represents."),
            "metadata": ref(META + "ListMeta", "Standard list metadata."),
        },
        description,
        required=("items",),
    )


def _atomic_list(item: str, description: str) -> dict[str, Any]:
    """A list replaced as a whole by merges and applies."""
    return {"type": "array", "items": ref(item), "description": description, "x-kubernetes-list-type": "atomic"}


def _map_list(item: str, description: str, *keys: str, patch: bool = True) -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "array",
        "items": ref(item),
        "description": description,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": list(keys),
    }
    if patch:
        schema |= {"x-kubernetes-patch-merge-key": keys[0], "x-kubernetes-patch-strategy": "merge"}
    return schema


_TIME = {"type": "string", "format": "date-time", "description": "A timestamp in RFC 3339 form."}

META_SCHEMAS: dict[str, Any] = {
    META + "Time": _TIME,
    META + "MicroTime": {**_TIME, "description": "A timestamp with microseconds."},
    META + "FieldsV1": {"type": "object", "description": "A set of fields in the structured-merge-diff format."},
    META + "ObjectMeta": _obj(
        {
            "annotations": _string_map("Unstructured key value data set by external tools."),
            "creationTimestamp": ref(META + "Time", "When the object was created; set by the server."),
            "deletionGracePeriodSeconds": {**_INT64, "description": "Seconds left before the object is removed."},
            "deletionTimestamp": ref(META + "Time", "When the object will be deleted; set by the server."),
            "finalizers": {
                **_strings("Must be empty before the object is deleted from the registry.", "set"),
                "x-kubernetes-patch-strategy": "merge",
            },
            "generateName": _s("A prefix the server completes to a unique name when name is empty."),
            "generation": {**_INT64, "description": "A sequence number of the desired state."},
            "labels": _string_map("Map of string keys and values to organize and select objects."),
            "managedFields": _atomic_list(META + "ManagedFieldsEntry", "Which workflow manages which fields."),
            "name": _s("Unique within a namespace; cannot be updated."),
            "namespace": _s("The namespace the object lives in; empty for cluster-scoped objects."),
            "ownerReferences": _map_list(META + "OwnerReference", "Objects this object depends on.", "uid"),
            "resourceVersion": _s("An opaque version the server changes on every write."),
            "selfLink": _s("Deprecated; not set."),
            "uid": _s("Unique in time and space; set by the server."),
        },
        "Metadata every persisted resource has.",
    ),
    META + "ListMeta": _obj(
        {
            "continue": _s("Token to fetch the next page of a list."),
            "remainingItemCount": {**_INT64, "description": "How many items follow this page."},
            "resourceVersion": _s("The version of the list."),
            "selfLink": _s("Deprecated; not set."),
        },
        "Metadata of a list.",
    ),
    META + "ManagedFieldsEntry": _obj(
        {
            "apiVersion": _s("The version of the resource the fields are of."),
            "fieldsType": _s('The format of fieldsV1: "FieldsV1".'),
            "fieldsV1": ref(META + "FieldsV1", "The managed fields."),
            "manager": _s("Who manages these fields."),
            "operation": _s("Apply or Update."),
            "subresource": _s("The subresource the fields were written through."),
            "time": ref(META + "Time", "When the fields were last changed."),
        },
        "A field set a workflow manages.",
    ),
    META + "OwnerReference": _obj(
        {
            "apiVersion": {**_s("API version of the referent."), "default": ""},
            "blockOwnerDeletion": {**_BOOL, "description": "Foreground deletion waits for this object."},
            "controller": {**_BOOL, "description": "Whether the referent is the managing controller."},
            "kind": {**_s("Kind of the referent."), "default": ""},
            "name": {**_s("Name of the referent."), "default": ""},
            "uid": {**_s("UID of the referent."), "default": ""},
        },
        "Identifies an owning object in the same namespace.",
        required=("apiVersion", "kind", "name", "uid"),
        atomic=True,
    ),
    META + "LabelSelector": _obj(
        {
            "matchExpressions": _atomic_list(META + "LabelSelectorRequirement", "Requirements that all must hold."),
            "matchLabels": _string_map("Labels that must match exactly."),
        },
        "A label query over a set of resources.",
        atomic=True,
    ),
    META + "LabelSelectorRequirement": _obj(
        {
            "key": {**_s("The label key."), "default": ""},
            "operator": {**_s("In, NotIn, Exists or DoesNotExist."), "default": ""},
            "values": _strings("The values, for In and NotIn."),
        },
        "One requirement of a label selector.",
        required=("key", "operator"),
    ),
}

CORE_SCHEMAS: dict[str, Any] = {
    CORE + "ConfigMap": _top(
        "ConfigMap",
        "Configuration data for pods to consume.",
        {
            "binaryData": _string_map("Binary data, base64 encoded.", format="byte"),
            "data": _string_map("Configuration data."),
            "immutable": {**_BOOL, "description": "When true, data cannot be updated."},
        },
    ),
    CORE + "Secret": _top(
        "Secret",
        "Secret data of a type, such as a password or a certificate.",
        {
            "data": _string_map("Secret data, base64 encoded.", format="byte"),
            "immutable": {**_BOOL, "description": "When true, data cannot be updated."},
            "stringData": _string_map("Write-only data in plain text, merged into data."),
            "type": _s("Used to ease programmatic handling of secret data."),
        },
    ),
    CORE + "Namespace": _top(
        "Namespace",
        "A scope for names.",
        {
            "spec": ref(CORE + "NamespaceSpec", "The behaviour of the namespace."),
            "status": ref(CORE + "NamespaceStatus", "The observed status of the namespace."),
        },
    ),
    CORE + "NamespaceSpec": _obj(
        {"finalizers": _strings("Must be empty before the namespace is removed.")}, "The behaviour of a namespace."
    ),
    CORE + "NamespaceStatus": _obj(
        {
            "conditions": _map_list(CORE + "NamespaceCondition", "The namespace's current state.", "type"),
            "phase": _s("Active or Terminating.", enum=["Active", "Terminating"]),
        },
        "The observed status of a namespace.",
    ),
    CORE + "NamespaceCondition": _obj(
        {
            "lastTransitionTime": ref(META + "Time", "When the condition last changed."),
            "message": _s("A human-readable message."),
            "reason": _s("A machine-readable reason."),
            "status": {**_s("True, False or Unknown."), "default": ""},
            "type": {**_s("The type of the condition."), "default": ""},
        },
        "A condition of a namespace.",
        required=("type", "status"),
    ),
    CORE + "ServiceAccount": _top(
        "ServiceAccount",
        "An identity for processes.",
        {
            "automountServiceAccountToken": {**_BOOL, "description": "Whether pods mount a token automatically."},
            "imagePullSecrets": _atomic_list(CORE + "LocalObjectReference", "Secrets for pulling images."),
            "secrets": {
                **_atomic_list(CORE + "ObjectReference", "Secrets pods of this account may use."),
                "x-kubernetes-patch-merge-key": "name",
                "x-kubernetes-patch-strategy": "merge",
            },
        },
    ),
    CORE + "LocalObjectReference": _obj(
        {"name": {**_s("Name of the referent."), "default": ""}},
        "A reference to an object in the same namespace.",
        atomic=True,
    ),
    CORE + "ObjectReference": _obj(
        {
            "apiVersion": _s("API version of the referent."),
            "fieldPath": _s("A piece of the object, such as a container."),
            "kind": _s("Kind of the referent."),
            "name": _s("Name of the referent."),
            "namespace": _s("Namespace of the referent."),
            "resourceVersion": _s("The referent's resource version."),
            "uid": _s("UID of the referent."),
        },
        "A reference to any object.",
        atomic=True,
    ),
    CORE + "Event": _top(
        "Event",
        "A report of an event somewhere in the cluster.",
        {
            "action": _s("What was done, or failed to be done."),
            "count": {**_INT32, "description": "How many times it happened."},
            "eventTime": ref(META + "MicroTime", "When the event first happened."),
            "firstTimestamp": ref(META + "Time", "When the event was first recorded."),
            "involvedObject": ref(CORE + "ObjectReference", "The object this event is about."),
            "lastTimestamp": ref(META + "Time", "When the event was last recorded."),
            "message": _s("A human-readable description."),
            "reason": _s("A short machine-readable reason."),
            "related": ref(CORE + "ObjectReference", "A secondary object."),
            "reportingComponent": {**_s("The controller that emitted the event."), "default": ""},
            "reportingInstance": {**_s("The instance of that controller."), "default": ""},
            "series": ref(CORE + "EventSeries", "Data of a series of events."),
            "source": ref(CORE + "EventSource", "The component reporting the event."),
            "type": _s("Normal or Warning."),
        },
        required=("metadata", "involvedObject"),
    ),
    CORE + "EventSeries": _obj(
        {
            "count": {**_INT32, "description": "Occurrences in the series."},
            "lastObservedTime": ref(META + "MicroTime", "When the last occurrence was seen."),
        },
        "A series of events.",
    ),
    CORE + "EventSource": _obj(
        {"component": _s("The reporting component."), "host": _s("The node the event came from.")},
        "Who reported an event.",
    ),
}
