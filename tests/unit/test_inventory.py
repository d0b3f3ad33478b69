"""Sorting manifests: kinds the servlet reads, remote vs local by kcp.io/cluster, bad documents."""

from typing import Any

import pytest

from servlet.core.inventory import Document, build_inventory


def obj(api_version: str, kind: str, name: str, **metadata: Any) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, **metadata}}


def doc(content: object, source: str = "in.yaml") -> Document:
    return Document(source=source, content=content)


def test_each_kind_lands_in_its_bucket_and_kcp_cluster_marks_remote_objects() -> None:
    remote_secret = obj("v1", "Secret", "s", namespace="default", annotations={"kcp.io/cluster": "abc"})
    local_secret = obj("v1", "Secret", "s", namespace="default")
    inventory = build_inventory(
        doc(content)
        for content in [
            obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", "crd"),
            obj("services.kdp.k8c.io/v1alpha1", "PublishedResource", "pr"),
            obj("apis.kcp.io/v1alpha1", "APIExport", "export", annotations={"kcp.io/cluster": "org"}),
            obj("apis.kcp.io/v1alpha1", "APIResourceSchema", "v1.things.example.corp"),
            obj("apis.kcp.io/v1alpha1", "APIExportEndpointSlice", "export"),
            remote_secret,
            local_secret,
        ]
    )
    assert [o["metadata"]["name"] for o in inventory.crds] == ["crd"]
    assert [o["metadata"]["name"] for o in inventory.published_resources] == ["pr"]
    assert [o["metadata"]["name"] for o in inventory.api_exports] == ["export"]
    assert len(inventory.schemas) == len(inventory.endpoint_slices) == 1
    assert inventory.remote_objects == (remote_secret,)
    assert inventory.local_objects == (local_secret,)
    assert inventory.problems == ()


def test_list_documents_are_unpacked_and_empty_documents_ignored() -> None:
    items = [obj("v1", "Namespace", "a"), obj("v1", "Namespace", "b")]
    inventory = build_inventory([doc({"apiVersion": "v1", "kind": "List", "items": items}), doc(None)])
    assert [o["metadata"]["name"] for o in inventory.local_objects] == ["a", "b"]
    assert inventory.problems == ()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("just text", "the document is a str, not a Kubernetes object"),
        ({"kind": "Secret", "metadata": {"name": "x"}}, "the document has no apiVersion"),
        ({"apiVersion": "v1", "metadata": {"name": "x"}}, "the document has no kind"),
        ({"apiVersion": "v1", "kind": "Secret"}, "the document has no metadata.name"),
    ],
)
def test_a_document_that_is_no_object_is_reported_with_its_source(content: object, message: str) -> None:
    inventory = build_inventory([doc(content, source="team.yaml#3")])
    assert [(p.field, p.message) for p in inventory.problems] == [("team.yaml#3", message)]
    assert inventory.local_objects == inventory.remote_objects == ()
