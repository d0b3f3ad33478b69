"""Mutations with `servlet run` as a real process: a spec field rewritten on its way down, a CEL
step reading the local copy's identity, and a status field rewritten on its way up."""

from __future__ import annotations

import copy

from tests.integration.e2e.env import E2E
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    ZERTIFIKAT,
    certificate_crd,
    example_local_name,
    example_published_resource,
    zertifikat,
)


def test_spec_steps_rewrite_the_copy_and_status_steps_the_status_that_goes_up(e2e: E2E) -> None:
    published = copy.deepcopy(example_published_resource())
    published["spec"]["mutation"] = {
        "spec": [
            {"regex": {"path": "spec.commonName", "pattern": "\\.example\\.corp$", "replacement": ".internal"}},
            {"cel": {"path": "spec.issuerRef.name", "expression": '"ca-" + other.metadata.namespace'}},
        ],
        # The day only, still a date-time: the workspace's schema validates the format, as kube-apiserver does.
        "status": [{"template": {"path": "status.notAfter", "template": "{{ .Value.String | trunc 10 }}T00:00:00Z"}}],
    }
    e2e.publish(certificate_crd(), published)
    e2e.servlet()
    e2e.wait_served("team-a", ZERTIFIKAT)
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web"))
    name = example_local_name(namespace="default", name="web")

    local = e2e.wait_local(CERTIFICATE, namespace=cluster, name=name)
    assert local["spec"]["commonName"] == "web.internal"
    assert local["spec"]["issuerRef"]["name"] == f"ca-{cluster}"

    e2e.rest.merge_patch(
        CERTIFICATE.path(namespace=cluster, name=name) + "/status", {"status": {"notAfter": "2027-03-01T10:00:00Z"}}
    )

    def shortened() -> bool:
        remote = e2e.remote("team-a", ZERTIFIKAT, namespace="default", name="web") or {}
        assert remote.get("status") == {"notAfter": "2027-03-01T00:00:00Z"}, (
            f"the workspace status is {remote.get('status')}"
        )
        return True

    e2e.eventually(shortened, what="the shortened notAfter in the workspace")
