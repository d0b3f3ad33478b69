"""Naming patterns through the running daemon: a bad one is Valid=False by field, a template syncs."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from kcpsim.waiting import eventually_async
from tests.integration.controllers_support import TEAM_A, world_and_daemon
from tests.integration.e2e.manifests import REMOTE_WIDGET, WIDGET, published_resource, remote_object, widget_crd


@pytest.mark.parametrize(
    ("naming", "field", "shown"),
    [
        ({"name": "$foo-$remoteName"}, "spec.naming.name", "$foo"),
        ({"name": "{{ .Nope }}"}, "spec.naming.name", ".Nope"),
        ({"namespace": "{{ .ClusterName | nope }}"}, "spec.naming.namespace", "'nope'"),
    ],
)
async def test_a_pattern_that_cannot_work_makes_the_published_resource_invalid(
    tmp_path: Path,
    naming: dict[str, str],
    field: str,
    shown: str,
) -> None:
    documents = (widget_crd(), published_resource("widgets", kind="Widget", naming=naming))
    async with world_and_daemon(tmp_path, documents=documents) as h:
        valid = await h.wait_condition("widgets", "Valid", "False")
        assert valid["reason"] == "InvalidSpec"
        assert valid["message"].startswith(f"{field}: ") and shown in valid["message"], valid
        ready = await h.wait_condition("widgets", "Ready", "False")
        assert ready["message"].startswith(f"Valid: {field}")


async def test_an_object_lands_at_the_name_its_template_computes(tmp_path: Path) -> None:
    naming = {
        "name": '{{ .Object.metadata.labels.owner | default "nobody" | lower }}-{{ sha3short .Object.metadata.name 8 }}'
    }
    documents = (widget_crd(), published_resource("widgets", kind="Widget", naming=naming))
    async with world_and_daemon(tmp_path, documents=documents) as h:
        await h.wait_condition("widgets", "Ready")
        remote = h.world.in_workspace("team-a", REMOTE_WIDGET.path(namespace="default"))
        h.rest.create(remote, remote_object("Widget", "w1", namespace="default", labels={"owner": "Alice"}))
        expected = f"alice-{hashlib.sha3_256(b'w1').hexdigest()[:8]}"
        local = WIDGET.path(namespace=TEAM_A, name=expected)
        await eventually_async(lambda: h.rest.get(local), what=f"the local copy of w1 at {expected}")
