"""Server-side printing: objects as a `meta.k8s.io/v1` Table, as `kubectl get` asks.

A get or list of a custom resource (CRD, or APIResourceSchema in kcp) whose `Accept` header
asks for `application/json;as=Table;g=meta.k8s.io;v=v1` (or `v1beta1`) is answered with a Table:
the column `Name`, then the version's `additionalPrinterColumns` (or `Age` when it has none, as
apiextensions-apiserver defaults them); each row holds the cells and the object as a
`PartialObjectMetadata` (the whole object with `?includeObject=Object`, none with `None`).
Cells are computed as kube-apiserver's table convertor does: a simple JSONPath per column,
`string` columns printed, `integer`/`number`/`boolean` typed, `date` as a relative age (`5m`).

Built-in kinds get the apiserver's own column sets (tables_builtin.py). Watches, and kcp's own
types (which kcpsim holds without a schema), are answered as plain JSON: kubectl prints them itself.
"""

from __future__ import annotations

import datetime
import json
import re
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import msgspec
from aiohttp import web

from kcpsim import errors
from kcpsim.resources import ResourceDef

if TYPE_CHECKING:
    from aiohttp.typedefs import Middleware

    from kcpsim.sim import KcpSim

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
NAME_DESCRIPTION = (
    "Name must be unique within a namespace. Is required when creating resources, although some "
    "resources may allow a client to request the generation of an appropriate name automatically. "
    "Name is primarily intended for creation idempotence and configuration definition. Cannot be "
    "updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
)
AGE_COLUMN = {
    "name": "Age",
    "type": "date",
    "jsonPath": ".metadata.creationTimestamp",
    "description": "CreationTimestamp is a timestamp representing the server time when this object was created.",
}
_TABLE_VERSIONS = ("v1", "v1beta1")


def wants_table(accept: str) -> bool:
    """Whether the first JSON media type the client accepts is a meta.k8s.io Table."""
    for media_range in accept.split(","):
        media_type, *raw_params = (part.strip() for part in media_range.split(";"))
        if media_type.lower() not in ("application/json", "application/*", "*/*"):
            continue
        params = dict(param.partition("=")[::2] for param in raw_params if "=" in param)
        if params.get("as") == "Table" and params.get("g") == "meta.k8s.io" and params.get("v") in _TABLE_VERSIONS:
            return True
        if "as" not in params:
            return False
    return False


def columns(rdef: ResourceDef, version: str) -> list[dict[str, Any]]:
    printer = dict(rdef.printer_columns).get(version) or (AGE_COLUMN,)
    return list(printer)


def column_definitions(printer: list[dict[str, Any]]) -> list[dict[str, Any]]:
    name = {"name": "Name", "type": "string", "format": "name", "description": NAME_DESCRIPTION, "priority": 0}
    return [
        name,
        *(
            {
                "name": column["name"],
                "type": column.get("type", "string"),
                "format": column.get("format", ""),
                "description": column.get("description")
                or f"Custom resource definition column (in JSONPath format): {column['jsonPath']}",
                "priority": int(column.get("priority") or 0),
            }
            for column in printer
        ),
    ]


def find(obj: Any, json_path: str) -> Any:
    """The value at a simple JSONPath (`.status.phase`, `.spec.items[0].name`); None when missing."""
    for key, index in re.findall(r"\.([^.\[\]]+)|\[(\d+)\]", json_path):
        if key and isinstance(obj, dict):
            obj = obj.get(key)
        elif index and isinstance(obj, list) and int(index) < len(obj):
            obj = obj[int(index)]
        else:
            return None
    return obj


def human_duration(seconds: int) -> str:
    """A duration as kubectl shows ages (apimachinery's HumanDuration)."""
    if seconds < -1:
        return "<invalid>"
    if seconds < 0:
        return "0s"
    if seconds < 120:
        return f"{seconds}s"
    minutes, hours, days = seconds // 60, seconds // 3600, seconds // 86400
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{days}d{hours % 24}h" if hours % 24 else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    if hours < 24 * 365 * 8:
        return f"{days // 365}y{days % 365}d" if days % 365 else f"{days // 365}y"
    return f"{days // 365}y"


