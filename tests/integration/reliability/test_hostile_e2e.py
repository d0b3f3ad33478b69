"""Hostile input end to end (issue 7, item 4): the subset where the place of the error matters.

A broken PublishedResource gets `Ready=False` naming the field and value, on its own status (or,
when the PublishedResource CRD's schema catches it, is refused at apply time with a 422); a
user's object whose name the naming turns into something invalid, or that is too large for its
last-known-state, is logged ("cannot sync") and counted (`servlet_errors_total{kind="plan"}`)
without a finalizer or a write. All of it happens in one servlet next to a good PublishedResource
whose objects keep being synced. The full catalogue of 40+ cases runs at plan level in
`test_hostile_input.py`.
"""

from __future__ import annotations

import hashlib
import json

import pytest

from kcpsim.harness.world import ApiCallFailed
from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    GADGET,
    REMOTE_WIDGET,
    WIDGET,
    default_local_name,
    gadget_crd,
    published_resource,
    remote_object,
    widget_crd,
)

BROKEN = [
    pytest.param(
        published_resource("bad", kind="Gadget", naming={"name": "$remoteNme"}),
        "spec.naming.name",
        "$remoteNme",
        id="unknown-placeholder",
    ),
    pytest.param(
        published_resource(
            "bad",
            kind="Gadget",
            related=[
                {
                    "identifier": "x",
                    "origin": "service",
                    "kind": "Secret",
                    "reference": {"name": {"path": "spec.note", "regex": {"pattern": "((", "replacement": "y"}}},
                }
            ],
        ),
        "spec.related[0].reference.name.regex.pattern",
        "((",
        id="related-regex",
    ),
    pytest.param(published_resource("bad", kind="Doohickey"), "spec.resource", "Doohickey", id="crd-missing"),
    pytest.param(
        published_resource("bad", kind="Gadget", filter={"namespace": "Not_A_Namespace"}),
        "spec.filter.namespace",
        "Not_A_Namespace",
        id="filter-namespace",
    ),
    pytest.param(
        {
            **published_resource("bad", kind="Gadget"),
            "spec": {"resource": {"apiGroup": "example.com", "kind": "Gadget", "versions": ["v1", "v9"]}},
        },
        "spec.resource.versions[1]",
        "v9",
        id="listed-version-missing",
    ),
]
# Refused by the PublishedResource CRD's own schema: the author sees the error at apply time.
REFUSED = [
    pytest.param(
        published_resource(
            "bad",
            kind="Gadget",
            related=[
                {
                    "identifier": "x",
                    "origin": "service",
                    "kind": "Deployment",
                    "reference": {"name": {"path": "spec.note"}},
                }
            ],
        ),
        "spec.related[0].kind",
        id="related-kind",
    ),
    pytest.param(
        published_resource("bad", kind="Gadget", projection={"scope": "Galaxy"}),
        "spec.projection.scope",
        id="projection-scope",
    ),
    pytest.param(
        published_resource("bad", kind="Gadget", projection={"versions": {"v1": 2}}),
        "spec.projection.versions.v1",
        id="projection-versions",
    ),
]


@pytest.mark.parametrize("bad, field", REFUSED)
def test_a_published_resource_the_crd_schema_refuses_never_reaches_the_servlet(
    e2e: E2E, bad: dict[str, object], field: str
) -> None:
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    e2e.servlet()
    with pytest.raises(ApiCallFailed) as refused:
        e2e.publish(bad)
    assert "422" in str(refused.value) and field in str(refused.value)
    e2e.wait_served("team-a", REMOTE_WIDGET)
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "fine", namespace="default", size=1))
    e2e.wait_local(
        WIDGET, namespace=e2e.world.cluster("team-a"), name=default_local_name(namespace="default", name="fine")
    )


