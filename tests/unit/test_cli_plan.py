"""`servlet plan` offline, as a user runs it on the bundled example and on their own files."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from servlet.app.cli import app
from servlet.core.hashing import sha1_hex
from servlet.core.patch import apply_merge_patch

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "certificates"
IDENTITY = ["--api-group", "certificates.example.corp", "--name", "tom"]


def run_plan(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["plan", *IDENTITY, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def json_plan(*args: str) -> tuple[int, dict[str, Any]]:
    code, output = run_plan(*args, "-o", "json")
    return code, json.loads(output)


def actions_by_object(plan: dict[str, Any]) -> dict[str, list[str]]:
    return {
        f"{obj['remote']['cluster']}:{obj['remote']['namespace']}/{obj['remote']['name']}": [
            action["type"] for action in obj["actions"]
        ]
        for obj in plan["objects"]
    }


def write_documents(path: Path, documents: list[dict[str, Any]]) -> Path:
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def test_example_text_plan_shows_schema_export_and_every_object() -> None:
    code, output = run_plan("-f", str(EXAMPLE))
    assert code == 0, output
    assert "+ create v" in output and ".zertifikate.certificates.example.corp" in output
    assert "from PublishedResource publish-certmanager-certs" in output
    assert (
        '~ spec.permissionClaims = [{"group": "", "resource": "events", "all": true}, {"group": "", "resource": "namespaces"'
        in output
    )
    assert "+ addFinalizer remote Zertifikat k7v2m9x4q1w8z3r5:default/web" in output
    # team-a's local namespace exists already; team-b's does not
    assert "createNamespace local Namespace p4n8c2l6t0y9h1j3" in output
    assert "createNamespace local Namespace k7v2m9x4q1w8z3r5" not in output
    assert "- removeFinalizer remote Zertifikat p4n8c2l6t0y9h1j3:prod/old" in output
    assert "Plan: 8 write(s), 0 error(s)." in output


def test_example_json_plan_has_the_documented_shape() -> None:
    code, plan = json_plan("-f", str(EXAMPLE))
    assert code == 0
    assert {"schemas", "apiExport", "objects", "errors"} <= plan.keys()
    [schema] = plan["schemas"]
    assert {"publishedResource", "name", "action", "spec"} <= schema.keys()
    assert schema["action"] == "create" and schema["spec"]["names"]["kind"] == "Zertifikat"
    assert plan["apiExport"]["action"] == "patch"
    assert plan["apiExport"]["spec"]["latestResourceSchemas"] == [schema["name"]]
    for obj in plan["objects"]:
        assert {"cluster", "namespace", "name", "apiVersion", "kind"} <= obj["remote"].keys()
    assert plan["objects"][0]["local"].keys() >= {"namespace", "name", "apiVersion", "kind"}
    assert actions_by_object(plan) == {
        "k7v2m9x4q1w8z3r5:default/web": ["addFinalizer", "create"],
        "p4n8c2l6t0y9h1j3:prod/api": ["addFinalizer", "createNamespace", "create"],
        "p4n8c2l6t0y9h1j3:prod/old": ["removeFinalizer"],
    }
    assert plan["errors"] == []


def converged_world(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """The clusters after the plan ran: local copies, namespaces, finalizers, schema, export."""
    world: list[dict[str, Any]] = [
        yaml.safe_load((EXAMPLE / "crd-certificates.yaml").read_text()),
        yaml.safe_load((EXAMPLE / "publishedresource.yaml").read_text()),
    ]
    export = yaml.safe_load((EXAMPLE / "apiexport.yaml").read_text())
    export["spec"] = plan["apiExport"]["spec"]
    world.append(export)
    for schema in plan["schemas"]:
        world.append(
            {
                "apiVersion": "apis.kcp.io/v1alpha1",
                "kind": "APIResourceSchema",
                "metadata": {"name": schema["name"]},
                "spec": schema["spec"],
            }
        )
    remote = {
        f"{doc['metadata']['annotations']['kcp.io/cluster']}:{doc['metadata']['namespace']}/{doc['metadata']['name']}": doc
        for path in ("workspace-team-a.yaml", "workspace-team-b.yaml")
        for doc in yaml.safe_load_all((EXAMPLE / path).read_text())
    }
    for obj in plan["objects"]:
        key = f"{obj['remote']['cluster']}:{obj['remote']['namespace']}/{obj['remote']['name']}"
        for action in obj["actions"]:
            if action["type"] in {"create", "createNamespace"}:
                world.append(action["object"])
            elif action["type"] == "addFinalizer":
                remote[key] = apply_merge_patch(remote[key], action["patch"])
            elif action["type"] == "removeFinalizer":
                del remote[key]  # the user's deletion completes
    world.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "k7v2m9x4q1w8z3r5"}})
    return world + list(remote.values())


def test_feeding_the_created_objects_back_plans_no_writes(tmp_path: Path) -> None:
    _, first = json_plan("-f", str(EXAMPLE))
    world = write_documents(tmp_path / "world.yaml", converged_world(first))
    code, second = json_plan("-f", str(world))
    assert code == 0, second["errors"]
    assert [step["action"] for step in second["schemas"]] == ["exists"]
    assert second["apiExport"]["action"] == "none"
    assert actions_by_object(second) == {"k7v2m9x4q1w8z3r5:default/web": [], "p4n8c2l6t0y9h1j3:prod/api": []}
    code, text = run_plan("-f", str(world))
    assert "Plan: 0 write(s), 0 error(s)." in text
    assert text.count("= in sync, nothing to do") == 2


def test_a_secret_issued_on_the_service_side_flows_up_without_printing_its_value(tmp_path: Path) -> None:
    _, first = json_plan("-f", str(EXAMPLE))
    secret_value = base64.b64encode(b"-----BEGIN PRIVATE KEY----- very secret").decode()
    issued = {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": "web-tls", "namespace": "k7v2m9x4q1w8z3r5"},
        "data": {"tls.key": secret_value, "tls.crt": secret_value},
    }
    world = write_documents(tmp_path / "world.yaml", [*converged_world(first), issued])
    code, plan = json_plan("-f", str(world))
    assert code == 0
    web = actions_by_object(plan)["k7v2m9x4q1w8z3r5:default/web"]
    assert "createRelated" in web
    code, text = run_plan("-f", str(world))
    for output in (text, json.dumps(plan)):
        assert secret_value not in output
        assert "tls.key" in output  # the keys stay visible


def test_invalid_input_lists_every_error_with_exit_code_1_and_no_traceback(tmp_path: Path) -> None:
    broken = yaml.safe_load((EXAMPLE / "publishedresource.yaml").read_text())
    broken["spec"]["naming"]["name"] = "cert-$remoteNme"
    broken["spec"]["related"][0]["kind"] = "Deployment"
    write_documents(tmp_path / "published.yaml", [broken])
    (tmp_path / "bad.yaml").write_text("kind: [unclosed\n")
    code, plan = json_plan(
        "-f",
        str(EXAMPLE / "crd-certificates.yaml"),
        "-f",
        str(tmp_path / "published.yaml"),
        "-f",
        str(tmp_path / "bad.yaml"),
        "-f",
        str(tmp_path / "missing.yaml"),
    )
    assert code == 1
    messages = [f"{error['object']} {error['field']}: {error['message']}" for error in plan["errors"]]
    assert any("missing.yaml" in m and "does not exist" in m for m in messages), messages
    assert any("bad.yaml" in m and "not valid YAML" in m for m in messages), messages
    code, output = run_plan("-f", str(tmp_path / "published.yaml"), "-f", str(EXAMPLE / "crd-certificates.yaml"))
    assert code == 1
    assert "spec.naming.name" in output and "$remoteNme" in output
    assert "spec.related[0].kind" in output and "Deployment" in output
    assert "Traceback" not in output


@pytest.mark.parametrize(("flag", "value"), [("--name", "Tom_1"), ("--api-group", "nodots")])
def test_a_bad_servlet_identity_is_refused_naming_the_flag(flag: str, value: str) -> None:
    args = dict(zip(IDENTITY[::2], IDENTITY[1::2]))
    args[flag] = value
    result = CliRunner().invoke(app, ["plan", *[x for pair in args.items() for x in pair], "-f", str(EXAMPLE)])
    assert result.exit_code == 2, "a usage error, as `servlet run` answers it"
    assert flag in result.output and value in result.output


def test_a_published_resource_without_its_crd_is_an_error_naming_the_resource() -> None:
    code, plan = json_plan("-f", str(EXAMPLE / "publishedresource.yaml"))
    assert code == 1
    assert plan["errors"] == [
        {
            "object": "PublishedResource publish-certmanager-certs",
            "field": "spec.resource",
            "message": "there is no CustomResourceDefinition for kind 'Certificate' in group "
            "'cert-manager.io' among the inputs",
        }
    ]


def test_of_two_published_resources_with_the_same_schema_only_the_oldest_is_published_and_synced(
    tmp_path: Path,
) -> None:
    crd = yaml.safe_load((EXAMPLE / "crd-certificates.yaml").read_text())
    twin_crd = copy.deepcopy(crd)  # another group, the very same schema once projected
    twin_crd["metadata"]["name"] = "certificates.twin.example.org"
    twin_crd["spec"]["group"] = "twin.example.org"
    published = yaml.safe_load((EXAMPLE / "publishedresource.yaml").read_text())
    published["metadata"]["creationTimestamp"] = "2025-03-03T09:00:00Z"
    twin = copy.deepcopy(published)  # its name sorts first, but it is a day younger
    twin["metadata"].update(name="a-twin", creationTimestamp="2025-03-04T09:00:00Z")
    twin["spec"]["resource"]["apiGroup"] = "twin.example.org"
    inputs = write_documents(tmp_path / "twins.yaml", [crd, twin_crd, twin, published])

    code, plan = json_plan("-f", str(inputs), "-f", str(EXAMPLE / "workspace-team-a.yaml"))
    assert code == 1
    [error] = plan["errors"]
    assert error["object"] == "PublishedResource a-twin"
    assert "PublishedResource publish-certmanager-certs already publishes" in error["message"]
    assert [step["publishedResource"] for step in plan["schemas"]] == ["publish-certmanager-certs"]
    assert plan["apiExport"]["spec"]["latestResourceSchemas"] == [plan["schemas"][0]["name"]]
    created = [
        action["object"]["apiVersion"]
        for obj in plan["objects"]
        for action in obj["actions"]
        if action["type"] == "create"
    ]
    assert created == ["cert-manager.io/v1"], "a copy went into the younger twin's CRD"


def _shared_namespace_example(tmp_path: Path) -> Path:
    """The example with each workspace namespace mirrored locally (`$remoteNamespace`, shared on purpose)."""
    published = yaml.safe_load((EXAMPLE / "publishedresource.yaml").read_text())
    published["spec"]["naming"] = {"namespace": "$remoteNamespace", "allowSharedNamespaces": True}
    del published["spec"]["related"]
    folder = tmp_path / "world"
    folder.mkdir()
    for path in EXAMPLE.iterdir():
        if path.name != "publishedresource.yaml":
            (folder / path.name).write_text(path.read_text())
    write_documents(folder / "publishedresource.yaml", [published])
    return folder


@pytest.mark.parametrize("how", ["option", "environment"])
def test_plan_refuses_copies_into_the_servlets_own_namespace(tmp_path: Path, how: str) -> None:
    folder = _shared_namespace_example(tmp_path)
    args = ["plan", *IDENTITY, "-f", str(folder), "-o", "json"]
    if how == "option":
        result = CliRunner().invoke(app, [*args, "--namespace", "prod"])
    else:
        result = CliRunner().invoke(app, args, env={"SERVLET_NAMESPACE": "prod"})
    assert result.exit_code == 1, result.output
    plan = json.loads(result.output)
    (error,) = plan["errors"]
    assert error["object"].endswith("p4n8c2l6t0y9h1j3:prod/api") and error["field"] == "spec.naming.namespace"
    assert "'prod'" in error["message"] and "the servlet's own namespace" in error["message"]
    assert "create" in actions_by_object(plan)["k7v2m9x4q1w8z3r5:default/web"]
    code, elsewhere = json_plan("-f", str(folder), "--namespace", "kdp-system")
    assert code == 0 and elsewhere["errors"] == []


def test_a_bad_servlet_namespace_is_refused_naming_the_flag() -> None:
    code, output = run_plan("-f", str(EXAMPLE), "--namespace", "Not_A_Namespace")
    assert code == 2 and "--namespace" in output and "Not_A_Namespace" in output


def _orphaned_copy() -> dict[str, Any]:
    """A local copy of the example's Zertifikat `default/gone` in team-a, which no longer exists."""
    link = "syncer.kdp.k8c.io"
    return {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {
            "name": "cert-gone",
            "namespace": "k7v2m9x4q1w8z3r5",
            "labels": {
                f"{link}/servlet": "tom",
                f"{link}/remote-object-cluster": "k7v2m9x4q1w8z3r5",
                f"{link}/remote-object-name-hash": sha1_hex("gone"),
                f"{link}/remote-object-namespace-hash": sha1_hex("default"),
                f"{link}/remote-object-resource-hash": sha1_hex("zertifikate.certificates.example.corp"),
            },
            "annotations": {f"{link}/remote-object-name": "gone", f"{link}/remote-object-namespace": "default"},
        },
        "spec": {"secretName": "gone-tls"},
    }


