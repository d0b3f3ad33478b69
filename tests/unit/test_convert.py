"""`servlet convert`: the api-syncagent's PublishedResources as the servlet's, and what is not carried over."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from servlet.app.cli import app
from servlet.core.convert import PEER_API_VERSION, Conversion, convert_published_resource
from servlet.core.convert_related import servlet_replacement
from servlet.core.model import RegexRule
from servlet.core.parsing import parse_published_resource
from servlet.core.rewrite import rewrite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "syncagent"
DOCUMENTS = [
    (f"{path.name}#{index}", document)
    for path in sorted(FIXTURES.glob("*.yaml"))
    for index, document in enumerate(yaml.safe_load_all(path.read_text()), start=1)
]


def _notes(conversion: Conversion) -> dict[str, str]:
    return {note.field: note.reason for note in conversion.notes}


@pytest.mark.parametrize(("source", "document"), DOCUMENTS, ids=[source for source, _ in DOCUMENTS])
def test_every_documented_example_converts_into_a_published_resource_our_parser_accepts(
    source: str, document: dict[str, Any]
) -> None:
    before = copy.deepcopy(document)
    conversion = convert_published_resource(document)
    assert conversion.errors == ()
    assert conversion.manifest is not None
    assert conversion.manifest["apiVersion"] == "services.kdp.k8c.io/v1alpha1"
    assert parse_published_resource(conversion.manifest).problems == ()
    assert conversion.name == document["metadata"]["name"]
    assert document == before, "the conversion changed its input"


def _converted(name: str, index: int = 0) -> Conversion:
    documents = list(yaml.safe_load_all((FIXTURES / name).read_text()))
    return convert_published_resource(documents[index])


def test_the_resource_projection_and_filter_map_field_by_field() -> None:
    conversion = _converted("04-projection.yaml")
    assert conversion.manifest is not None
    spec = conversion.manifest["spec"]
    assert spec["resource"] == {"kind": "Backup", "apiGroup": "backup.example.org", "versions": ["v1"]}
    assert spec["projection"] == {
        "kind": "Sicherung",
        "plural": "sicherungen",
        "shortNames": ["sich"],
        "versions": {"v1": "v1beta1"},
    }
    assert "lower-cased" in _notes(conversion)["spec.projection.plural"]
    filtered = _converted("02-filter.yaml").manifest
    assert filtered is not None
    assert filtered["spec"]["filter"] == {"namespace": "shop", "resource": {"matchLabels": {"tier": "gold"}}}


def test_a_projected_kind_keeps_the_peers_plural() -> None:
    conversion = convert_published_resource(_peer({"projection": {"kind": "Policy"}}))
    assert conversion.manifest is not None
    # The peer appends "s"; the servlet alone would say "policies".
    assert conversion.manifest["spec"]["projection"] == {"kind": "Policy", "plural": "policys"}


def test_without_versions_every_version_is_published_as_by_the_peer() -> None:
    conversion = convert_published_resource(_peer({}))
    assert conversion.manifest is not None
    assert conversion.manifest["spec"]["resource"]["versions"] == []


def test_a_namespace_selector_naming_one_namespace_becomes_the_namespace_filter() -> None:
    selector = {"matchLabels": {"kubernetes.io/metadata.name": "shop"}}
    conversion = convert_published_resource(_peer({"filter": {"namespace": selector}}))
    assert conversion.manifest is not None
    assert conversion.manifest["spec"]["filter"] == {"namespace": "shop"}
    broad = _converted("03-filter-selector.yaml")
    assert "objects of every namespace are synced" in _notes(broad)["spec.filter.namespace"]


def test_a_system_namespace_is_dropped_with_our_parsers_reason_and_the_rest_is_kept() -> None:
    conversion = _converted("08-certificates.yaml")
    assert conversion.manifest is not None
    spec = conversion.manifest["spec"]
    assert "namespace" not in spec["naming"]
    assert spec["naming"]["name"].startswith("{{ .ClusterName }}-")
    assert "system namespace" in _notes(conversion)["spec.naming.namespace"]
    assert spec["related"] == [
        {
            "identifier": "tls-secrets",
            "origin": "service",
            "kind": "Secret",
            "reference": {"name": {"path": "spec.secretName"}},
        }
    ]
    assert "where the api-syncagent would keep them" in _notes(conversion)["spec.related[0].cleanup"]


def test_related_references_regexes_origins_and_the_deprecated_kind_map() -> None:
    by_reference = _converted("09-related-reference.yaml")
    assert by_reference.notes == ()
    assert by_reference.manifest is not None
    assert by_reference.manifest["spec"]["related"][0]["reference"] == {
        "name": {"path": "spec.secretName"},
        "namespace": {"path": "metadata.namespace", "regex": {"pattern": "", "replacement": "issued-certificates"}},
    }
    legacy = _converted("06-naming-legacy.yaml")
    assert legacy.notes == ()
    assert legacy.manifest is not None
    assert legacy.manifest["spec"]["naming"] == {
        "namespace": "$remoteClusterName",
        "name": "bkp-$remoteNamespaceHash-$remoteNameHash",
    }
    [entry] = legacy.manifest["spec"]["related"]
    assert (entry["origin"], entry["kind"]) == ("platform", "Secret")


@pytest.mark.parametrize(
    ("fixture", "field", "reason"),
    [
        ("10-related-owned.yaml#2", "spec.projection.apiGroup", "always the servlet's (--api-group)"),
        ("10-related-owned.yaml#2", "spec.related[0]", "object must say where the related object is, not null"),
        ("12-related-template-side.yaml", "spec.related[0]", "'if' is not supported in the servlet's templates"),
        ("12-related-template-side.yaml", "spec.related[0]", "reads .Side, which is 'kcp' in the workspace"),
        ("13-related-selector.yaml", "spec.related[0]", "templates in a selector are not carried over"),
        ("07-mutation.yaml", "spec.mutation.spec[0].regex.replacement", "\\1 is literal text"),
        ("16-related-list-mutation.yaml", "spec.related[0].mutation.status", "the status syncStatus copies"),
        ("01-smallest.yaml", "spec.naming.name", "the api-syncagent's default names copies with SHA3 hashes"),
    ],
)
def test_what_is_not_carried_over_is_named_with_its_reason(fixture: str, field: str, reason: str) -> None:
    name, _, number = fixture.partition("#")
    notes = _notes(_converted(name, index=int(number or 1) - 1))
    assert reason in notes[field], notes


def test_schema_only_and_workspace_paths_carry_over() -> None:
    mailboxes = _converted("10-related-owned.yaml")
    assert mailboxes.manifest is not None
    assert mailboxes.manifest["spec"]["synchronization"] == {"enabled": False}
    paths = _converted("14-workspace-paths.yaml")
    assert paths.notes == ()
    assert paths.manifest is not None and paths.manifest["spec"]["enableWorkspacePaths"] is True


def _peer(spec: dict[str, Any], **top: Any) -> dict[str, Any]:
    return {
        "apiVersion": PEER_API_VERSION,
        "kind": "PublishedResource",
        "metadata": {"name": "x"},
        "spec": {"resource": {"apiGroup": "a.example.org", "kind": "Thing"}, "naming": {"name": "$remoteName"}, **spec},
        **top,
    }


def test_unknown_fields_are_reported_never_dropped_silently() -> None:
    peer = _peer(
        {
            "surplus": 1,
            "resource": {"apiGroup": "a.example.org", "kind": "Thing", "group": "x"},
            "projection": {"colour": "blue"},
            "naming": {"name": "$remoteName", "style": "short"},
            "synchronization": {"enabled": True, "interval": 5},
            "related": [
                {
                    "identifier": "s",
                    "origin": "kcp",
                    "kind": "Secret",
                    "cleanup": True,
                    "extra": 1,
                    "object": {"reference": {"path": "spec.s"}},
                }
            ],
        },
        status={"resourceSchemaName": "v1.things.a"},
        extra=True,
    )
    peer["metadata"]["uid"] = "1234"
    conversion = convert_published_resource(peer)
    assert set(_notes(conversion)) == {
        "extra",
        "status",
        "metadata.uid",
        "spec.surplus",
        "spec.resource.group",
        "spec.projection.colour",
        "spec.naming.style",
        "spec.synchronization.interval",
        "spec.related[0].extra",
    }
    assert conversion.manifest is not None
    assert parse_published_resource(conversion.manifest).problems == ()


@pytest.mark.parametrize(
    ("document", "error"),
    [
        ({"apiVersion": "services.kdp.k8c.io/v1alpha1", "kind": "PublishedResource"}, "is already"),
        ({"apiVersion": "v1", "kind": "ConfigMap"}, f"must be {PEER_API_VERSION} PublishedResource"),
        ("text", "must be a map"),
        (
            {"apiVersion": PEER_API_VERSION, "kind": "PublishedResource", "spec": {"resource": {"kind": "Thing"}}},
            "apiGroup",
        ),
    ],
)
def test_what_cannot_be_converted_is_an_error_and_no_result(document: Any, error: str) -> None:
    conversion = convert_published_resource(document)
    assert conversion.manifest is None
    assert any(error in str(note) for note in conversion.errors), conversion.errors


# -- the command -----------------------------------------------------------------------------------


def _run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["convert", *args], input=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_a_directory_converts_to_a_yaml_stream_with_warnings_on_stderr() -> None:
    code, out, err = _run("-f", str(FIXTURES))
    assert code == 0, err
    converted = list(yaml.safe_load_all(out))
    assert len(converted) == len(DOCUMENTS)
    assert all(parse_published_resource(item).problems == () for item in converted)
    assert "warning: " in err and "08-certificates.yaml" in err and "spec.naming.namespace" in err


def test_standard_input_converts_and_json_lists_the_warnings() -> None:
    code, out, err = _run("-f", "-", "-o", "json", stdin=(FIXTURES / "07-mutation.yaml").read_text())
    assert code == 0 and err == ""
    report = json.loads(out)
    [item] = report["items"]
    assert item["metadata"]["name"] == "offer-backups-mutated"
    fields = {warning["field"] for warning in report["warnings"]}
    assert "spec.mutation.spec[0].regex.replacement" in fields
    assert {warning["publishedResource"] for warning in report["warnings"]} == {"offer-backups-mutated"}
    assert report["errors"] == []


def test_detailed_exitcode_tells_a_complete_conversion_from_one_that_lost_fields() -> None:
    complete = str(FIXTURES / "09-related-reference.yaml")
    assert _run("-f", complete, "--detailed-exitcode")[0] == 0
    assert _run("-f", str(FIXTURES / "07-mutation.yaml"), "--detailed-exitcode")[0] == 2
    assert _run("-f", str(FIXTURES / "07-mutation.yaml"))[0] == 0


def test_a_document_that_cannot_be_converted_exits_1_and_the_others_are_still_printed(tmp_path: Path) -> None:
    mixed = tmp_path / "mixed.yaml"
    ours = {"apiVersion": "services.kdp.k8c.io/v1alpha1", "kind": "PublishedResource", "metadata": {"name": "o"}}
    mixed.write_text((FIXTURES / "01-smallest.yaml").read_text() + "---\n" + yaml.safe_dump(ours))
    code, out, err = _run("-f", str(mixed))
    assert code == 1
    assert [item["metadata"]["name"] for item in yaml.safe_load_all(out)] == ["offer-backups"]
    assert "error: " in err and "PublishedResource o: apiVersion: is already" in err


@pytest.mark.parametrize("args", [(), ("-f", str(FIXTURES), "-o", "text")])
def test_usage_errors_exit_2(args: tuple[str, ...]) -> None:
    assert _run(*args)[0] == 2


def test_a_missing_file_exits_1_naming_it(tmp_path: Path) -> None:
    code, _, err = _run("-f", str(tmp_path / "nope.yaml"))
    assert code == 1 and "nope.yaml" in err and "does not exist" in err


def test_a_list_as_kubectl_prints_it_converts_item_by_item_and_empty_documents_are_skipped() -> None:
    items = [
        yaml.safe_load((FIXTURES / name).read_text()) for name in ("01-smallest.yaml", "09-related-reference.yaml")
    ]
    listed = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}) + "---\n"
    code, out, err = _run("-f", "-", "--detailed-exitcode", stdin=listed)
    assert code == 2, err  # the smallest one leaves naming.name to the servlet's default
    assert [item["metadata"]["name"] for item in yaml.safe_load_all(out)] == [
        "offer-backups",
        "offer-certificates-by-reference",
    ]
    assert "<stdin>#1 items[0]: PublishedResource offer-backups: spec.naming.name" in err


def test_go_style_replacements_become_the_servlets_and_rewrite_alike() -> None:
    conversion = _converted("15-related-regex.yaml")
    assert conversion.manifest is not None
    tls, bundle = (entry["reference"]["name"]["regex"] for entry in conversion.manifest["spec"]["related"])
    assert tls == {"pattern": "^(.+)-cert$", "replacement": "\\g<1>-tls"}
    assert rewrite(RegexRule(**tls), "web-cert", field="f") == "web-tls"  # what Go's ReplaceAllString gives
    # Go reads "\1" as literal text: so does the converted rule, and a note says so.
    assert rewrite(RegexRule(**bundle), "web", field="f") == "bundle-\\1"
    note = _notes(conversion)["spec.related[1].object.reference.regex.replacement"]
    assert "literal text" in note and "$1 is the group" in note


@pytest.mark.parametrize(
    ("go", "servlet"),
    [("$1", "\\g<1>"), ("${1}x", "\\g<1>x"), ("$name", "\\g<name>"), ("$$", "$"), ("a\\b", "a\\\\b"), ("$", "$")],
)
def test_each_go_replacement_form_is_spelled_for_the_servlet(go: str, servlet: str) -> None:
    assert servlet_replacement(go) == servlet


def test_mutations_carry_over_step_by_step_with_go_replacements_respelled() -> None:
    conversion = _converted("07-mutation.yaml")
    assert conversion.manifest is not None
    assert conversion.manifest["spec"]["mutation"] == {
        "spec": [
            # Go reads `\1` as literal text: carried over as that text, and said so.
            {"regex": {"path": "spec.bucket", "pattern": "(.+)", "replacement": "tenant-\\\\1"}},
            {"template": {"path": "spec.owner", "template": "{{ .LocalObject.metadata.namespace }}"}},
            {"delete": {"path": "spec.debug"}},
            {"cel": {"path": "spec.retentionDays", "expression": "value + 7"}},
        ],
        "status": [{"delete": {"path": "status.internalEndpoint"}}],
    }


def test_a_related_list_path_and_its_spec_mutation_carry_over() -> None:
    conversion = _converted("16-related-list-mutation.yaml")
    assert conversion.errors == () and conversion.manifest is not None
    (entry,) = conversion.manifest["spec"]["related"]
    assert entry["reference"] == {"name": {"path": "spec.members[*].credentialsSecret"}}
    assert entry["mutation"] == {
        "spec": [
            {"delete": {"path": "data.debug-token"}},
            {"regex": {"path": "metadata.labels.team", "pattern": "^(.+)$", "replacement": "tenant-\\g<1>"}},
        ]
    }


def test_a_mutation_step_the_servlet_cannot_run_drops_its_whole_list_with_the_reason() -> None:
    document = yaml.safe_load((FIXTURES / "07-mutation.yaml").read_text())
    document["spec"]["mutation"]["spec"][1] = {"delete": {"path": "spec.items.#.name"}}
    conversion = convert_published_resource(document)
    assert conversion.manifest is not None
    assert conversion.manifest["spec"]["mutation"] == {"status": [{"delete": {"path": "status.internalEndpoint"}}]}
    assert "gjson modifiers" in _notes(conversion)["spec.mutation.spec[1]"]


def test_a_selector_with_plain_labels_and_a_go_style_regex_rewrite_carries_over() -> None:
    documents = list(yaml.safe_load_all((FIXTURES / "13-related-selector.yaml").read_text()))
    peer = copy.deepcopy(documents[0])
    peer["spec"]["related"][0]["object"]["selector"] = {
        "matchLabels": {"issued-by": "shop-ca"},
        "matchExpressions": [{"key": "tier", "operator": "Exists"}],
        "rewrite": {"regex": {"pattern": "internal-(.+)", "replacement": "public-$1"}},
    }

    conversion = convert_published_resource(peer)

    assert conversion.errors == () and conversion.manifest is not None
    [entry] = conversion.manifest["spec"]["related"]
    assert entry["object"] == {
        "selector": {
            "matchLabels": {"issued-by": "shop-ca"},
            "matchExpressions": [{"key": "tier", "operator": "Exists"}],
            "rewrite": {"regex": {"pattern": "internal-(.+)", "replacement": "public-\\g<1>"}},
        }
    }
    assert "spec.related[0]" not in _notes(conversion)


def _related(entry: dict[str, Any]) -> Conversion:
    return convert_published_resource(_peer({"related": [{"identifier": "x", "origin": "service", **entry}]}))


def test_a_related_type_of_any_group_with_its_identity_hash_carries_over() -> None:
    conversion = _converted("11-related-foreign.yaml")
    assert conversion.manifest is not None
    [entry] = conversion.manifest["spec"]["related"]
    assert entry == {
        "identifier": "dns-record",
        "origin": "platform",
        "group": "dns.example.com",
        "version": "v1beta1",
        "resource": "records",
        "identityHash": "7f3c9a1e5b2d8f6a0c4e1b9d3a7f5c2e8b6d4a0f1c3e5a7b9d2f4c6e8a0b1c3d",
        "reference": {"name": {"path": "spec.dnsRecordName"}},
    }
    assert "spec.related[0]" not in _notes(conversion)


def test_a_projection_carries_over_with_the_type_it_changes() -> None:
    documents = list(yaml.safe_load_all((FIXTURES / "10-related-owned.yaml").read_text()))
    peer = copy.deepcopy(documents[1])
    entry = peer["spec"]["related"][0]
    entry["identifier"] = entry.pop("id")
    entry["object"] = {"reference": {"path": "spec.postmaster"}}

    conversion = convert_published_resource(peer)

    assert conversion.manifest is not None
    [converted] = conversion.manifest["spec"]["related"]
    assert (converted["group"], converted["version"], converted["resource"]) == (
        "mail.internal.example.net",
        "v1alpha1",
        "mailboxes",
    )
    assert converted["projection"] == {"group": "mail.example.com", "version": "v1"}
    parsed = parse_published_resource(conversion.manifest).value
    assert parsed is not None and parsed.spec.related[0].projection is not None
    assert parsed.spec.related[0].projection.group == "mail.example.com"


def test_core_secrets_by_resource_stay_the_kind_shorthand_and_keep_their_projection() -> None:
    conversion = _related(
        {"resource": "configmaps", "version": "v1", "projection": {"resource": "secrets"}, "object": _BY_PATH}
    )
    assert conversion.manifest is not None
    [entry] = conversion.manifest["spec"]["related"]
    assert (entry["kind"], entry["projection"]) == ("ConfigMap", {"resource": "secrets"})


_BY_PATH = {"reference": {"path": "spec.note"}}


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        (
            {"group": "db.example.org", "resource": "databases", "object": _BY_PATH},
            "db.example.org/databases has no version",
        ),
        (
            {"kind": "Secret", "projection": {"kind": "ConfigMap"}, "object": _BY_PATH},
            "projection has fields the servlet",
        ),
        ({"kind": "Secret", "object": {"template": {"template": "{{ .Side }}-tls"}}}, "reads .Side, which is 'kcp'"),
        (
            {"kind": "Secret", "object": {"template": {"template": "{{ .ClusterName }}-{{ .ClusterPath }}"}}},
            "reads .ClusterName, .ClusterPath, which the servlet's related templates do not have",
        ),
        (
            {"kind": "Secret", "object": {"template": {"template": "{{ .Object.spec.a | b64enc }}"}}},
            "unknown function 'b64enc'",
        ),
        (
            {
                "kind": "Secret",
                "object": {
                    "reference": _BY_PATH["reference"],
                    "namespace": {"template": {"template": "{{ .Object.spec.ns }}"}},
                },
            },
            "a tenant could choose any namespace",
        ),
    ],
)
def test_a_related_entry_the_servlet_would_read_otherwise_is_dropped_with_the_reason(
    entry: dict[str, Any], reason: str
) -> None:
    conversion = _related(entry)
    assert conversion.manifest is not None
    assert "related" not in conversion.manifest["spec"]
    assert reason in _notes(conversion)["spec.related[0]"]


def test_a_template_reading_the_primary_carries_over_in_the_object_form() -> None:
    template = "{{ .Object.spec.prefix | lower }}-tls"
    namespace = {"reference": {"path": "status.namespace"}}
    conversion = _related({"kind": "Secret", "object": {"template": {"template": template}, "namespace": namespace}})
    assert conversion.manifest is not None
    [entry] = conversion.manifest["spec"]["related"]
    assert entry["object"] == {"template": {"template": template}, "namespace": namespace}
    assert "spec.related[0]" not in _notes(conversion)
    parsed = parse_published_resource(conversion.manifest).value
    assert parsed is not None and parsed.spec.related[0].reference.name == template


_WATCHED = {"kind": "Secret", "object": {"reference": {"path": "spec.secretName"}}, "cleanup": True}


@pytest.mark.parametrize(
    "watch",
    [
        {"byOwner": {}},
        {"bySelector": {"matchLabels": {"app": "shop"}}},
        {"bySelector": {"matchExpressions": [{"key": "tier", "operator": "In", "values": ["db"]}]}},
    ],
)
def test_a_related_watch_carries_over_as_written(watch: dict[str, Any]) -> None:
    conversion = _related({**_WATCHED, "watch": watch})
    assert conversion.errors == () and conversion.manifest is not None
    [entry] = conversion.manifest["spec"]["related"]
    assert entry["watch"] == watch
    assert not any(field.startswith("spec.related[0]") for field in _notes(conversion))
    assert parse_published_resource(conversion.manifest).problems == ()


@pytest.mark.parametrize(
    ("watch", "field", "reason"),
    [
        ({}, "spec.related[0].watch", "needs exactly one of byOwner and bySelector; dropped"),
        (
            {"byOwner": {}, "bySelector": {"matchLabels": {"a": "b"}}},
            "spec.related[0].watch",
            "needs exactly one of byOwner and bySelector; dropped",
        ),
        ({"byOwner": {"kind": "Thing"}}, "spec.related[0].watch.byOwner", "takes no fields, not a map; dropped"),
        ("yes", "spec.related[0].watch", 'must be a map, not "yes"; dropped'),
        (
            {"bySelector": {"matchLabels": {"a": "{{ .Object.x }}"}}},
            "spec.related[0].watch.bySelector.matchLabels",
            "watch dropped",
        ),
    ],
)
def test_a_related_watch_the_servlet_would_refuse_is_dropped_alone_with_the_reason(
    watch: object, field: str, reason: str
) -> None:
    conversion = _related({**_WATCHED, "watch": watch})
    assert conversion.errors == () and conversion.manifest is not None
    [entry] = conversion.manifest["spec"]["related"]
    assert "watch" not in entry
    notes = _notes(conversion)
    assert any(key.startswith(field) and reason in text for key, text in notes.items()), notes
