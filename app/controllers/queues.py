"""Work queues wired to the daemon's metrics and logs, the same way for every controller.

Each finished reconcile is counted by controller and result (success, requeue, error) with its
duration; a failure is logged once with the key and the error and counted by kind; the depth of
all queues of one controller (the sync workers share the label `sync`) is published as one sum.

`Requeue` is how a reconcile says "nothing is wrong, but run me again later" (waiting for a cache
or for kcp); `NotLeader` means the lease was lost mid-reconcile, `BucketNotHeld` that the
workspace's bucket was handed over mid-reconcile: none is logged as an error.

Deliberately not here: what a key means or what a reconcile does.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TypeVar

from servlet.app.observability.logs import FieldLogger
from servlet.app.observability.metrics import Metrics, ReconcileResult
from servlet.app.runtime.buckets import BucketNotHeld
from servlet.app.runtime.workqueue import Backoff, Handler, WorkQueue
from servlet.core.errors import ApiFailure, NotLeader

K = TypeVar("K", bound=Hashable)

# Reconciles that fail retry after 0.2 s, 0.4 s, ... up to two minutes: a stale cache (the usual
# cause of a 409) catches up within the first retries, a real outage is not hammered.
DEFAULT_BACKOFF = Backoff(base=0.2, cap=120.0)


class Requeue(Exception):
    """Not a failure: the reconcile is waiting for something and wants to run again later."""

    def __init__(self, reason: str, *, after: float = 1.0) -> None:
        super().__init__(reason)
        self.retry_after = after


def error_kind(error: BaseException) -> str:
    """A short fixed word for the errors metric (`notfound`, `conflict`, `transient`, ...)."""
    if isinstance(error, ApiFailure):
        return type(error).__name__.lower()
    if isinstance(error, (NotLeader, BucketNotHeld)):
        return "notleader"
    return "internal"


class QueueDepths:
    """Publishes the summed depth of every queue of a controller under that controller's label."""

    def __init__(self, metrics: Metrics) -> None:
        self._metrics = metrics
        self._depths: dict[str, dict[str, int]] = {}

    def hook(self, *, controller: str, queue: str) -> Callable[[int], None]:
        def report(depth: int) -> None:
            self._depths.setdefault(controller, {})[queue] = depth
            self._publish(controller)

        return report

    def forget(self, *, controller: str, queue: str) -> None:
        self._depths.get(controller, {}).pop(queue, None)
        self._publish(controller)

    def _publish(self, controller: str) -> None:
        self._metrics.set_queue_depth(controller=controller, depth=sum(self._depths.get(controller, {}).values()))


def controller_queue(
    *,
    controller: str,
    name: str,
    handler: Handler[K],
    metrics: Metrics,
    depths: QueueDepths,
    log: FieldLogger,
    workers: int = 1,
    backoff: Backoff = DEFAULT_BACKOFF,
    resync_every: float | None = None,
    resync_keys: Callable[[], Iterable[K]] | None = None,
    accept: Callable[[K], bool] | None = None,
) -> WorkQueue[K]:
    """A work queue for `controller` whose reconciles are measured, counted and logged."""

    def done(key: K, error: BaseException | None, seconds: float) -> None:
        if error is None:
            result = ReconcileResult.SUCCESS
        elif isinstance(error, (Requeue, NotLeader, BucketNotHeld)):
            result = ReconcileResult.REQUEUE
            log.debug("reconcile will run again", key=str(key), reason=str(error))
        else:
            result = ReconcileResult.ERROR
            metrics.count_error(controller=controller, kind=error_kind(error))
            log.warning(
                "reconcile failed, will retry",
                key=str(key),
                error=str(error) or repr(error),
                error_kind=error_kind(error),
            )
        metrics.observe_reconcile(controller=controller, result=result, seconds=seconds)

    return WorkQueue(
        name=name,
        handler=handler,
        workers=workers,
        backoff=backoff,
        resync_every=resync_every,
        resync_keys=resync_keys,
        on_done=done,
        on_depth=depths.hook(controller=controller, queue=name),
        accept=accept,
    )
