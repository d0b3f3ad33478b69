"""Planning speed (issue 6, target 1): `plan_object` on one ~2 KB object, fresh and converged.

Pure core, one thread: the cost of one plan is set next to `json.loads(json.dumps(obj))` of the
same object measured in the same run, so the ratio means something on any machine. It does not
measure executing the plan (the sync benchmarks do). The same plans are also timed with a
PublishedResource carrying `MUTATION`, one step of each kind, so the cost of mutations stands
next to the same round trip.
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import attrs

from servlet.core.actions import Create
from servlet.core.gather import PlanInputs
from servlet.core.metadata import FINALIZER
from servlet.core.model import (
    Naming,
    PublishedResource,
    PublishedResourceSpec,
    ResourceFilter,
    ResourceType,
    ServletIdentity,
    SourceResource,
)
from servlet.core.mutation_steps import CelStep, DeleteStep, Mutation, RegexStep, TemplateStep
from servlet.core.plan import ObjectPlan, SyncContext, plan_object
from servlet.core.projection import Projected

CLUSTER = "p4n8c2l6t0y9h1j3"


@attrs.frozen
class PlanningFigures:
    object_bytes: int
    json_roundtrip_us: float
    fresh_us: float
    converged_us: float
    mutated_fresh_us: float
    mutated_converged_us: float

    @property
    def fresh_per_second(self) -> float:
        return 1e6 / self.fresh_us

    @property
    def converged_per_second(self) -> float:
        return 1e6 / self.converged_us

    def as_dict(self) -> dict[str, float]:
        return {
            **attrs.asdict(self),
            "fresh_per_second": self.fresh_per_second,
            "converged_per_second": self.converged_per_second,
            "fresh_vs_json": self.fresh_us / self.json_roundtrip_us,
            "converged_vs_json": self.converged_us / self.json_roundtrip_us,
            "mutated_fresh_vs_json": self.mutated_fresh_us / self.json_roundtrip_us,
            "mutated_converged_vs_json": self.mutated_converged_us / self.json_roundtrip_us,
        }


# One step of each kind, on the object of `remote_object`: what a service owner might write.
MUTATION = Mutation(
    spec=(
        RegexStep("spec.image.repository", "^registry\\.example\\.corp/", "mirror.internal/"),
        TemplateStep("spec.routes.0.tls.secretName", "{{ .RemoteObject.metadata.name }}-tls"),
        CelStep("spec.replicas", "value < 2 ? 2 : value"),
        DeleteStep("spec.tolerations"),
    ),
)


def context(mutation: Mutation = Mutation()) -> SyncContext:
    spec = PublishedResourceSpec(
        resource=SourceResource(api_group="example.com", kind="Widget", version="v1"),
        filter=ResourceFilter(),
        naming=Naming(),
        mutation=mutation,
    )
    projected = Projected(
        schema_name="v0123abcd.widgets.certificates.example.corp",
        schema_spec={},
        local=ResourceType("example.com", "v1", "Widget", "widgets", True),
        remote=ResourceType("certificates.example.corp", "v1", "Widget", "widgets", True),
        has_status_subresource=True,
    )
    return SyncContext(
        servlet=ServletIdentity(name="tom", api_group="certificates.example.corp"),
        published=PublishedResource(name="widgets", spec=spec),
        projected=projected,
    )


def remote_object(*, finalized: bool) -> dict[str, Any]:
    """A workspace object of about 2 KB: 10 labels, a spec with nested maps and lists."""
    meta: dict[str, Any] = {
        "name": "checkout-api",
        "namespace": "prod",
        "uid": "0b7c3f5e-1d2a-4c3b-9e8f-7a6b5c4d3e2f",
        "resourceVersion": "48213",
        "generation": 3,
        "creationTimestamp": "2026-11-20T10:00:00Z",
        "labels": {f"app.example.corp/label-{i}": f"value-{i}" for i in range(10)},
        "annotations": {"kcp.io/cluster": CLUSTER, "note": "owned by the checkout team"},
    }
    if finalized:
        meta["finalizers"] = [FINALIZER]
    spec = {
        "replicas": 3,
        "image": {"repository": "registry.example.corp/checkout/api", "tag": "v2.14.1", "pullPolicy": "IfNotPresent"},
        "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"cpu": "1", "memory": "1Gi"}},
        "env": [{"name": f"SETTING_{i}", "value": f"value number {i}"} for i in range(8)],
        "ports": [
            {"name": "http", "port": 8080, "protocol": "TCP"},
            {"name": "metrics", "port": 9090, "protocol": "TCP"},
        ],
        "routes": [
            {"host": f"api{i}.example.corp", "paths": ["/", "/v1", "/v2"], "tls": {"secretName": f"api{i}-tls"}}
            for i in range(4)
        ],
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "checkout", "effect": "NoSchedule"}],
        "nodeSelector": {"topology.kubernetes.io/zone": "eu-central-1a", "kubernetes.io/arch": "amd64"},
    }
    return {"apiVersion": "certificates.example.corp/v1", "kind": "Widget", "metadata": meta, "spec": spec}


def _plan(ctx: SyncContext, remote: dict[str, Any], local: dict[str, Any] | None) -> ObjectPlan:
    return plan_object(
        context=ctx,
        inputs=PlanInputs(remote, candidates=(local,) if local is not None else (), namespace_exists=local is not None),
    )


def converged_local(ctx: SyncContext, remote: dict[str, Any]) -> dict[str, Any]:
    """The local copy exactly as the plan for the object creates it (as the API would return it)."""
    creates = [a for a in _plan(ctx, remote, None).actions if isinstance(a, Create)]
    assert len(creates) == 1, "a fresh object must plan exactly one create"
    local: dict[str, Any] = copy.deepcopy(dict(creates[0].object))
    local["metadata"].update({"uid": "5f1e", "resourceVersion": "9", "creationTimestamp": "2026-11-20T10:00:01Z"})
    return local


def _per_call_us(fn: Callable[[], object], *, seconds: float, repeats: int) -> float:
    """Median over `repeats` timed batches of microseconds per call."""
    batch = 1
    while True:  # size a batch to ~seconds/repeats
        started = time.perf_counter()
        for _ in range(batch):
            fn()
        if (elapsed := time.perf_counter() - started) >= seconds / repeats / 4 or batch >= 1 << 20:
            break
        batch *= 2
    batch = max(1, int(batch * (seconds / repeats) / max(elapsed, 1e-9)))
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        for _ in range(batch):
            fn()
        samples.append((time.perf_counter() - started) / batch * 1e6)
    return statistics.median(samples)


def renamed(obj: dict[str, Any], index: int) -> dict[str, Any]:
    """The same object under another name, as the next object of a busy workspace would be."""
    return {**obj, "metadata": {**obj["metadata"], "name": f"checkout-api-{index}"}}


def _cycling(calls: list[Callable[[], object]]) -> Callable[[], object]:
    """One call per invocation, taking the objects in turn."""
    position = 0

    def call() -> object:
        nonlocal position
        position = (position + 1) % len(calls)
        return calls[position]()

    return call


def measure(*, seconds: float = 3.0, repeats: int = 5, objects: int = 5000) -> PlanningFigures:
    """Each figure cycles through `objects` objects of the same shape under distinct names, so the
    planner's small caches of per-name results (names, hashes) help no more than they do when a
    servlet works through thousands of objects."""
    ctx, mutated = context(), context(MUTATION)
    fresh = [renamed(remote_object(finalized=False), i) for i in range(objects)]
    converged = [renamed(remote_object(finalized=True), i) for i in range(objects)]
    local = [converged_local(ctx, obj) for obj in converged]
    mutated_local = [converged_local(mutated, obj) for obj in converged]
    assert _plan(ctx, converged[0], local[0]).actions == (), "the converged object must plan nothing"
    assert _plan(mutated, converged[0], mutated_local[0]).actions == (), "so must the mutated one"
    assert mutated_local[0]["spec"] != local[0]["spec"], "the mutation must change the copy"
    each = seconds / 5
    return PlanningFigures(
        object_bytes=len(json.dumps(converged[0])),
        json_roundtrip_us=_per_call_us(
            _cycling([lambda o=o: json.loads(json.dumps(o)) for o in converged]), seconds=each, repeats=repeats
        ),
        fresh_us=_per_call_us(
            _cycling([lambda o=o: _plan(ctx, o, None) for o in fresh]), seconds=each, repeats=repeats
        ),
        converged_us=_per_call_us(
            _cycling([lambda o=o, copy=copy: _plan(ctx, o, copy) for o, copy in zip(converged, local)]),
            seconds=each,
            repeats=repeats,
        ),
        mutated_fresh_us=_per_call_us(
            _cycling([lambda o=o: _plan(mutated, o, None) for o in fresh]), seconds=each, repeats=repeats
        ),
        mutated_converged_us=_per_call_us(
            _cycling([lambda o=o, copy=copy: _plan(mutated, o, copy) for o, copy in zip(converged, mutated_local)]),
            seconds=each,
            repeats=repeats,
        ),
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="planning speed (issue 6, target 1)")
    parser.add_argument(
        "--objects",
        type=int,
        default=5000,
        help="distinct objects to cycle through (1: one object planned again and again)",
    )
    parser.add_argument("--seconds", type=float, default=3.0)
    arguments = parser.parse_args()
    print(json.dumps(measure(objects=arguments.objects, seconds=arguments.seconds).as_dict(), indent=2))
