"""`E2E`: one test's simulated world, the servlet processes it started, and the user's verbs.

Tests read as a user's story: publish a CRD, create an object in a workspace, wait until the
copy shows up. Every wait goes through `eventually` with a guard that fails at once, with the
servlet's exit code and last words, when a servlet process died unexpectedly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

import attrs

from kcpsim import Topology
from kcpsim.harness.process import ServletOptions, ServletProcess, ServletWorld
from kcpsim.harness.world import Rest, World
from kcpsim.waiting import consistently, eventually
from tests.integration.e2e.identities import ServletIdentities
from tests.integration.e2e.manifests import (
    FINALIZER,
    LINK,
    REMOTE_WIDGET,
    SERVLET,
    Resource,
    published_resource,
    widget_crd,
)

T = TypeVar("T")


class E2EWorld(ServletWorld, Protocol):
    """What the tests use of a world: kcpsim's `World`, or the portable lane's `ExternalWorld`."""

    @property
    def rest(self) -> Rest: ...

    @property
    def org(self) -> str: ...

    def cluster(self, workspace: str) -> str: ...

    def in_workspace(self, workspace: str, path: str) -> str: ...

    def in_org(self, path: str) -> str: ...

    def apply(self, document: dict[str, Any]) -> dict[str, Any]: ...

    def ensure_namespace(self, name: str, *, workspace: str | None = None) -> None: ...

    def stop(self) -> None: ...


@attrs.frozen
class WorldOptions:
    """Another starting world for the `e2e` fixture (indirect parametrization)."""

    topology: Topology | None = None
    tls: bool = False  # kubectl sends credentials over HTTPS only


# kcpsim's controllers are instant and the servlet is event-driven: a few seconds is generous.
WAIT = 15.0


class E2E:
    def __init__(self, world: E2EWorld, identities: ServletIdentities | None = None) -> None:
        self.world = world
        # None: kcpsim lets every client do anything; else each servlet acts as the chart's
        # ServiceAccount and the documented kcp user.
        self.identities = identities
        self.processes: list[ServletProcess] = []
        # Set by a test that takes permissions away on purpose; otherwise any refusal fails it.
        self.refusals_expected = False

    @property
    def rest(self) -> Rest:
        return self.world.rest

    @property
    def simulated(self) -> World:
        """The kcpsim world, for tests marked `kcpsim_only` (request log, faults, kcpsim's tokens)."""
        assert isinstance(self.world, World), "this test needs kcpsim: mark it kcpsim_only"
        return self.world

    # ---- processes -------------------------------------------------------------------------------
    def servlet(self, *, token: str = "servlet", **options: Any) -> ServletProcess:
        """Start `servlet run` (a real subprocess) and wait until it answers /healthz."""
        return self.servlet_process(token=token, **options).start()

    def serve_widgets(self, **options: Any) -> tuple[ServletProcess, str]:
        """The e2e Widgets published, a servlet started and Widgets served in team-a.

        Returns the servlet and team-a's logical cluster (the namespace of its local copies).
        """
        self.publish(widget_crd(), published_resource("widgets", kind="Widget"))
        servlet = self.servlet(**options)
        self.wait_served("team-a", REMOTE_WIDGET)
        return servlet, self.world.cluster("team-a")

    def servlet_process(self, *, token: str = "servlet", **options: Any) -> ServletProcess:
        """A `servlet run` process this test owns (stopped at the end), not started yet."""
        label = token if all(p.label != token for p in self.processes) else f"{token}-{len(self.processes)}"
        if self.identities is not None and isinstance(self.world, World):
            # The kcp kubeconfig carries a credential of its own; its requests count as this client's.
            kcp_token = options.pop("kcp_token", "") or f"{token}-kcp"
            self.identities.register(self.world, token=token, kcp_token=kcp_token)
            if kcp_token == f"{token}-kcp":
                self.world.callers.alias(kcp_token, owner=token)
            options["kcp_token"] = kcp_token
        process = ServletProcess(self.world, ServletOptions(token=token, **options), label=label)
        self.processes.append(process)
        return process

    def guard(self) -> None:
        for process in self.processes:
            process.check_alive()

    def eventually(self, check: Callable[[], T | None], *, what: str, timeout: float = WAIT) -> T:
        # Every attempt is an HTTP request to kcpsim, which the servlet processes share the CPU with.
        return eventually(check, timeout=timeout, what=what, guard=self.guard, interval=0.1)

    def consistently(self, check: Callable[[], object], *, what: str, duration: float = 2.0) -> None:
        """For conditions that must stay true (nothing synced, nothing deleted) for a while."""
        consistently(check, duration=duration, what=what, guard=self.guard)

    def refused_by_rbac(self) -> list[str]:
        """The servlets' requests the API server refused for want of a permission (403).

        Refusals through the virtual workspace are kcp's claims at work (a consumer has not
        accepted a claim), not RBAC's; injected faults are the test's own doing."""
        if not isinstance(self.world, World):
            return []
        tokens = {process.options.token for process in self.processes}
        return [
            f"{call.method} {call.path}: {call.message}"
            for call in self.world.callers.calls()
            if call.status == 403
            and call.token in tokens
            and not call.path.startswith("/services/")
            and "injected" not in call.message
        ]

    def stop_all(self) -> None:
        for process in self.processes:
            process.stop()

    # ---- service cluster -------------------------------------------------------------------------
    def publish(self, *documents: dict[str, Any]) -> None:
        """Apply CRDs and PublishedResources to the service cluster, in order."""
        for document in documents:
            self.world.apply(document)

    def local(self, resource: Resource, *, namespace: str = "", name: str) -> dict[str, Any] | None:
        return self.rest.get(resource.path(namespace=namespace, name=name))

    def wait_local(
        self, resource: Resource, *, namespace: str = "", name: str, timeout: float = WAIT
    ) -> dict[str, Any]:
        where = f"{namespace}/{name}" if namespace and resource.namespaced else name
        return self.eventually(
            lambda: self.local(resource, namespace=namespace, name=name),
            timeout=timeout,
            what=f"the local copy {resource.plural} {where} on the service cluster",
        )

    def local_objects(self, resource: Resource) -> list[dict[str, Any]]:
        """Local objects of this servlet (by its link label), across namespaces."""
        return self.rest.list(resource.path() + f"?labelSelector={LINK}/servlet%3D{SERVLET}")

    def published_resource(self, name: str) -> dict[str, Any] | None:
        return self.rest.get(f"/apis/services.kdp.k8c.io/v1alpha1/publishedresources/{name}")

    def condition(self, published_resource: str, type_: str) -> dict[str, Any] | None:
        found = self.published_resource(published_resource) or {}
        for condition in (found.get("status") or {}).get("conditions") or []:
            if condition.get("type") == type_:
                return dict(condition)
        return None

    def wait_condition(
        self, published_resource: str, type_: str, status: str = "True", timeout: float = WAIT
    ) -> dict[str, Any]:
        def check() -> dict[str, Any]:
            condition = self.condition(published_resource, type_)
            assert condition is not None, f"no {type_} condition yet (status: {self._status(published_resource)})"
            assert condition.get("status") == status, f"{type_} is {condition}"
            return condition

        return self.eventually(
            check, timeout=timeout, what=f"PublishedResource {published_resource} to have {type_}={status}"
        )

    def _status(self, published_resource: str) -> object:
        return (self.published_resource(published_resource) or {}).get("status")

    # ---- workspaces ------------------------------------------------------------------------------
    def remote_path(self, workspace: str, resource: Resource, *, namespace: str = "", name: str = "") -> str:
        return self.world.in_workspace(workspace, resource.path(namespace=namespace, name=name))

    def wait_served(self, workspace: str, resource: Resource, timeout: float = WAIT) -> None:
        """Until the workspace serves the projected resource (its schema is in the bound export)."""
        self.eventually(
            lambda: self.rest.served(self.remote_path(workspace, resource)),
            timeout=timeout,
            what=f"workspace {workspace} to serve {resource.plural}.{resource.group}/{resource.version}",
        )

    def create_remote(self, workspace: str, resource: Resource, body: dict[str, Any]) -> dict[str, Any]:
        """Create a user's object in a workspace, creating its namespace first when needed."""
        namespace = body["metadata"].get("namespace", "")
        if namespace:
            self.world.ensure_namespace(namespace, workspace=workspace)
        return self.rest.create(self.remote_path(workspace, resource, namespace=namespace), body)

    def remote(self, workspace: str, resource: Resource, *, namespace: str = "", name: str) -> dict[str, Any] | None:
        return self.rest.get(self.remote_path(workspace, resource, namespace=namespace, name=name))

    def patch_remote(
        self, workspace: str, resource: Resource, *, namespace: str = "", name: str, patch: dict[str, Any]
    ) -> dict[str, Any]:
        return self.rest.merge_patch(self.remote_path(workspace, resource, namespace=namespace, name=name), patch)

    def has_finalizer(self, workspace: str, resource: Resource, *, namespace: str = "", name: str) -> bool:
        found = self.remote(workspace, resource, namespace=namespace, name=name)
        assert found is not None, f"the remote object {workspace} {namespace}/{name} does not exist"
        return FINALIZER in (found["metadata"].get("finalizers") or [])

    def wait_finalizer(self, workspace: str, resource: Resource, *, namespace: str = "", name: str) -> dict[str, Any]:
        def check() -> dict[str, Any]:
            found = self.remote(workspace, resource, namespace=namespace, name=name)
            assert found is not None, "the remote object does not exist"
            finalizers = found["metadata"].get("finalizers") or []
            assert FINALIZER in finalizers, f"finalizers are {finalizers}"
            return found

        return self.eventually(check, what=f"the finalizer on {workspace} {namespace}/{name}")
