"""Server-side field validation as kube-apiserver answers it: unknown fields fail a write with
`fieldValidation=Strict`, are named in `Warning` headers with `Warn` (the default) and dropped from
built-in kinds. kubectl 1.32, finding `fieldValidation` in the OpenAPI v3 documents, leaves
validation to the server, so plain `kubectl apply -f` and `create -f` work (no `--validate=false`)
against the service cluster, a workspace and the virtual workspace. Over raw HTTP and kubectl."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import EXPORT, TEAM_A, Raw
from tests.integration.kcpsim.kubectl import kubectl

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
WORKSPACE = "/clusters/root:myorg:team-a"
CERTIFICATES = f"/apis/{EXPORT}/v1alpha1/namespaces/default/certificates"


def configmap(name: str, **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}, **extra}


def certificate(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"{EXPORT}/v1alpha1",
        "kind": "Certificate",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"commonName": f"{name}.example", **spec},
    }


def test_strict_refuses_unknown_fields_of_a_built_in_and_stores_nothing(raw: Raw) -> None:
    body = configmap("c", extra=1) | {"metadata": {"name": "c", "bogus": True}}
    refused = raw("POST", CONFIGMAPS, body, params={"fieldValidation": "Strict"})
    assert refused.status_code == 400
    assert refused.json()["reason"] == "BadRequest"
    assert refused.json()["message"] == (
        'ConfigMap in version "v1" cannot be handled as a ConfigMap: '
        'strict decoding error: unknown field "metadata.bogus", unknown field "extra"'
    )  # in the order of the body
    assert raw("GET", f"{CONFIGMAPS}/c").status_code == 404


def test_warn_names_each_unknown_field_and_a_built_in_drops_it(raw: Raw) -> None:
    created = raw("POST", CONFIGMAPS, configmap("c", extra=1))  # Warn is the default
    assert created.status_code == 201
    assert created.headers.get_list("Warning") == ['299 - "unknown field \\"extra\\""']
    assert "extra" not in raw("GET", f"{CONFIGMAPS}/c").json()
    quiet = raw("POST", CONFIGMAPS, configmap("d", extra=1), params={"fieldValidation": "Ignore"})
    assert quiet.status_code == 201 and "Warning" not in quiet.headers and "extra" not in quiet.json()
    known = raw("POST", CONFIGMAPS, configmap("e"), params={"fieldValidation": "Strict"})
    assert known.status_code == 201 and "Warning" not in known.headers


def test_patches_are_checked_without_their_directives(raw: Raw) -> None:
    assert raw("POST", CONFIGMAPS, configmap("c")).status_code == 201
    strategic = {"metadata": {"$setElementOrder/finalizers": [], "labels": {"x": "y"}}, "data": {"b": "c"}}
    patched = raw(
        "PATCH",
        f"{CONFIGMAPS}/c",
        strategic,
        content_type="application/strategic-merge-patch+json",
        params={"fieldValidation": "Strict"},
    )
    assert patched.status_code == 200, patched.text
    refused = raw(
        "PATCH",
        f"{CONFIGMAPS}/c",
        {"data": {"b": "d"}, "bogus": 1},
        content_type="application/merge-patch+json",
        params={"fieldValidation": "Strict"},
    )
    assert refused.status_code == 400
    assert refused.json()["message"] == 'strict decoding error: unknown field "bogus"'
    assert raw("GET", f"{CONFIGMAPS}/c").json()["data"] == {"a": "b", "b": "c"}


def test_a_bound_custom_resource_is_checked_against_its_schema(raw: Raw) -> None:
    refused = raw("POST", f"{WORKSPACE}{CERTIFICATES}", certificate("c", bogus=1), params={"fieldValidation": "Strict"})
    assert refused.status_code == 400, refused.text
    assert refused.json()["message"].endswith('strict decoding error: unknown field "spec.bogus"')
    warned = raw("POST", f"{WORKSPACE}{CERTIFICATES}", certificate("c", bogus=1))
    assert warned.status_code == 201
    assert warned.headers.get_list("Warning") == ['299 - "unknown field \\"spec.bogus\\""']
    assert "bogus" not in warned.json()["spec"]  # pruned by the schema
    # Its metadata (managedFields' free-form fieldsV1 too) decodes as the built-in ObjectMeta.
    stored = raw("GET", f"{WORKSPACE}{CERTIFICATES}/c").json()
    assert stored["metadata"]["managedFields"][0]["fieldsV1"]
    replaced = raw("PUT", f"{WORKSPACE}{CERTIFICATES}/c", stored, params={"fieldValidation": "Strict"})
    assert replaced.status_code == 200, replaced.text


def test_an_unknown_directive_is_refused(raw: Raw) -> None:
    refused = raw("POST", CONFIGMAPS, configmap("c"), params={"fieldValidation": "Loose"})
    assert refused.status_code == 400
    assert "fieldValidation" in refused.json()["message"]


def _kubeconfig(kcpsim: KcpSim, tmp_path: Path, where: str) -> Path:
    if where == "virtual-workspace":
        path = tmp_path / "vw.kubeconfig"
        server = f"{kcpsim.vw_url()}/clusters/{TEAM_A}"
        path.write_text(yaml.safe_dump(kcpsim.kubeconfig_dict(server)))
        return path
    return kcpsim.write_kubeconfigs(tmp_path)["team-a" if where == "workspace" else "service"]


@pytest.mark.parametrize("where", ["service-cluster", "workspace", "virtual-workspace"])
def test_kubectl_apply_and_create_validate_on_the_server(kcpsim: KcpSim, tmp_path: Path, where: str) -> None:
    kubeconfig = _kubeconfig(kcpsim, tmp_path, where)
    if where == "service-cluster":
        good, bad = configmap("good"), configmap("bad", extra=1)
        for manifest in (good, bad):
            manifest["metadata"]["namespace"] = "default"
        unknown = 'unknown field "extra"'
    else:
        good, bad, unknown = certificate("good"), certificate("bad", bogus=1), 'unknown field "spec.bogus"'
    applied = kubectl(kubeconfig, "apply", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(good))
    assert applied.returncode == 0, applied.stderr
    created = kubectl(kubeconfig, "create", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(bad))
    assert created.returncode == 1 and "strict decoding error" in created.stderr and unknown in created.stderr
    warned = kubectl(kubeconfig, "apply", "--validate=warn", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(bad))
    assert warned.returncode == 0, warned.stderr
    assert f"Warning: {unknown}" in warned.stderr


REPO = Path(__file__).resolve().parents[3]
TRY_IT = REPO / "docs" / "try-it-locally.md"


def test_the_kubectl_commands_of_try_it_locally_need_no_validate_false(kcpsim: KcpSim, tmp_path: Path) -> None:
    assert "--validate=false" not in TRY_IT.read_text()
    kubeconfigs = kcpsim.write_kubeconfigs(tmp_path)
    crds = ["charts/servlet/crds/publishedresources.yaml", "examples/certificates/crd-certificates.yaml"]
    for files in (crds, ["examples/certificates/publishedresource.yaml"]):
        published = kubectl(kubeconfigs["service"], "apply", *(f"-f={REPO / f}" for f in files), cache=tmp_path)
        assert published.returncode == 0, published.stderr
        assert "Warning" not in published.stderr
    manifest = certificate("web", secretName="web-tls")
    created = kubectl(kubeconfigs["team-a"], "apply", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(manifest))
    assert created.returncode == 0, created.stderr
    assert created.stdout.strip() == "certificate.certificates.example.corp/web created"


@pytest.mark.parametrize("where", ["service-cluster", "workspace", "virtual-workspace"])
def test_kubectl_edit_saves_a_change_and_refuses_an_unknown_field(kcpsim: KcpSim, tmp_path: Path, where: str) -> None:
    kubeconfig = _kubeconfig(kcpsim, tmp_path, where)
    if where == "service-cluster":
        manifest = configmap("edited") | {"metadata": {"name": "edited", "namespace": "default"}}
        what, before, after, bogus = "configmap/edited", "a: b", "a: changed", "bogus: 1"
    else:
        manifest = certificate("edited")
        what, before, after, bogus = (
            "certificate/edited",
            "commonName: edited.example",
            "commonName: new.example",
            "  bogus: 1",
        )
    writer = kcpsim.write_kubeconfigs(tmp_path)["team-a"] if where == "virtual-workspace" else kubeconfig
    assert kubectl(writer, "apply", "-f", "-", cache=tmp_path, stdin=yaml.safe_dump(manifest)).returncode == 0
    # kubectl runs KUBE_EDITOR on a YAML file of the object; sed plays the user.
    edited = kubectl(kubeconfig, "edit", what, "-n", "default", cache=tmp_path, editor=f"sed -i 's/{before}/{after}/'")
    assert edited.returncode == 0, edited.stderr
    assert edited.stdout.strip().endswith("edited")
    shown = kubectl(kubeconfig, "get", what, "-n", "default", "-o", "yaml", cache=tmp_path)
    assert after in shown.stdout
    # A field the schema does not know: kubectl's strict validation, done by the server, refuses it.
    refused = kubectl(
        kubeconfig, "edit", what, "-n", "default", cache=tmp_path, editor=f"sed -i 's/^  {after}/&\\n{bogus}/'"
    )
    assert refused.returncode == 1
    assert "strict decoding error: unknown field" in refused.stderr + refused.stdout
