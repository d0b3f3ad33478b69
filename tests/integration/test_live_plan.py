"""`servlet plan` without `-f`: it reads the clusters `servlet run` would read, and writes nothing.

Against an in-process kcpsim seeded with the bundled example (the Certificate CRD and the
PublishedResource on the service cluster; Zertifikate in team-a and team-b once the schema is in
the export). The live plan is compared with the offline plan of a dump of the same objects, so
both modes must agree on every schema, export change and per-object action.
"""

from __future__ import annotations

import base64
import json
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from typer.testing import CliRunner

from kcpsim import KcpSim, Topology
from kcpsim.faults import ErrorRule, FaultPlan
from kcpsim.harness.world import EXAMPLES, PUBLISHED_RESOURCE_CRD, Rest, load_yaml, resource_path
from kcpsim.topology import WorkspaceSpec
from servlet.app.cli import app
from tests.integration.e2e.manifests import issued_secrets

SERVLET = "tom"
GROUP = EXPORT = "certificates.example.corp"
IDENTITY = ["--name", SERVLET, "--api-group", GROUP]
ZERTIFIKATE = {"group": GROUP, "version": "v1beta1", "plural": "zertifikate"}
LIVE_ENV = (
    "SERVLET_KUBECONFIG",
    "SERVLET_KCP_KUBECONFIG",
    "SERVLET_APIEXPORT",
    "SERVLET_PUBLISHED_RESOURCE_SELECTOR",
    "SERVLET_APIEXPORTENDPOINTSLICE",
    "SERVLET_NAME",
    "SERVLET_API_GROUP",
)


@attrs.frozen
class Outcome:
    code: int
    stdout: str
    stderr: str

    def json(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.stdout)
        return data


@attrs.define
class Example:
    """kcpsim with the example published on the service cluster, and kubeconfigs to plan with."""

    sim: KcpSim
    rest: Rest
    directory: Path

    def kubeconfig(self, label: str, server: str) -> Path:
        path = self.directory / f"{label}.kubeconfig"
        path.write_text(yaml.safe_dump(self.sim.kubeconfig_dict(server)))
        return path

    def live_flags(self, *, service: str = "", kcp: str = "") -> list[str]:
        return [
            "--kubeconfig",
            str(self.kubeconfig("service", service or self.sim.base_url)),
            "--kcp-kubeconfig",
            str(self.kubeconfig("kcp", kcp or self.sim.workspace_url("root:myorg"))),
            "--apiexport",
            EXPORT,
        ]

    def plan(self, *args: str, service: str = "", kcp: str = "", env: Mapping[str, str] | None = None) -> Outcome:
        return invoke(*IDENTITY, *self.live_flags(service=service, kcp=kcp), *args, env=env)

    def in_workspace(self, workspace: str, path: str) -> str:
        return f"/clusters/root:myorg:{workspace}{path}"

    def cluster(self, workspace: str) -> str:
        return self.sim.cluster_of(f"root:myorg:{workspace}")


def invoke(*args: str, env: Mapping[str, str] | None = None) -> Outcome:
    # Settings of the machine running the tests must not change the flags' meaning.
    environment: dict[str, str | None] = dict.fromkeys(LIVE_ENV)
    environment.update(env or {})
    result = CliRunner().invoke(app, ["plan", *args], env=environment)
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    return Outcome(code=result.exit_code, stdout=result.stdout, stderr=result.stderr)


def service_path(document: Mapping[str, Any], plural: str) -> str:
    group, _, version = document["apiVersion"].rpartition("/")
    return resource_path(
        group=group, version=version, plural=plural, namespace=document["metadata"].get("namespace", "")
    )


def publish_example(sim: KcpSim, rest: Rest) -> None:
    """The service owner's side of the example: both CRDs, the PublishedResource, team-a's namespace."""
    for document in load_yaml(PUBLISHED_RESOURCE_CRD) + load_yaml(EXAMPLES / "crd-certificates.yaml"):
        rest.create(service_path(document, "customresourcedefinitions"), document)
    for document in load_yaml(EXAMPLES / "publishedresource.yaml"):
        rest.create(service_path(document, "publishedresources"), document)
    for document in load_yaml(EXAMPLES / "service-cluster.yaml"):
        rest.create("/api/v1/namespaces", document)


