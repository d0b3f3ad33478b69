"""Secret values never reach what people read: plans (live and offline, text and JSON), the log, errors.

One story with related Secrets in both directions: the workspace's CA Secret copied down (origin
platform, so the local copy carries a last-known-state holding the value) and the service's TLS
Secret copied up (origin service, remembered in a related-state annotation). Every value is a
marker; the plans are taken while the servlet is stopped, so they hold the creates and patches
the daemon then carries out. The daemon runs at debug level, its first writes of the CA copy are
refused by a server that quotes the request, and one CA Secret is too large to sync. The copies
must still get the real values.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Iterable
from typing import Any

import pytest
import yaml

from kcpsim import ErrorRule, FaultPlan
from kcpsim.harness.process import ServletProcess, child_environment, run_servlet_plan, servlet_executable
from servlet.core.redaction import REDACTED
from tests.integration.e2e.env import E2E, E2EWorld
from tests.integration.e2e.manifests import (
    CERTIFICATE,
    LINK,
    SECRET,
    ZERTIFIKAT,
    certificate_crd,
    certificates_with_platform_secret,
    example_local_name,
    secret,
    zertifikat,
)

pytestmark = pytest.mark.kcpsim_only("injects faults")

# Values as PEM blocks look: quotes and line breaks give them other spellings inside JSON text.
CA = '-----BEGIN CERTIFICATE-----\nredact-e2e-ca-6a1f0e "ca"\n-----END CERTIFICATE-----'
TLS_KEY = '-----BEGIN PRIVATE KEY-----\nredact-e2e-key-93c2d7 "key"\n-----END PRIVATE KEY-----'
CA_ROTATED = CA.replace("6a1f0e", "6a1f0e-rotated")
TLS_KEY_ROTATED = TLS_KEY.replace("93c2d7", "93c2d7-rotated")
# The head of a Secret too large to sync; a multiple of 3 bytes, so its base64 starts the value's.
BIG_HEAD = "redact-e2e-big-0c77aa..."
WORDS = ("redact-e2e-ca-6a1f0e", "redact-e2e-key-93c2d7", "redact-e2e-big-0c77aa")


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def leaks(text: str) -> list[str]:
    """Every spelling of a marker value found in `text`: plain (any JSON quoting) or base64."""
    spellings = [*WORDS, *(b64(value) for value in (CA, TLS_KEY, CA_ROTATED, TLS_KEY_ROTATED, BIG_HEAD))]
    return [spelling for spelling in spellings if spelling in text]


def big_value() -> str:
    assert len(BIG_HEAD.encode()) % 3 == 0
    # Random bytes do not compress: the state of its copy cannot fit the annotations' 256 KiB.
    return base64.b64encode(BIG_HEAD.encode() + os.urandom(300_000)).decode()


# -- plans ------------------------------------------------------------------------------------------


def live_plans(world: E2EWorld) -> dict[str, str]:
    """`servlet plan` against the clusters, as text and as JSON: everything it printed."""
    outputs = {}
    for output in ("text", "json"):
        result = run_servlet_plan(world, extra=("-o", output))
        outputs[f"live {output}"] = result.stdout + result.stderr
    return outputs


def _items(world: E2EWorld, path: str, api_version: str, kind: str) -> list[dict[str, Any]]:
    # List items come without their type; manifests for the offline plan need it.
    return [{"apiVersion": api_version, "kind": kind, **item} for item in world.rest.list(path)]


def dump(world: E2EWorld) -> list[dict[str, Any]]:
    """Both sides as `kubectl get -o yaml` would save them, for the offline plan."""
    org = world.in_org("/apis/apis.kcp.io/v1alpha1")
    documents = [
        *_items(
            world,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
        ),
        *_items(
            world,
            "/apis/services.kdp.k8c.io/v1alpha1/publishedresources",
            "services.kdp.k8c.io/v1alpha1",
            "PublishedResource",
        ),
        *_items(world, "/api/v1/namespaces", "v1", "Namespace"),
        *_items(world, "/api/v1/secrets", "v1", "Secret"),
        *_items(world, CERTIFICATE.path(), "cert-manager.io/v1", "Certificate"),
        *_items(world, f"{org}/apiresourceschemas", "apis.kcp.io/v1alpha1", "APIResourceSchema"),
    ]
    for path in (f"{org}/apiexports/{world.export}", f"{org}/apiexportendpointslices/{world.export}"):
        found = world.rest.get(path)
        assert found is not None, path
        documents.append(found)
    documents += _items(world, world.in_workspace("team-a", ZERTIFIKAT.path()), f"{world.group}/v1beta1", "Zertifikat")
    documents += _items(world, world.in_workspace("team-a", "/api/v1/namespaces"), "v1", "Namespace")
    documents += _items(world, world.in_workspace("team-a", SECRET.path()), "v1", "Secret")
    return documents


def offline_plans(world: E2EWorld) -> dict[str, str]:
    """`servlet plan -f` on a dump of the same world, as text and as JSON."""
    path = world.directory / "dump.yaml"
    path.write_text(yaml.safe_dump_all(dump(world), sort_keys=False))
    outputs = {}
    for output in ("text", "json"):
        result = subprocess.run(
            [
                *servlet_executable(),
                "plan",
                "-f",
                str(path),
                "--name",
                "tom",
                "--api-group",
                world.group,
                "--apiexport",
                world.export,
                "-o",
                output,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            env=child_environment(),
            cwd=world.directory,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        outputs[f"offline {output}"] = result.stdout + result.stderr
    return outputs


def related_actions(plan_json: str) -> dict[str, list[dict[str, Any]]]:
    """The actions on related objects, by identifier."""
    found: dict[str, list[dict[str, Any]]] = {}
    for obj in json.loads(plan_json)["objects"]:
        for action in obj["actions"]:
            if action.get("identifier"):
                found.setdefault(action["identifier"], []).append(action)
    return found


def check_plans(outputs: dict[str, str], *, expected: dict[str, list[str]]) -> None:
    """No marker in any output; the plans hold the related writes they must (so they had values to hide)."""
    leaking = {name: leaks(text) for name, text in outputs.items() if leaks(text)}
    assert leaking == {}, f"these outputs show Secret values: {leaking}"
    for name in ("live json", "offline json"):
        planned = related_actions(outputs[name])
        assert {key: sorted(a["type"] for a in actions) for key, actions in planned.items()} == expected, planned
        local_ca = next(a for a in planned["issuer-ca"] if a["type"] in ("createRelated", "patchRelated"))
        body = local_ca.get("object") or local_ca["patch"]
        state = body["metadata"]["annotations"][f"{LINK}/last-known-state"]
        assert body["data"] == {"ca.crt": REDACTED} and REDACTED in state, local_ca
    for name in ("live text", "offline text"):
        assert f"{LINK}/last-known-state" in outputs[name] and REDACTED in outputs[name], outputs[name]


# -- the story ------------------------------------------------------------------------------------


def stop(servlet: ServletProcess) -> None:
    assert servlet.terminate() == 0, servlet.log_tail()


def logged(servlet: ServletProcess, *words: str) -> str | None:
    """The servlet's log once it contains all of `words` (a line may trail the write it reports)."""
    text = servlet.log_text()
    return text if all(word in text for word in words) else None