def test_plan_lists_orphans_and_previews_their_deletion_with_delete_orphans(tmp_path: Path) -> None:
    orphan = write_documents(tmp_path / "orphan.yaml", [_orphaned_copy()])
    code, kept = json_plan("-f", str(EXAMPLE), "-f", str(orphan))
    code_deleting, deleting = json_plan("-f", str(EXAMPLE), "-f", str(orphan), "--delete-orphans")

    assert code == code_deleting == 0
    expected = {
        "publishedResource": "publish-certmanager-certs",
        "local": {"namespace": "k7v2m9x4q1w8z3r5", "name": "cert-gone"},
        "remote": {"cluster": "k7v2m9x4q1w8z3r5", "namespace": "default", "name": "gone"},
    }
    assert kept["orphans"] == [{**expected, "action": "keep"}]
    assert deleting["orphans"] == [{**expected, "action": "delete"}]
    _, text = run_plan("-f", str(EXAMPLE), "-f", str(orphan), "--delete-orphans")
    assert "- delete k7v2m9x4q1w8z3r5/cert-gone" in text
    writes = [int(line.split()[1]) for line in text.splitlines() if line.startswith("Plan:")]
    _, text_kept = run_plan("-f", str(EXAMPLE), "-f", str(orphan))
    assert writes == [int(line.split()[1]) + 1 for line in text_kept.splitlines() if line.startswith("Plan:")]


