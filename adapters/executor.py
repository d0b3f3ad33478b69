"""Executes one planned action against the cluster its target names, exactly as planned.

Local targets go to the service cluster; remote targets to the VW client of the target's logical
cluster. How an action is sent follows from its kind of write (`core.actions.Write`): creates
send the planned object, patches the planned JSON merge patch (finalizer patches carry the
resourceVersion the planner read, so a concurrent change fails as Conflict), remote status goes
through the `/status` subresource. Three outcomes count as done rather than
failed, because the world already looks as the action wants: a namespace that already exists, and
a delete (local primary or related copy) of something already gone.

A failure's message (the server's own words, which may quote what it refused) has the Secret
values the action carried cut out before it travels on; the action itself keeps them.

Before every write it asks `can_write()` (the leader elector): a replica that lost its Lease
raises `NotLeader` and sends nothing, so writing stops at once. Conflict and Error actions are
reports and are not executed.

Deliberately not here: choosing actions, ordering them, retrying, or reading anything first.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, assert_never

from lightkube import AsyncClient

from servlet.adapters import objects
from servlet.adapters.connections import Connections
from servlet.adapters.kube import merge_patch, resource_class
from servlet.core.actions import Action, ObjectRef, Side, Write, secret_spellings
from servlet.core.errors import AlreadyExists, ApiFailure, NotFound, NotLeader
from servlet.core.ports import ActionExecutor


class Executor:
    """`servlet.core.ports.ActionExecutor` over the daemon's connections."""

    def __init__(self, connections: Connections, *, can_write: Callable[[], bool]) -> None:
        self._connections = connections
        self._can_write = can_write

    async def execute(self, action: Action) -> dict[str, Any] | None:
        try:
            return await self._execute(action)
        except ApiFailure as failure:
            # The request carried the real values; the failure is read by people (logs, reports).
            failure.hide(secret_spellings(action))
            raise

    async def _execute(self, action: Action) -> dict[str, Any] | None:
        if action.write is Write.NOTHING:
            return None
        if not self._can_write():
            raise NotLeader(action)
        target = action.target
        client, where = self._client_for(target)
        match action.write:
            case Write.CREATE_NAMESPACE:
                try:
                    return await objects.create_object(client, target.resource, action.object, where=where)
                except AlreadyExists:
                    return None
            case Write.CREATE:
                return await objects.create_object(
                    client, target.resource, action.object, namespace=target.namespace, where=where
                )
            case Write.DELETE:
                with contextlib.suppress(NotFound):
                    await objects.delete_object(
                        client,
                        target.resource,
                        namespace=target.namespace,
                        name=target.name,
                        where=where,
                        uid=action.uid,
                    )
                return None
            case Write.STATUS:
                return await self._merge_patch(client, target, action.patch, where=where, status=True)
            case Write.FINALIZERS | Write.PATCH:
                return await self._merge_patch(client, target, action.patch, where=where)
            case _:
                assert_never(action.write)

    def _client_for(self, target: ObjectRef) -> tuple[AsyncClient, str]:
        if target.side is Side.LOCAL:
            return self._connections.service, ""
        if not target.cluster:
            raise ValueError(f"a remote target needs a logical cluster: {target.to_dict()}")
        return self._connections.virtual_workspace(target.cluster), f"workspace {target.cluster}"

    async def _merge_patch(
        self, client: AsyncClient, target: ObjectRef, patch: dict[str, Any], *, where: str, status: bool = False
    ) -> dict[str, Any]:
        return await merge_patch(
            client,
            resource_class(target.resource),
            target.name,
            patch,
            namespace=target.namespace or None,
            status=status,
            where=where,
        )


if TYPE_CHECKING:  # mypy proves the adapter fills its port

    def _fills_port(adapter: Executor) -> ActionExecutor:
        return adapter