@pytest.mark.parametrize("bad, field, value", BROKEN)
def test_a_broken_published_resource_gets_a_condition_and_the_good_one_keeps_syncing(
    e2e: E2E, bad: dict[str, object], field: str, value: str
) -> None:
    e2e.publish(widget_crd(), gadget_crd(), published_resource("widgets", kind="Widget"), bad)
    e2e.servlet()
    condition = e2e.wait_condition("bad", "Ready", status="False")
    status = json.dumps(e2e.published_resource("bad").get("status"))  # type: ignore[union-attr]
    assert field in status and value in status, f"the status does not name {field} and {value}: {status}"
    e2e.wait_served("team-a", REMOTE_WIDGET)
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "fine", namespace="default", size=1))
    e2e.wait_local(
        WIDGET, namespace=e2e.world.cluster("team-a"), name=default_local_name(namespace="default", name="fine")
    )
    e2e.wait_condition("widgets", "Ready")
    assert condition["status"] == "False"


def _incompressible(size: int) -> str:
    return "".join(hashlib.sha256(str(i).encode()).hexdigest() for i in range(size // 64 + 1))[:size]


def test_objects_that_cannot_be_synced_are_logged_and_counted_and_others_are_served(e2e: E2E) -> None:
    e2e.publish(
        widget_crd(),
        gadget_crd(),
        published_resource("widgets", kind="Widget"),
        published_resource("gadgets", kind="Gadget", naming={"name": "copy-$remoteName"}),
    )
    servlet = e2e.servlet()
    e2e.wait_served("team-a", REMOTE_WIDGET)
    remote_gadget = type(GADGET)(REMOTE_WIDGET.group, "v1", "gadgets", namespaced=False)
    e2e.wait_served("team-a", remote_gadget)
    cluster = e2e.world.cluster("team-a")
    long_name = "g" * 253  # "copy-" + 253 characters is no valid object name
    e2e.create_remote("team-a", remote_gadget, remote_object("Gadget", long_name))
    # Close to the object size limit and incompressible: its state cannot fit the annotations.
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "huge", namespace="default", note=_incompressible(1_200_000))
    )
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "fine", namespace="default", size=1))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="fine"))

    def reported() -> bool:
        log = servlet.log_text()
        assert log.count('"cannot sync"') >= 2, "both objects are not logged yet"
        assert "spec.naming.name" in log and "metadata.annotations" in log
        return True

    e2e.eventually(reported, what="both objects to be logged as not syncable")
    errors = [
        line
        for line in servlet.metrics().splitlines()
        if line.startswith("servlet_errors_total{") and 'kind="plan"' in line
    ]
    assert errors and float(errors[0].rsplit(" ", 1)[1]) >= 2, errors
    assert not e2e.has_finalizer("team-a", REMOTE_WIDGET, namespace="default", name="huge")
    assert not e2e.has_finalizer("team-a", remote_gadget, name=long_name)
    assert e2e.local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="huge")) is None


def test_a_catastrophic_regex_on_a_tenant_value_never_freezes_the_servlet(e2e: E2E) -> None:
    # Python's backtracking `re` needs about 2^41 steps for this pattern on this value; RE2 is linear.
    hostile_note = "a" * 40 + "!"
    e2e.publish(
        widget_crd(),
        published_resource(
            "widgets",
            kind="Widget",
            related=[
                {
                    "identifier": "creds",
                    "origin": "service",
                    "kind": "Secret",
                    "reference": {
                        "name": {"path": "spec.note", "regex": {"pattern": "^(a+)+$", "replacement": "creds"}}
                    },
                }
            ],
        ),
    )
    servlet = e2e.servlet()
    e2e.wait_served("team-a", REMOTE_WIDGET)
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote(
        "team-a", REMOTE_WIDGET, remote_object("Widget", "hostile", namespace="default", note=hostile_note)
    )
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="hostile"))
    # The regex ran to its end: it did not match, and the unchanged value is no Secret name.
    e2e.eventually(
        lambda: "spec.related[0].reference.name" in servlet.log_text() and hostile_note in servlet.log_text(),
        what="the hostile Widget's related Secret to be logged as not syncable",
    )
    # The probe gives up after 2 s: an event loop busy backtracking would miss it.
    e2e.consistently(lambda: servlet.probe("/healthz") == 200, what="/healthz answering", duration=3.0)
    e2e.create_remote("team-a", REMOTE_WIDGET, remote_object("Widget", "fine", namespace="default", size=1))
    e2e.wait_local(WIDGET, namespace=cluster, name=default_local_name(namespace="default", name="fine"))
    assert servlet.probe("/healthz") == 200