def check_logs(servlets: Iterable[ServletProcess]) -> None:
    for servlet in servlets:
        assert leaks(servlet.log_text()) == [], f"servlet {servlet.label} logged Secret values"


def test_secret_values_stay_out_of_plans_logs_and_errors_while_the_copies_get_them(e2e: E2E) -> None:
    e2e.publish(certificate_crd(), certificates_with_platform_secret())
    first = e2e.servlet(extra=("--log-level", "debug"))
    e2e.wait_served("team-a", ZERTIFIKAT)
    cluster = e2e.world.cluster("team-a")
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("web", issuer="team-issuer"))
    e2e.create_remote("team-a", ZERTIFIKAT, zertifikat("big", issuer="big-issuer"))
    for name in ("web", "big"):
        e2e.wait_local(CERTIFICATE, namespace=cluster, name=example_local_name(namespace="default", name=name))
    stop(first)

    # The user's CA (down), a CA too large to sync, and cert-manager's TLS Secret (up).
    e2e.create_remote("team-a", SECRET, secret("team-issuer-ca", namespace="default", data={"ca.crt": b64(CA)}))
    e2e.create_remote("team-a", SECRET, secret("big-issuer-ca", namespace="default", data={"ca.crt": big_value()}))
    e2e.world.apply(secret("web-tls", namespace=cluster, type_="kubernetes.io/tls", data={"tls.key": b64(TLS_KEY)}))
    # Every write until nothing is left: the CA copy is recorded on its primary once created.
    creates = {
        "issuer-ca": ["createRelated", "error", "recordRelatedState"],
        "tls-secret": ["createRelated", "recordRelatedState"],
    }
    check_plans({**live_plans(e2e.world), **offline_plans(e2e.world)}, expected=creates)

    # The service cluster refuses the first writes of the CA copy, quoting what it refused.
    e2e.simulated.sim.set_faults(
        FaultPlan(
            errors=(
                ErrorRule(status=403, verb="create", resource="secrets", target="service", quote_body=True, limit=2),
            )
        )
    )
    second = e2e.servlet(extra=("--log-level", "debug"))
    copy = e2e.eventually(
        lambda: e2e.local(SECRET, namespace=cluster, name="team-issuer-ca"),
        what="the CA copy on the service cluster once the server accepts it",
    )
    assert copy["data"] == {"ca.crt": b64(CA)}
    e2e.eventually(
        lambda: (
            (e2e.remote("team-a", SECRET, namespace="default", name="web-tls") or {}).get("data")
            == {"tls.key": b64(TLS_KEY)}
        ),
        what="the TLS Secret in the workspace",
    )
    log = e2e.eventually(
        lambda: logged(second, "too large for its last-known-state", '"action":"createRelated"'),
        what="the log to report the CA that is too large and the copies created",
    )
    refusals = [line for line in log.splitlines() if "reconcile failed" in line and "denied" in line]
    assert refusals, "the refusal quoting the request is not in the log"
    for line in refusals:
        assert leaks(line) == [] and REDACTED in line, f"the values were not cut out of the refusal: {line}"
    stop(second)

    # Both Secrets change while the servlet is down: the plans now hold patches.
    e2e.patch_remote(
        "team-a", SECRET, namespace="default", name="team-issuer-ca", patch={"data": {"ca.crt": b64(CA_ROTATED)}}
    )
    e2e.rest.merge_patch(SECRET.path(namespace=cluster, name="web-tls"), {"data": {"tls.key": b64(TLS_KEY_ROTATED)}})
    patches = {"issuer-ca": ["error", "patchRelated"], "tls-secret": ["patchRelated"]}
    check_plans({**live_plans(e2e.world), **offline_plans(e2e.world)}, expected=patches)

    third = e2e.servlet(extra=("--log-level", "debug"))
    e2e.eventually(
        lambda: (
            (e2e.local(SECRET, namespace=cluster, name="team-issuer-ca") or {}).get("data")
            == {"ca.crt": b64(CA_ROTATED)}
        ),
        what="the rotated CA on the service cluster",
    )
    e2e.eventually(
        lambda: (
            (e2e.remote("team-a", SECRET, namespace="default", name="web-tls") or {}).get("data")
            == {"tls.key": b64(TLS_KEY_ROTATED)}
        ),
        what="the rotated key in the workspace",
    )
    stop(third)
    check_logs((first, second, third))