@pytest.fixture
def start_example(kcpsim_factory: Callable[..., KcpSim], tmp_path: Path) -> Iterator[Callable[..., Example]]:
    rests: list[Rest] = []

    def start(topology: Topology | None = None, **config: Any) -> Example:
        sim = kcpsim_factory(topology=topology or Topology(with_schema=False), **config)
        rest = Rest(sim.base_url)
        rests.append(rest)
        publish_example(sim, rest)
        return Example(sim=sim, rest=rest, directory=tmp_path)

    yield start
    for rest in rests:
        rest.close()


@pytest.fixture
def example(start_example: Callable[..., Example]) -> Example:
    return start_example()


# -- the world as the test sees it --------------------------------------------------------------


def apply_schemas_and_export(example: Example, plan: Mapping[str, Any]) -> None:
    """What the apiresourceschema and apiexport controllers would write, as the plan says."""
    for schema in plan["schemas"]:
        if schema["action"] == "create":
            example.rest.create(
                "/clusters/root:myorg/apis/apis.kcp.io/v1alpha1/apiresourceschemas",
                {
                    "apiVersion": "apis.kcp.io/v1alpha1",
                    "kind": "APIResourceSchema",
                    "metadata": {"name": schema["name"]},
                    "spec": schema["spec"],
                },
            )
    if plan["apiExport"]["action"] == "patch":
        example.rest.merge_patch(
            f"/clusters/root:myorg/apis/apis.kcp.io/v1alpha1/apiexports/{EXPORT}", plan["apiExport"]["patch"]
        )


def create_users_objects(example: Example) -> None:
    """The example's Zertifikate: team-a default/web, team-b prod/api, and prod/old being deleted."""
    example.rest.create(
        example.in_workspace("team-b", "/api/v1/namespaces"),
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}},
    )
    for workspace, file in (("team-a", "workspace-team-a.yaml"), ("team-b", "workspace-team-b.yaml")):
        for document in load_yaml(EXAMPLES / file):
            metadata = document["metadata"]
            metadata.pop("deletionTimestamp", None)  # a user deletes it below, as kcp would see it
            metadata["annotations"].pop("kcp.io/cluster")  # kcp sets it
            path = resource_path(**ZERTIFIKATE, namespace=metadata["namespace"])
            example.rest.create(example.in_workspace(workspace, path), document)
    example.rest.delete(example.in_workspace("team-b", resource_path(**ZERTIFIKATE, namespace="prod", name="old")))


def apply_object_actions(example: Example, plan: Mapping[str, Any]) -> None:
    """Carry out the per-object actions of a plan through kcpsim's API, as the sync controller would."""
    for obj in plan["objects"]:
        for action in obj["actions"]:
            group, _, version = action["apiVersion"].rpartition("/")
            path = resource_path(
                group=group, version=version, plural=action["resource"], namespace=action.get("namespace", "")
            )
            if action["side"] == "remote":
                path = f"/clusters/{action['cluster']}{path}"
            if action["type"] in ("create", "createNamespace"):
                example.rest.create(path, action["object"])
            elif action["type"] in ("addFinalizer", "removeFinalizer"):
                example.rest.merge_patch(f"{path}/{action['name']}", action["patch"])
            else:
                raise AssertionError(f"this test does not know how to apply {action['type']}: {action}")


def _items(rest: Rest, path: str, api_version: str, kind: str) -> list[dict[str, Any]]:
    # List items come without their type; manifests for the offline plan need it.
    return [{"apiVersion": api_version, "kind": kind, **item} for item in rest.list(path)]


