"""Schema-only PublishedResources (`spec.synchronization.enabled: false`): published, exported, never synced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from servlet.app.cli import app
from servlet.core.conditions import ConditionStatus
from servlet.core.context import SyncContext
from servlet.core.model import ServletIdentity, Synchronization
from servlet.core.parsing import parse_published_resource
from servlet.core.projection import project
from servlet.core.worker_choice import SYNCHRONIZATION_DISABLED, Candidate, choose_workers, workers_to_stop

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "certificates"
SERVLET = ServletIdentity(name="tom", api_group="certificates.example.corp")
IDENTITY = ["--api-group", SERVLET.api_group, "--name", SERVLET.name]


def _published(**spec: Any) -> dict[str, Any]:
    manifest = yaml.safe_load((EXAMPLE / "publishedresource.yaml").read_text())
    manifest["spec"].update(spec)
    assert isinstance(manifest, dict)
    return manifest


def _context(manifest: dict[str, Any]) -> SyncContext:
    crd = yaml.safe_load((EXAMPLE / "crd-certificates.yaml").read_text())
    published = parse_published_resource(manifest).value
    assert published is not None
    projected = project(crd=crd, published=published, api_group=SERVLET.api_group)
    assert not isinstance(projected, tuple), projected
    return SyncContext(servlet=SERVLET, published=published, projected=projected)


@pytest.mark.parametrize(("given", "enabled"), [(None, True), ({"enabled": True}, True), ({"enabled": False}, False)])
def test_synchronization_is_read_and_defaults_to_enabled(given: dict[str, Any] | None, enabled: bool) -> None:
    manifest = _published() if given is None else _published(synchronization=given)
    parsed = parse_published_resource(manifest)
    assert parsed.problems == ()
    assert parsed.value is not None
    assert parsed.value.spec.synchronization == Synchronization(enabled=enabled)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ({"enabled": False, "mode": "schema"}, "spec.synchronization.mode: unknown field"),
        ({}, "spec.synchronization.enabled: is required (true or false)"),
        ({"enabled": "no"}, 'spec.synchronization.enabled: must be true or false, not "no"'),
        ("off", "spec.synchronization: must be a map"),
    ],
)
def test_a_bad_synchronization_is_one_problem_naming_the_field(given: Any, expected: str) -> None:
    problems = [str(problem) for problem in parse_published_resource(_published(synchronization=given)).problems]
    assert len(problems) == 1, problems
    assert problems[0].startswith(expected), problems


def test_a_schema_only_resource_gets_no_worker_but_syncing_true_saying_why() -> None:
    synced = _context(_published())
    schema_only = _context(_published(synchronization={"enabled": False}))
    choice = choose_workers(
        [Candidate(name="schema-only", context=schema_only)], exported={schema_only.projected.schema_name}
    )
    assert dict(choice.run) == {}
    assert choice.schema_only == {"schema-only"}
    condition = choice.held["schema-only"]
    assert (condition.status, condition.reason) == (ConditionStatus.TRUE, SYNCHRONIZATION_DISABLED)
    assert "spec.synchronization.enabled: false" in condition.message
    # A worker of an earlier PublishedResource of that name stops, and its finalizers go.
    assert workers_to_stop({"schema-only": synced}, choice, existing={"schema-only"}) == {"schema-only": True}


def _run_plan(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["plan", *IDENTITY, *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.output


def test_plan_shows_the_schema_and_export_entry_but_no_object_plans_and_says_why(tmp_path: Path) -> None:
    inputs = tmp_path / "published.yaml"
    inputs.write_text(yaml.safe_dump(_published(synchronization={"enabled": False})))
    files = [str(EXAMPLE / name) for name in ("crd-certificates.yaml", "apiexport.yaml", "workspace-team-a.yaml")]
    args = [arg for path in [str(inputs), *files] for arg in ("-f", path)]

    code, output = _run_plan(*args, "-o", "json")
    assert code == 0, output
    plan = json.loads(output)
    [schema] = plan["schemas"]
    assert schema["action"] == "create"
    assert schema["name"] in plan["apiExport"]["spec"]["latestResourceSchemas"]
    assert plan["objects"] == []
    [note] = plan["schemaOnly"]
    assert note["publishedResource"] == "publish-certmanager-certs"
    assert "no objects are synced" in note["message"]

    code, text = _run_plan(*args)
    assert code == 0, text
    assert "= PublishedResource publish-certmanager-certs: synchronization is disabled" in text
    assert "(no remote objects of a published resource)" not in text
