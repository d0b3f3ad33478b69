"""Authentication: the kubeconfigs kcpsim writes carry a token; under `authn="token"` a request
without valid credentials gets 401 with the API server's `Status`, except on the probe paths."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from lightkube import ApiError, Client
from lightkube.config.kubeconfig import KubeConfig
from lightkube.resources.core_v1 import Namespace

from kcpsim import KcpSim
from tests.integration.kcpsim.helpers import Raw
from tests.integration.kcpsim.kubectl import kubectl

UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}
VW_CERTIFICATES = "/services/apiexport/abc123xyz/certificates.example.corp/clusters/*/apis/certificates.example.corp/v1alpha1/certificates"


@pytest.fixture
def strict(kcpsim_factory: Callable[..., KcpSim]) -> KcpSim:
    return kcpsim_factory(authn="token")


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/namespaces",
        "/apis",
        "/clusters/root:myorg:team-a/api/v1/namespaces",
        VW_CERTIFICATES,
        "/clusters/root:nowhere/api/v1/namespaces",
    ],
)
@pytest.mark.parametrize("token", ["", "forged"], ids=["no-credentials", "unknown-token"])
def test_a_request_without_valid_credentials_gets_401_unauthorized(
    strict: KcpSim, raw_for: Callable[..., Raw], path: str, token: str
) -> None:
    response = raw_for(strict, token=token)("GET", path)
    assert response.status_code == 401
    assert response.headers["Content-Type"] == "application/json"
    assert response.json() == UNAUTHORIZED


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz"])
def test_the_probe_paths_answer_without_credentials(strict: KcpSim, raw_for: Callable[..., Raw], path: str) -> None:
    response = raw_for(strict, token="")("GET", path)
    assert (response.status_code, response.text) == (200, "ok")
    assert response.headers["Content-Type"].startswith("text/plain")
    version = raw_for(strict, token="")("GET", "/version")
    assert version.status_code == 200 and version.json()["major"] == "1"
    # A token that is not valid is refused even there, as kube-apiserver does.
    assert raw_for(strict, token="forged")("GET", path).status_code == 401


def test_the_written_kubeconfigs_carry_a_token_that_works(strict: KcpSim, tmp_path: Path) -> None:
    files = strict.write_kubeconfigs(tmp_path)
    for label in ("service", "kcp", "team-a"):
        document = yaml.safe_load(files[label].read_text())
        assert document["users"][0]["user"]["token"] == strict.auth.admin_token
        with Client(KubeConfig.from_file(files[label]), trust_env=False) as client:
            assert "default" in {ns.metadata.name for ns in client.list(Namespace)}, label


def test_lenient_by_default_a_request_without_credentials_acts_as_the_admin(
    kcpsim: KcpSim, raw_for: Callable[..., Raw]
) -> None:
    assert raw_for(kcpsim, token="")("GET", "/api/v1/namespaces").status_code == 200
    assert raw_for(kcpsim, token="anything")("GET", "/api/v1/namespaces").status_code == 200


def test_a_registered_client_token_is_accepted(strict: KcpSim, raw_for: Callable[..., Raw]) -> None:
    assert raw_for(strict, token="client-1")("GET", "/api/v1/namespaces").status_code == 401
    strict.call(strict.auth.ensure_token, "client-1")  # as the harness does for each client's kubeconfigs
    assert raw_for(strict, token="client-1")("GET", "/api/v1/namespaces").status_code == 200


def test_a_service_account_token_works_until_the_account_is_deleted(
    strict: KcpSim, raw_for: Callable[..., Raw]
) -> None:
    admin = raw_for(strict)
    with pytest.raises(KeyError):
        strict.service_account_token("default", "robot")
    assert (
        admin(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
        ).status_code
        == 201
    )
    token = strict.service_account_token("default", "robot")
    review = raw_for(strict, token=token)(
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {"verb": "list", "resource": "namespaces"}},
        },
    )
    assert review.status_code == 201 and review.json()["status"]["allowed"] is True  # authorization: always-allow
    assert admin("DELETE", "/api/v1/namespaces/default/serviceaccounts/robot").status_code == 200
    assert raw_for(strict, token=token)("GET", "/api/v1/namespaces").json() == UNAUTHORIZED


def _with_token(sim: KcpSim, directory: Path, token: str) -> Path:
    config = sim.kubeconfig_dict(sim.base_url)
    config["users"][0]["user"]["token"] = token
    path = directory / f"{token[:8]}.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    return path


def test_kubectl_without_valid_credentials_must_log_in(kcpsim_factory: Callable[..., KcpSim], tmp_path: Path) -> None:
    strict: KcpSim = kcpsim_factory(authn="token", tls=True)  # kubectl sends credentials over HTTPS only
    listed = kubectl(_with_token(strict, tmp_path, strict.auth.admin_token), "get", "namespaces", cache=tmp_path)
    assert listed.returncode == 0 and "kube-system" in listed.stdout, listed.stderr
    result = kubectl(_with_token(strict, tmp_path, "forged"), "get", "namespaces", cache=tmp_path)
    assert result.returncode == 1
    # kubectl's wording for a 401 during discovery (its own text, not the Status message).
    assert "error: You must be logged in to the server" in result.stderr, result.stderr


def test_lightkube_sees_the_401_as_an_api_error(strict: KcpSim) -> None:
    config = strict.kubeconfig_dict(strict.base_url)
    config["users"][0]["user"]["token"] = "forged"
    config["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
    with Client(KubeConfig.from_dict(config), trust_env=False) as client, pytest.raises(ApiError) as raised:
        list(client.list(Namespace))
    assert raised.value.status.code == 401 and raised.value.status.reason == "Unauthorized"


def test_whoami_names_the_caller(strict: KcpSim, raw_for: Callable[..., Raw]) -> None:
    strict.add_user("alice-token", "alice", ("painters",))
    response = raw_for(strict, token="alice-token")(
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
    )
    assert response.status_code == 201
    assert response.json()["status"]["userInfo"] == {
        "username": "alice",
        "groups": ["painters", "system:authenticated"],
    }


def test_a_client_certificate_of_the_ca_is_its_subject(kcpsim_factory: Callable[..., KcpSim], tmp_path: Path) -> None:
    sim: KcpSim = kcpsim_factory(tls=True, authz="rbac")
    config = sim.kubeconfig_dict(sim.base_url, certificate=("alice", ("painters",)))
    assert "token" not in config["users"][0]["user"]
    with Client(KubeConfig.from_dict(config), trust_env=False) as client, pytest.raises(ApiError) as raised:
        list(client.list(Namespace))
    assert raised.value.status.code == 403
    assert raised.value.status.message == (
        'namespaces is forbidden: User "alice" cannot list resource "namespaces" in API group "" at the cluster scope'
    )
    path = tmp_path / "alice.kubeconfig"
    path.write_text(yaml.safe_dump(config))
    whoami = kubectl(
        path, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.groups}", cache=tmp_path
    )
    assert whoami.returncode == 0, whoami.stderr
    assert whoami.stdout == 'alice ["painters","system:authenticated"]'


def test_a_token_request_mints_a_token_for_a_stored_service_account(
    kcpsim_factory: Callable[..., KcpSim], raw_for: Callable[..., Raw], tmp_path: Path
) -> None:
    sim: KcpSim = kcpsim_factory(tls=True, authz="rbac")
    admin = raw_for(sim)
    path = "/api/v1/namespaces/default/serviceaccounts/robot/token"
    request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"audiences": ["api"]}}
    assert admin("POST", path, request).json()["message"] == 'serviceaccounts "robot" not found'
    assert (
        admin(
            "POST",
            "/api/v1/namespaces/default/serviceaccounts",
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "robot"}},
        ).status_code
        == 201
    )
    minted = admin("POST", path, request)
    assert minted.status_code == 201 and minted.json()["kind"] == "TokenRequest"
    robot = raw_for(sim, token=minted.json()["status"]["token"])
    assert robot("GET", "/api/v1/namespaces").json()["message"] == (
        'namespaces is forbidden: User "system:serviceaccount:default:robot" cannot list resource "namespaces" '
        'in API group "" at the cluster scope'
    )

    created = kubectl(
        _with_token(sim, tmp_path, sim.auth.admin_token), "create", "token", "robot", "-n", "default", cache=tmp_path
    )
    assert created.returncode == 0, created.stderr
    whoami = kubectl(
        _with_token(sim, tmp_path, created.stdout.strip()),
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
        cache=tmp_path,
    )
    assert (whoami.returncode, whoami.stdout) == (0, "system:serviceaccount:default:robot"), whoami.stderr
