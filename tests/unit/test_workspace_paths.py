"""Workspace paths (`spec.enableWorkspacePaths`): `.ClusterPath` in names, the path annotation, the claim."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest
import yaml
from typer.testing import CliRunner

from servlet.app.cli import app
from servlet.core.actions import Create, Error, Patch
from servlet.core.apiexport import plan_export
from servlet.core.context import SyncContext
from servlet.core.gather import UNREADABLE, LinkedCopies, ObjectAt, Read, gather
from servlet.core.metadata import REMOTE_WORKSPACE_PATH_ANNOTATION
from servlet.core.model import LocalKey, Naming, Problem, RemoteKey
from servlet.core.naming import local_key_for
from servlet.core.parsing import parse_published_resource
from servlet.core.plan import ObjectPlan, plan_object
from servlet.core.workspace_paths import LOGICAL_CLUSTER_TYPE, workspace_path_of
from tests.unit.test_plan import CLUSTER, make_context, make_remote

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "certificates"
PATH = "root:myorg:team-a"
CLAIM_LOGICAL_CLUSTERS = {"group": "core.kcp.io", "resource": "logicalclusters", "all": True}
NAME_FROM_PATH = '{{ .ClusterPath | replace ":" "-" }}-{{ .Object.metadata.name }}'


def _problems(**spec: Any) -> list[str]:
    manifest = {"metadata": {"name": "widgets"}, "spec": {"resource": {"apiGroup": "a.io", "kind": "W"}, **spec}}
    return [str(problem) for problem in parse_published_resource(manifest).problems]


def test_cluster_path_is_refused_without_the_switch_naming_the_field_and_the_switch() -> None:
    [problem] = _problems(naming={"name": NAME_FROM_PATH})
    assert problem.startswith("spec.naming.name: template ")
    assert ".ClusterPath is not available" in problem and "spec.enableWorkspacePaths: true" in problem


def test_cluster_path_is_allowed_with_the_switch_and_the_switch_is_read() -> None:
    assert _problems(naming={"name": NAME_FROM_PATH}, enableWorkspacePaths=True) == []
    manifest = {"spec": {"resource": {"apiGroup": "a.io", "kind": "W"}, "enableWorkspacePaths": True}}
    parsed = parse_published_resource(manifest).value
    assert parsed is not None and parsed.spec.workspace_paths
    assert _problems(enableWorkspacePaths="yes") == ['spec.enableWorkspacePaths: must be true or false, not "yes"']


def test_a_template_reads_the_path_it_is_given_and_yields_no_name_without_it() -> None:
    remote = RemoteKey(CLUSTER, "prod", "api")
    naming = Naming(name=NAME_FROM_PATH)
    computed = local_key_for(
        naming=naming, remote=remote, local_namespaced=True, remote_namespaced=True, cluster_path=PATH
    )
    assert computed == LocalKey(CLUSTER, "root-myorg-team-a-api")
    unknown = local_key_for(naming=naming, remote=remote, local_namespaced=True, remote_namespaced=True)
    assert isinstance(unknown, Problem)
    assert (
        unknown.field == "spec.naming.name" and f"workspace path of workspace {CLUSTER} is not known" in unknown.message
    )


@pytest.mark.parametrize(
    ("logical_cluster", "cluster", "path"),
    [
        ({"metadata": {"name": "cluster", "annotations": {"kcp.io/path": PATH}}}, CLUSTER, PATH),
        ({"metadata": {"name": "cluster"}}, "root", "root"),  # kcp's root workspace has no path annotation
        ({"metadata": {"name": "cluster"}}, CLUSTER, None),
        (None, CLUSTER, None),
        (UNREADABLE, CLUSTER, None),
    ],
)
def test_the_path_comes_from_the_logical_cluster(logical_cluster: object, cluster: str, path: str | None) -> None:
    assert workspace_path_of(logical_cluster, cluster=cluster) == path


def _with_paths(context: SyncContext, naming: Naming = Naming()) -> SyncContext:
    spec = attrs.evolve(context.published.spec, workspace_paths=True, naming=naming)
    return attrs.evolve(context, published=attrs.evolve(context.published, spec=spec))


def _planned(context: SyncContext, remote: dict[str, Any], *, logical_cluster: object, local: Any = None) -> ObjectPlan:
    """The plan of `remote` with its reads answered: the LogicalCluster as given, `local` as its copy."""
    asked: list[Read] = []

    def answer(reads: tuple[Read, ...]) -> list[Any]:
        asked.extend(reads)
        answers: list[Any] = []
        for read in reads:
            if isinstance(read, LinkedCopies):
                answers.append([local] if local is not None else [])
            elif isinstance(read, ObjectAt) and read.resource == LOGICAL_CLUSTER_TYPE:
                assert (read.cluster, read.name) == (CLUSTER, "cluster")
                answers.append(logical_cluster)
            else:
                answers.append([] if not isinstance(read, ObjectAt) else None)
        return answers

    inputs = gather(context, remote, answer)
    assert any(isinstance(read, ObjectAt) and read.resource == LOGICAL_CLUSTER_TYPE for read in asked)
    return plan_object(context=context, inputs=inputs)


LOGICAL_CLUSTER = {"metadata": {"name": "cluster", "annotations": {"kcp.io/cluster": CLUSTER, "kcp.io/path": PATH}}}


def test_a_new_copy_is_named_from_the_path_and_records_it_in_an_annotation() -> None:
    context = _with_paths(make_context(), Naming(name=NAME_FROM_PATH))
    result = _planned(context, make_remote(finalizers=()), logical_cluster=LOGICAL_CLUSTER)
    [create] = [action for action in result.actions if isinstance(action, Create)]
    assert create.object["metadata"]["name"] == "root-myorg-team-a-api"
    assert create.object["metadata"]["annotations"][REMOTE_WORKSPACE_PATH_ANNOTATION] == PATH


@pytest.mark.parametrize("logical_cluster", [None, UNREADABLE, {"metadata": {"name": "cluster"}}])
def test_without_a_known_path_no_copy_is_created_and_the_error_says_why(logical_cluster: object) -> None:
    result = _planned(_with_paths(make_context()), make_remote(finalizers=()), logical_cluster=logical_cluster)
    assert [type(action) for action in result.actions] == [Error]
    [error] = result.actions
    assert isinstance(error, Error)
    assert f"the workspace path of workspace {CLUSTER} is unknown" in error.reason
    assert "claim on logicalclusters" in error.reason


def test_an_existing_copy_gets_the_path_annotation_and_then_nothing_more() -> None:
    context = _with_paths(make_context())
    remote = make_remote()
    [create] = [a for a in _planned(context, remote, logical_cluster=LOGICAL_CLUSTER).actions if isinstance(a, Create)]
    copy_without = {**create.object, "metadata": {**create.object["metadata"]}}
    copy_without["metadata"]["annotations"] = {
        key: value
        for key, value in create.object["metadata"]["annotations"].items()
        if key != REMOTE_WORKSPACE_PATH_ANNOTATION
    }
    [patch] = _planned(context, remote, logical_cluster=LOGICAL_CLUSTER, local=copy_without).actions
    assert isinstance(patch, Patch)
    assert patch.patch["metadata"]["annotations"] == {REMOTE_WORKSPACE_PATH_ANNOTATION: PATH}
    assert _planned(context, remote, logical_cluster=LOGICAL_CLUSTER, local=create.object).actions == ()


def test_the_export_claims_logicalclusters_only_when_asked() -> None:
    claim = {"group": "core.kcp.io", "resource": "logicalclusters", "all": True}
    change = plan_export(export={"spec": {}}, schema_names=["v1.widgets.a.io"], related_kinds=(), workspace_paths=True)
    assert change is not None and claim in change.spec["permissionClaims"]
    without = plan_export(export={"spec": {}}, schema_names=["v1.widgets.a.io"], related_kinds=())
    assert without is not None and claim not in without.spec["permissionClaims"]
    again = plan_export(
        export={"spec": change.spec}, schema_names=["v1.widgets.a.io"], related_kinds=(), workspace_paths=True
    )
    assert again is None  # claimed once, never again


def test_servlet_plan_reads_the_path_from_a_logical_cluster_among_the_files(tmp_path: Path) -> None:
    published = yaml.safe_load((EXAMPLE / "publishedresource.yaml").read_text())
    published["spec"]["enableWorkspacePaths"] = True
    logical_cluster = {
        "apiVersion": "core.kcp.io/v1alpha1",
        "kind": "LogicalCluster",
        "metadata": {"name": "cluster", "annotations": {"kcp.io/cluster": "k7v2m9x4q1w8z3r5", "kcp.io/path": PATH}},
    }
    (tmp_path / "published.yaml").write_text(yaml.safe_dump(published))
    files = [EXAMPLE / "crd-certificates.yaml", EXAMPLE / "apiexport.yaml", EXAMPLE / "workspace-team-a.yaml"]
    args = ["plan", "--api-group", "certificates.example.corp", "--name", "tom", "-o", "json"]
    args += [arg for path in [tmp_path / "published.yaml", *files] for arg in ("-f", str(path))]

    without = CliRunner().invoke(app, args)
    assert without.exit_code == 1
    assert "the workspace path of workspace k7v2m9x4q1w8z3r5 is unknown" in without.output

    (tmp_path / "logicalcluster.yaml").write_text(yaml.safe_dump(logical_cluster))
    found = CliRunner().invoke(app, [*args, "-f", str(tmp_path / "logicalcluster.yaml")])
    assert found.exit_code == 0, found.output
    plan = json.loads(found.output)
    assert CLAIM_LOGICAL_CLUSTERS in plan["apiExport"]["spec"]["permissionClaims"]
    [create] = [a for obj in plan["objects"] for a in obj["actions"] if a["type"] == "create"]
    assert create["object"]["metadata"]["annotations"][REMOTE_WORKSPACE_PATH_ANNOTATION] == PATH
