"""The real `kubectl` against kcpsim, for the faithfulness tests; skipped, saying why, without it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def kubectl(
    kubeconfig: Path,
    *args: str,
    cache: Path,
    stdin: str | None = None,
    editor: str | None = None,
    version: str | None = None,
) -> subprocess.CompletedProcess[str]:
    """`kubectl --kubeconfig kubeconfig args...`; its discovery cache in `cache`, no proxies.

    `editor` is the command `kubectl edit` runs on the file (KUBE_EDITOR); `version` ("1.32")
    picks the binary `kubectl.1.32` on PATH or beside kubectl, where a kubectl that follows the
    server's version keeps its releases."""
    binary = shutil.which("kubectl")
    if binary is None:
        pytest.skip("kubectl not on PATH")
    if version is not None:
        beside = Path(os.path.realpath(binary)).parent / f"kubectl.{version}"
        binary = shutil.which(f"kubectl.{version}") or (str(beside) if beside.exists() else None)
        if binary is None:
            pytest.skip(f"kubectl {version} (kubectl.{version}) is not on PATH nor beside kubectl")
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy") and k != "KUBECONFIG"}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    if editor is not None:
        env["KUBE_EDITOR"] = editor
    return subprocess.run(
        [binary, "--kubeconfig", str(kubeconfig), "--cache-dir", str(cache / "kubectl-cache"), *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        input=stdin,
        check=False,
    )
