"""The Swagger 2.0 document as protocol buffers, the form kubectl asks `/openapi/v2` for.

client-go requests `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and decodes the
answer as gnostic's `openapi.v2.Document`; it does not accept JSON there. This encodes the JSON
document openapi_docs.py builds into that message: the info, every path's operations with their
parameters, responses and vendor extensions, and every definition. Field numbers are those of
gnostic's OpenAPIv2.proto. Vendor extensions and literal values (`default`, `enum`, `example`)
travel as YAML text (JSON is YAML), as gnostic carries them. Schema keywords Swagger 2.0 does not
have (`nullable`, `anyOf`, `oneOf`, `not`) are left out.
"""

from __future__ import annotations

import struct
from typing import Any

import msgspec

MEDIA_TYPES = (
    "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
)


def _varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1  # negative int64s as ten-byte two's complement
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _key(field: int, wire: int) -> bytes:
    return _varint(field << 3 | wire)


def _bytes(field: int, data: bytes) -> bytes:
    return _key(field, 2) + _varint(len(data)) + data


def _string(field: int, text: Any) -> bytes:
    return _bytes(field, str(text).encode()) if text not in (None, "") else b""


def _strings(field: int, texts: Any) -> bytes:
    return b"".join(_bytes(field, str(text).encode()) for text in texts or ())


def _bool(field: int, value: Any) -> bytes:
    return _key(field, 0) + b"\x01" if value is True else b""


def _int(field: int, value: Any) -> bytes:
    return _key(field, 0) + _varint(int(value)) if isinstance(value, int) and not isinstance(value, bool) else b""


def _double(field: int, value: Any) -> bytes:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return b""
    return _key(field, 1) + struct.pack("<d", float(value))


def _any(value: Any) -> bytes:
    """gnostic's Any: the value as YAML text (field 2)."""
    return _string(2, msgspec.json.encode(value).decode())


def _extensions(field: int, node: dict[str, Any]) -> bytes:
    return b"".join(
        _bytes(field, _string(1, key) + _bytes(2, _any(value))) for key, value in node.items() if key.startswith("x-")
    )


def schema(node: dict[str, Any]) -> bytes:
    out = _string(1, node.get("$ref")) + _string(2, node.get("format")) + _string(3, node.get("title"))
    out += _string(4, node.get("description"))
    if "default" in node:
        out += _bytes(5, _any(node["default"]))
    out += _double(6, node.get("multipleOf")) + _double(7, node.get("maximum"))
    out += _bool(8, node.get("exclusiveMaximum")) + _double(9, node.get("minimum"))
    out += _bool(10, node.get("exclusiveMinimum"))
    for field, name in ((11, "maxLength"), (12, "minLength")):
        out += _int(field, node.get(name))
    out += _string(13, node.get("pattern")) + _int(14, node.get("maxItems")) + _int(15, node.get("minItems"))
    out += _bool(16, node.get("uniqueItems")) + _int(17, node.get("maxProperties"))
    out += _int(18, node.get("minProperties")) + _strings(19, node.get("required"))
    out += b"".join(_bytes(20, _any(value)) for value in node.get("enum") or ())
    extra = node.get("additionalProperties")
    if isinstance(extra, dict):
        out += _bytes(21, _bytes(1, schema(extra)))
    elif isinstance(extra, bool):
        out += _bytes(21, _key(2, 0) + (b"\x01" if extra else b"\x00"))
    if "type" in node:
        types = node["type"] if isinstance(node["type"], list) else [node["type"]]
        out += _bytes(22, _strings(1, types))
    if isinstance(node.get("items"), dict):
        out += _bytes(23, _bytes(1, schema(node["items"])))
    out += b"".join(_bytes(24, schema(part)) for part in node.get("allOf") or ())
    if node.get("properties"):
        named = (_bytes(1, _string(1, key) + _bytes(2, schema(value))) for key, value in node["properties"].items())
        out += _bytes(25, b"".join(named))
    out += _bool(27, node.get("readOnly"))
    if "example" in node:
        out += _bytes(30, _any(node["example"]))
    return out + _extensions(31, node)


def _parameter(node: dict[str, Any]) -> bytes:
    if node.get("in") == "body":
        body = _string(1, node.get("description")) + _string(2, node["name"]) + _string(3, "body")
        body += _bool(4, node.get("required")) + _bytes(5, schema(node.get("schema") or {}))
        return _bytes(1, _bytes(1, body))  # ParametersItem.parameter.body_parameter
    sub = _bool(1, node.get("required")) + _string(2, node["in"]) + _string(3, node.get("description"))
    sub += _string(4, node["name"])
    if node["in"] == "path":  # PathParameterSubSchema: type 5, unique_items 19
        sub += _string(5, node.get("type")) + _bool(19, node.get("uniqueItems"))
        which = 4
    else:  # QueryParameterSubSchema: type 6, unique_items 20
        sub += _string(6, node.get("type")) + _bool(20, node.get("uniqueItems"))
        which = 3
    return _bytes(1, _bytes(2, _bytes(which, sub)))  # parameter.non_body_parameter.<sub schema>


def _operation(node: dict[str, Any]) -> bytes:
    out = _strings(1, node.get("tags")) + _string(3, node.get("description")) + _string(5, node.get("operationId"))
    out += _strings(6, node.get("produces")) + _strings(7, node.get("consumes"))
    out += b"".join(_bytes(8, _parameter(param)) for param in node.get("parameters") or ())
    codes = b""
    for code, answer in (node.get("responses") or {}).items():
        response = _string(1, answer.get("description"))
        if isinstance(answer.get("schema"), dict):
            response += _bytes(2, _bytes(1, schema(answer["schema"])))
        codes += _bytes(1, _string(1, code) + _bytes(2, _bytes(1, response)))
    return out + _bytes(9, codes) + _extensions(13, node)


_METHODS = {"get": 2, "put": 3, "post": 4, "delete": 5, "patch": 8}


def document(swagger: dict[str, Any]) -> bytes:
    """gnostic's `openapi.v2.Document` of a Swagger 2.0 document."""
    info = swagger.get("info") or {}
    out = _string(1, swagger.get("swagger", "2.0")) + _bytes(
        2, _string(1, info.get("title")) + _string(2, info.get("version"))
    )
    paths = b""
    for path, item in (swagger.get("paths") or {}).items():
        encoded = b"".join(
            _bytes(number, _operation(item[method])) for method, number in _METHODS.items() if method in item
        )
        encoded += b"".join(_bytes(9, _parameter(param)) for param in item.get("parameters") or ())
        paths += _bytes(2, _string(1, path) + _bytes(2, encoded))
    out += _bytes(8, paths)
    named = (
        _bytes(1, _string(1, key) + _bytes(2, schema(value)))
        for key, value in (swagger.get("definitions") or {}).items()
    )
    return out + _bytes(9, b"".join(named))