def dump_world(example: Example) -> list[dict[str, Any]]:
    """Every object of both sides that could matter, as `kubectl get -o yaml` would save it."""
    rest, org = example.rest, "/clusters/root:myorg/apis/apis.kcp.io/v1alpha1"
    documents = [
        *_items(
            rest,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
        ),
        *_items(
            rest,
            "/apis/services.kdp.k8c.io/v1alpha1/publishedresources",
            "services.kdp.k8c.io/v1alpha1",
            "PublishedResource",
        ),
        *_items(rest, "/api/v1/namespaces", "v1", "Namespace"),
        *_items(rest, "/api/v1/secrets", "v1", "Secret"),
        *_items(rest, "/apis/cert-manager.io/v1/certificates", "cert-manager.io/v1", "Certificate"),
        *_items(rest, f"{org}/apiresourceschemas", "apis.kcp.io/v1alpha1", "APIResourceSchema"),
    ]
    for path in (f"{org}/apiexports/{EXPORT}", f"{org}/apiexportendpointslices/{EXPORT}"):
        found = rest.get(path)
        assert found is not None, path
        documents.append(found)
    for workspace in ("team-a", "team-b"):
        documents += _items(
            rest, example.in_workspace(workspace, resource_path(**ZERTIFIKATE)), f"{GROUP}/v1beta1", "Zertifikat"
        )
        documents += _items(rest, example.in_workspace(workspace, "/api/v1/namespaces"), "v1", "Namespace")
        documents += _items(rest, example.in_workspace(workspace, "/api/v1/secrets"), "v1", "Secret")
    return documents


def offline_plan(example: Example, documents: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    path = example.directory / "world.yaml"
    path.write_text(yaml.safe_dump_all(list(documents), sort_keys=False))
    outcome = invoke(*IDENTITY, "--apiexport", EXPORT, "-f", str(path), "-o", "json")
    return outcome.json()


def comparable(plan: Mapping[str, Any]) -> dict[str, Any]:
    """A plan without the live mode's notes, objects in a fixed order."""
    data = {key: value for key, value in plan.items() if key != "notes"}
    data["objects"] = sorted(plan["objects"], key=lambda obj: json.dumps(obj["remote"], sort_keys=True))
    return data


def actions_by_object(plan: Mapping[str, Any]) -> dict[str, list[str]]:
    return {
        f"{obj['remote']['cluster']}:{obj['remote']['namespace']}/{obj['remote']['name']}": [
            action["type"] for action in obj["actions"]
        ]
        for obj in plan["objects"]
    }


# -- tests ----------------------------------------------------------------------------------------


def test_live_plan_equals_the_offline_plan_of_the_same_objects_and_only_reads(example: Example) -> None:
    first = example.plan("-o", "json")
    assert first.code == 0, first.stdout + first.stderr
    apply_schemas_and_export(example, first.json())
    create_users_objects(example)
    team_a, team_b = example.cluster("team-a"), example.cluster("team-b")

    example.sim.requests.clear()
    live = example.plan("-o", "json")
    records = example.sim.requests.records()

    assert live.code == 0, live.stdout + live.stderr
    plan = live.json()
    assert comparable(plan) == comparable(offline_plan(example, dump_world(example)))
    assert actions_by_object(plan) == {
        f"{team_a}:default/web": ["addFinalizer", "create"],
        f"{team_b}:prod/api": ["addFinalizer", "createNamespace", "create"],
        f"{team_b}:prod/old": ["removeFinalizer"],
    }
    assert [step["action"] for step in plan["schemas"]] == ["exists"]
    assert plan["apiExport"]["action"] == "none"
    assert plan["notes"] == []
    assert records, "the live plan made no request at all"
    assert {record.method for record in records} == {"GET"}
    assert {record.verb for record in records} <= {"get", "list"}, "a plan needs no watch"
    assert {record.virtual_workspace for record in records} == {True, False}, "both kcp and the VW are read"


def test_the_live_plan_reads_the_workspaces_of_every_shard(start_example: Callable[..., Example]) -> None:
    sharded = Topology(
        with_schema=False, workspaces=(WorkspaceSpec("team-a", shard=0), WorkspaceSpec("team-b", shard=1))
    )
    example = start_example(sharded, shards=2)
    apply_schemas_and_export(example, example.plan("-o", "json").json())
    create_users_objects(example)
    team_a, team_b = example.cluster("team-a"), example.cluster("team-b")

    example.sim.requests.clear()
    live = example.plan("-o", "json")

    assert live.code == 0, live.stdout + live.stderr
    assert actions_by_object(live.json()) == {
        f"{team_a}:default/web": ["addFinalizer", "create"],
        f"{team_b}:prod/api": ["addFinalizer", "createNamespace", "create"],
        f"{team_b}:prod/old": ["removeFinalizer"],
    }
    vw_lists = {record.path for record in example.sim.requests.records() if record.virtual_workspace}
    assert any(path.startswith("/shards/shard-1/") for path in vw_lists), vw_lists
    assert any(path.startswith("/services/apiexport/") for path in vw_lists), vw_lists


def test_a_converged_world_plans_no_writes_and_a_new_local_secret_flows_up(example: Example) -> None:
    first = example.plan("-o", "json")
    apply_schemas_and_export(example, first.json())
    create_users_objects(example)
    apply_object_actions(example, example.plan("-o", "json").json())

    converged = example.plan()
    assert converged.code == 0, converged.stdout + converged.stderr
    assert "Plan: 0 write(s), 0 error(s)." in converged.stdout
    assert converged.stdout.count("= in sync, nothing to do") == 2
    assert "= exists v" in converged.stdout and "= no change" in converged.stdout

    # cert-manager issues team-a's Secret next to the local copy: the plan sends it up.
    value = base64.b64encode(b"-----BEGIN PRIVATE KEY----- not for printing").decode()
    example.rest.create(
        f"/api/v1/namespaces/{example.cluster('team-a')}/secrets",
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/tls",
            "metadata": {"name": "web-tls"},
            "data": {"tls.key": value, "tls.crt": value},
        },
    )
    live = example.plan("-o", "json")
    assert live.code == 0, live.stdout + live.stderr
    assert comparable(live.json()) == comparable(offline_plan(example, dump_world(example)))
    assert sorted(actions_by_object(live.json())[f"{example.cluster('team-a')}:default/web"]) == [
        "createRelated",
        "recordRelatedState",
    ]
    assert value not in live.stdout and value not in example.plan().stdout


