"""Naming templates as users write them for the peer: each function, pipelines, and what is refused."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from servlet.core.templates import TemplateError, parse_template, render

FIELDS = {"Object": True, "ClusterName": False, "ClusterPath": False}
OBJECT: dict[str, Any] = {
    "metadata": {"name": "objname", "namespace": "objnamespace", "labels": {"team": "Payments"}},
    "spec": {"replicas": 3, "paused": False, "nothing": None, "image": "  ubuntu:latest  ", "ports": [80]},
}
CONTEXT: dict[str, object] = {"Object": OBJECT, "ClusterName": "testcluster", "ClusterPath": "root:org:team"}


def rendered(source: str, *, limit: int = 253) -> str:
    return render(parse_template(source, fields=FIELDS), context=CONTEXT, limit=limit)


def refused(source: str) -> str:
    with pytest.raises(TemplateError) as raised:
        parse_template(source, fields=FIELDS)
    return str(raised.value)


def failed(source: str) -> str:
    template = parse_template(source, fields=FIELDS)
    with pytest.raises(TemplateError) as raised:
        render(template, context=CONTEXT, limit=253)
    return str(raised.value)


def sha3(text: str) -> str:
    return hashlib.sha3_256(text.encode()).hexdigest()


def test_the_peers_default_name_has_the_value_its_own_test_expects() -> None:
    # kcp-dev/api-syncagent internal/sync/templating/naming_test.go, "follow default naming rules".
    source = "{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}"
    assert rendered(source) == "2928c2aa0e510f017f07-73d08a1ba188f1340dae"


def test_sha3sum_is_the_hex_sha3_256_of_the_text() -> None:
    assert rendered('{{ sha3sum "" }}') == "a7ffc6f8bf1ed76651c14756a061d662f580ff4de43b49fa82d80a4b80f8434a"
    assert rendered("{{ .ClusterName | sha3sum }}") == sha3("testcluster")


@pytest.mark.parametrize(
    ("source", "length"),
    [
        ("{{ sha3short .ClusterName }}", 20),
        ("{{ .ClusterName | sha3short }}", 20),
        ("{{ sha3short .ClusterName 8 }}", 8),
        ("{{ sha3short .ClusterName 1 }}", 1),
        ("{{ sha3short .ClusterName 64 }}", 64),
        ("{{ sha3short .ClusterName 500 }}", 64),
    ],
)
def test_sha3short_is_a_prefix_of_sha3sum_of_the_asked_length(source: str, length: int) -> None:
    assert rendered(source) == sha3("testcluster")[:length]


def test_sha3short_refuses_a_length_below_one() -> None:
    assert "invalid length 0" in failed("{{ sha3short .ClusterName 0 }}")
    assert "invalid length -2" in failed("{{ sha3short .ClusterName -2 }}")


def test_shorthash_is_the_first_20_hex_characters_of_sha1_like_the_dollar_hashes() -> None:
    assert rendered("{{ shortHash .Object.metadata.name }}") == hashlib.sha1(b"objname").hexdigest()[:20]
    # Not a string: the peer hashes Go's JSON encoding, which ends in a newline.
    assert rendered("{{ shortHash .Object.metadata.missing }}") == hashlib.sha1(b"null\n").hexdigest()[:20]
    assert rendered("{{ shortHash .Object.spec.replicas }}") == hashlib.sha1(b"3\n").hexdigest()[:20]
    assert "not supported" in failed("{{ shortHash .Object.metadata.labels }}")


def test_sha256sum_is_the_hex_sha256_of_the_text() -> None:
    assert rendered("{{ sha256sum .ClusterName }}") == hashlib.sha256(b"testcluster").hexdigest()


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("{{ .Object.metadata.labels.team | lower }}", "payments"),
        ("{{ upper .ClusterName }}", "TESTCLUSTER"),
        ("x{{ .Object.spec.image | trim }}x", "xubuntu:latestx"),
        ("{{ trunc 4 .ClusterName }}", "test"),
        ("{{ .ClusterName | trunc 4 }}", "test"),
        ("{{ .ClusterName | trunc -7 }}", "cluster"),
        ("{{ .ClusterName | trunc 50 }}", "testcluster"),
        ("{{ .ClusterName | trunc -50 }}", "testcluster"),
        ('{{ .ClusterPath | replace ":" "-" }}', "root-org-team"),
        ('{{ replace "t" "" .ClusterName }}', "escluser"),
        ('{{ .Object.metadata.labels.owner | default "nobody" }}', "nobody"),
        ('{{ default "nobody" .Object.metadata.labels.team }}', "Payments"),
        ('{{ .Object.spec.nothing | default "x" }}', "x"),
        ('{{ .Object.spec.paused | default "x" }}', "x"),
        ('{{ .Object.does.not.exist | default "x" }}', "x"),
        ("{{ .Object.spec.replicas | default 1 }}", "3"),
        ('{{ printf "%s-%s" .ClusterName .Object.metadata.name }}', "testcluster-objname"),
        ('{{ printf "%d%%" .Object.spec.replicas }}', "3%"),
        ('{{ .Object.metadata.name | printf "%v-x" }}', "objname-x"),
        (
            '{{ printf "%s-%s" (.ClusterName | upper) (sha3short .ClusterName 4) }}',
            f"TESTCLUSTER-{sha3('testcluster')[:4]}",
        ),
    ],
)
def test_each_function_computes_what_sprig_does(source: str, expected: str) -> None:
    assert rendered(source) == expected


def test_a_pipeline_hands_its_value_to_the_next_function_as_the_last_argument() -> None:
    assert rendered('{{ .ClusterName | replace "test" "prod" | upper | trunc 6 }}') == "PRODCL"
    assert "argument 1 must be a string, not 8" in refused("{{ .ClusterName | sha3short 8 }}")


def test_text_around_actions_is_kept_and_the_whole_output_trimmed_like_the_peer() -> None:
    assert rendered("  app-{{ .ClusterName }}.{{ .Object.metadata.name }}\n") == "app-testcluster.objname"
    assert rendered('a {{- " b " -}} c') == "a b c"
    assert rendered("a{{/* why */}}b") == "ab"
    assert rendered('{{ "}}" | trunc 1 }}') == "}"


def test_values_print_as_go_prints_them() -> None:
    assert rendered("{{ .Object.spec.replicas }}/{{ .Object.spec.paused }}") == "3/false"
    assert rendered("{{ .Object.metadata.missing }}") == "<no value>"
    assert rendered("{{ .Object.spec.nothing }}") == "<nil>"
    assert "cannot print a map" in failed("{{ .Object.metadata }}")
    assert "cannot print a list" in failed("{{ .Object.spec.ports }}")


def test_parentheses_may_nest_eight_deep() -> None:
    assert rendered("{{ lower " + "(lower " * 8 + ".ClusterName" + ")" * 8 + " }}") == "testcluster"


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{{ .Nope }}", "unknown field .Nope (known: .Object, .ClusterName, .ClusterPath)"),
        ("{{ .ClusterName.first }}", ".ClusterName is a string and has no fields"),
        ("{{ nope .ClusterName }}", "unknown function 'nope'"),
        ("{{ .ClusterName | b64enc }}", "unknown function 'b64enc'"),
        ("{{ if .ClusterName }}x{{ end }}", "'if' is not supported"),
        ('{{ index .Object "metadata" }}', "'index' is not supported"),
        ("{{ $name := .ClusterName }}", "variables are not supported"),
        ("{{ .ClusterName", "unclosed action"),
        ("{{ }}", "empty action"),
        ("{{ lower }}", "lower takes 1 argument(s), got 0"),
        ("{{ lower .ClusterName .ClusterPath }}", "lower takes 1 argument(s), got 2"),
        ("{{ sha3short .ClusterName 8 9 }}", "sha3short takes 1 to 2 argument(s), got 3"),
        ('{{ trunc "4" .ClusterName }}', "argument 1 must be a number"),
        ('{{ .ClusterName "x" }}', "only a function takes arguments"),
        ('{{ "x" | .ClusterName }}', "only a function can take a piped value"),
        ("{{ printf .ClusterName }}", "format as a string constant"),
        ('{{ printf "%s-%s" .ClusterName }}', "2 verb(s) for 1 value(s)"),
        ('{{ printf "%x" .ClusterName }}', "not %x"),
        ('{{ printf "50%" }}', "a lone %"),
        ('{{ "\\q" }}', "unsupported escape"),
        ("{{ trunc 9223372036854775808 .ClusterName }}", "out of range"),
        ("{{ trunc " + "9" * 5000 + " .ClusterName }}", "out of range"),
        ("{{ lower " + "(lower " * 9 + ".ClusterName" + ")" * 9 + " }}", "deeper than 8"),
    ],
)
def test_what_cannot_work_is_refused_when_parsed(source: str, message: str) -> None:
    assert message in refused(source)


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("{{ .Object.metadata.namespace.x }}", "cannot read .x of .Object.metadata.namespace"),
        ("{{ .Object.spec.replicas | lower }}", "argument 1 must be a string, not int 3"),
        ("{{ .Object.metadata.missing | sha3sum }}", "must be a string, not a missing field"),
        ('{{ printf "%d" .ClusterName }}', "%d needs a number"),
    ],
)
def test_a_value_of_the_wrong_type_fails_evaluation_as_in_go(source: str, message: str) -> None:
    assert message in failed(source)


def test_output_and_computed_values_are_bounded() -> None:
    template = parse_template("{{ .ClusterName }}", fields=FIELDS)
    with pytest.raises(TemplateError, match="longer than 5 characters"):
        render(template, context=CONTEXT, limit=5)
    # Each replace multiplies the length by eleven: the third would pass 4096 characters.
    blowup = '{{ replace "" "0123456789" (replace "" "0123456789" (replace "" "0123456789" .ClusterName)) | trunc 9 }}'
    assert "replace would produce more than 4096 characters" in failed(blowup)  # refused before it is built


def test_evaluation_reads_only_the_fields_of_its_context() -> None:
    template = parse_template("{{ .Object.metadata.name }}-{{ .ClusterName }}", fields=FIELDS)
    assert render(template, context={"Object": {"metadata": {"name": "a"}}, "ClusterName": "b"}, limit=253) == "a-b"
    assert render(template, context={}, limit=253) == "<no value>-<no value>"
    assert template.fields() == {"Object", "ClusterName"}
