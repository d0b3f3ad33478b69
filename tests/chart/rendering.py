"""The chart as a service owner's `helm template` would render it, and strict manifest validation.

Rendering goes through Helm's own Go SDK (the `helm-python-sdk` wheel), so the templates, the
values.schema.json check and the CRDs folder behave exactly as `helm install` treats them. Every
manifest is validated with `kubernetes-validate` in strict mode (unknown fields are errors).
The ServiceMonitor is the one kind kubernetes-validate has no schema for (it comes from
prometheus-operator); it is checked against a strict schema of the fields the chart uses,
written from the operator's API reference.

Deliberately not here: asserting anything about the manifests (the tests do that).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import helm_python
import jsonschema  # type: ignore[import-untyped,unused-ignore]
import kubernetes_validate  # type: ignore[import-untyped,unused-ignore]
import yaml

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "servlet"
NAMESPACE = "kdp-system"
RELEASE = "servlet"

# The oldest Kubernetes the chart supports (Chart.yaml kubeVersion) and the newest schemas known.
KUBE_VERSIONS = ("1.27.0", kubernetes_validate.utils.latest_version())

# The four values without a default, as a service owner following the getting-started guide sets them.
REQUIRED_VALUES: dict[str, Any] = {
    "servlet": {"name": "tom", "apiGroup": "certificates.example.corp", "apiExport": "certificates.example.corp"},
    "kcpKubeconfig": {"secretName": "kdp-kubeconfig"},
}

# The bundled cert-manager example: Certificates with their TLS Secret.
CERTIFICATES = {"apiGroup": "cert-manager.io", "resources": ["certificates"], "relatedKinds": ["Secret"]}


# The documented example (charts/servlet/README.md): a corporate proxy and a private CA bundle.
PROXY_AND_CA: dict[str, Any] = {
    "extraEnv": [
        {"name": "HTTPS_PROXY", "value": "http://proxy.corp.example:3128"},
        {"name": "NO_PROXY", "value": "10.0.0.0/8,.svc,.cluster.local"},
        {"name": "SSL_CERT_FILE", "value": "/etc/servlet/ca/ca.crt"},
    ],
    "extraVolumes": [{"name": "corporate-ca", "configMap": {"name": "corporate-ca"}}],
    "extraVolumeMounts": [{"name": "corporate-ca", "mountPath": "/etc/servlet/ca", "readOnly": True}],
}


def with_required(**overrides: Any) -> dict[str, Any]:
    """The required values plus `overrides` (top-level keys, merged one level deep)."""
    values = copy.deepcopy(REQUIRED_VALUES)
    for key, value in overrides.items():
        if isinstance(value, dict) and isinstance(values.get(key), dict):
            values[key] = {**values[key], **value}
        else:
            values[key] = value
    return values


@functools.cache
def _chart() -> helm_python.Chart:
    return helm_python.Chart.load(CHART)


def render(values: Mapping[str, Any], *, namespace: str = NAMESPACE, release: str = RELEASE) -> list[dict[str, Any]]:
    """Every manifest the templates produce (not the CRDs), in template order; NOTES.txt left out."""
    rendered = _chart().render(dict(values), name=release, namespace=namespace, is_install=True)
    documents: list[dict[str, Any]] = []
    for path in sorted(rendered):
        if path.endswith("NOTES.txt"):
            continue
        documents.extend(doc for doc in yaml.safe_load_all(rendered[path]) if doc)
    return documents


def render_error(values: Mapping[str, Any]) -> str:
    """The message `helm install` would stop with; fails the test when the chart renders."""
    try:
        _chart().render(dict(values), name=RELEASE, namespace=NAMESPACE, is_install=True)
    except helm_python.HelmError as error:
        return str(error)
    raise AssertionError(f"the chart rendered with values {dict(values)!r}")


def crds() -> list[dict[str, Any]]:
    """The documents of the chart's crds/ folder, which Helm installs before the templates."""
    documents: list[dict[str, Any]] = []
    for crd in _chart().crds:
        documents.extend(doc for doc in yaml.safe_load_all(crd["data"]) if doc)
    return documents


def one(documents: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = [doc for doc in documents if doc["kind"] == kind]
    assert len(found) == 1, f"expected one {kind}, found {len(found)}"
    return found[0]


def kinds(documents: list[dict[str, Any]]) -> list[str]:
    return sorted(doc["kind"] for doc in documents)


# ---- validation ------------------------------------------------------------------------------------

_DURATION = {"type": "string", "pattern": r"^(0|(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$"}
_STRING_MAP = {"type": "object", "additionalProperties": {"type": "string"}}
_RELABEL_ACTIONS = [
    "Replace",
    "Keep",
    "Drop",
    "HashMod",
    "LabelMap",
    "LabelDrop",
    "LabelKeep",
    "Lowercase",
    "Uppercase",
    "KeepEqual",
    "DropEqual",
]
# monitoring.coreos.com/v1 RelabelConfig.
_RELABELINGS = {
    "type": "array",
    "items": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "sourceLabels": {"type": "array", "items": {"type": "string"}},
            "separator": {"type": "string"},
            "targetLabel": {"type": "string"},
            "regex": {"type": "string"},
            "modulus": {"type": "integer"},
            "replacement": {"type": "string"},
            "action": {"enum": _RELABEL_ACTIONS + [action.lower() for action in _RELABEL_ACTIONS]},
        },
    },
}
# monitoring.coreos.com/v1 ServiceMonitor, only the fields this chart writes, unknown ones rejected.
SERVICE_MONITOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "monitoring.coreos.com/v1"},
        "kind": {"const": "ServiceMonitor"},
        "metadata": {
            "type": "object",
            "required": ["name"],
            "additionalProperties": False,
            "properties": {"name": {"type": "string"}, "namespace": {"type": "string"}, "labels": _STRING_MAP},
        },
        "spec": {
            "type": "object",
            "required": ["selector", "endpoints"],
            "additionalProperties": False,
            "properties": {
                "selector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"matchLabels": _STRING_MAP},
                },
                "namespaceSelector": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "any": {"type": "boolean"},
                        "matchNames": {"type": "array", "items": {"type": "string"}},
                    },
                },
                "endpoints": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "port": {"type": "string"},
                            "path": {"type": "string"},
                            "scheme": {"enum": ["http", "https"]},
                            "interval": _DURATION,
                            "scrapeTimeout": _DURATION,
                            "relabelings": _RELABELINGS,
                            "metricRelabelings": _RELABELINGS,
                        },
                    },
                },
            },
        },
    },
}


def validate_strict(document: dict[str, Any], *, kube_version: str) -> None:
    """Raise when the manifest is not valid for `kube_version` (unknown fields included)."""
    if document.get("apiVersion") == "monitoring.coreos.com/v1" and document.get("kind") == "ServiceMonitor":
        jsonschema.validate(document, SERVICE_MONITOR_SCHEMA)
        return
    kubernetes_validate.validate(document, kube_version, strict=True)