def test_without_a_virtual_workspace_url_schemas_and_export_are_still_planned(
    start_example: Callable[..., Example],
) -> None:
    # No workspace binds the export yet, so kcp has published no VW URL.
    example = start_example(Topology(workspaces=(), with_schema=False))
    example.sim.requests.clear()
    outcome = example.plan("-o", "json")
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    plan = outcome.json()
    assert [step["action"] for step in plan["schemas"]] == ["create"]
    assert plan["apiExport"]["action"] == "patch"
    assert plan["objects"] == []
    assert any("virtual workspace URL is not known yet" in note for note in plan["notes"]), plan["notes"]
    assert not any(record.virtual_workspace for record in example.sim.requests.records())
    text = example.plan()
    assert "Notes" in text.stdout and "virtual workspace URL is not known yet" in text.stdout
    assert "Plan: 2 write(s), 0 error(s)." in text.stdout


@pytest.mark.parametrize(("selector", "schemas"), [("", 1), ("team=certs", 1), ("team=other", 0)])
def test_the_published_resource_selector_picks_what_is_planned(example: Example, selector: str, schemas: int) -> None:
    example.rest.merge_patch(
        "/apis/services.kdp.k8c.io/v1alpha1/publishedresources/publish-certmanager-certs",
        {"metadata": {"labels": {"team": "certs"}}},
    )
    outcome = example.plan("-o", "json", env={"SERVLET_PUBLISHED_RESOURCE_SELECTOR": selector})
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    assert len(outcome.json()["schemas"]) == schemas


def test_a_selector_the_api_server_rejects_is_named(example: Example) -> None:
    outcome = example.plan("--published-resource-selector", "team in")
    assert outcome.code == 1
    assert "--published-resource-selector 'team in' was rejected" in outcome.stderr, outcome.stderr


