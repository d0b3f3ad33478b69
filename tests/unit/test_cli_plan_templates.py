"""`servlet plan -f` on a PublishedResource whose naming uses Go templates: the local names it shows."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml
from typer.testing import CliRunner

from servlet.app.cli import app

REPO = Path(__file__).resolve().parents[2]
CRD = REPO / "examples" / "certificates" / "crd-certificates.yaml"
FIXTURE = REPO / "tests" / "fixtures" / "templated-names"
IDENTITY = ["--api-group", "certificates.example.corp", "--name", "tom"]


def plan(*files: Path) -> tuple[int, str]:
    arguments = [argument for path in files for argument in ("-f", str(path))]
    result = CliRunner().invoke(app, ["plan", *IDENTITY, *arguments, "-o", "json"])
    return result.exit_code, result.output


def sha3short(text: str, length: int) -> str:
    return hashlib.sha3_256(text.encode()).hexdigest()[:length]


def test_plan_shows_the_local_names_the_templates_compute() -> None:
    code, output = plan(CRD, FIXTURE)
    assert code == 0, output
    local_names = {
        obj["remote"]["name"]: (obj["local"]["namespace"], obj["local"]["name"])
        for obj in json.loads(output)["objects"]
    }
    assert local_names == {
        # team label "Payments", lower-cased; the name fits in 12 characters
        "web-frontend": ("k7v2m9x4q1w8z3r5", f"payments-web-frontend-{sha3short('default', 8)}"),
        # no team label: "shared"; the name cut to its first 12 characters
        "a-rather-long-certificate-name": ("k7v2m9x4q1w8z3r5", f"shared-a-rather-lon-{sha3short('prod', 8)}"),
    }


def test_plan_reports_a_template_that_cannot_work_by_its_field(tmp_path: Path) -> None:
    published = yaml.safe_load((FIXTURE / "publishedresource.yaml").read_text())
    published["spec"]["naming"]["name"] = "{{ .Object.metadata.name | nope }}"
    (tmp_path / "publishedresource.yaml").write_text(yaml.safe_dump(published))
    code, output = plan(CRD, tmp_path)
    errors = json.loads(output)["errors"]
    assert code != 0
    assert [error["field"] for error in errors] == ["spec.naming.name"], errors
    assert "unknown function 'nope'" in errors[0]["message"]
