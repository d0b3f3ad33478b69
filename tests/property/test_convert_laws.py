"""Laws of `servlet convert`: whatever the api-syncagent's PublishedResource holds, the result is valid, and
nothing of it disappears without a note."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings, strategies as st

from servlet.core.convert import PEER_API_VERSION, convert_published_resource
from servlet.core.parsing import parse_published_resource

# Values the peer's fields take, good and bad, so conversions both succeed and have to drop things.
_scalars = st.sampled_from(["", "v1", "kube-system", "Sicherungen", "$remoteName", "{{ .Nope }}", 3, True, None])
_names = st.sampled_from(
    [
        "{{ .ClusterName }}",
        "$remoteClusterName",
        "{{ .Object.metadata.name | sha3short }}",
        "kube-system",
        "{{ .ClusterPath }}",
        "Bad_Name",
        "{{ if .Object }}x{{ end }}",
    ]
)
_selectors = st.one_of(
    st.sampled_from(["shop", "Bad Namespace"]),
    st.fixed_dictionaries(
        {
            "matchLabels": st.dictionaries(
                st.sampled_from(["a", "kubernetes.io/metadata.name"]), st.sampled_from(["x", "y"]), max_size=2
            )
        }
    ),
)
_object_sources = st.sampled_from(
    [
        {"reference": {"path": "spec.secretName"}},
        {"reference": {"path": "spec.users.#.name"}},
        {"reference": {"path": "spec.s", "regex": {"pattern": "(.*)", "replacement": "\\1-x"}}},
        {"reference": {"path": "spec.s", "regex": {"pattern": "(", "replacement": "$1"}}},
        {"template": {"template": "{{ .Object.spec.secretName }}"}},
        {"template": {"template": '{{ if eq .Side "kcp" }}a{{ end }}'}},
        {"selector": {"matchLabels": {"a": "b"}}, "rewrite": {}},
        {"reference": {"path": "spec.s"}, "namespace": {"reference": {"path": "spec.ns"}}},
        {},
    ]
)
_related = st.fixed_dictionaries(
    {},
    optional={
        "identifier": st.sampled_from(["tls", "TLS_Secret", "x" * 50]),
        "origin": st.sampled_from(["service", "kcp", "elsewhere"]),
        "kind": st.sampled_from(["Secret", "ConfigMap", "Deployment"]),
        "group": st.sampled_from(["", "example.com"]),
        "version": st.sampled_from(["", "v1", "v2"]),
        "resource": st.sampled_from(["secrets", "configmaps", "things"]),
        "identityHash": st.sampled_from(["", "abc"]),
        "cleanup": st.booleans(),
        "projection": st.sampled_from([{}, {"group": "x"}]),
        "object": _object_sources,
        "watch": st.just({"byOwner": {}}),
        "mutation": st.just({"spec": [{"delete": {"path": "a"}}]}),
        "surplus": _scalars,
    },
)
_specs = st.fixed_dictionaries(
    {
        "resource": st.fixed_dictionaries(
            {"apiGroup": st.just("example.com"), "kind": st.just("Thing")},
            optional={"version": st.sampled_from(["v1", ""]), "versions": st.sampled_from([[], ["v1"], ["v1", "v2"]])},
        )
    },
    optional={
        "filter": st.fixed_dictionaries(
            {}, optional={"namespace": _selectors, "resource": st.just({"matchLabels": {"a": "b"}}), "extra": _scalars}
        ),
        "projection": st.fixed_dictionaries(
            {},
            optional={
                "group": st.just("x.example.com"),
                "kind": st.sampled_from(["Policy", "bad kind"]),
                "plural": st.sampled_from(["Sicherungen", "ok", "x_y"]),
                "shortNames": st.sampled_from([[], ["s"], ["Bad"]]),
                "versions": st.sampled_from([{"v1": "v1beta1"}, {"v1": "bad"}]),
                "scope": st.sampled_from(["Cluster", "Global"]),
            },
        ),
        "naming": st.fixed_dictionaries({}, optional={"namespace": _names, "name": _names, "extra": _scalars}),
        "related": st.lists(_related, max_size=3),
        "mutation": st.just({"spec": [{"regex": {"path": "a"}}], "status": []}),
        "synchronization": st.fixed_dictionaries({}, optional={"enabled": st.sampled_from([True, False, "no"])}),
        "enableWorkspacePaths": st.sampled_from([True, False, "yes"]),
        "surplus": _scalars,
    },
)


def _peer(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": PEER_API_VERSION, "kind": "PublishedResource", "metadata": {"name": "p"}, "spec": spec}


@settings(max_examples=300, deadline=None)
@given(_specs)
def test_every_converted_published_resource_parses_without_problems(spec: dict[str, Any]) -> None:
    conversion = convert_published_resource(_peer(spec))
    if conversion.manifest is not None:
        assert parse_published_resource(conversion.manifest).problems == ()
    else:
        assert conversion.errors, "no result and no reason"


def _present(value: object) -> bool:
    return value not in (None, "", {}, [])


@settings(max_examples=300, deadline=None)
@given(_specs)
def test_no_field_of_the_spec_disappears_without_a_note(spec: dict[str, Any]) -> None:
    conversion = convert_published_resource(_peer(spec))
    if conversion.manifest is None:
        return
    converted = conversion.manifest["spec"]
    noted = [note.field for note in conversion.notes]
    for key, value in spec.items():
        if not _present(value) or key in converted:
            continue
        assert any(field == f"spec.{key}" or field.startswith((f"spec.{key}.", f"spec.{key}[")) for field in noted), (
            f"spec.{key} vanished without a note: {conversion.notes}"
        )
    # Each related entry is either carried over or dropped whole, with a note naming its index.
    given = spec.get("related") or []
    dropped = {index for index in range(len(given)) if f"spec.related[{index}]" in noted}
    assert len(converted.get("related") or []) == len(given) - len(dropped), conversion.notes