def test_a_workspace_refusing_a_related_read_is_an_error_of_that_object_only(example: Example) -> None:
    apply_schemas_and_export(example, example.plan("-o", "json").json())
    create_users_objects(example)
    team_c = example.sim.add_workspace("team-c", accept_claims=False)
    (web,) = load_yaml(EXAMPLES / "workspace-team-a.yaml")
    del web["metadata"]["annotations"]
    example.rest.create(example.in_workspace("team-c", resource_path(**ZERTIFIKATE, namespace="default")), web)

    outcome = example.plan("-o", "json")
    assert outcome.code == 1
    plan = outcome.json()
    # The refused read, and what the daemon reports for the object: nothing of it is synced, no
    # copy is deleted on the strength of a read that was refused.
    refused, unreadable = plan["errors"]
    assert refused["object"] == f"Secret {team_c}:default/web-tls", refused
    assert "permission claim for secrets" in refused["message"]
    assert unreadable["object"] == f"{team_c}:default/web" and "cannot read" in unreadable["message"], unreadable
    planned = actions_by_object(plan)
    assert planned[f"{team_c}:default/web"] == ["addFinalizer", "createNamespace", "create", "error"]
    assert planned[f"{example.cluster('team-a')}:default/web"] == ["addFinalizer", "create"]


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("target", ["service cluster", "org workspace"])
def test_an_unreachable_server_ends_with_one_line_naming_it_and_its_url(example: Example, target: str) -> None:
    dead = f"http://127.0.0.1:{closed_port()}"
    if target == "service cluster":
        outcome, url = example.plan(service=dead), dead
    else:
        url = f"{dead}/clusters/root:myorg"
        outcome = example.plan(kcp=url)
    assert outcome.code == 1
    assert outcome.stdout == ""
    [line] = outcome.stderr.splitlines()
    assert line.startswith(f"error: {target} at {url}: "), line
    assert "connection failed" in line
    as_json = (
        example.plan("-o", "json", service=dead) if target == "service cluster" else example.plan("-o", "json", kcp=url)
    )
    assert as_json.code == 1
    assert [error["object"] for error in as_json.json()["errors"]] == [f"{target} at {url}"]


def test_a_failing_virtual_workspace_is_named_with_its_url(example: Example) -> None:
    apply_schemas_and_export(example, example.plan("-o", "json").json())
    example.sim.set_faults(FaultPlan(errors=(ErrorRule(status=503, target="vw"),)))
    outcome = example.plan()
    assert outcome.code == 1
    [line] = outcome.stderr.splitlines()
    assert line.startswith(f"error: virtual workspace at {example.sim.vw_url()}: "), line
    assert "HTTP 503" in line and "zertifikate" in line


def test_a_kcp_kubeconfig_outside_a_workspace_is_named(example: Example) -> None:
    outcome = example.plan(kcp=f"{example.sim.base_url}/somewhere")
    assert outcome.code == 1
    assert outcome.stderr.startswith("error: --kcp-kubeconfig must point into a kcp workspace"), outcome.stderr


def _slice_in_team_a(example: Example, *, export: str = EXPORT) -> None:
    example.rest.create(
        example.in_workspace("team-a", "/apis/apis.kcp.io/v1alpha1/apiexportendpointslices"),
        {
            "apiVersion": "apis.kcp.io/v1alpha1",
            "kind": "APIExportEndpointSlice",
            "metadata": {"name": "chosen"},
            "spec": {"export": {"path": "root:myorg", "name": export}},
        },
    )


def test_the_live_plan_takes_the_urls_from_the_chosen_slice(example: Example) -> None:
    apply_schemas_and_export(example, example.plan("-o", "json").json())
    create_users_objects(example)
    _slice_in_team_a(example)
    example.sim.requests.clear()

    outcome = example.plan("-o", "json", env={"SERVLET_APIEXPORTENDPOINTSLICE": "root:myorg:team-a:chosen"})

    assert outcome.code == 0, outcome.stdout + outcome.stderr
    assert len(actions_by_object(outcome.json())) == 3, "the objects of both workspaces are planned"
    paths = [record.path for record in example.sim.requests.records()]
    assert "/clusters/root:myorg:team-a/apis/apis.kcp.io/v1alpha1/apiexportendpointslices/chosen" in paths


