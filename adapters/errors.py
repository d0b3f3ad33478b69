"""How lightkube's and httpx2's failures become the core's `ApiFailure` classes.

lightkube reports a failed request three different ways depending on the response's
Content-Type (`ApiError` only for exactly `application/json`, a bare `httpx2.HTTPStatusError`
with `; charset=utf-8`, a `KeyError` without the header) plus transport errors. `api_errors()`
turns all of them into the classes of `core/errors.py`, so no caller depends on those quirks;
`failure_from_response` and `failure_from_status` do the same for the plain HTTP requests of the
watch adapter.

Deliberately not here: the failure classes themselves (`core/errors.py`, next to the ports),
retries, logging.
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from typing import Any

import httpx2
import msgspec
from lightkube.core.exceptions import ApiError

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
    Unreadable,
)

# Long enough to identify a server's error page, short enough to keep log lines readable.
_MAX_BODY_IN_MESSAGE = 300


def failure_for(
    *,
    operation: Operation,
    code: int,
    message: str,
    reason: str = "",
    retry_after: float | None = None,
) -> ApiFailure:
    """The failure class for an HTTP status code (and, for 409, the Status reason)."""
    if code == 404:
        return NotFound(operation=operation, code=code, message=message, reason=reason)
    if code == 409:
        # Without a readable Status body a 409 on a create can only mean the name is taken.
        if reason == "AlreadyExists" or (not reason and operation.verb == "create"):
            return AlreadyExists(operation=operation, code=code, message=message, reason=reason)
        return Conflict(operation=operation, code=code, message=message, reason=reason)
    if code == 410:
        return Gone(operation=operation, code=code, message=message, reason=reason)
    if code in (401, 403):
        return Forbidden(operation=operation, code=code, message=message, reason=reason)
    if code in (400, 413, 415, 422):
        return Invalid(operation=operation, code=code, message=message, reason=reason)
    if code in (408, 429) or code >= 500:
        return Transient(operation=operation, code=code, message=message, reason=reason, retry_after=retry_after)
    return ApiFailure(operation=operation, code=code, message=message, reason=reason)


def failure_from_status(status: Mapping[str, Any], *, operation: Operation) -> ApiFailure:
    """The failure a `metav1.Status` describes (an error response body or a watch ERROR event)."""
    details = status.get("details")
    retry_after = details.get("retryAfterSeconds") if isinstance(details, Mapping) else None
    code = status.get("code")
    return failure_for(
        operation=operation,
        code=code if isinstance(code, int) else 500,
        message=str(status.get("message") or status.get("reason") or "no message"),
        reason=str(status.get("reason") or ""),
        retry_after=float(retry_after) if isinstance(retry_after, (int, float)) and retry_after > 0 else None,
    )


def failure_from_response(*, operation: Operation, code: int, headers: Mapping[str, str], body: bytes) -> ApiFailure:
    """The failure for an error response, whatever its Content-Type says."""
    status = _status_body(body)
    header_retry = _retry_after_seconds(headers.get("retry-after"))
    if status is not None:
        failure = failure_from_status({**status, "code": code}, operation=operation)
        if isinstance(failure, Transient) and header_retry is not None:
            failure.retry_after = header_retry
        return failure
    text = body.decode("utf-8", errors="replace").strip()[:_MAX_BODY_IN_MESSAGE] or f"HTTP {code} with an empty body"
    return failure_for(operation=operation, code=code, message=text, retry_after=header_retry)


def failure_from_exception(exc: BaseException, *, operation: Operation) -> ApiFailure | None:
    """Our failure for an exception lightkube or httpx2 raised; None if it is not an API failure."""
    if isinstance(exc, ApiFailure):
        return exc
    if isinstance(exc, ApiError) and exc.response is None:
        # Built from a watch ERROR event: there is no response, only the decoded Status.
        return failure_from_status(msgspec.to_builtins(exc.status), operation=operation)
    if isinstance(exc, httpx2.HTTPStatusError):
        return _from_response(exc.response, operation=operation)
    if isinstance(exc, _DECODING_ERRORS):
        # lightkube inspects an error response while handling it: a missing Content-Type header
        # surfaces as KeyError, a non-JSON or non-Status body labelled `application/json` as a
        # decoding error; the real error is in their context chain.
        original = _status_error_behind(exc)
        if original is not None:
            return _from_response(original.response, operation=operation)
    if isinstance(exc, httpx2.TimeoutException):
        return Transient(operation=operation, code=0, message=f"timed out ({type(exc).__name__}): {exc}")
    if isinstance(exc, httpx2.TransportError):
        return Transient(operation=operation, code=0, message=f"connection failed ({type(exc).__name__}): {exc}")
    if isinstance(exc, httpx2.DecodingError):
        # The body's content encoding was broken: what it carried is lost, like an unreadable event.
        return Unreadable(operation=operation, code=0, message=f"undecodable response: {exc}")
    return None


_DECODING_ERRORS = (KeyError, ValueError, TypeError, msgspec.MsgspecError)


class _ApiErrors:
    def __init__(self, operation: Operation) -> None:
        self.operation = operation

    def __enter__(self) -> _ApiErrors:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: types.TracebackType | None
    ) -> None:
        # Never swallows: either re-raises as our failure or lets the exception pass unchanged.
        if exc is None:
            return
        failure = failure_from_exception(exc, operation=self.operation)
        if failure is None or failure is exc:
            return
        try:
            raise failure from exc
        finally:
            # The failure's traceback holds this frame: a local naming the failure would make a
            # reference cycle, freed only by the cyclic collector, which the daemon runs rarely.
            del failure

    async def __aenter__(self) -> _ApiErrors:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: types.TracebackType | None
    ) -> None:
        self.__exit__(exc_type, exc, tb)


def api_errors(operation: Operation) -> _ApiErrors:
    """Around every API call: `with api_errors(op): await client.get(...)` (or `async with`).

    lightkube and httpx2 failures leave the block as the matching `ApiFailure`; any other
    exception passes through unchanged.
    """
    return _ApiErrors(operation)


def _status_error_behind(exc: BaseException) -> httpx2.HTTPStatusError | None:
    context = exc.__context__
    for _ in range(5):  # a decoder may add a level or two of its own between us and the error
        if context is None:
            return None
        if isinstance(context, httpx2.HTTPStatusError):
            return context
        context = context.__context__
    return None


def _from_response(response: httpx2.Response, *, operation: Operation) -> ApiFailure:
    try:
        body = response.content
    except httpx2.ResponseNotRead:  # a streamed (watch) response whose body was never read
        body = b""
    return failure_from_response(operation=operation, code=response.status_code, headers=response.headers, body=body)


def _status_body(body: bytes) -> dict[str, Any] | None:
    try:
        decoded = json.loads(body)
    except ValueError:
        return None
    if isinstance(decoded, dict) and decoded.get("kind") == "Status":
        return decoded
    return None


def _retry_after_seconds(value: str | None) -> float | None:
    # Only the delta-seconds form: an HTTP date would need a clock, and API servers send seconds.
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None
