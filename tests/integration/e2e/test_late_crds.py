"""A servlet started before the PublishedResource CRD exists notices it within seconds of its
installation, instead of after a list backoff that has grown meanwhile (up to 30 s)."""

from __future__ import annotations

import json
import time

import pytest

from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import published_resource, widget_crd

PUBLISHED_RESOURCE_CRD = (
    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/publishedresources.services.kdp.k8c.io"
)
# The list backoff (0.5 s, doubling) has grown to pauses this long when the CRD is installed.
GROWN_PAUSE = 8.0
NOTICED_WITHIN = GROWN_PAUSE / 2


def _pause_announced(log: str) -> float:
    """The pause the last "waiting for the resource to be served" line announced (0 if none)."""
    pauses = [
        float(entry.get("retry_in") or 0)
        for line in log.splitlines()
        if line.startswith("{")
        for entry in [json.loads(line)]
        if entry.get("message", "").startswith("waiting for the resource")
    ]
    return pauses[-1] if pauses else 0.0


@pytest.mark.kcpsim_only("deletes and reinstalls the PublishedResource CRD")
def test_a_servlet_started_before_the_published_resource_crd_serves_it_within_seconds(e2e: E2E) -> None:
    crd = e2e.rest.get(PUBLISHED_RESOURCE_CRD)
    assert crd is not None
    e2e.rest.delete(PUBLISHED_RESOURCE_CRD)
    e2e.eventually(lambda: e2e.rest.get(PUBLISHED_RESOURCE_CRD) is None or None, what="the CRD gone")
    servlet = e2e.servlet_process().launch()
    e2e.eventually(
        lambda: _pause_announced(servlet.log_text()) >= GROWN_PAUSE or None,
        timeout=30.0,
        what=f"the log saying what the servlet waits for, with a pause of {GROWN_PAUSE} s or more",
    )

    installed = time.monotonic()
    e2e.rest.create(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        {key: value for key, value in crd.items() if key != "status"}
        | {"metadata": {"name": crd["metadata"]["name"], "labels": crd["metadata"].get("labels") or {}}},
    )
    e2e.publish(widget_crd(), published_resource("widgets", kind="Widget"))
    e2e.wait_condition("widgets", "Ready")

    assert time.monotonic() - installed < NOTICED_WITHIN, "the installed CRD was noticed only after the backoff"
    assert "publishedresources.services.kdp.k8c.io" in servlet.log_text()