def _widget_crd_of_two_versions() -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {"type": "object", "properties": {"size": {"type": "string"}}},
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        },
    }
    version = {"served": True, "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.io"},
        "spec": {
            "group": "example.io",
            "scope": "Namespaced",
            "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
            "versions": [{"name": "v1", "storage": True, **version}, {"name": "v2", "storage": False, **version}],
        },
    }


def test_a_plan_of_several_versions_shows_them_and_plans_objects_written_in_either(tmp_path: Path) -> None:
    published = {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": "widgets"},
        "spec": {
            "resource": {"apiGroup": "example.io", "kind": "Widget", "versions": ["v2", "v1"]},
            "projection": {"versions": {"v1": "v1beta1"}},
        },
    }
    export = yaml.safe_load((EXAMPLE / "apiexport.yaml").read_text())
    workspace_objects = [
        {
            "apiVersion": f"certificates.example.corp/{version}",
            "kind": "Widget",
            "metadata": {"name": name, "namespace": "default", "annotations": {"kcp.io/cluster": "k7v2m9x4q1w8z3r5"}},
            "spec": {"size": "s"},
        }
        for name, version in (("old", "v1beta1"), ("new", "v2"))
    ]
    write_documents(tmp_path / "world.yaml", [_widget_crd_of_two_versions(), published, export, *workspace_objects])

    code, output = run_plan("-f", str(tmp_path / "world.yaml"))
    assert code == 0, output
    assert "certificates.example.corp/v1beta1 Widget, plural widgets, Namespaced" in output
    assert "versions v2, v1beta1; stored and synced as v1beta1" in output

    code, plan = json_plan("-f", str(tmp_path / "world.yaml"))
    [schema] = plan["schemas"]
    assert [(v["name"], v["storage"]) for v in schema["spec"]["versions"]] == [("v2", False), ("v1beta1", True)]
    assert schema["spec"]["conversion"] == {"strategy": "None"}
    planned = actions_by_object(plan)
    assert sorted(planned) == ["k7v2m9x4q1w8z3r5:default/new", "k7v2m9x4q1w8z3r5:default/old"]
    assert all({"addFinalizer", "create"} <= set(actions) for actions in planned.values())
    created = [action["object"] for obj in plan["objects"] for action in obj["actions"] if action["type"] == "create"]
    assert {obj["apiVersion"] for obj in created} == {"example.io/v1"}


