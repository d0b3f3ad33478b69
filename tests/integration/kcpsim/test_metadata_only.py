"""Metadata-only lists, watches and gets (PartialObjectMetadata), as kube-apiserver answers them,
on the service cluster and through the virtual workspace's wildcard."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import Secret

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import EXPORT, ORG, TEAM_A, Raw, read_events

LIST_ACCEPT = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
ONE_ACCEPT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
# What Kubernetes' metadata client sends: protobuf first, which the simulator skips.
CLIENT_GO_LIST_ACCEPT = (
    f"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,{LIST_ACCEPT}"
)
VW_SECRETS = f"/services/apiexport/{ORG}/{EXPORT}/clusters/*/api/v1/secrets"
SERVICE_SECRETS = "/api/v1/secrets"


def _secret(name: str) -> Secret:
    return Secret(
        metadata=ObjectMeta(name=name, namespace="default", labels={"app": "web"}), stringData={"tls.crt": "x" * 1000}
    )


def _is_partial(obj: dict[str, Any]) -> bool:
    return set(obj) == {"apiVersion", "kind", "metadata"} and (obj["apiVersion"], obj["kind"]) == (
        "meta.k8s.io/v1",
        "PartialObjectMetadata",
    )


@pytest.mark.parametrize("accept", [LIST_ACCEPT, CLIENT_GO_LIST_ACCEPT])
@pytest.mark.parametrize("where", ["service", "vw"])
def test_a_metadata_list_has_only_metadata(where: str, accept: str, service: Client, team_a: Client, raw: Raw) -> None:
    (service if where == "service" else team_a).create(_secret("web-tls"))
    path = SERVICE_SECRETS if where == "service" else VW_SECRETS
    body = raw.client.get(path, headers={"Accept": accept}).json()
    assert (body["apiVersion"], body["kind"]) == ("meta.k8s.io/v1", "PartialObjectMetadataList")
    assert body["metadata"]["resourceVersion"]
    [item] = [item for item in body["items"] if item["metadata"]["name"] == "web-tls"]
    assert _is_partial(item)
    assert item["metadata"]["labels"]["app"] == "web" and item["metadata"]["resourceVersion"]
    if where == "vw":
        assert item["metadata"]["annotations"]["kcp.io/cluster"] == TEAM_A


@pytest.mark.parametrize("where", ["service", "vw"])
def test_a_metadata_watch_streams_partial_objects(
    where: str, service: Client, team_a: Client, raw: Raw, kcpsim: KcpSim
) -> None:
    start = str(kcpsim.world.store.rv)
    client = service if where == "service" else team_a
    client.create(_secret("web-tls"))
    client.patch(Secret, "web-tls", {"stringData": {"tls.key": "y"}}, namespace="default")
    path = SERVICE_SECRETS if where == "service" else VW_SECRETS
    params = {"watch": "true", "resourceVersion": start, "timeoutSeconds": "2"}
    with raw.client.stream("GET", path, params=params, headers={"Accept": ONE_ACCEPT}) as response:
        events = read_events(response, 2)
    assert [event["type"] for event in events] == ["ADDED", "MODIFIED"]
    assert all(_is_partial(event["object"]) for event in events)
    assert events[0]["object"]["metadata"]["resourceVersion"] != events[1]["object"]["metadata"]["resourceVersion"]


def test_a_metadata_get_has_only_metadata(service: Client, raw: Raw) -> None:
    service.create(_secret("web-tls"))
    body = raw.client.get(
        f"{SERVICE_SECRETS.replace('/secrets', '/namespaces/default/secrets')}/web-tls", headers={"Accept": ONE_ACCEPT}
    ).json()
    assert _is_partial(body) and body["metadata"]["name"] == "web-tls"


@pytest.mark.parametrize(("verb", "accept"), [("list", ONE_ACCEPT), ("watch", LIST_ACCEPT)])
def test_the_wrong_metadata_form_is_not_acceptable(verb: str, accept: str, raw: Raw) -> None:
    params = {"watch": "true", "timeoutSeconds": "1"} if verb == "watch" else {}
    response = raw.client.get(SERVICE_SECRETS, params=params, headers={"Accept": accept})
    assert response.status_code == 406 and response.json()["reason"] == "NotAcceptable"


def test_a_plain_list_still_has_whole_objects(service: Client, raw: Raw) -> None:
    service.create(_secret("web-tls"))
    body = raw.client.get(SERVICE_SECRETS, headers={"Accept": "application/json"}).json()
    assert body["kind"] == "SecretList" and all("data" in item for item in body["items"])
