"""Daemon logs as an operator reads them: JSON lines or console lines, with no Secret data in them."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from lightkube.models.core_v1 import Secret
from lightkube.models.meta_v1 import ObjectMeta

from servlet.app.observability.logs import (
    REDACTED,
    FieldLogger,
    LogFormat,
    configure_logging,
    get_logger,
    redact,
)
from servlet.core.model import Origin, Problem

# A Secret value in plain text and base64; neither may ever appear in a log line.
PLAIN = "hunter2-supersecret"
ENCODED = "aHVudGVyMi1zdXBlcnNlY3JldA=="


@pytest.fixture
def root_logger() -> Iterator[logging.Logger]:
    """The root logger, restored afterwards so configuring logs does not leak into other tests."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield root
    root.handlers[:] = handlers
    root.setLevel(level)


def _configure(log_format: LogFormat, level: int = logging.INFO) -> io.StringIO:
    stream = io.StringIO()
    configure_logging(log_format=log_format, level=level, stream=stream)
    return stream


def _json_lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def test_json_format_writes_one_object_per_line_with_the_fields(root_logger: logging.Logger) -> None:
    stream = _configure(LogFormat.JSON)
    log = get_logger("sync", controller="sync", published_resource="certs")
    log.info("created local object", object="1084s8/cert-abc", workspace="1084s8", action="create")
    log.warning("second line")
    first, second = _json_lines(stream)
    assert first["level"] == "info"
    assert first["logger"] == "servlet.sync"
    assert first["message"] == "created local object"
    assert {key: first[key] for key in ("controller", "published_resource", "object", "workspace", "action")} == {
        "controller": "sync",
        "published_resource": "certs",
        "object": "1084s8/cert-abc",
        "workspace": "1084s8",
        "action": "create",
    }
    assert first["time"].endswith("Z")
    datetime.fromisoformat(first["time"].replace("Z", "+00:00"))
    assert second["level"] == "warning" and second["controller"] == "sync"


def test_console_format_is_one_readable_line_with_key_value_pairs(root_logger: logging.Logger) -> None:
    stream = _configure(LogFormat.CONSOLE)
    get_logger("apiexport").info(
        "added schema", schema="v1a2b3c4d.zertifikate.example.corp", reason="a new CRD version", count=2
    )
    (line,) = stream.getvalue().splitlines()
    assert " INFO " in line
    assert "servlet.apiexport: added schema" in line
    assert "schema=v1a2b3c4d.zertifikate.example.corp" in line
    assert 'reason="a new CRD version"' in line
    assert "count=2" in line


@pytest.mark.parametrize("log_format", list(LogFormat))
def test_exceptions_are_logged_with_their_traceback(root_logger: logging.Logger, log_format: LogFormat) -> None:
    stream = _configure(log_format)
    try:
        raise RuntimeError("the API server went away")
    except RuntimeError:
        get_logger("sync").exception("reconcile failed", object="ns/name")
    assert "RuntimeError: the API server went away" in stream.getvalue()
    assert "reconcile failed" in stream.getvalue()


def test_records_below_the_level_are_dropped(root_logger: logging.Logger) -> None:
    stream = _configure(LogFormat.JSON, level=logging.INFO)
    log = get_logger("sync")
    log.debug("noise")
    log.info("signal")
    assert [line["message"] for line in _json_lines(stream)] == ["signal"]


def test_configuring_twice_keeps_one_handler(root_logger: logging.Logger) -> None:
    _configure(LogFormat.CONSOLE)
    stream = _configure(LogFormat.JSON)
    get_logger("daemon").info("started")
    assert len(stream.getvalue().splitlines()) == 1
    assert json.loads(stream.getvalue())["message"] == "started"


def test_plain_stdlib_extra_fields_are_structured_too(root_logger: logging.Logger) -> None:
    stream = _configure(LogFormat.JSON)
    logging.getLogger("servlet.runtime").info("relisted", extra={"resource": "secrets", "token": PLAIN})
    (line,) = _json_lines(stream)
    assert line["resource"] == "secrets"
    assert line["token"] == REDACTED


def test_fields_named_like_the_envelope_do_not_overwrite_it(root_logger: logging.Logger) -> None:
    stream = _configure(LogFormat.JSON)
    get_logger("sync").info("real message", message="a field", level="a field too", name="n")
    (line,) = _json_lines(stream)
    assert line["message"] == "real message"
    assert line["level"] == "info"
    assert line["field_message"] == "a field"
    assert line["field_level"] == "a field too"
    assert line["name"] == "n"


def test_bind_adds_fields_without_changing_the_original() -> None:
    base = get_logger("sync", controller="sync")
    bound = base.bind(published_resource="certs")
    assert isinstance(bound, FieldLogger)
    assert bound.fields == {"controller": "sync", "published_resource": "certs"}
    assert base.fields == {"controller": "sync"}


