"""What the end-to-end tests publish and create, and what SPEC says the results are called.

The CRDs of the service cluster (the bundled cert-manager example, plus two small ones: a
namespaced `Widget` and a cluster-scoped `Gadget`, neither with a status subresource),
PublishedResources built from them, users' objects, and the names and link metadata SPEC 5 and
6 promise. Computed here from the SPEC's rules with hashlib, never with the servlet's own code.
"""

from __future__ import annotations

import copy
import hashlib
from typing import Any

import attrs

from kcpsim.harness.world import EXAMPLES, load_yaml, resource_path

GROUP = "certificates.example.corp"  # the servlet's API group, also the APIExport's name
SERVLET = "tom"
LINK = "syncer.kdp.k8c.io"
FINALIZER = f"{LINK}/cleanup"


@attrs.frozen
class Resource:
    """A resource on one side, enough to build its URLs."""

    group: str
    version: str
    plural: str
    namespaced: bool = True

    def path(self, *, namespace: str = "", name: str = "") -> str:
        return resource_path(
            group=self.group,
            version=self.version,
            plural=self.plural,
            namespace=namespace if self.namespaced else "",
            name=name,
        )


# Local (service cluster) resources and their projections in kcp.
CERTIFICATE = Resource("cert-manager.io", "v1", "certificates")
ZERTIFIKAT = Resource(GROUP, "v1beta1", "zertifikate")
WIDGET = Resource("example.com", "v1", "widgets")
REMOTE_WIDGET = Resource(GROUP, "v1", "widgets")
GADGET = Resource("example.com", "v1", "gadgets", namespaced=False)
SECRET = Resource("", "v1", "secrets")
CONFIGMAP = Resource("", "v1", "configmaps")


def sha1(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def default_local_name(*, namespace: str, name: str) -> str:
    """SPEC 5 default for a namespaced remote object kept in a namespaced local one."""
    return f"{sha1(namespace)[:20]}-{sha1(name)[:20]}"


def example_local_name(*, namespace: str, name: str) -> str:
    """The bundled example's pattern `cert-$remoteNamespaceHash-$remoteNameHash`."""
    return f"cert-{default_local_name(namespace=namespace, name=name)}"


def link_labels(*, cluster: str, namespace: str, name: str, resource: str = "") -> dict[str, str]:
    """SPEC 6 labels on a local primary (and on a local copy of a platform-origin object).

    `resource`: the remote resource as `plural.group`, which every primary's copy names."""
    labels = {
        f"{LINK}/servlet": SERVLET,
        f"{LINK}/remote-object-cluster": cluster,
        f"{LINK}/remote-object-name-hash": sha1(name),
    }
    if namespace:
        labels[f"{LINK}/remote-object-namespace-hash"] = sha1(namespace)
    if resource:
        labels[f"{LINK}/remote-object-resource-hash"] = sha1(resource)
    return labels


# ---- CRDs ----------------------------------------------------------------------------------------
def certificate_crd() -> dict[str, Any]:
    """The bundled trimmed cert-manager Certificate CRD (status subresource, v1)."""
    (crd,) = load_yaml(EXAMPLES / "crd-certificates.yaml")
    return crd


def _small_crd(*, kind: str, plural: str, scope: str) -> dict[str, Any]:
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": {"type": "object"},
                "spec": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "integer"},
                        "color": {"type": "string"},
                        "note": {"type": "string"},
                    },
                },
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
            },
        }
    }
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            # No status subresource: status is an ordinary field and must not flow up.
            "versions": [{"name": "v1", "served": True, "storage": True, "schema": schema}],
        },
    }


def widget_crd() -> dict[str, Any]:
    return _small_crd(kind="Widget", plural="widgets", scope="Namespaced")


def gadget_crd() -> dict[str, Any]:
    return _small_crd(kind="Gadget", plural="gadgets", scope="Cluster")


# ---- PublishedResources --------------------------------------------------------------------------
EXAMPLE = "publish-certmanager-certs"  # the name of the bundled example


def example_published_resource() -> dict[str, Any]:
    """The bundled example: Certificates as `Zertifikat`, custom naming, the TLS Secret up."""
    (pr,) = load_yaml(EXAMPLES / "publishedresource.yaml")
    return pr


def certificates_with_platform_secret() -> dict[str, Any]:
    """The example plus a workspace Secret (origin platform) named `<spec.issuerRef.name>-ca`."""
    pr = copy.deepcopy(example_published_resource())
    pr["spec"]["related"].append(
        {
            "identifier": "issuer-ca",
            "origin": "platform",
            "kind": "Secret",
            "reference": {
                "name": {"path": "spec.issuerRef.name", "regex": {"pattern": "^(.*)$", "replacement": "\\1-ca"}}
            },
        }
    )
    return pr


def issued_secrets(*, pattern: str, replacement: str = "\\1") -> dict[str, Any]:
    """A related entry: the operator's Secrets labelled `issued-for` the primary's local copy, up
    into the workspace, renamed by the regex `pattern` and `replacement`."""
    return {
        "identifier": "issued",
        "origin": "service",
        "kind": "Secret",
        "object": {
            "selector": {
                "matchLabels": {"issued-for": "{{ .Object.metadata.name }}"},
                "rewrite": {"regex": {"pattern": pattern, "replacement": replacement}},
            }
        },
    }


def published_resource(name: str, *, kind: str, api_group: str = "example.com", **spec: Any) -> dict[str, Any]:
    """A PublishedResource for a CRD of this cluster; `spec` adds projection, naming, filter, ..."""
    return {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": name},
        "spec": {"resource": {"apiGroup": api_group, "kind": kind}, **spec},
    }


# ---- users' objects ------------------------------------------------------------------------------
def zertifikat(
    name: str,
    *,
    namespace: str = "default",
    labels: dict[str, str] | None = None,
    secret_name: str = "",
    issuer: str = "example-corp-ca",
    **spec: Any,
) -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1beta1",
        "kind": "Zertifikat",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {
            "secretName": secret_name or f"{name}-tls",
            "commonName": f"{name}.example.corp",
            "dnsNames": [f"{name}.example.corp"],
            "issuerRef": {"name": issuer, "kind": "ClusterIssuer"},
            **spec,
        },
    }


def remote_object(
    kind: str, name: str, *, namespace: str = "", labels: dict[str, str] | None = None, version: str = "v1", **spec: Any
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "labels": labels or {}}
    if namespace:
        metadata["namespace"] = namespace
    return {"apiVersion": f"{GROUP}/{version}", "kind": kind, "metadata": metadata, "spec": spec}


def secret(
    name: str, *, namespace: str, data: dict[str, str], type_: str = "Opaque", labels: dict[str, str] | None = None
) -> dict[str, Any]:
    """`data` values are already base64, as the API wants them."""
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": type_,
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "data": data,
    }
