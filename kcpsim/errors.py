"""Kubernetes `Status` errors as the simulator raises and renders them.

Handlers raise `StatusError`; the HTTP layer turns it into a `Status` body with
`Content-Type: application/json` exactly (lightkube maps only that content type to ApiError).
This module does not decide *when* an error happens, only what it looks like.
"""

from __future__ import annotations

from typing import Any


class StatusError(Exception):
    """A failed API call, carried up to the HTTP layer."""

    def __init__(
        self,
        code: int,
        reason: str,
        message: str,
        *,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return status_body(code=self.code, reason=self.reason, message=self.message, details=self.details)


def status_body(*, code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if not reason:  # as an error the apiserver passes on unmapped (etcd's), with no reason
        del body["reason"]
    if details:
        body["details"] = details
    return body


def _details(name: str | None, group: str, kind: str) -> dict[str, Any]:
    out: dict[str, Any] = {"group": group, "kind": kind}
    if name:
        out["name"] = name
    return out


def gr(group: str, plural: str) -> str:
    """`secrets` or `certificates.example.corp`-style qualified resource name used in messages."""
    return f"{plural}.{group}" if group else plural


def not_found(*, group: str, plural: str, name: str) -> StatusError:
    return StatusError(
        404, "NotFound", f'{gr(group, plural)} "{name}" not found', details=_details(name, group, plural)
    )


def resource_not_served() -> StatusError:
    return StatusError(
        404,
        "NotFound",
        "the server could not find the requested resource",
        details={"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]},
    )


def already_exists(*, group: str, plural: str, name: str) -> StatusError:
    return StatusError(
        409, "AlreadyExists", f'{gr(group, plural)} "{name}" already exists', details=_details(name, group, plural)
    )


def conflict(*, group: str, plural: str, name: str, why: str | None = None) -> StatusError:
    why = why or "the object has been modified; please apply your changes to the latest version and try again"
    return StatusError(
        409,
        "Conflict",
        f'Operation cannot be fulfilled on {gr(group, plural)} "{name}": {why}',
        details=_details(name, group, plural),
    )


def invalid(*, group: str, kind: str, name: str, causes: list[tuple[str, str]]) -> StatusError:
    """422 Invalid; `causes` are (field, message) pairs, as the apiserver lists them."""
    text = ", ".join(f"{field}: {msg}" for field, msg in causes)
    qualified = f"{kind}.{group}" if group else kind
    return StatusError(
        422,
        "Invalid",
        # Several causes read as Go prints an aggregate error: in brackets.
        f'{qualified} "{name}" is invalid: {text if len(causes) == 1 else f"[{text}]"}',
        details={
            **_details(name, group, kind),
            "causes": [{"reason": _cause_reason(msg), "message": msg, "field": field} for field, msg in causes],
        },
    )


_CAUSE_REASONS = {
    "Required value": "FieldValueRequired",
    "Unsupported value": "FieldValueNotSupported",
    "Too long": "FieldValueTooLong",
    "Too many": "FieldValueTooMany",
    "Duplicate value": "FieldValueDuplicate",
    "Forbidden": "FieldValueForbidden",
}


def _cause_reason(message: str) -> str:
    """The cause's machine-readable reason, from the words its message starts with."""
    if message.startswith('Invalid value: "') and " must be of type " in message:
        return "FieldValueTypeInvalid"
    return next((reason for words, reason in _CAUSE_REASONS.items() if message.startswith(words)), "FieldValueInvalid")


def forbidden(*, group: str, plural: str, name: str, why: str) -> StatusError:
    subject = f'{gr(group, plural)} "{name}"' if name else gr(group, plural)  # lists name no object
    return StatusError(403, "Forbidden", f"{subject} is forbidden: {why}", details=_details(name, group, plural))


def bad_request(message: str) -> StatusError:
    return StatusError(400, "BadRequest", message)


def gone(message: str) -> StatusError:
    return StatusError(410, "Expired", message)


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> StatusError:
    return StatusError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> StatusError:
    return StatusError(
        415,
        "UnsupportedMediaType",
        f"the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml (got {content_type})",
    )


def too_many_requests(retry_after: int) -> StatusError:
    return StatusError(
        429,
        "TooManyRequests",
        "the server has received too many requests and has asked us to try again later",
        details={"retryAfterSeconds": retry_after},
        headers={"Retry-After": str(retry_after)},
    )


def internal(
    message: str = 'an error on the server ("injected fault") has prevented the request from succeeding',
) -> StatusError:
    return StatusError(500, "InternalError", message)
