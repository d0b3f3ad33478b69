"""The built-in types kcpsim serves, as OpenAPI schemas under Kubernetes' definition names.

The meta and core types are in openapi_builtin_core.py; this module adds coordination, RBAC and
apiextensions, and says which definition each served kind has.
"""

from __future__ import annotations

from typing import Any

from kcpsim.openapi_builtin_core import (
    _BOOL,
    _INT32,
    _STR,
    CORE,
    CORE_SCHEMAS,
    CRD,
    META,
    META_SCHEMAS,
    RBAC,
    _atomic_list,
    _list,
    _obj,
    _s,
    _strings,
    _top,
    ref,
)

__all__ = ["BUILTIN_SCHEMAS", "KIND_DEFINITIONS", "LIST_SCHEMA", "META", "ref"]

_SUBJECTS = {"type": "array", "items": ref(RBAC + "Subject"), "x-kubernetes-list-type": "atomic"}

_COORDINATION = {
    "io.k8s.api.coordination.v1.Lease": _top(
        "Lease",
        "A lease, as used for leader election.",
        {"spec": ref("io.k8s.api.coordination.v1.LeaseSpec", "The lease's holder and timing.")},
    ),
    "io.k8s.api.coordination.v1.LeaseSpec": _obj(
        {
            "acquireTime": ref(META + "MicroTime", "When the current holder acquired the lease."),
            "holderIdentity": _s("Who holds the lease."),
            "leaseDurationSeconds": {**_INT32, "description": "How long candidates wait before taking it over."},
            "leaseTransitions": {**_INT32, "description": "How many times the holder changed."},
            "preferredHolder": _s("Who should hold the lease next."),
            "renewTime": ref(META + "MicroTime", "When the holder last renewed the lease."),
            "strategy": _s("How candidates are chosen."),
        },
        "The specification of a lease.",
    ),
}

_RBAC = {
    RBAC + "PolicyRule": _obj(
        {
            "apiGroups": _strings("API groups of the resources."),
            "nonResourceURLs": _strings("Partial URLs a user may reach."),
            "resourceNames": _strings("Names the rule is limited to."),
            "resources": _strings("Resources the rule applies to."),
            "verbs": _strings("Verbs the rule allows."),
        },
        "What a role allows.",
        required=("verbs",),
    ),
    RBAC + "Subject": _obj(
        {
            "apiGroup": _s("API group of the subject."),
            "kind": {**_s("User, Group or ServiceAccount."), "default": ""},
            "name": {**_s("Name of the subject."), "default": ""},
            "namespace": _s("Namespace of a ServiceAccount."),
        },
        "Who a binding applies to.",
        required=("kind", "name"),
        atomic=True,
    ),
    RBAC + "RoleRef": _obj(
        {
            "apiGroup": {**_s("API group of the role."), "default": ""},
            "kind": {**_s("Role or ClusterRole."), "default": ""},
            "name": {**_s("Name of the role."), "default": ""},
        },
        "The role a binding grants.",
        required=("apiGroup", "kind", "name"),
        atomic=True,
    ),
    RBAC + "AggregationRule": _obj(
        {
            "clusterRoleSelectors": _atomic_list(
                META + "LabelSelector", "ClusterRoles whose rules are aggregated into this one."
            )
        },
        "How a ClusterRole is aggregated.",
    ),
}
_RULES = {"rules": _atomic_list(RBAC + "PolicyRule", "The policy rules of the role.")}
_BINDING = {
    "roleRef": ref(RBAC + "RoleRef", "The role granted; cannot be changed."),
    "subjects": {**_SUBJECTS, "description": "Who the role is granted to."},
}
_RBAC |= {
    RBAC + "Role": _top("Role", "Namespaced policy rules.", _RULES),
    RBAC + "ClusterRole": _top(
        "ClusterRole",
        "Cluster-wide policy rules.",
        {"aggregationRule": ref(RBAC + "AggregationRule", "How the rules are aggregated."), **_RULES},
    ),
    RBAC + "RoleBinding": _top("RoleBinding", "Grants a role in a namespace.", _BINDING, required=("roleRef",)),
    RBAC + "ClusterRoleBinding": _top(
        "ClusterRoleBinding", "Grants a ClusterRole cluster-wide.", _BINDING, required=("roleRef",)
    ),
}

