"""Protobuf request bodies: kubectl 1.32 sends `kubectl create configmap|secret|namespace` as
`application/vnd.kubernetes.protobuf`, and kcpsim reads them as kube-apiserver does."""

from __future__ import annotations

import base64
import json
from pathlib import Path

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import Raw
from tests.integration.kcpsim.kubectl import kubectl

PROTOBUF = "application/vnd.kubernetes.protobuf"
# What kubectl 1.32 sent for `kubectl create configmap lit -n default --from-literal=a=b`.
KUBECTL_CONFIGMAP = bytes.fromhex(
    "6b3873000a0f0a0276311209436f6e6669674d61701224"
    "0a1a0a036c697412001a0764656661756c7422002a00320038004200"
    "12060a0161120162"
    "1a002200"
)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _field(number: int, payload: bytes | str) -> bytes:
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _entry(number: int, key: str, value: bytes | str) -> bytes:
    return _field(number, _field(1, key) + _field(2, value))


def _envelope(kind: str, raw: bytes) -> bytes:
    return b"k8s\x00" + _field(1, _field(1, "v1") + _field(2, kind)) + _field(2, raw)


def test_the_configmap_kubectl_sends_is_created(raw: Raw) -> None:
    response = raw("POST", "/api/v1/namespaces/default/configmaps", KUBECTL_CONFIGMAP, content_type=PROTOBUF)
    assert response.status_code == 201, response.text
    created = response.json()
    assert (created["metadata"]["name"], created["data"]) == ("lit", {"a": "b"})


def test_a_secret_and_a_namespace_are_read_with_their_metadata(raw: Raw) -> None:
    meta = _field(1, "s") + _entry(11, "team", "a") + _entry(12, "note", "x") + _field(14, "example.com/keep")
    secret = _field(1, meta) + _entry(2, "key", b"\x00\xff") + _field(3, "Opaque") + _entry(4, "plain", "text")
    response = raw("POST", "/api/v1/namespaces/default/secrets", _envelope("Secret", secret), content_type=PROTOBUF)
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["metadata"]["labels"] == {"team": "a"} and created["metadata"]["annotations"] == {"note": "x"}
    assert created["metadata"]["finalizers"] == ["example.com/keep"]
    assert created["type"] == "Opaque"
    assert created["data"] == {
        "key": base64.b64encode(b"\x00\xff").decode(),
        "plain": base64.b64encode(b"text").decode(),
    }
    raw(
        "PATCH",
        "/api/v1/namespaces/default/secrets/s",
        {"metadata": {"finalizers": None}},
        content_type="application/merge-patch+json",
    )
    namespace = _field(1, _field(1, "shop"))
    response = raw("POST", "/api/v1/namespaces", _envelope("Namespace", namespace), content_type=PROTOBUF)
    assert response.status_code == 201 and response.json()["status"]["phase"] == "Active"


def test_other_kinds_and_broken_bodies_are_refused(raw: Raw) -> None:
    role = _envelope("ServiceAccount", _field(1, _field(1, "sa")))
    refused = raw("POST", "/api/v1/namespaces/default/serviceaccounts", role, content_type=PROTOBUF)
    assert (refused.status_code, refused.json()["reason"]) == (415, "UnsupportedMediaType")
    broken = raw("POST", "/api/v1/namespaces/default/configmaps", KUBECTL_CONFIGMAP[:30], content_type=PROTOBUF)
    assert broken.status_code == 400
    assert raw("POST", "/api/v1/namespaces/default/configmaps", b"{}", content_type=PROTOBUF).status_code == 400


def test_kubectl_1_32_creates_configmaps_secrets_and_namespaces(kcpsim: KcpSim, raw: Raw, tmp_path: Path) -> None:
    kubeconfig = kcpsim.write_kubeconfigs(tmp_path)["service"]
    for args in (
        ("configmap", "c", "-n", "default", "--from-literal=a=b"),
        ("secret", "generic", "s", "-n", "default", "--from-literal=a=b"),
        ("namespace", "shop"),
    ):
        created = kubectl(kubeconfig, "create", *args, "-o", "json", cache=tmp_path, version="1.32")
        assert created.returncode == 0, created.stderr
        assert json.loads(created.stdout)["metadata"]["uid"]
    assert raw("GET", "/api/v1/namespaces/default/configmaps/c").json()["data"] == {"a": "b"}
    assert raw("GET", "/api/v1/namespaces/default/secrets/s").json()["data"] == {"a": base64.b64encode(b"b").decode()}
    assert raw("GET", "/api/v1/namespaces/shop").status_code == 200
