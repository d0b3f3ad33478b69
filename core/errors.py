"""The API failures controllers branch on, next to the ports that raise them.

Controllers catch these classes (NotFound, Conflict, ...) and log the rest; each failure says
what was being done (`Operation`), the HTTP code and the server's own message. They are plain
exceptions: the adapters translate their client library's errors into them (`adapters/errors.py`
decides which response becomes which class) and the in-memory fakes raise them directly, so no
controller ever sees an HTTP library.

Deliberately not here: retry policies. `Transient` carries the server's Retry-After so the
caller (usually the work queue's backoff) can honour it.
"""

from __future__ import annotations

from collections.abc import Sequence

from attrs import frozen

from servlet.core.actions import Action
from servlet.core.redaction import scrub


@frozen
class Operation:
    """What was being done: a verb on a resource, optionally one object (namespace/name)."""

    verb: str
    resource: str
    namespace: str = ""
    name: str = ""
    # Where the request went (workspace or VW URL); empty when it does not add information.
    where: str = ""

    def __str__(self) -> str:
        target = "/".join(part for part in (self.namespace, self.name) if part)
        text = f"{self.verb} {self.resource}" + (f" {target}" if target else "")
        return f"{text} at {self.where}" if self.where else text


class ApiFailure(Exception):
    """An API request that did not succeed. `code` is the HTTP status (0 if none arrived)."""

    def __init__(self, *, operation: Operation, code: int, message: str, reason: str = "") -> None:
        self.operation = operation
        self.code = code
        self.message = message
        self.reason = reason
        super().__init__(str(self))

    def __str__(self) -> str:
        status = f"HTTP {self.code}" if self.code else "no response"
        return f"{self.operation} failed ({status}{', ' + self.reason if self.reason else ''}): {self.message}"

    def hide(self, spellings: Sequence[str]) -> None:
        """Cut `spellings` (Secret values the request carried) out of the server's message.

        A server may quote what it refused (an admission webhook explaining its denial); the
        message then reaches logs and the work queue's error reports. The client's exception this
        failure was raised from quotes the same message, so a scrubbed failure drops it.
        """
        scrubbed = scrub(self.message, spellings)
        if scrubbed != self.message:
            self.message = scrubbed
            self.args = (str(self),)
            self.__cause__ = self.__context__ = None
            self.__suppress_context__ = True

    def __reduce__(self) -> tuple[object, ...]:
        # Exceptions with keyword-only constructors need this to survive pickling and copying.
        return (_rebuild, (type(self), self.__dict__))


def _rebuild(cls: type[ApiFailure], state: dict[str, object]) -> ApiFailure:
    failure = cls.__new__(cls)
    failure.__dict__.update(state)
    Exception.__init__(failure, str(failure))
    return failure


class NotFound(ApiFailure):
    """404: the object (or the resource, or the namespace it would live in) does not exist."""


class Conflict(ApiFailure):
    """409 on a write: someone changed the object since we read it (stale resourceVersion)."""


class AlreadyExists(ApiFailure):
    """409 on a create: an object with that name is already there."""


class Gone(ApiFailure):
    """410: the resourceVersion asked for is too old (a watch must relist)."""


class Forbidden(ApiFailure):
    """401 or 403: not allowed, including kcp admission rejections and workspace access."""


class Invalid(ApiFailure):
    """400, 413, 415 or 422: the request itself was rejected; retrying it unchanged will not help."""


class Unreadable(ApiFailure):
    """A response arrived but could not be read as what was asked for (a list page, a watch event):
    whatever it carried is lost, so a cache that follows a watch must list again."""


class Transient(ApiFailure):
    """5xx, 429, timeouts and connection errors: worth retrying, after `retry_after` if given."""

    def __init__(
        self,
        *,
        operation: Operation,
        code: int,
        message: str,
        reason: str = "",
        retry_after: float | None = None,
    ) -> None:
        self.retry_after = retry_after
        super().__init__(operation=operation, code=code, message=message, reason=reason)


class NotLeader(Exception):
    """A write was asked for while this replica does not hold the leader Lease; nothing was sent."""

    def __init__(self, action: Action) -> None:
        self.action = action
        target = action.target.to_dict() if action.target is not None else {}
        super().__init__(f"not the leader: refusing {action.type} of {target}")