_CRDS = {
    CRD + "CustomResourceDefinition": _top(
        "CustomResourceDefinition",
        "A resource served by the API server.",
        {
            "spec": ref(CRD + "CustomResourceDefinitionSpec", "The resource's names, scope and versions."),
            "status": {
                "type": "object",
                "description": "The state of the definition.",
                "x-kubernetes-preserve-unknown-fields": True,
            },
        },
        required=("spec",),
    ),
    CRD + "CustomResourceDefinitionSpec": _obj(
        {
            "conversion": {
                "type": "object",
                "description": "How versions convert.",
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "group": {**_s("The API group."), "default": ""},
            "names": ref(CRD + "CustomResourceDefinitionNames", "The resource's names."),
            "preserveUnknownFields": {**_BOOL, "description": "Deprecated; must be false."},
            "scope": {**_s("Cluster or Namespaced."), "default": ""},
            "versions": _atomic_list(CRD + "CustomResourceDefinitionVersion", "The served versions."),
        },
        "The specification of a CustomResourceDefinition.",
        required=("group", "names", "scope", "versions"),
    ),
    CRD + "CustomResourceDefinitionNames": _obj(
        {
            "categories": _strings("Groups of resources, such as all."),
            "kind": {**_s("The kind."), "default": ""},
            "listKind": _s("The list's kind."),
            "plural": {**_s("The plural name, used in URLs."), "default": ""},
            "shortNames": _strings("Short names for kubectl."),
            "singular": _s("The singular name."),
        },
        "The names of a custom resource.",
        required=("plural", "kind"),
    ),
    CRD + "CustomResourceDefinitionVersion": _obj(
        {
            "additionalPrinterColumns": {
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "description": "Columns kubectl get shows.",
                "x-kubernetes-list-type": "atomic",
            },
            "deprecated": _BOOL,
            "deprecationWarning": _STR,
            "name": {**_s("The version name, such as v1."), "default": ""},
            "schema": {
                "type": "object",
                "description": "The version's OpenAPI v3 schema (openAPIV3Schema).",
                "x-kubernetes-preserve-unknown-fields": True,
            },
            "selectableFields": {
                "type": "array",
                "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "x-kubernetes-list-type": "atomic",
            },
            "served": {**_BOOL, "default": False},
            "storage": {**_BOOL, "default": False},
            "subresources": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "One version of a custom resource.",
        required=("name", "served", "storage"),
    ),
}

BUILTIN_SCHEMAS: dict[str, Any] = META_SCHEMAS | CORE_SCHEMAS | _COORDINATION | _RBAC | _CRDS
# The definition of each served built-in kind, by (group, kind); kinds missing here (the
# create-only reviews) are not published.
KIND_DEFINITIONS: dict[tuple[str, str], str] = {
    ("", "ConfigMap"): CORE + "ConfigMap",
    ("", "Secret"): CORE + "Secret",
    ("", "Namespace"): CORE + "Namespace",
    ("", "ServiceAccount"): CORE + "ServiceAccount",
    ("", "Event"): CORE + "Event",
    ("coordination.k8s.io", "Lease"): "io.k8s.api.coordination.v1.Lease",
    ("rbac.authorization.k8s.io", "Role"): RBAC + "Role",
    ("rbac.authorization.k8s.io", "ClusterRole"): RBAC + "ClusterRole",
    ("rbac.authorization.k8s.io", "RoleBinding"): RBAC + "RoleBinding",
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): RBAC + "ClusterRoleBinding",
    ("apiextensions.k8s.io", "CustomResourceDefinition"): CRD + "CustomResourceDefinition",
}
LIST_SCHEMA = _list
