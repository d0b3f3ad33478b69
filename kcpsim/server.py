"""HTTP routing: turn requests into World/VW calls and results into Kubernetes responses.

Paths: `/...` is the plain service cluster; `/clusters/<path or name>/...` a kcp workspace (an
unknown or malformed workspace answers 403 like kcp's front-proxy); `/services/apiexport/<lc>/
<export>/clusters/<lc or *>/...` the APIExport virtual workspace; `/_kcpsim/...` the admin API
(admin.py). Every error is a `Status` with `Content-Type: application/json` exactly. Watches are
chunked streams of newline-delimited JSON events. Who may call is decided in access.py, object
semantics live in world.py, kcp rules in kcp.py and vw.py; this module routes, faults and logs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs
import msgspec
import yaml
from aiohttp import web

from kcpsim import admin, discovery, errors, field_validation, metadata_only, openapi_http, protobuf, scale
from kcpsim.errors import StatusError
from kcpsim.naming import is_cluster_name, is_cluster_path
from kcpsim.requestlog import RequestRecord
from kcpsim.resources import SERVICE_CLUSTER, ResourceDef
from kcpsim.selectors import EVENT_FIELDS, FIELDS, parse_field_selector, parse_label_selector
from kcpsim.store import Event, Obj, Watcher
from kcpsim.vw import Served, VirtualWorkspace

if TYPE_CHECKING:
    from kcpsim.sim import KcpSim

JSON_HEADERS = {"Content-Type": "application/json"}
_encode = msgspec.json.encode
_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
}


def json_response(body: Any, *, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    return web.Response(body=_encode(body), status=status, headers={**JSON_HEADERS, **(headers or {})})


@attrs.define
class Target:
    """Where a request lands and what it asks for."""

    cluster: str | None  # None: all clusters (VW wildcard)
    vw: VirtualWorkspace | None
    rest: list[str]
    label: str  # cluster as logged: "" service cluster, "*" wildcard, else the logical cluster name


@attrs.define
class Call:
    verb: str = "other"
    resource: str = ""


@attrs.define(eq=False)
class ActiveWatch:
    watcher: Watcher
    request: web.Request
    cut: str = ""  # "", "end" or "abort"


class Server:
    def __init__(self, sim: KcpSim) -> None:
        self.sim = sim
        self.watches: set[ActiveWatch] = set()
        self.closing = False

    # ---- entry point ---------------------------------------------------------------------------
    async def handle(self, request: web.Request) -> web.StreamResponse:
        if request.path.startswith("/_kcpsim/"):
            return await admin.handle(self.sim, request)
        if self.sim.refusing():
            # Connections that were open before the outage are dropped too.
            if request.transport is not None:
                request.transport.close()
            raise ConnectionResetError("kcpsim is refusing connections")
        started = time.monotonic()
        wall = time.time()
        call = Call()
        target: Target | None = None
        response: web.StreamResponse | None
        fault = ""
        try:
            identity = self.sim.access.authenticate(request)
            target = self.parse_target(request.path)
            call = self.describe(request, target)
            response = await self.sim.access.gate(request, target, identity)
            if response is None:
                where = (
                    "vw" if target.vw is not None else ("service" if target.cluster == SERVICE_CLUSTER else "workspace")
                )
                decision = self.sim.faults.decide(
                    verb=call.verb, resource=call.resource, cluster=target.label, target=where
                )
                if decision.delay:
                    await asyncio.sleep(decision.delay)
                if decision.error is not None:
                    fault = f"error {decision.error.status}"
                    error = self.injected(decision.error.status, decision.error.retry_after, call)
                    if decision.error.quote_body:
                        error.message = f"{error.message}: denied {await request.text()}"
                    raise error
                response = await self.dispatch(request, target, call, started=started, wall=wall)
        except StatusError as exc:
            response = json_response(exc.body(), status=exc.code, headers=exc.headers)
        if call.verb != "watch" or response.status != 200:
            self.log(request, target, call, response.status, started, wall, fault)
        return response

    def log(
        self,
        request: web.Request,
        target: Target | None,
        call: Call,
        status: int,
        started: float,
        wall: float,
        fault: str = "",
    ) -> None:
        self.sim.requests.append(
            RequestRecord(
                method=request.method,
                path=request.path,
                query=request.query_string,
                verb=call.verb,
                resource=call.resource,
                cluster=target.label if target else "",
                virtual_workspace=bool(target and target.vw),
                status=status,
                duration=time.monotonic() - started,
                started=wall,
                fault=fault,
                user_agent=request.headers.get("User-Agent", ""),
            )
        )

    @staticmethod
    def injected(status: int, retry_after: int, call: Call) -> StatusError:
        if status == 429:
            return errors.too_many_requests(retry_after)
        if status == 409:
            return errors.conflict(group="", plural=call.resource or "objects", name="", why="injected conflict")
        if status == 503:
            return StatusError(
                503,
                "ServiceUnavailable",
                "the server is currently unable to handle the request",
                headers={"Retry-After": str(retry_after)},
            )
        if status == 500:
            return errors.internal()
        return StatusError(status, "InternalError", f"injected fault with status {status}")

    # ---- routing -------------------------------------------------------------------------------
    def parse_target(self, path: str) -> Target:
        parts = [p for p in path.split("/") if p != ""]
        world = self.sim.world
        shard, parts = self.sim.kcp.shards.split(parts)  # a shard's own URL serves only its VWs
        if shard is not None and parts[:2] != ["services", "apiexport"]:
            raise errors.resource_not_served()
        if len(parts) >= 5 and parts[0] == "services" and parts[1] == "apiexport":
            export_cluster, export_name = parts[2], parts[3]
            if not is_cluster_name(export_cluster) or parts[4] != "clusters" or len(parts) < 6:
                raise errors.resource_not_served()
            vw = VirtualWorkspace(self.sim.kcp, export_cluster, export_name, shard=shard or 0)
            which = parts[5]
            if which == "*":
                return Target(None, vw, parts[6:], "*")
            if not is_cluster_name(which):
                raise errors.resource_not_served()
            return Target(which, vw, parts[6:], which)
        if parts and parts[0] == "clusters":
            if len(parts) < 2:
                raise errors.resource_not_served()
            which = parts[1]
            cluster = world.resolve(which) if which != "*" and is_cluster_path(which) else None
            if cluster is None:
                raise StatusError(403, "Forbidden", "workspace access not permitted")
            return Target(cluster, None, parts[2:], cluster)
        return Target(SERVICE_CLUSTER, None, parts, "")

    def describe(self, request: web.Request, target: Target) -> Call:
        rest = target.rest
        if (len(rest) >= 3 and rest[0] == "api") or (len(rest) >= 4 and rest[0] == "apis"):
            res = rest[2:] if rest[0] == "api" else rest[3:]
            if (
                res
                and res[0] == "namespaces"
                and len(res) >= 3
                and not (len(res) == 3 and res[2] in ("status", "finalize"))
            ):
                res = res[2:]
            plural, has_name = res[0], len(res) > 1
            method = request.method
            if method == "GET":
                verb = "get" if has_name else ("watch" if request.query.get("watch") in ("true", "1") else "list")
            elif method == "POST":
                verb = "create"
            elif method == "PUT":
                verb = "update"
            elif method == "PATCH":
                verb = "patch"
            elif method == "DELETE":
                verb = "delete" if has_name else "deletecollection"
            else:
                verb = "other"
            return Call(verb, plural)
        return Call("discovery", "")

    def served_defs(self, target: Target) -> list[ResourceDef]:
        if target.vw is not None:
            return target.vw.defs()
        assert target.cluster is not None
        return self.sim.world.catalog.served(target.cluster)

    async def dispatch(
        self, request: web.Request, target: Target, call: Call, *, started: float, wall: float
    ) -> web.StreamResponse:
        rest = target.rest
        if call.verb == "discovery":
            return self.discovery(request, target)
        if rest[0] == "api":
            if rest[1] != "v1":
                raise errors.resource_not_served()
            group, version, res = "", "v1", rest[2:]
        else:
            group, version, res = rest[1], rest[2], rest[3:]
        namespace: str | None = None
        if res[0] == "namespaces" and len(res) >= 3 and not (len(res) == 3 and res[2] in ("status", "finalize")):
            namespace, res = res[1], res[2:]
        if len(res) > 3:
            raise errors.resource_not_served()
        plural = res[0]
        name = res[1] if len(res) > 1 else ""
        sub = res[2] if len(res) > 2 else ""
        served: Served | None = None
        if target.vw is not None:
            served = target.vw.lookup(group, version, plural)
            rdef = served.rdef
        else:
            assert target.cluster is not None
            found = self.sim.world.catalog.lookup(target.cluster, group, version, plural)
            if found is None:
                raise errors.resource_not_served()
            rdef = found
        if namespace is not None and not rdef.namespaced:
            raise errors.resource_not_served()
        if rdef.namespaced and name and namespace is None:
            raise errors.resource_not_served()
        if sub and not ((sub == "status" and rdef.status) or (sub == "scale" and rdef.scale_for(version))):
            raise errors.resource_not_served()
        if target.vw is not None:
            assert served is not None
            if target.cluster is None:
                if call.verb not in ("list", "watch"):
                    raise errors.bad_request('a concrete logical cluster is required for this request, not "*"')
                if namespace is not None:
                    raise errors.bad_request(
                        f"cross-cluster LIST and WATCH are required to be cross-namespace, not scoped to namespace {namespace}"
                    )
            target.vw.authorize(
                cluster=target.cluster, served=served, verb=call.verb, namespace=namespace or "", name=name
            )
        visible: Callable[[Obj], bool] = (
            target.vw.visible(served) if target.vw is not None and served is not None else (lambda o: True)
        )
        ns = namespace or ""
        world = self.sim.world
        query = request.query
        manager = query.get("fieldManager") or _manager_from_agent(request.headers.get("User-Agent", ""))
        dry_run = query.get("dryRun") == "All"
        form = (
            metadata_only.requested_form(request.headers.get("Accept", ""), verb=call.verb)
            if call.verb in ("get", "list", "watch")
            else None
        )
        if sub == "scale":
            assert target.cluster is not None
            self._check_existing_visible(rdef, target.cluster, ns, name, visible)
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            answer = scale.answer(
                world,
                rdef,
                target.cluster,
                ns,
                name,
                version=version,
                verb=call.verb,
                body=_decode(await request.read(), yaml_ok=False) if call.verb in ("update", "patch") else None,
                patch_type=_PATCH_TYPES.get(content_type),
                manager=manager,
                dry_run=dry_run,
            )
            return json_response(answer)
        if call.verb == "get":
            assert target.cluster is not None
            obj = world.get(rdef, target.cluster, ns, name)
            if not visible(obj):
                raise errors.not_found(group=rdef.group, plural=rdef.plural, name=name)
            rendered = world.render(rdef, obj, version)
            return json_response(metadata_only.partial(rendered) if form else rendered)
        if call.verb == "list":
            return self.list(request, rdef, target, namespace, version, visible, partial=form is not None)
        if call.verb == "watch":
            return await self.watch(
                request, rdef, target, namespace, version, visible, call, started, wall, partial=form is not None
            )
        assert target.cluster is not None
        cluster = target.cluster
        if call.verb == "create":
            if name:
                raise errors.method_not_allowed()
            body = await self.body(request)
            warnings = field_validation.check(request, rdef, version, body)
            obj = world.create(rdef, cluster, ns, body, version=version, manager=manager, dry_run=dry_run)
            return field_validation.with_warnings(json_response(world.render(rdef, obj, version), status=201), warnings)
        if call.verb == "update":
            if not name:
                raise errors.method_not_allowed()
            self._check_existing_visible(rdef, cluster, ns, name, visible)
            body = await self.body(request)
            warnings = field_validation.check(request, rdef, version, body)
            obj = world.update(
                rdef, cluster, ns, name, body, version=version, manager=manager, subresource=sub, dry_run=dry_run
            )
            return field_validation.with_warnings(json_response(world.render(rdef, obj, version)), warnings)
        if call.verb == "patch":
            if not name:
                raise errors.method_not_allowed()
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            patch_type = _PATCH_TYPES.get(content_type)
            if patch_type is None:
                raise errors.unsupported_media_type(content_type)
            if patch_type != "apply":
                self._check_existing_visible(rdef, cluster, ns, name, visible)
            raw = await request.read()
            body = _decode(raw, yaml_ok=patch_type == "apply")
            warnings = field_validation.check(request, rdef, version, body, patch_type=patch_type)
            obj = world.patch(
                rdef,
                cluster,
                ns,
                name,
                patch_type=patch_type,
                body=body,
                version=version,
                manager=query.get("fieldManager") or (None if patch_type == "apply" else manager),
                subresource=sub,
                force=query.get("force") in ("true", "1"),
                dry_run=dry_run,
            )
            return field_validation.with_warnings(json_response(world.render(rdef, obj, version)), warnings)
        if call.verb == "delete":
            self._check_existing_visible(rdef, cluster, ns, name, visible)
            raw = await request.read()
            options = _decode(raw, yaml_ok=False) if raw.strip() else {}
            options = options or {}
            propagation = request.query.get("propagationPolicy") or options.get("propagationPolicy")
            obj = world.delete(
                rdef,
                cluster,
                ns,
                name,
                preconditions=options.get("preconditions"),
                propagation=propagation,
                dry_run=dry_run or "All" in (options.get("dryRun") or []),
            )  # kubectl: in the body
            return json_response(world.render(rdef, obj, version))
        if call.verb == "deletecollection":
            match = self._matcher(request, rdef, visible)
            deleted = []
            for (_, obj_ns, obj_name), obj in list(world.store.iter(rdef.storage_key, cluster, namespace)):
                if match(obj):
                    deleted.append(world.render(rdef, world.delete(rdef, cluster, obj_ns, obj_name), version))
            return json_response(
                {
                    "apiVersion": rdef.api_version(version),
                    "kind": rdef.list_kind,
                    "metadata": {"resourceVersion": str(world.store.rv)},
                    "items": deleted,
                }
            )
        raise errors.method_not_allowed()

    def _check_existing_visible(
        self, rdef: ResourceDef, cluster: str, ns: str, name: str, visible: Callable[[Obj], bool]
    ) -> None:
        existing = self.sim.world.store.get(rdef.storage_key, cluster, ns if rdef.namespaced else "", name)
        if existing is not None and not visible(existing):
            raise errors.not_found(group=rdef.group, plural=rdef.plural, name=name)

    async def body(self, request: web.Request) -> Any:
        content_type = request.headers.get("Content-Type", "application/json").split(";")[0].strip()
        if content_type == protobuf.MEDIA_TYPE:  # kubectl 1.32's `create configmap|secret|namespace`
            return protobuf.decode(await request.read())
        if content_type not in ("application/json", "application/yaml", ""):
            raise errors.unsupported_media_type(content_type)
        return _decode(await request.read(), yaml_ok=content_type == "application/yaml")

    def _matcher(
        self, request: web.Request, rdef: ResourceDef, visible: Callable[[Obj], bool]
    ) -> Callable[[Obj], bool]:
        labels = parse_label_selector(request.query.get("labelSelector"))
        events = rdef.group == "" and rdef.plural == "events"
        fields = parse_field_selector(request.query.get("fieldSelector"), fields=EVENT_FIELDS if events else FIELDS)
        return lambda obj: visible(obj) and labels(obj["metadata"].get("labels") or {}) and fields(obj)

    # ---- discovery -----------------------------------------------------------------------------
    def discovery(self, request: web.Request, target: Target) -> web.Response:
        rest = target.rest
        if request.method != "GET":
            raise errors.method_not_allowed()
        served = self.served_defs(target)
        verbs_for = target.vw.verbs_for if target.vw is not None else None
        if not rest:
            return json_response({"paths": ["/api", "/api/v1", "/apis", "/openapi/v2", "/openapi/v3", "/version"]})
        if rest[0] == "openapi":
            scope = "vw" if target.vw is not None else "cluster"
            return openapi_http.respond(request, rest, openapi_http.documents(served, verbs_for, scope=scope))
        if rest == ["version"]:
            return json_response(
                {"major": "1", "minor": "31", "gitVersion": "v1.31.0+kcpsim", "platform": "linux/amd64"}
            )
        if rest == ["api"]:
            return json_response(discovery.api_versions())
        if rest == ["api", "v1"]:
            body = discovery.resource_list(served, "", "v1", verbs_for=verbs_for)
            return json_response(
                body or {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": []}
            )
        if rest == ["apis"]:
            return json_response(discovery.api_group_list(served))
        if len(rest) == 2 and rest[0] == "apis":
            group = discovery.api_group(served, rest[1])
            if group is None:
                raise errors.resource_not_served()
            return json_response(group)
        if len(rest) == 3 and rest[0] == "apis":
            listing = discovery.resource_list(served, rest[1], rest[2], verbs_for=verbs_for)
            if listing is None:
                raise errors.resource_not_served()
            return json_response(listing)
        raise errors.resource_not_served()

    # ---- list and watch ------------------------------------------------------------------------
    def list(
        self,
        request: web.Request,
        rdef: ResourceDef,
        target: Target,
        namespace: str | None,
        version: str,
        visible: Callable[[Obj], bool],
        *,
        partial: bool = False,
    ) -> web.Response:
        query = request.query
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise errors.bad_request(f"invalid limit: {query.get('limit')}") from None
        result = self.sim.world.list(
            rdef,
            target.cluster,
            namespace,
            match=self._matcher(request, rdef, visible),
            limit=limit,
            continue_token=query.get("continue"),
        )
        meta: dict[str, Any] = {"resourceVersion": str(result.rv)}
        if result.continue_token:
            meta["continue"] = result.continue_token
        world = self.sim.world
        items = [world.render(rdef, obj, version) for obj in result.items]
        if partial:
            return json_response(metadata_only.partial_list(meta, items))
        return json_response(
            {"apiVersion": rdef.api_version(version), "kind": rdef.list_kind, "metadata": meta, "items": items}
        )

    async def watch(
        self,
        request: web.Request,
        rdef: ResourceDef,
        target: Target,
        namespace: str | None,
        version: str,
        visible: Callable[[Obj], bool],
        call: Call,
        started: float,
        wall: float,
        *,
        partial: bool = False,
    ) -> web.StreamResponse:
        query = request.query
        match = self._matcher(request, rdef, visible)
        store = self.sim.world.store
        rv_text = query.get("resourceVersion") or ""
        bookmarks = query.get("allowWatchBookmarks") in ("true", "1")
        try:
            timeout = float(query["timeoutSeconds"]) if query.get("timeoutSeconds") else None
            since = int(rv_text) if rv_text not in ("", "0") else None
        except ValueError:
            raise errors.bad_request(f"invalid resource version or timeout: {rv_text!r}") from None
        backlog: list[tuple[str, Obj]] = []
        if since is None:
            backlog = [
                ("ADDED", obj)
                for _, obj in store.sorted_items(rdef.storage_key, target.cluster, namespace)
                if match(obj)
            ]
            history: list[Event] | None = []
        else:
            history = store.history_since(since)
            if history is None and self.sim.config.watch_gone_as_status:
                raise errors.gone(f"too old resource version: {since} ({store.compacted_rv + 1})")
        response = web.StreamResponse(status=200, headers=JSON_HEADERS)
        response.enable_chunked_encoding()
        # Registered before the headers go out: a client that sees them can rely on the watch.
        watcher = store.subscribe(rdef.storage_key, target.cluster, namespace)
        active = ActiveWatch(watcher, request)
        self.watches.add(active)
        world = self.sim.world
        api_version = rdef.api_version(version)

        def encode(kind: str, obj: Obj, event: Event | None = None) -> bytes:
            key = (kind, version, partial)
            if event is not None and key in event.encoded:
                return event.encoded[key]
            rendered = world.render(rdef, obj, version)
            if partial:
                rendered = metadata_only.partial(rendered)
            line = b'{"type":"' + kind.encode() + b'","object":' + _encode(rendered) + b"}\n"
            if event is not None:
                event.encoded[key] = line
            return line

        def translate(event: Event) -> tuple[str, Obj] | None:
            if event.storage_key != rdef.storage_key:
                return None
            if target.cluster is not None and event.cluster != target.cluster:
                return None
            if namespace is not None and event.namespace != namespace:
                return None
            now_visible = event.type != "DELETED" and match(event.obj)
            was_visible = event.old is not None and match(event.old)
            if event.type == "DELETED":
                return ("DELETED", event.obj) if was_visible else None
            if now_visible and was_visible:
                return ("MODIFIED", event.obj)
            if now_visible:
                return ("ADDED", event.obj)
            if was_visible:
                return ("DELETED", event.obj)
            return None

        status = 200
        try:
            await response.prepare(request)
            if history is None:
                gone = errors.gone(f"too old resource version: {since} ({store.compacted_rv + 1})").body()
                await response.write(b'{"type":"ERROR","object":' + _encode(gone) + b"}\n")
                status = 410
                return response
            chunk = b"".join(encode(kind, obj) for kind, obj in backlog)
            for event in history:
                translated = translate(event)
                if translated is not None:
                    chunk += encode(translated[0], translated[1], event if translated[0] == event.type else None)
            if chunk:
                await response.write(chunk)
            interval = self.sim.config.bookmark_interval
            max_age = self.sim.faults.plan.watch_max_seconds
            deadline = time.monotonic() + min(t for t in (timeout, max_age, 10**9) if t is not None)
            next_bookmark = time.monotonic() + interval
            while not self.closing:
                wait = deadline - time.monotonic()
                if bookmarks:
                    wait = min(wait, next_bookmark - time.monotonic())
                if wait <= 0 and time.monotonic() >= deadline:
                    if max_age is not None and (timeout is None or max_age < timeout):
                        active.cut = "abort" if self.sim.faults.plan.watch_cut_abort else "end"
                    break
                try:
                    if watcher.queue.empty():
                        async with asyncio.timeout(max(wait, 0)):  # cheaper than wait_for: no extra task
                            item = await watcher.queue.get()
                    else:
                        item = watcher.queue.get_nowait()
                except TimeoutError:
                    if bookmarks and time.monotonic() >= next_bookmark:
                        mark = {
                            "apiVersion": metadata_only.API_VERSION if partial else api_version,
                            "kind": metadata_only.PARTIAL if partial else rdef.kind,
                            "metadata": {"resourceVersion": str(store.rv)},
                        }
                        await response.write(b'{"type":"BOOKMARK","object":' + _encode(mark) + b"}\n")
                        next_bookmark = time.monotonic() + interval
                    continue
                if item is None:
                    break
                lines = []
                translated = translate(item)
                if translated is not None:
                    lines.append(encode(translated[0], translated[1], item if translated[0] == item.type else None))
                while not watcher.queue.empty():
                    more = watcher.queue.get_nowait()
                    if more is None:
                        active.cut = active.cut or "end"
                        break
                    translated = translate(more)
                    if translated is not None:
                        lines.append(encode(translated[0], translated[1], more if translated[0] == more.type else None))
                if lines:
                    await response.write(b"".join(lines))
                if active.cut:
                    break
            if active.cut == "abort" and request.transport is not None:
                request.transport.close()
                return response
            await response.write_eof()
            return response
        except ConnectionResetError:
            # The client hung up (a servlet stopping, a watch it dropped): aiohttp then finishes
            # the response quietly, where a raised error would be logged as a failed request.
            return response
        finally:
            store.unsubscribe(watcher)
            self.watches.discard(active)
            self.log(request, target, call, status, started, wall, "watch cut" if active.cut else "")

    def cut_watches(self, *, abort: bool) -> int:
        count = 0
        for active in list(self.watches):
            active.cut = "abort" if abort else "end"
            active.watcher.queue.put_nowait(None)
            count += 1
        return count

    def close_all(self) -> None:
        self.closing = True
        for active in list(self.watches):
            active.watcher.queue.put_nowait(None)


def _decode(raw: bytes, *, yaml_ok: bool) -> Any:
    try:
        return msgspec.json.decode(raw) if raw.strip() else None
    except msgspec.DecodeError:
        if yaml_ok:
            try:
                return yaml.safe_load(raw)
            except yaml.YAMLError:
                pass
        raise errors.bad_request(f"couldn't get version/kind; json parse error: {raw[:80]!r}") from None


def _manager_from_agent(agent: str) -> str:
    """The apiserver's default field manager: the user agent's first token."""
    return (agent.split("/")[0] or "unknown") if agent else "unknown"