def test_a_related_object_of_any_type_is_planned_and_claimed_offline(tmp_path: Path) -> None:
    _, first = json_plan("-f", str(EXAMPLE))
    world = converged_world(first)
    published = next(doc for doc in world if doc["kind"] == "PublishedResource")
    published["spec"]["related"].append(
        {
            "identifier": "database",
            "origin": "service",
            "group": "databases.example.org",
            "version": "v1",
            "resource": "databases",
            "identityHash": "9f2c61d0a4",
            "reference": {"name": {"path": "spec.secretName"}},
        }
    )
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "databases.databases.example.org"},
        "spec": {
            "group": "databases.example.org",
            "scope": "Namespaced",
            "names": {"kind": "Database", "plural": "databases"},
            "versions": [{"name": "v1", "served": True, "storage": True}],
        },
    }
    issued = {
        "apiVersion": "databases.example.org/v1",
        "kind": "Database",
        "metadata": {"name": "web-tls", "namespace": "k7v2m9x4q1w8z3r5"},
        "spec": {"engine": "postgres"},
        "status": {"phase": "Ready"},
    }
    code, plan = json_plan("-f", str(write_documents(tmp_path / "world.yaml", [*world, crd, issued])))
    assert code == 0, plan["errors"]
    web = next(obj for obj in plan["objects"] if obj["remote"]["name"] == "web")
    created = next(action for action in web["actions"] if action["type"] == "createRelated")
    assert (created["kind"], created["namespace"], created["name"]) == ("Database", "default", "web-tls")
    assert created["object"]["spec"] == {"engine": "postgres"} and "status" not in created["object"]
    claims = plan["apiExport"]["patch"]["spec"]["permissionClaims"]
    assert {"group": "databases.example.org", "resource": "databases", "identityHash": "9f2c61d0a4", "all": True} in (
        claims
    )
