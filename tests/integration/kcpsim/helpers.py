"""Shared resources and a raw-HTTP helper for the kcpsim contract suite."""

from __future__ import annotations

import json
from typing import Any

import httpx2
from lightkube import codecs
from lightkube.generic_resource import create_global_resource, create_namespaced_resource

from kcpsim import KcpSim

Widget = create_namespaced_resource("example.com", "v1", "Widget", "widgets")
Gadget = create_global_resource("example.com", "v1", "Gadget", "gadgets")
Certificate = create_namespaced_resource("certificates.example.corp", "v1alpha1", "Certificate", "certificates")
APIExport = create_global_resource("apis.kcp.io", "v1alpha1", "APIExport", "apiexports")
APIExportV2 = create_global_resource("apis.kcp.io", "v1alpha2", "APIExport", "apiexports")
APIBinding = create_global_resource("apis.kcp.io", "v1alpha1", "APIBinding", "apibindings")
APIBindingV2 = create_global_resource("apis.kcp.io", "v1alpha2", "APIBinding", "apibindings")
EndpointSlice = create_global_resource("apis.kcp.io", "v1alpha1", "APIExportEndpointSlice", "apiexportendpointslices")
LogicalCluster = create_global_resource("core.kcp.io", "v1alpha1", "LogicalCluster", "logicalclusters")
APIResourceSchema = create_global_resource("apis.kcp.io", "v1alpha1", "APIResourceSchema", "apiresourceschemas")
Workspace = create_global_resource("tenancy.kcp.io", "v1alpha1", "Workspace", "workspaces")

EXPORT = "certificates.example.corp"
TEAM_A = "k7v2m9x4q1w8z3r5"
TEAM_B = "p4n8c2l6t0y9h1j3"
ORG = "abc123xyz"
EXPORT_HASH = "ctMOoTyQ5TS9ooROjIrRCm3Jaj5i0aD00zbqOS"
SECRETS_CLAIM = "ctwrJRvMX7cX8wwk40Lz00UjJhYxPWE3TpN1lu"
NAMESPACES_CLAIM = "4cL2J00WaeDbgQZyTP0B3usZwJbanHloGndI7P"
IDENTITY = "5685b0de1001accae215edb874e741afcd19bcdaafa1cded11a504f722a0375a"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def widget_crd(
    *,
    scope: str = "Namespaced",
    status: bool = True,
    kind: str = "Widget",
    plural: str = "widgets",
    versions: tuple[str, ...] = ("v1",),
    immutable_spec: bool = False,
) -> Any:
    schema = {
        "openAPIV3Schema": {
            "type": "object",
            "properties": {
                "spec": {
                    "type": "object",
                    "properties": {
                        "size": {"type": "integer"},
                        "color": {"type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                    "required": ["size"],
                },
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
            },
        }
    }
    if immutable_spec:
        schema["openAPIV3Schema"]["properties"]["spec"]["x-kubernetes-validations"] = [  # type: ignore[index]
            {"rule": "self == oldSelf", "message": "spec is immutable"}
        ]
    return codecs.from_dict(
        {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.example.com"},
            "spec": {
                "group": "example.com",
                "scope": scope,
                "names": {"plural": plural, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"},
                "versions": [
                    {
                        "name": v,
                        "served": True,
                        "storage": i == 0,
                        "schema": schema,
                        **({"subresources": {"status": {}}} if status else {}),
                    }
                    for i, v in enumerate(versions)
                ],
            },
        }
    )


def example_io_widget_crd(schema: dict[str, Any], *, subresources: dict[str, Any] | None = None) -> dict[str, Any]:
    """The CRD of the namespaced Widgets of example.io/v1 as a plain body: `schema` is their
    openAPIV3Schema, `subresources` what the version serves besides."""
    version: dict[str, Any] = {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
    if subresources is not None:
        version["subresources"] = subresources
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {
            "group": "example.io",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
            "versions": [version],
        },
    }


def certificate(name: str, namespace: str = "default", **spec: Any) -> Any:
    return Certificate(
        {
            "apiVersion": "certificates.example.corp/v1alpha1",
            "kind": "Certificate",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"commonName": f"{name}.example", **spec},
        }
    )


class Raw:
    """Plain HTTP against the simulator, for what lightkube cannot express."""

    def __init__(self, sim: KcpSim, *, token: str | None = None) -> None:
        """Requests carry `token`; the simulator's admin token unless given, none if ""."""
        verify: Any = False  # plain HTTP: no CA bundle to load
        if sim.tls is not None:
            import ssl

            verify = ssl.create_default_context(cadata=sim.tls.ca_pem.decode())
        token = sim.auth.admin_token if token is None else token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.client = httpx2.Client(base_url=sim.base_url, trust_env=False, verify=verify, timeout=10, headers=headers)

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
    ) -> httpx2.Response:
        content = body if isinstance(body, (bytes, str)) else (json.dumps(body) if body is not None else None)
        return self.client.request(
            method,
            path,
            content=content,
            params=params,
            headers={"Content-Type": content_type} if content is not None else {},
        )

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> Raw:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def stream_lines(response: httpx2.Response) -> list[dict[str, Any]]:
    return [json.loads(line) for line in response.iter_lines() if line.strip()]


def read_events(response: httpx2.Response, count: int) -> list[dict[str, Any]]:
    """The first `count` events of a watch stream (without waiting for it to end)."""
    events: list[dict[str, Any]] = []
    for line in response.iter_lines():
        if line.strip():
            events.append(json.loads(line))
        if len(events) == count:
            break
    return events
