"""Generic reads and writes of one object by `ResourceType`, with every failure mapped.

The adapters and the executor all get, create and delete objects of types known only at run
time (custom resources, projected kinds); this module is the one place that turns a
`ResourceType` into a lightkube call wrapped in `api_errors`. Patches go through
`kube.merge_patch`, which does the same for patches.

Deliberately not here: deciding what a NotFound or AlreadyExists means (callers do), retries.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lightkube import AsyncClient

from servlet.adapters.errors import api_errors
from servlet.adapters.kube import as_dict, resource_class, resource_label, wrap
from servlet.core.errors import NotFound, Operation
from servlet.core.model import ResourceType

ALL_NAMESPACES = "*"  # lightkube's spelling of "every namespace"


def operation(verb: str, resource: ResourceType, *, namespace: str = "", name: str = "", where: str = "") -> Operation:
    return Operation(
        verb=verb, resource=resource_label(resource_class(resource)), namespace=namespace, name=name, where=where
    )


def _namespace(resource: ResourceType, namespace: str) -> str | None:
    return namespace or None if resource.namespaced else None


async def get_object(
    client: AsyncClient, resource: ResourceType, *, namespace: str, name: str, where: str = ""
) -> dict[str, Any] | None:
    """The object, or None on NotFound."""
    cls: Any = resource_class(resource)  # lightkube's overloads cannot tell the scope of a runtime type
    try:
        with api_errors(operation("get", resource, namespace=namespace, name=name, where=where)):
            found = await client.get(cls, name, namespace=_namespace(resource, namespace))
    except NotFound:
        return None
    return as_dict(found)


async def list_objects(
    client: AsyncClient,
    resource: ResourceType,
    *,
    namespace: str = "",
    labels: Mapping[str, str] | None = None,
    where: str = "",
) -> list[dict[str, Any]]:
    """Every object (following `continue` pages); namespaced ones across all namespaces unless
    `namespace` is given; `labels` must all match exactly."""
    cls: Any = resource_class(resource)
    scope = (namespace or ALL_NAMESPACES) if resource.namespaced else None
    found: list[dict[str, Any]] = []
    with api_errors(operation("list", resource, namespace=namespace, where=where)):
        async for item in client.list(cls, namespace=scope, labels=dict(labels) if labels else None):
            found.append(_with_type(as_dict(item), resource))
    return found


def _with_type(obj: dict[str, Any], resource: ResourceType) -> dict[str, Any]:
    # List items come without apiVersion and kind; callers treat them like single reads.
    obj.setdefault("apiVersion", resource.api_version)
    obj.setdefault("kind", resource.kind)
    return obj


async def create_object(
    client: AsyncClient, resource: ResourceType, obj: Mapping[str, Any], *, namespace: str = "", where: str = ""
) -> dict[str, Any]:
    """Create `obj` (namespace from the argument, else from its metadata); AlreadyExists when taken."""
    cls = resource_class(resource)
    client_any: Any = client  # the namespace travels in the object's metadata
    body = dict(obj)
    metadata = dict(body.get("metadata") or {})
    namespace = namespace or str(metadata.get("namespace") or "")
    if resource.namespaced and namespace:
        metadata["namespace"] = namespace
        body["metadata"] = metadata
    name = str(metadata.get("name") or "")
    with api_errors(operation("create", resource, namespace=namespace, name=name, where=where)):
        created = await client_any.create(wrap(cls, body))
    return as_dict(created)


async def delete_object(
    client: AsyncClient, resource: ResourceType, *, namespace: str, name: str, where: str = "", uid: str = ""
) -> None:
    """Delete one object; NotFound when it is not there, Conflict when `uid` is not its uid."""
    cls: Any = resource_class(resource)
    with api_errors(operation("delete", resource, namespace=namespace, name=name, where=where)):
        if not uid:
            await client.delete(cls, name, namespace=_namespace(resource, namespace))
            return
        await _delete_with_uid(client, cls, name=name, namespace=_namespace(resource, namespace), uid=uid)


async def _delete_with_uid(client: AsyncClient, cls: Any, *, name: str, namespace: str | None, uid: str) -> None:
    """DELETE with DeleteOptions preconditions, which lightkube's `delete()` cannot send.

    Built with lightkube's own request machinery (URL, auth, error mapping stay lightkube's); only
    the body is added.
    """
    generic: Any = client._client  # lightkube 1.x keeps its request builder here
    request = generic.prepare_request("delete", res=cls, name=name, namespace=namespace)
    request.data = {"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": {"uid": uid}}
    response = await generic.send(generic.build_adapter_request(request))
    generic.handle_response("delete", response, request)