def cell(column: dict[str, Any], value: Any) -> Any:
    kind = column.get("type", "string")
    if value is None:
        return None
    if kind == "string":
        return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))
    if kind == "integer" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return int(value)
    if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if kind == "boolean" and isinstance(value, bool):
        return value
    if kind == "date" and isinstance(value, str):
        try:
            stamp = datetime.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return "<invalid>"
        return human_duration(int((datetime.datetime.now(datetime.UTC) - stamp).total_seconds()))
    return None


def _printer(rdef: ResourceDef, version: str) -> tuple[list[dict[str, Any]], Callable[[dict[str, Any]], list[Any]]]:
    """The column definitions of a resource and how to compute one object's cells."""
    from kcpsim.tables_builtin import PRINTERS  # it builds on this module's helpers

    if rdef.builtin:
        return PRINTERS[(rdef.group, rdef.kind)]
    printer = columns(rdef, version)

    def cells(obj: dict[str, Any]) -> list[Any]:
        name = (obj.get("metadata") or {}).get("name", "")
        return [name, *(cell(column, find(obj, column["jsonPath"])) for column in printer)]

    return column_definitions(printer), cells


def has_printer(rdef: ResourceDef) -> bool:
    from kcpsim.tables_builtin import PRINTERS

    return (rdef.group, rdef.kind) in PRINTERS if rdef.builtin else bool(rdef.schemas)


def table(rdef: ResourceDef, version: str, body: dict[str, Any], *, include: str = "Metadata") -> dict[str, Any]:
    """An object or a list of `rdef` as a Table."""
    definitions, cells = _printer(rdef, version)
    is_list = "items" in body and body.get("kind", "").endswith("List")
    objects = body["items"] if is_list else [body]
    rows = []
    for obj in objects:
        row: dict[str, Any] = {"cells": cells(obj)}
        if include == "Object":
            row["object"] = obj
        elif include != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj.get("metadata") or {},
            }
        rows.append(row)
    metadata = body.get("metadata") or {}
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {k: v for k, v in metadata.items() if k in ("resourceVersion", "continue")},
        "columnDefinitions": definitions,
        "rows": rows,
    }


def _resource(sim: KcpSim, path: str) -> tuple[ResourceDef, str] | None:
    """The custom resource and version a request path names, None for anything else."""
    try:
        target = sim.server.parse_target(path)
    except errors.StatusError:
        return None
    rest = target.rest
    if len(rest) < 3 or rest[0] not in ("api", "apis"):
        return None
    group, version, remainder = ("", rest[1], rest[2:]) if rest[0] == "api" else (rest[1], rest[2], rest[3:])
    if len(remainder) >= 3 and remainder[0] == "namespaces":
        remainder = remainder[2:]
    if not remainder or len(remainder) > 2:
        return None
    if target.vw is not None:
        try:
            rdef: ResourceDef | None = target.vw.lookup(group, version, remainder[0]).rdef
        except errors.StatusError:
            return None
    else:
        assert target.cluster is not None
        rdef = sim.world.catalog.lookup(target.cluster, group, version, remainder[0])
    return (rdef, version) if rdef is not None and has_printer(rdef) else None


def middleware(sim: KcpSim) -> Middleware:
    """Turn a get or list answer into a Table when the client asked for one."""

    @web.middleware
    async def print_tables(request: web.Request, handler: Handler) -> web.StreamResponse:
        response = await handler(request)
        if (
            request.method != "GET"
            or response.status != 200
            or not isinstance(response, web.Response)
            or request.query.get("watch") in ("1", "true")
            or not wants_table(request.headers.get("Accept", ""))
        ):
            return response
        found = _resource(sim, request.path)
        if found is None or response.body is None:
            return response
        body = msgspec.json.decode(bytes(response.body))  # type: ignore[arg-type]
        answer = table(*found, body, include=request.query.get("includeObject", "Metadata"))
        return web.Response(body=msgspec.json.encode(answer), status=200, content_type="application/json")

    return print_tables
