"""`kubectl get` of a built-in kind shows the columns kube-apiserver prints for it: kcpsim answers a
request for a `meta.k8s.io/v1` Table with the apiserver's column set of the kind (NAME DATA AGE
for configmaps, NAME TYPE DATA AGE for secrets, ...). Over raw HTTP and through the real kubectl,
in the service cluster, a workspace and the virtual workspace."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import TEAM_A, Raw
from tests.integration.kcpsim.kubectl import kubectl

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
NS = "/api/v1/namespaces/default"
RBAC = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"


def as_table(raw: Raw, path: str) -> dict[str, Any]:
    answer = raw.client.get(path, headers={"Accept": TABLE})
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    assert body["kind"] == "Table"
    return body


def columns(table: dict[str, Any]) -> list[tuple[str, int]]:
    return [(c["name"], c["priority"]) for c in table["columnDefinitions"]]


def create(raw: Raw, path: str, body: dict[str, Any]) -> dict[str, Any]:
    answer = raw("POST", path, body)
    assert answer.status_code == 201, answer.text
    created: dict[str, Any] = answer.json()
    return created


def test_configmaps_secrets_and_namespaces_print_their_own_columns(raw: Raw) -> None:
    create(raw, f"{NS}/configmaps", {"metadata": {"name": "c"}, "data": {"a": "1"}, "binaryData": {"b": "AA=="}})
    create(raw, f"{NS}/secrets", {"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {"x": "AA=="}})
    configmaps = as_table(raw, f"{NS}/configmaps")
    assert columns(configmaps) == [("Name", 0), ("Data", 0), ("Age", 0)]
    assert configmaps["rows"][0]["cells"][:2] == ["c", 2]
    assert configmaps["rows"][0]["cells"][2].endswith("s")  # an age, such as 0s
    assert configmaps["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    secrets = as_table(raw, f"{NS}/secrets/s")
    assert columns(secrets) == [("Name", 0), ("Type", 0), ("Data", 0), ("Age", 0)]
    assert secrets["rows"][0]["cells"][:3] == ["s", "kubernetes.io/tls", 1]
    namespaces = as_table(raw, "/api/v1/namespaces/default")
    assert [c["name"] for c in namespaces["columnDefinitions"]] == ["Name", "Status", "Age"]
    assert namespaces["rows"][0]["cells"][:2] == ["default", "Active"]


def test_rbac_events_leases_and_service_accounts_print_their_own_columns(raw: Raw) -> None:
    role = create(raw, f"{RBAC}/roles", {"metadata": {"name": "r"}, "rules": []})
    roles = as_table(raw, f"{RBAC}/roles")
    assert columns(roles) == [("Name", 0), ("Created At", 0)]
    assert roles["rows"][0]["cells"] == ["r", role["metadata"]["creationTimestamp"]]
    subjects = [
        {"kind": "User", "name": "alice"},
        {"kind": "Group", "name": "painters"},
        {"kind": "ServiceAccount", "name": "robot", "namespace": "default"},
    ]
    binding = {
        "metadata": {"name": "b"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
    }
    create(raw, f"{RBAC}/rolebindings", binding | {"subjects": subjects})
    bindings = as_table(raw, f"{RBAC}/rolebindings")
    assert [name for name, _ in columns(bindings)] == ["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"]
    cells = bindings["rows"][0]["cells"]
    assert (cells[:2], cells[3:]) == (["b", "Role/r"], ["alice", "painters", "default/robot"])
    event = {
        "metadata": {"name": "e"},
        "involvedObject": {"kind": "ConfigMap", "name": "c", "fieldPath": "data"},
        "type": "Warning",
        "reason": "Stale",
        "message": " out of date ",
        "source": {"component": "servlet", "host": "node-1"},
        "count": 4,
    }
    create(raw, f"{NS}/events", event)
    events = as_table(raw, f"{NS}/events")
    assert columns(events)[:4] == [("Last Seen", 0), ("Type", 0), ("Reason", 0), ("Object", 0)]
    assert columns(events)[-1] == ("Name", 1)
    assert events["rows"][0]["cells"][1:] == [
        "Warning",
        "Stale",
        "configmap/c",
        "data",
        "servlet, node-1",
        "out of date",
        "<unknown>",
        4,
        "e",
    ]
    create(
        raw,
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}},
    )
    leases = as_table(raw, "/apis/coordination.k8s.io/v1/namespaces/default/leases")
    assert [c["name"] for c in leases["columnDefinitions"]] == ["Name", "Holder", "Age"]
    assert leases["rows"][0]["cells"][:2] == ["l", "me"]
    create(raw, f"{NS}/serviceaccounts", {"metadata": {"name": "robot"}, "secrets": [{"name": "t"}]})
    accounts = as_table(raw, f"{NS}/serviceaccounts")
    assert [c["name"] for c in accounts["columnDefinitions"]] == ["Name", "Secrets", "Age"]
    assert accounts["rows"][0]["cells"][:2] == ["robot", 1]


def test_a_plain_json_request_still_gets_the_object(raw: Raw) -> None:
    create(raw, f"{NS}/configmaps", {"metadata": {"name": "c"}})
    assert raw("GET", f"{NS}/configmaps/c").json()["kind"] == "ConfigMap"


MANIFESTS = [
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "b"}},
    {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "default"}, "type": "Opaque"},
]


@pytest.mark.parametrize("where", ["service-cluster", "workspace", "virtual-workspace"])
def test_kubectl_get_shows_the_apiserver_columns(kcpsim: KcpSim, tmp_path: Path, where: str) -> None:
    kubeconfigs = kcpsim.write_kubeconfigs(tmp_path)
    if where == "virtual-workspace":  # secrets are claimed: created in the workspace, read through the VW
        writer = kubeconfigs["team-a"]
        reader = tmp_path / "vw.kubeconfig"
        reader.write_text(yaml.safe_dump(kcpsim.kubeconfig_dict(f"{kcpsim.vw_url()}/clusters/{TEAM_A}")))
    else:
        writer = reader = kubeconfigs["team-a" if where == "workspace" else "service"]
    stdin = yaml.safe_dump_all(MANIFESTS if where != "virtual-workspace" else MANIFESTS[1:])
    applied = kubectl(writer, "apply", "-f", "-", cache=tmp_path, stdin=stdin)
    assert applied.returncode == 0, applied.stderr
    secrets = kubectl(reader, "get", "secrets", "-n", "default", cache=tmp_path)
    assert secrets.returncode == 0, secrets.stderr
    header, *rows = secrets.stdout.splitlines()
    assert header.split() == ["NAME", "TYPE", "DATA", "AGE"]
    assert ["s", "Opaque", "0"] in [row.split()[:3] for row in rows]
    if where != "virtual-workspace":
        configmaps = kubectl(reader, "get", "configmaps", "c", "-n", "default", cache=tmp_path)
        assert configmaps.stdout.splitlines()[0].split() == ["NAME", "DATA", "AGE"], configmaps.stderr
        namespaces = kubectl(reader, "get", "namespace", "default", cache=tmp_path)
        assert namespaces.stdout.split()[:5] == ["NAME", "STATUS", "AGE", "default", "Active"], namespaces.stderr