@pytest.mark.parametrize(
    ("export", "expected"),
    [
        ("", "the APIExportEndpointSlice 'chosen' does not exist in workspace root:myorg:team-a"),
        ("other.example.corp", "is for the APIExport root:myorg:other.example.corp"),
    ],
    ids=["missing", "for-another-export"],
)
def test_a_chosen_slice_that_cannot_serve_ends_the_plan_naming_the_flag(
    example: Example, export: str, expected: str
) -> None:
    if export:
        _slice_in_team_a(example, export=export)
    outcome = example.plan("--apiexportendpointslice", "root:myorg:team-a:chosen")
    assert outcome.code == 1
    assert "--apiexportendpointslice: " in outcome.stderr and expected in outcome.stderr, outcome.stderr


def test_a_missing_apiexport_ends_with_a_message_naming_it(example: Example) -> None:
    outcome = invoke(*IDENTITY, *example.live_flags()[:-2], "--apiexport", "nope.example.corp")
    assert outcome.code == 1
    assert "'nope.example.corp' does not exist in workspace root:myorg" in outcome.stderr
    assert "Traceback" not in outcome.stdout + outcome.stderr


@pytest.mark.parametrize(
    ("args", "env", "named"),
    [
        (["--kcp-kubeconfig", "kcp.kubeconfig"], {}, ["-f", "--kcp-kubeconfig"]),
        ([], {"SERVLET_KCP_KUBECONFIG": "kcp.kubeconfig"}, ["-f", "--kcp-kubeconfig", "SERVLET_KCP_KUBECONFIG"]),
        (["--kubeconfig", "service.kubeconfig"], {}, ["-f", "--kubeconfig"]),
        (["--apiexportendpointslice", "certs"], {}, ["-f", "--apiexportendpointslice"]),
    ],
)
def test_files_and_a_live_flag_exclude_each_other(args: list[str], env: dict[str, str], named: list[str]) -> None:
    outcome = invoke(*IDENTITY, "-f", str(EXAMPLES), *args, env=env)
    assert outcome.code == 2, "a usage error"
    for flag in named:
        assert flag in outcome.stderr, outcome.stderr
    assert outcome.stdout == ""


def test_live_mode_names_the_flag_it_lacks() -> None:
    outcome = invoke(*IDENTITY, "--apiexport", EXPORT)
    assert outcome.code == 2, "a usage error"
    assert "error: --kcp-kubeconfig: is needed" in outcome.stderr, outcome.stderr


def test_without_apiexport_the_live_plan_manages_the_one_named_like_the_api_group(example: Example) -> None:
    outcome = invoke(*IDENTITY, *example.live_flags()[:-2], "-o", "json")
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    assert json.loads(outcome.stdout)["apiExport"]["name"] == GROUP


def test_live_and_offline_plans_show_the_copies_as_the_mutation_makes_them(example: Example) -> None:
    # The spec of a PublishedResource cannot change: the example is published again with steps.
    published_path = "/apis/services.kdp.k8c.io/v1alpha1/publishedresources/publish-certmanager-certs"
    example.rest.delete(published_path)
    (published,) = load_yaml(EXAMPLES / "publishedresource.yaml")
    published["spec"]["mutation"] = {
        "spec": [
            {"regex": {"path": "spec.commonName", "pattern": "\\.example\\.corp$", "replacement": ".internal"}},
            {"cel": {"path": "spec.duration", "expression": '"24h"'}},
        ]
    }
    example.rest.create(service_path(published, "publishedresources"), published)
    apply_schemas_and_export(example, example.plan("-o", "json").json())
    create_users_objects(example)

    live = example.plan("-o", "json")
    assert live.code == 0, live.stdout + live.stderr
    plan = live.json()
    assert comparable(plan) == comparable(offline_plan(example, dump_world(example)))
    created = [
        action["object"]["spec"]
        for obj in plan["objects"]
        for action in obj["actions"]
        if action["type"] == "create" and action["kind"] == "Certificate"
    ]
    # team-b's api has no commonName: a regex reads a missing value as empty text, and writes it.
    assert sorted((spec["commonName"], spec["duration"]) for spec in created) == [
        ("", "24h"),
        ("web.team-a.internal", "24h"),
    ]
    assert "web.team-a.internal" in example.plan().stdout, "the text plan shows the mutated content too"