def _secret(**extra: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "kubernetes.io/tls",
        "metadata": {"name": "tls", "namespace": "ns", "labels": {"app": "web"}},
        "data": {"tls.key": ENCODED},
        "stringData": {"password": PLAIN},
        **extra,
    }


SECRET_SHAPES: list[tuple[str, object]] = [
    ("secret dict", _secret()),
    ("secret in a list", [{"kind": "ConfigMap", "data": {"a": "b"}}, _secret()]),
    ("secret nested in an action", {"action": "create", "object": _secret()}),
    ("secret list item without kind", {"metadata": {"name": "tls"}, "type": "Opaque", "data": {"k": ENCODED}}),
    ("merge patch of a secret", {"data": {"k": ENCODED}}),
    ("stringData without kind", {"metadata": {"name": "x"}, "stringData": {"k": PLAIN}}),
    ("lightkube model", Secret(metadata=ObjectMeta(name="tls"), data={"k": ENCODED})),
    (
        "last-known-state of a secret",
        _secret(
            metadata={
                "name": "tls",
                "annotations": {"syncer.kdp.k8c.io/last-known-state": json.dumps({"data": {"k": ENCODED}})},
            }
        ),
    ),
    (
        "last-applied-configuration of a secret",
        _secret(
            metadata={
                "name": "tls",
                "annotations": {"kubectl.kubernetes.io/last-applied-configuration": f'{{"data":"{ENCODED}"}}'},
            }
        ),
    ),
    (
        "related state on a primary",
        {
            "kind": "Certificate",
            "metadata": {
                "annotations": {"syncer.kdp.k8c.io/related-state.tls-secret": f'{{"data":{{"k":"{ENCODED}"}}}}'}
            },
        },
    ),
    ("token field", {"user": {"token": PLAIN}}),
    ("password field", {"spec": {"adminPassword": PLAIN}}),
    ("kubeconfig client key", {"users": [{"user": {"client-key-data": ENCODED}}]}),
    ("authorization header", {"headers": {"Authorization": f"Bearer {PLAIN}"}}),
]


@pytest.mark.parametrize("shape", [value for _, value in SECRET_SHAPES], ids=[name for name, _ in SECRET_SHAPES])
def test_redact_removes_secret_data_and_credentials(shape: object) -> None:
    rendered = json.dumps(redact(shape))
    assert PLAIN not in rendered and ENCODED not in rendered
    assert REDACTED in rendered


@pytest.mark.parametrize("log_format", list(LogFormat))
@pytest.mark.parametrize("shape", [value for _, value in SECRET_SHAPES], ids=[name for name, _ in SECRET_SHAPES])
def test_secret_data_never_reaches_the_log(
    root_logger: logging.Logger,
    log_format: LogFormat,
    shape: object,
) -> None:
    stream = _configure(log_format)
    get_logger("sync").info("syncing related object", object=shape, workspace="1084s8")
    logging.getLogger("servlet.other").info("formatted %s", shape)
    output = stream.getvalue()
    assert PLAIN not in output and ENCODED not in output
    assert "syncing related object" in output and "formatted" in output


def test_redact_keeps_what_is_not_secret() -> None:
    configmap = {
        "kind": "ConfigMap",
        "metadata": {
            "name": "settings",
            "annotations": {"syncer.kdp.k8c.io/last-known-state": '{"data":{"mode":"fast"}}'},
        },
        "data": {"mode": "fast"},
    }
    certificate = {"kind": "Certificate", "metadata": {"name": "web"}, "spec": {"secretName": "web-tls"}}
    secret = redact(_secret())
    assert redact(configmap) == configmap
    assert redact(certificate) == certificate
    assert isinstance(secret, dict)
    assert secret["metadata"] == {"name": "tls", "namespace": "ns", "labels": {"app": "web"}}
    assert secret["type"] == "kubernetes.io/tls"
    # Keys stay visible, as in printed plans: a reader sees which values were there.
    assert secret["data"] == {"tls.key": REDACTED} and secret["stringData"] == {"password": REDACTED}


@pytest.mark.parametrize(
    "value,expected",
    [
        ((1, "a"), [1, "a"]),
        (LogFormat.JSON, "json"),
        (b"\x00\x01", "<2 bytes>"),
        (None, None),
        (Problem(field="spec.naming.name", message="bad"), {"field": "spec.naming.name", "message": "bad"}),
        ({"origin": Origin.SERVICE}, {"origin": "service"}),
    ],
)
def test_redact_turns_values_into_plain_data(value: object, expected: object) -> None:
    assert redact(value) == expected
