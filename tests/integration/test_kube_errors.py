"""Every way lightkube and httpx2 report a failed request ends up as one of our own errors.

Two levels: the real HTTP round trip against kcpsim (status codes a server really sends), and a
transport-level fake (an httpx2 transport, not a mocked client) for what kcpsim never sends on
purpose: the three Content-Type variants lightkube treats differently, and dropped connections.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest
from lightkube import KubeConfig
from lightkube.config.models import Cluster, User
from lightkube.core.exceptions import ApiError
from lightkube.core.internal_models import meta_v1
from lightkube.core.resource_registry import resource_registry

from servlet.adapters.errors import api_errors, failure_for, failure_from_exception
from servlet.adapters.kube import (
    ClusterClients,
    async_client,
    http_client,
    json_patch,
    merge_patch,
    resource_class,
    wrap,
)
from servlet.core.errors import (
    AlreadyExists,
    ApiFailure,
    Conflict,
    Forbidden,
    Gone,
    Invalid,
    NotFound,
    Operation,
    Transient,
)
from servlet.core.model import ResourceType

REPO = Path(__file__).resolve().parents[2]
WIDGETS = ResourceType(group="example.test", version="v1", kind="Widget", plural="widgets", namespaced=True)
OP = Operation(verb="get", resource="widgets.example.test", namespace="ns", name="w")


# -- classification ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "reason", "verb", "expected"),
    [
        (404, "NotFound", "get", NotFound),
        (409, "AlreadyExists", "create", AlreadyExists),
        (409, "Conflict", "update", Conflict),
        (409, "", "create", AlreadyExists),
        (409, "", "patch", Conflict),
        (410, "Expired", "watch", Gone),
        (401, "Unauthorized", "get", Forbidden),
        (403, "Forbidden", "create", Forbidden),
        (400, "BadRequest", "list", Invalid),
        (413, "RequestEntityTooLarge", "update", Invalid),
        (415, "UnsupportedMediaType", "patch", Invalid),
        (422, "Invalid", "create", Invalid),
        (408, "Timeout", "get", Transient),
        (429, "TooManyRequests", "get", Transient),
        (500, "InternalError", "get", Transient),
        (503, "ServiceUnavailable", "get", Transient),
        (504, "Timeout", "get", Transient),
        (418, "", "get", ApiFailure),
    ],
)
def test_status_codes_map_to_our_error_classes(code: int, reason: str, verb: str, expected: type) -> None:
    operation = Operation(verb=verb, resource="widgets.example.test", name="w")
    failure = failure_for(operation=operation, code=code, message="m", reason=reason)
    assert type(failure) is expected
    assert (failure.code, failure.operation) == (code, operation)


def test_a_failure_says_what_was_being_done_and_what_the_server_said() -> None:
    failure = failure_for(
        operation=Operation(
            verb="patch", resource="widgets.example.test", namespace="ns", name="w", where="https://kcp/clusters/x"
        ),
        code=422,
        message='Widget.example.test "w" is invalid: spec.size: must be positive',
        reason="Invalid",
    )
    assert str(failure) == (
        "patch widgets.example.test ns/w at https://kcp/clusters/x failed (HTTP 422, Invalid): "
        'Widget.example.test "w" is invalid: spec.size: must be positive'
    )


# -- the Content-Type variants, through lightkube, over an httpx2 transport -------------------


def _config() -> KubeConfig:
    return KubeConfig.from_one(cluster=Cluster(server="http://api.test"), user=User(token="t"))


def _status(code: int, reason: str, message: str, **details: Any) -> bytes:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "code": code,
        "reason": reason,
        "message": message,
    }
    if details:
        body["details"] = details
    return json.dumps(body).encode()


async def _get_through(transport: httpx2.AsyncBaseTransport) -> None:
    client = async_client(_config(), transport=transport)
    try:
        with api_errors(OP):
            await client.get(resource_class(WIDGETS), "w", namespace="ns")
    finally:
        await client.close()


def _answer(code: int, body: bytes, content_type: str | None, **headers: str) -> httpx2.MockTransport:
    def respond(request: httpx2.Request) -> httpx2.Response:
        all_headers = dict(headers)
        if content_type is not None:
            all_headers["Content-Type"] = content_type
        return httpx2.Response(code, content=body, headers=all_headers)

    return httpx2.MockTransport(respond)


CONTENT_TYPES = ["application/json", "application/json; charset=utf-8", None, "text/plain"]


@pytest.mark.parametrize("content_type", CONTENT_TYPES, ids=["json", "json-charset", "no-header", "text"])
@pytest.mark.parametrize(
    ("code", "reason", "expected"),
    [
        (404, "NotFound", NotFound),
        (409, "Conflict", Conflict),
        (410, "Gone", Gone),
        (403, "Forbidden", Forbidden),
        (422, "Invalid", Invalid),
        (500, "InternalError", Transient),
    ],
)
async def test_every_content_type_gives_the_same_error_with_the_servers_message(
    content_type: str | None, code: int, reason: str, expected: type
) -> None:
    transport = _answer(code, _status(code, reason, f'widgets "w" says {reason}'), content_type)
    with pytest.raises(expected) as caught:
        await _get_through(transport)
    assert caught.value.code == code
    assert caught.value.reason == reason
    assert caught.value.message == f'widgets "w" says {reason}'
    assert caught.value.operation == OP


@pytest.mark.parametrize("content_type", CONTENT_TYPES, ids=["json", "json-charset", "no-header", "text"])
async def test_a_non_json_error_page_keeps_its_text_as_the_message(content_type: str | None) -> None:
    transport = _answer(502, b"<html>bad gateway</html>", content_type)
    with pytest.raises(Transient) as caught:
        await _get_through(transport)
    assert (caught.value.code, caught.value.message) == (502, "<html>bad gateway</html>")


@pytest.mark.parametrize(
    ("body", "headers", "expected"),
    [
        (_status(429, "TooManyRequests", "slow down"), {"Retry-After": "7"}, 7.0),
        (_status(429, "TooManyRequests", "slow down", retryAfterSeconds=3), {}, 3.0),
        (b"slow down", {"Retry-After": "2"}, 2.0),
        (_status(429, "TooManyRequests", "slow down"), {"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
        (_status(429, "TooManyRequests", "slow down"), {}, None),
    ],
    ids=["header", "status-details", "plain-body", "http-date-ignored", "none"],
)
async def test_too_many_requests_is_transient_with_the_servers_retry_after(
    body: bytes, headers: dict[str, str], expected: float | None
) -> None:
    transport = _answer(429, body, "application/json; charset=utf-8", **headers)
    with pytest.raises(Transient) as caught:
        await _get_through(transport)
    assert caught.value.retry_after == expected


@pytest.mark.parametrize(
    "error",
    [
        httpx2.ConnectError("refused"),
        httpx2.ReadTimeout("slow"),
        httpx2.RemoteProtocolError("cut"),
        httpx2.ConnectTimeout("no"),
    ],
    ids=lambda e: type(e).__name__,
)
async def test_connection_errors_and_timeouts_are_transient_without_a_code(error: Exception) -> None:
    def fail(request: httpx2.Request) -> httpx2.Response:
        raise error

    with pytest.raises(Transient) as caught:
        await _get_through(httpx2.MockTransport(fail))
    assert caught.value.code == 0
    assert type(error).__name__ in caught.value.message
    assert isinstance(caught.value.__cause__, httpx2.TransportError)


def test_a_watch_error_event_without_a_response_maps_from_its_status() -> None:
    event_error = ApiError(status=meta_v1.Status(code=410, reason="Expired", message="too old resource version: 5 (9)"))
    failure = failure_from_exception(event_error, operation=OP)
    assert isinstance(failure, Gone)
    assert failure.message == "too old resource version: 5 (9)"


@pytest.mark.parametrize("error", [ValueError("bug"), KeyError("missing"), RuntimeError("other")], ids=repr)
def test_errors_that_are_not_api_failures_pass_through_unchanged(error: Exception) -> None:
    with pytest.raises(type(error)) as caught, api_errors(OP):
        raise error
    assert caught.value is error


async def test_async_with_maps_the_same_way() -> None:
    async def main() -> None:
        async with api_errors(OP):
            raise httpx2.ConnectError("refused")

    with pytest.raises(Transient):
        await main()


# -- patches -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("helper", "body", "status", "content_type", "path"),
    [
        (
            merge_patch,
            {"spec": {"size": 2}},
            False,
            "application/merge-patch+json",
            "/apis/example.test/v1/namespaces/ns/widgets/w",
        ),
        (
            merge_patch,
            {"status": {"ok": True}},
            True,
            "application/merge-patch+json",
            "/apis/example.test/v1/namespaces/ns/widgets/w/status",
        ),
        (
            json_patch,
            [{"op": "remove", "path": "/spec/size"}],
            False,
            "application/json-patch+json",
            "/apis/example.test/v1/namespaces/ns/widgets/w",
        ),
    ],
    ids=["merge", "merge-status", "json"],
)
async def test_patches_are_merge_or_json_patches_never_strategic(
    helper: Any, body: Any, status: bool, content_type: str, path: str
) -> None:
    seen: list[httpx2.Request] = []

    def respond(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={"apiVersion": "example.test/v1", "kind": "Widget", "metadata": {"name": "w"}})

    async def main() -> dict[str, Any]:
        client = async_client(_config(), transport=httpx2.MockTransport(respond))
        try:
            result: dict[str, Any] = await helper(
                client, resource_class(WIDGETS), "w", body, namespace="ns", status=status
            )
            return result
        finally:
            await client.close()

    result = await main()
    assert result["metadata"] == {"name": "w"}
    assert type(result) is dict
    [request] = seen
    assert request.headers["Content-Type"] == content_type
    assert request.url.path == path
    assert request.url.params["fieldManager"] == "kdp-servlet"
    assert json.loads(request.content) == body


async def test_a_rejected_patch_names_the_object_in_the_error() -> None:
    transport = _answer(422, _status(422, "Invalid", "spec.size: Invalid value"), "application/json")

    async def main() -> None:
        client = async_client(_config(), transport=transport)
        try:
            await merge_patch(client, resource_class(WIDGETS), "w", {"spec": {"size": -1}}, namespace="ns", where="svc")
        finally:
            await client.close()

    with pytest.raises(Invalid) as caught:
        await main()
    assert caught.value.operation == Operation(
        verb="patch", resource="widgets.example.test", namespace="ns", name="w", where="svc"
    )


def _patch_calls_outside_kube(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    return [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "patch"
    ]


def test_only_the_patch_helpers_call_lightkubes_patch() -> None:
    modules = [p for folder in ("adapters", "app") for p in sorted((REPO / folder).rglob("*.py"))]
    offenders = [hit for module in modules if module.name != "kube.py" for hit in _patch_calls_outside_kube(module)]
    assert not offenders, f"use merge_patch()/json_patch(), never client.patch() (strategic by default): {offenders}"


# -- generic resources -------------------------------------------------------------------------


def test_generic_resources_with_another_plural_do_not_clash_and_stay_out_of_lightkubes_registry() -> None:
    plain = resource_class(WIDGETS)
    again = resource_class(
        ResourceType(group="example.test", version="v1", kind="Widget", plural="widgets", namespaced=True)
    )
    other_plural = resource_class(
        ResourceType(group="example.test", version="v1", kind="Widget", plural="widgetz", namespaced=True)
    )
    assert plain is again
    assert other_plural is not plain
    assert other_plural._api_info.plural == "widgetz"
    assert plain.Status._api_info.action == "status"
    assert resource_registry.get("example.test/v1", "Widget") is None


# -- the real thing: kcpsim over HTTP ----------------------------------------------------------

CONFIGMAPS = ResourceType(group="", version="v1", kind="ConfigMap", plural="configmaps", namespaced=True)
CERTIFICATES = ResourceType(
    group="certificates.example.corp", version="v1alpha1", kind="Certificate", plural="certificates", namespaced=True
)
LOGICAL_CLUSTERS = ResourceType(
    group="core.kcp.io", version="v1alpha1", kind="LogicalCluster", plural="logicalclusters", namespaced=False
)


def _configmap(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"}}


async def _missing(sim: Any) -> None:
    client = async_client(sim.service_config(), trust_env=False)
    try:
        with api_errors(Operation(verb="get", resource="configmaps", namespace="default", name="nope")):
            await client.get(resource_class(CONFIGMAPS), "nope", namespace="default")
    finally:
        await client.close()


async def _created_twice(sim: Any) -> None:
    client = async_client(sim.service_config(), trust_env=False)
    try:
        for _ in range(2):
            with api_errors(Operation(verb="create", resource="configmaps", namespace="default", name="twice")):
                await client.create(wrap(resource_class(CONFIGMAPS), _configmap("twice")))
    finally:
        await client.close()


async def _stale_update(sim: Any) -> None:
    client = async_client(sim.service_config(), trust_env=False)
    try:
        created = dict(await client.create(wrap(resource_class(CONFIGMAPS), _configmap("stale"))))
        await merge_patch(client, resource_class(CONFIGMAPS), "stale", {"data": {"k": "v"}}, namespace="default")
        with api_errors(Operation(verb="update", resource="configmaps", namespace="default", name="stale")):
            await client.replace(wrap(resource_class(CONFIGMAPS), created))
    finally:
        await client.close()


async def _expired_watch(sim: Any) -> None:
    http = http_client(sim.service_config(), trust_env=False)
    try:
        with api_errors(Operation(verb="watch", resource="configmaps")):
            response = await http.get("api/v1/configmaps", params={"watch": "true", "resourceVersion": "1"})
            response.raise_for_status()
    finally:
        await http.aclose()


async def _unknown_workspace(sim: Any) -> None:
    client = async_client(sim.kcp_config("root:nope"), trust_env=False)
    try:
        with api_errors(Operation(verb="get", resource="logicalclusters.core.kcp.io", name="cluster")):
            await client.get(resource_class(LOGICAL_CLUSTERS), "cluster")
    finally:
        await client.close()


async def _invalid_object(sim: Any) -> None:
    client = async_client(sim.workspace_config("team-a"), trust_env=False)
    body = {
        "apiVersion": "certificates.example.corp/v1alpha1",
        "kind": "Certificate",
        "metadata": {"name": "bad", "namespace": "default"},
        "spec": {"secretName": "x"},
    }
    try:
        with api_errors(Operation(verb="create", resource="certificates.certificates.example.corp", name="bad")):
            await client.create(wrap(resource_class(CERTIFICATES), body))
    finally:
        await client.close()


@pytest.mark.parametrize(
    ("scenario", "expected", "code", "words"),
    [
        (_missing, NotFound, 404, 'configmaps "nope" not found'),
        (_created_twice, AlreadyExists, 409, "already exists"),
        (_stale_update, Conflict, 409, "the object has been modified"),
        (_expired_watch, Gone, 410, "too old resource version"),
        (_unknown_workspace, Forbidden, 403, "workspace access not permitted"),
        (_invalid_object, Invalid, 422, "commonName"),
    ],
    ids=["404", "409-exists", "409-conflict", "410", "403", "422"],
)
async def test_kcpsim_errors_map_to_our_classes_with_the_servers_message(
    kcpsim_factory: Callable[..., Any],
    scenario: Callable[[Any], Awaitable[None]],
    expected: type,
    code: int,
    words: str,
) -> None:
    sim = kcpsim_factory(watch_gone_as_status=True)
    with pytest.raises(expected) as caught:
        await scenario(sim)
    assert caught.value.code == code
    assert words in caught.value.message


@pytest.mark.parametrize(
    ("rule", "retry_after"),
    [({"status": 500}, None), ({"status": 503, "retry_after": 4}, 4.0), ({"status": 429, "retry_after": 3}, 3.0)],
    ids=["500", "503", "429"],
)
async def test_kcpsim_server_errors_and_throttling_are_transient(
    kcpsim: Any, rule: dict[str, Any], retry_after: float | None
) -> None:
    from kcpsim import ErrorRule, FaultPlan

    kcpsim.set_faults(FaultPlan(errors=(ErrorRule(resource="configmaps", **rule),)))
    with pytest.raises(Transient) as caught:
        await _missing(kcpsim)
    assert caught.value.code == rule["status"]
    assert caught.value.retry_after == retry_after


async def test_a_refused_connection_is_transient(kcpsim: Any) -> None:
    kcpsim.refuse_connections(1.0)
    with pytest.raises(Transient) as caught:
        await _missing(kcpsim)
    assert caught.value.code == 0


# -- one client per logical cluster ------------------------------------------------------------


async def test_cluster_clients_address_one_workspace_each_under_the_vw_url(kcpsim: Any) -> None:
    team_a = kcpsim.cluster_of("root:myorg:team-a")
    team_b = kcpsim.cluster_of("root:myorg:team-b")

    async def main() -> tuple[dict[str, list[str]], bool]:
        clients = ClusterClients(kcpsim.service_config(), base_url=kcpsim.vw_url(), trust_env=False)
        try:
            for cluster, name in ((team_a, "only-a"), (team_b, "only-b")):
                await clients.get(cluster).create(
                    wrap(
                        resource_class(CERTIFICATES),
                        {
                            "apiVersion": "certificates.example.corp/v1alpha1",
                            "kind": "Certificate",
                            "metadata": {"name": name, "namespace": "default"},
                            "spec": {"commonName": name},
                        },
                    )
                )
            seen = {
                cluster: sorted(
                    [
                        dict(obj)["metadata"]["name"]
                        async for obj in clients.get(cluster).list(resource_class(CERTIFICATES), namespace="*")
                    ]
                )
                for cluster in (team_a, team_b)
            }
            return seen, clients.get(team_a) is clients.get(team_a)
        finally:
            await clients.aclose()

    seen, cached = await main()
    assert seen == {team_a: ["only-a"], team_b: ["only-b"]}
    assert cached


@pytest.mark.parametrize(
    "failure",
    [
        NotFound(operation=OP, code=404, message="gone", reason="NotFound"),
        Transient(operation=OP, code=429, message="slow down", retry_after=2.0),
    ],
    ids=lambda f: type(f).__name__,
)
def test_failures_survive_copying_and_pickling_with_their_details(failure: ApiFailure) -> None:
    import copy
    import pickle

    for clone in (copy.copy(failure), pickle.loads(pickle.dumps(failure))):
        assert type(clone) is type(failure)
        assert str(clone) == str(failure)
        assert (clone.operation, clone.code, clone.message, clone.reason) == (
            failure.operation,
            failure.code,
            failure.message,
            failure.reason,
        )
        assert getattr(clone, "retry_after", None) == getattr(failure, "retry_after", None)