def test_a_schema_only_published_resource_is_planned_without_reading_its_objects(example: Example) -> None:
    path = "/apis/services.kdp.k8c.io/v1alpha1/publishedresources/publish-certmanager-certs"
    published = example.rest.get(path)
    assert published is not None
    example.rest.delete(path)  # the spec is immutable: a schema-only one is a new PublishedResource
    fresh = {key: published[key] for key in ("apiVersion", "kind", "spec")}
    fresh["metadata"] = {"name": published["metadata"]["name"]}
    fresh["spec"]["synchronization"] = {"enabled": False}
    example.rest.create("/apis/services.kdp.k8c.io/v1alpha1/publishedresources", fresh)
    apply_schemas_and_export(example, example.plan("-o", "json").json())
    create_users_objects(example)

    example.sim.requests.clear()
    outcome = example.plan("-o", "json")
    assert outcome.code == 0, outcome.stdout + outcome.stderr
    plan = outcome.json()
    assert [step["action"] for step in plan["schemas"]] == ["exists"]
    assert plan["objects"] == []
    assert [note["publishedResource"] for note in plan["schemaOnly"]] == ["publish-certmanager-certs"]
    read = [record.path for record in example.sim.requests.records() if record.virtual_workspace]
    assert not [path for path in read if "zertifikate" in path], read


def test_a_built_in_type_is_planned_live_from_discovery_as_offline_from_its_openapi_document(example: Example) -> None:
    roles = {
        "apiVersion": "services.kdp.k8c.io/v1alpha1",
        "kind": "PublishedResource",
        "metadata": {"name": "roles"},
        "spec": {
            "resource": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "version": "v1"},
            "projection": {"kind": "KubeRole"},
        },
    }
    example.rest.create("/apis/services.kdp.k8c.io/v1alpha1/publishedresources", roles)
    live = example.plan("-o", "json")
    assert live.code == 0, live.stdout + live.stderr
    (live_step,) = [step for step in live.json()["schemas"] if step["publishedResource"] == "roles"]
    (version,) = live_step["spec"]["versions"]
    assert live_step["spec"]["names"]["kind"] == "KubeRole" and "subresources" not in version
    assert version["schema"]["properties"]["rules"]["items"]["required"] == ["verbs"]

    # The same type offline, from the document a service owner saves with `kubectl get --raw`.
    listing = example.rest.get("/openapi/v3")
    assert listing is not None
    document = example.rest.get(listing["paths"]["apis/rbac.authorization.k8s.io/v1"]["serverRelativeURL"])
    assert document is not None
    offline = offline_plan(example, [document, roles])
    (offline_step,) = [step for step in offline["schemas"] if step["publishedResource"] == "roles"]
    assert offline_step == live_step


def test_live_and_offline_plans_find_the_same_secrets_by_labels(example: Example) -> None:
    published_path = "/apis/services.kdp.k8c.io/v1alpha1/publishedresources/publish-certmanager-certs"
    example.rest.delete(published_path)
    (published,) = load_yaml(EXAMPLES / "publishedresource.yaml")
    published["spec"].setdefault("related", []).append(issued_secrets(pattern="^issued-(.+)$", replacement="extra-\\1"))
    example.rest.create(service_path(published, "publishedresources"), published)
    apply_schemas_and_export(example, example.plan("-o", "json").json())
    create_users_objects(example)
    apply_object_actions(example, example.plan("-o", "json").json())
    namespace = example.cluster("team-a")
    (certificate,) = _items(
        example.rest,
        f"/apis/cert-manager.io/v1/namespaces/{namespace}/certificates",
        "cert-manager.io/v1",
        "Certificate",
    )
    for name, issued_for in (("issued-ca", certificate["metadata"]["name"]), ("issued-other", "someone-else")):
        example.rest.create(
            f"/api/v1/namespaces/{namespace}/secrets",
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": name, "labels": {"issued-for": issued_for}},
                "data": {"ca.crt": "Y2E="},
            },
        )

    live = example.plan("-o", "json")

    assert live.code == 0, live.stdout + live.stderr
    assert comparable(live.json()) == comparable(offline_plan(example, dump_world(example)))
    created = [
        action["name"]
        for obj in live.json()["objects"]
        for action in obj["actions"]
        if action["type"] == "createRelated"
    ]
    assert created == ["extra-ca"]
