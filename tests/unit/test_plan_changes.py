"""`servlet plan` shows what each patch changes, field by field: `path: old -> new`."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from servlet.app.plan_changes import dotted, field_changes
from servlet.app.render import change_lines
from tests.unit.test_cli_plan import EXAMPLE, converged_world, json_plan, run_plan, write_documents

WEB = "k7v2m9x4q1w8z3r5:default/web"


def _object_actions(plan: dict[str, Any], key: str) -> list[dict[str, Any]]:
    [obj] = [
        obj
        for obj in plan["objects"]
        if f"{obj['remote']['cluster']}:{obj['remote']['namespace']}/{obj['remote']['name']}" == key
    ]
    return list(obj["actions"])


def _world_with_web_changed(tmp_path: Path) -> Path:
    """The example after its plan ran, then a user renamed web's Secret and dropped a DNS name."""
    _, first = json_plan("-f", str(EXAMPLE))
    world = converged_world(first)
    for doc in world:
        if doc.get("kind") == "Zertifikat" and doc["metadata"]["name"] == "web":
            doc["spec"]["secretName"] = "web-tls-2"
            doc["spec"]["dnsNames"] = []
            doc["spec"]["duration"] = "24h"
    return write_documents(tmp_path / "world.yaml", world)


def test_a_patch_is_shown_as_each_field_it_changes_with_its_old_and_new_value(tmp_path: Path) -> None:
    world = _world_with_web_changed(tmp_path)
    code, text = run_plan("-f", str(world))
    assert code == 0, text
    assert '~ spec.secretName: "web-tls" -> "web-tls-2"' in text
    assert '~ spec.dnsNames: ["web.team-a.example.corp"] -> []' in text  # a list is one value
    assert '+ spec.duration: (none) -> "24h"' in text
    # The servlet's own record of what it wrote changes too; its long value is cut in the text
    # to where the old and the new one differ.
    [state] = [line.strip() for line in text.splitlines() if "last-known-state" in line]
    assert state.startswith('~ metadata.annotations["syncer.kdp.k8c.io/last-known-state"]: ...')
    old, new = state.split(": ", 1)[1].split(" -> ")
    assert old.startswith("...") and new.startswith("...") and len(old) < 120
    assert "dnsNames" in old and "dnsNames" in new and old != new


def test_the_json_plan_keeps_the_patch_and_adds_its_changes(tmp_path: Path) -> None:
    _, plan = json_plan("-f", str(_world_with_web_changed(tmp_path)))
    [patch] = [action for action in _object_actions(plan, WEB) if action["type"] == "patch"]
    assert patch["patch"]["spec"]["secretName"] == "web-tls-2"
    changes = {change["path"]: change for change in patch["changes"]}
    assert changes["spec.secretName"] == {"path": "spec.secretName", "old": "web-tls", "new": "web-tls-2"}
    assert changes["spec.duration"] == {"path": "spec.duration", "new": "24h"}
    assert set(changes) == {
        "spec.secretName",
        "spec.dnsNames",
        "spec.duration",
        'metadata.annotations["syncer.kdp.k8c.io/last-known-state"]',
    }


def test_a_finalizer_patch_shows_the_list_before_and_after() -> None:
    code, text = run_plan("-f", str(EXAMPLE))
    assert code == 0
    assert '+ metadata.finalizers: (none) -> ["syncer.kdp.k8c.io/cleanup"]' in text
    assert '~ metadata.finalizers: ["syncer.kdp.k8c.io/cleanup"] -> []' in text


def test_a_changed_secret_shows_which_keys_change_but_never_a_value(tmp_path: Path) -> None:
    _, first = json_plan("-f", str(EXAMPLE))
    old_value = base64.b64encode(b"-----BEGIN PRIVATE KEY----- old secret").decode()
    new_value = base64.b64encode(b"-----BEGIN PRIVATE KEY----- new secret").decode()
    issued = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": "web-tls", "namespace": "k7v2m9x4q1w8z3r5"},
        "data": {"tls.key": old_value, "tls.crt": old_value},
    }
    world = [*converged_world(first), issued]
    _, second = json_plan("-f", str(write_documents(tmp_path / "second.yaml", world)))
    # What the second plan writes, with the real values (the printed plan hides them).
    for action in _object_actions(second, WEB):
        if action["type"] == "createRelated":
            action["object"]["data"] = dict(issued["data"])
            action["object"]["metadata"]["annotations"] = {"kcp.io/cluster": action["cluster"]}
            world.append(action["object"])
        elif action["type"] == "recordRelatedState":
            local = next(
                doc for doc in world if doc.get("kind") == "Certificate" and doc["metadata"]["name"] == action["name"]
            )
            annotations = local["metadata"].setdefault("annotations", {})
            annotations.update(action["patch"]["metadata"]["annotations"])
    issued["data"] = {"tls.key": new_value, "tls.crt": old_value}
    _code, text = run_plan("-f", str(write_documents(tmp_path / "third.yaml", world)))
    _, plan = json_plan("-f", str(tmp_path / "third.yaml"))
    for output in (text, json.dumps(plan)):
        for value in (old_value, new_value):
            assert value not in output
            assert base64.b64decode(value).decode() not in output
    assert '~ data["tls.key"]: <redacted> -> <redacted>' in text
    assert 'data["tls.crt"]' not in text  # unchanged, so not listed


def test_field_changes_ignore_the_preconditions_and_name_removed_fields() -> None:
    before = {"metadata": {"resourceVersion": "7", "labels": {"app": "web", "kcp.io/x": "a"}}, "spec": {"x": 1}}
    after = {"metadata": {"resourceVersion": "8", "uid": "u-1", "labels": {"app": "web"}}, "spec": {"x": {"y": 1}}}
    changes = field_changes(before, after, secret=False)
    assert changes == [
        {"path": 'metadata.labels["kcp.io/x"]', "old": "a"},
        {"path": "spec.x", "old": 1, "new": {"y": 1}},
    ]
    assert list(change_lines(changes)) == ['- metadata.labels["kcp.io/x"]: "a" -> (none)', '~ spec.x: 1 -> {"y": 1}']


def test_paths_quote_keys_that_are_not_plain_words() -> None:
    assert dotted(("spec", "issuer-ref", "kind_2")) == "spec.issuer-ref.kind_2"
    assert dotted(("metadata", "annotations", 'a.io/"b"')) == 'metadata.annotations["a.io/\\"b\\""]'


def test_a_patch_to_an_object_the_plan_creates_is_compared_with_what_it_creates(tmp_path: Path) -> None:
    issued = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": "web-tls", "namespace": "k7v2m9x4q1w8z3r5"},
        "data": {"tls.key": "a2V5"},
    }
    inputs = write_documents(tmp_path / "issued.yaml", [issued])
    _, plan = json_plan("-f", str(EXAMPLE), "-f", str(inputs))
    actions = _object_actions(plan, WEB)
    assert [action["type"] for action in actions][:2] == ["addFinalizer", "create"]
    [record] = [action for action in actions if action["type"] == "recordRelatedState"]
    [change] = record["changes"]
    assert change["path"] == 'metadata.annotations["syncer.kdp.k8c.io/related-state.tls-secret"]'
    assert "old" not in change and "<redacted>" in change["new"]
