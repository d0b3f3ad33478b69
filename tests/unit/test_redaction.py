"""Secret values in printed plans and in messages that quote an action: hidden, keys visible."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from servlet.core.actions import (
    REDACTED,
    Action,
    CreateRelated,
    ObjectRef,
    Patch,
    PatchRelated,
    RecordRelatedState,
    Side,
    redacted,
    secret_spellings,
)
from servlet.core.metadata import LAST_KNOWN_STATE_ANNOTATION, related_state_annotation
from servlet.core.model import (
    Origin,
    RelatedKind,
    RelatedReference,
    RelatedResource,
    RemoteKey,
    ResourceType,
    ValueReference,
)
from servlet.core.patch import decode_state, encode_state
from servlet.core.redaction import scrub
from servlet.core.related import Primaries, RelatedKey, RelatedSnapshot, plan_related
from servlet.core.targets import CONFIGMAP_TYPE, SECRET_TYPE

CLUSTER = "k7v2m9x4q1w8z3r5"
# A value as a PEM key looks: quotes and line breaks change its spelling inside JSON text.
WORD = "unit-marker-7c41e9"
MARKER = f'-----BEGIN KEY-----\n{WORD} "quoted"\n-----END KEY-----'
ROTATED = MARKER.replace(WORD, f"{WORD}-rotated")
CERTIFICATE = ResourceType("cert-manager.io", "v1", "Certificate", "certificates", True)
ISSUER_CA = RelatedResource(
    identifier="issuer-ca",
    origin=Origin.PLATFORM,
    kind=RelatedKind.SECRET,
    reference=RelatedReference(name=ValueReference(path="spec.issuerRef.name")),
)


def b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def leaks(text: str) -> list[str]:
    """The spellings of the marker values found in `text` (plain, base64, JSON-quoted)."""
    spellings = [WORD, b64(MARKER), b64(ROTATED)]
    return [spelling for spelling in spellings if spelling in text]


def secret(namespace: str, value: str, **metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {"namespace": namespace, "name": "team-ca", **metadata},
        "data": {"ca.crt": b64(value)},
    }


def platform_secret_plan(local_copy: dict[str, Any] | None, *, value: str) -> tuple[Action, ...]:
    """The actions for a workspace Secret (origin platform) copied down next to the local primary."""
    remote = {
        "apiVersion": "certificates.example.corp/v1beta1",
        "kind": "Zertifikat",
        "metadata": {"namespace": "default", "name": "web"},
        "spec": {"issuerRef": {"name": "team-ca"}},
    }
    local = {
        "apiVersion": "cert-manager.io/v1",
        "kind": "Certificate",
        "metadata": {"namespace": CLUSTER, "name": "cert-web"},
        "spec": {"issuerRef": {"name": "team-ca"}},
    }
    pair = Primaries(
        servlet_name="tom",
        remote_key=RemoteKey(CLUSTER, "default", "web"),
        remote=remote,
        local=local,
        local_ref=ObjectRef(Side.LOCAL, CERTIFICATE, CLUSTER, "cert-web"),
    )
    objects = {RelatedKey(Side.REMOTE, RelatedKind.SECRET, "default", "team-ca"): secret("default", value)}
    if local_copy is not None:
        objects[RelatedKey(Side.LOCAL, RelatedKind.SECRET, CLUSTER, "team-ca")] = local_copy
    return plan_related(primaries=pair, related=[ISSUER_CA], snapshot=RelatedSnapshot(objects=objects))


def copied_down() -> CreateRelated:
    # The create, then the record of where the copy is (on the local primary).
    create, _record = platform_secret_plan(None, value=MARKER)
    assert isinstance(create, CreateRelated)
    return create


def rotated() -> PatchRelated:
    patches = [
        action
        for action in platform_secret_plan(copied_down().object, value=ROTATED)
        if isinstance(action, PatchRelated)
    ]
    assert len(patches) == 1
    return patches[0]


def test_a_platform_secret_copy_prints_its_keys_and_state_without_a_value() -> None:
    create, patch = copied_down(), rotated()
    shown = [redacted(create), redacted(patch)]

    assert leaks(json.dumps(shown)) == []
    assert shown[0]["object"]["data"] == {"ca.crt": REDACTED}
    assert shown[1]["patch"]["data"] == {"ca.crt": REDACTED}
    for state in (
        shown[0]["object"]["metadata"]["annotations"][LAST_KNOWN_STATE_ANNOTATION],
        shown[1]["patch"]["metadata"]["annotations"][LAST_KNOWN_STATE_ANNOTATION],
    ):
        assert decode_state(state) == {"data": {"ca.crt": REDACTED}, "type": "Opaque"}
    # What the executor sends keeps the values, state included.
    assert create.object["data"] == {"ca.crt": b64(MARKER)}
    assert b64(ROTATED) in patch.patch["metadata"]["annotations"][LAST_KNOWN_STATE_ANNOTATION]


def test_a_related_state_hides_remembered_values_on_a_primary_of_any_kind() -> None:
    # Written by hand or by an older servlet: the state on the primary holds a real value.
    key = related_state_annotation("tls-secret")
    state = encode_state(
        {
            "namespace": "default",
            "name": "web-tls",
            "created": True,
            "content": {"data": {"tls.key": b64(MARKER)}, "type": "kubernetes.io/tls"},
        }
    )
    action = RecordRelatedState(
        identifier="tls-secret",
        target=ObjectRef(Side.LOCAL, CERTIFICATE, CLUSTER, "c"),
        patch={"metadata": {"annotations": {key: state}}},
    )

    shown = redacted(action)["patch"]["metadata"]["annotations"][key]

    assert leaks(shown) == []
    assert decode_state(shown) == {
        "namespace": "default",
        "name": "web-tls",
        "created": True,
        "content": {"data": {"tls.key": REDACTED}, "type": "kubernetes.io/tls"},
    }


def test_an_unreadable_state_on_a_secret_is_hidden_whole() -> None:
    target = ObjectRef(Side.LOCAL, SECRET_TYPE, CLUSTER, "team-ca")
    action = PatchRelated(
        identifier="issuer-ca",
        target=target,
        patch={"metadata": {"annotations": {LAST_KNOWN_STATE_ANNOTATION: f"not json {MARKER}"}}},
    )
    assert redacted(action)["patch"] == {"metadata": {"annotations": {LAST_KNOWN_STATE_ANNOTATION: REDACTED}}}


def test_removals_and_what_is_not_secret_stay_visible() -> None:
    removal = PatchRelated(
        identifier="issuer-ca",
        target=ObjectRef(Side.LOCAL, SECRET_TYPE, CLUSTER, "team-ca"),
        patch={"data": {"old.crt": None, "ca.crt": b64(MARKER)}},
    )
    state = encode_state({"data": {"mode": "fast"}})
    configmap = CreateRelated(
        identifier="settings",
        target=ObjectRef(Side.LOCAL, CONFIGMAP_TYPE, CLUSTER, "s"),
        object={
            "kind": "ConfigMap",
            "data": {"mode": "fast"},
            "metadata": {"annotations": {LAST_KNOWN_STATE_ANNOTATION: state}},
        },
    )
    primary = Patch(
        target=ObjectRef(Side.LOCAL, CERTIFICATE, CLUSTER, "c"),
        patch={
            "spec": {"commonName": "web"},
            "metadata": {"annotations": {LAST_KNOWN_STATE_ANNOTATION: encode_state({"spec": {"commonName": "web"}})}},
        },
    )

    assert redacted(removal)["patch"] == {"data": {"old.crt": None, "ca.crt": REDACTED}}
    assert redacted(configmap) == configmap.to_dict()
    assert redacted(primary) == primary.to_dict()
    assert secret_spellings(configmap) == secret_spellings(primary) == ()


@pytest.mark.parametrize(("action", "value"), [(copied_down(), MARKER), (rotated(), ROTATED)], ids=["create", "patch"])
def test_a_message_quoting_the_action_loses_every_secret_value_and_keeps_the_rest(action: Action, value: str) -> None:
    body = action.to_dict()
    message = (
        f"admission webhook denied {json.dumps(body)}; as text: {json.dumps(json.dumps(body))}; "
        f"decoded: {value} {json.dumps(value)} {json.dumps(json.dumps(value))}"
    )
    assert leaks(message), "the message must quote the values for this test to mean anything"

    scrubbed = scrub(message, secret_spellings(action))

    assert leaks(scrubbed) == []
    assert "admission webhook denied" in scrubbed and "ca.crt" in scrubbed and "team-ca" in scrubbed
