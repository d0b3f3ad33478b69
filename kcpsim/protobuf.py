"""Protobuf request bodies (`application/vnd.kubernetes.protobuf`) of the built-in kinds kubectl
sends them for: Namespaces, ConfigMaps and Secrets (`kubectl create namespace|configmap|secret`).

A body is the magic `k8s\\x00` and a `runtime.Unknown` message whose `raw` field holds the
object's message; the messages are read by their field numbers in k8s.io/api's generated.proto
with a small reader of the protobuf wire format, into the JSON form the rest of kcpsim handles.
Proto3 leaves no trace of empty fields, so empty strings, zero numbers and empty times are
dropped, as Go's `omitempty` drops them from JSON. Other kinds are refused with 415.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from kcpsim import errors

__all__ = ["MEDIA_TYPE", "decode"]

MEDIA_TYPE = "application/vnd.kubernetes.protobuf"
_MAGIC = b"k8s\x00"

Fields = dict[int, list[Any]]  # field number -> values in order (ints for varints, bytes otherwise)


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if not byte & 0x80:
            return value, at


def _fields(data: bytes) -> Fields:
    """The message's fields; fixed-width values are kept as their bytes."""
    out: Fields = {}
    at = 0
    while at < len(data):
        key, at = _varint(data, at)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, at = _varint(data, at)
        elif wire == 2:
            size, at = _varint(data, at)
            value, at = data[at : at + size], at + size
            if at > len(data):
                raise ValueError("truncated field")
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            value, at = data[at : at + width], at + width
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.setdefault(number, []).append(value)
    return out


def _text(fields: Fields, number: int) -> str:
    return bytes(fields.get(number, [b""])[-1]).decode("utf-8")


def _int(fields: Fields, number: int) -> int:
    value = int(fields.get(number, [0])[-1])
    return value - (1 << 64) if value >= 1 << 63 else value  # int64 two's complement


def _texts(fields: Fields, number: int) -> list[str]:
    return [bytes(v).decode("utf-8") for v in fields.get(number, [])]


def _map(fields: Fields, number: int, value: Callable[[bytes], Any]) -> dict[str, Any]:
    entries = {}
    for raw in fields.get(number, []):
        entry = _fields(raw)
        entries[_text(entry, 1)] = value(entry.get(2, [b""])[-1])
    return entries


def _owner_reference(raw: bytes) -> dict[str, Any]:
    fields = _fields(raw)
    ref: dict[str, Any] = {"apiVersion": _text(fields, 5), "kind": _text(fields, 1), "name": _text(fields, 3)}
    ref["uid"] = _text(fields, 4)
    for number, name in ((6, "controller"), (7, "blockOwnerDeletion")):
        if number in fields:
            ref[name] = bool(_int(fields, number))
    return ref


def _object_meta(raw: bytes) -> dict[str, Any]:
    fields = _fields(raw)
    meta: dict[str, Any] = {}
    for number, name in ((1, "name"), (2, "generateName"), (3, "namespace"), (5, "uid"), (6, "resourceVersion")):
        if _text(fields, number):
            meta[name] = _text(fields, number)
    for number, name in ((11, "labels"), (12, "annotations")):
        if number in fields:
            meta[name] = _map(fields, number, lambda v: bytes(v).decode("utf-8"))
    if 13 in fields:
        meta["ownerReferences"] = [_owner_reference(v) for v in fields[13]]
    if 14 in fields:
        meta["finalizers"] = _texts(fields, 14)
    return meta


def _utf8(value: bytes) -> str:
    return bytes(value).decode("utf-8")


def _b64(value: bytes) -> str:
    return base64.b64encode(bytes(value)).decode("ascii")


def _config_map(fields: Fields) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    if 2 in fields:
        obj["data"] = _map(fields, 2, _utf8)
    if 3 in fields:
        obj["binaryData"] = _map(fields, 3, _b64)
    if 4 in fields:
        obj["immutable"] = bool(_int(fields, 4))
    return obj


def _secret(fields: Fields) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    if 2 in fields:
        obj["data"] = _map(fields, 2, _b64)
    if _text(fields, 3):
        obj["type"] = _text(fields, 3)
    if 4 in fields:
        obj["stringData"] = _map(fields, 4, _utf8)
    if 5 in fields:
        obj["immutable"] = bool(_int(fields, 5))
    return obj


def _namespace(fields: Fields) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    if 2 in fields:
        finalizers = _texts(_fields(fields[2][-1]), 1)
        obj["spec"] = {"finalizers": finalizers} if finalizers else {}
    return obj


_KINDS: dict[tuple[str, str], Callable[[Fields], dict[str, Any]]] = {
    ("v1", "ConfigMap"): _config_map,
    ("v1", "Secret"): _secret,
    ("v1", "Namespace"): _namespace,
}


def decode(body: bytes) -> dict[str, Any]:
    """The JSON form of a protobuf-encoded Namespace, ConfigMap or Secret; 415 for other kinds."""
    if not body.startswith(_MAGIC):
        raise errors.bad_request("provided object is not a protobuf message: the k8s\\x00 prefix is missing")
    try:
        envelope = _fields(body[len(_MAGIC) :])
        type_meta = _fields(envelope.get(1, [b""])[-1])
        api_version, kind = _text(type_meta, 1), _text(type_meta, 2)
        read = _KINDS.get((api_version, kind))
        if read is None:
            raise errors.unsupported_media_type(f"{MEDIA_TYPE} ({api_version or '?'} {kind or '?'})")
        fields = _fields(envelope.get(2, [b""])[-1])
        obj = {"apiVersion": api_version, "kind": kind, "metadata": _object_meta(fields.get(1, [b""])[-1])}
        obj.update(read(fields))
    except (ValueError, UnicodeDecodeError) as error:
        raise errors.bad_request(f"the protobuf body of the request could not be read: {error}") from None
    return obj
