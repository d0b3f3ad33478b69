"""Laws of naming templates: total, deterministic, sandboxed, bounded, and the same names as `$`."""

from __future__ import annotations

import contextlib
import copy
from typing import Any

from hypothesis import given, strategies as st

from servlet.core.model import LocalKey, Naming, Problem, RemoteKey
from servlet.core.naming import PLACEHOLDERS, local_key_for
from servlet.core.templates import Template, TemplateError, parse_template, render

FIELDS = {"Object": True, "ClusterName": False, "ClusterPath": False}
# The fields templates here read; everything else of an object is noise they must not see.
READ = [
    ".Object.metadata.name",
    ".Object.metadata.namespace",
    ".Object.metadata.labels.team",
    ".Object.spec.size",
    ".ClusterName",
]
PIPED = [
    "lower",
    "upper",
    "trim",
    "sha3sum",
    "sha3short",
    "shortHash",
    "sha256sum",
    "trunc 5",
    "trunc -3",
    'replace "a" "bb"',
    'replace "" "xy"',
    'default "d"',
    'printf "%v-x"',
]
_text = st.text(alphabet="abc-.0 ", max_size=4)
_atoms = st.sampled_from(READ) | st.from_regex(r'"[a-z-]{0,6}"', fullmatch=True) | st.integers(-9, 99).map(str)
_actions = st.builds(
    lambda atom, piped: "{{ " + " | ".join([atom, *piped]) + " }}", _atoms, st.lists(st.sampled_from(PIPED), max_size=3)
)
_templates = st.lists(st.one_of(_text, _actions), min_size=1, max_size=5).map("".join)
_values = st.text(max_size=300) | st.integers() | st.none() | st.booleans()
_noise = st.dictionaries(st.sampled_from(["extra", "status", "uid", "x"]), _values, max_size=3)


@st.composite
def _contexts(draw: st.DrawFn) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {"name": draw(_values), "labels": {"team": draw(_values)}},
        "spec": {"size": draw(_values)},
    }
    if draw(st.booleans()):
        obj["metadata"]["namespace"] = draw(_values)
    return {"Object": obj, "ClusterName": draw(st.text(max_size=30))}


def outcome(template: Template, context: dict[str, Any], *, limit: int = 253) -> str | type[TemplateError]:
    try:
        return render(template, context=context, limit=limit)
    except TemplateError:
        return TemplateError


@given(st.text(max_size=60) | _templates | st.from_regex(r"\{\{ *[-+]?[0-9]{15,25} *\}\}", fullmatch=True))
def test_parsing_any_text_gives_a_template_or_a_template_error(source: str) -> None:
    with contextlib.suppress(TemplateError):
        parse_template(source, fields=FIELDS)


@given(_templates, _contexts())
def test_rendering_is_deterministic_and_leaves_the_context_alone(source: str, context: dict[str, Any]) -> None:
    template = parse_template(source, fields=FIELDS)
    before = copy.deepcopy(context)
    first = outcome(template, context)
    assert context == before
    assert outcome(parse_template(source, fields=FIELDS), copy.deepcopy(context)) == first


@given(_templates, _contexts(), _noise, _noise, _noise)
def test_only_the_fields_a_template_names_can_change_its_output(
    source: str,
    context: dict[str, Any],
    top: dict[str, Any],
    metadata: dict[str, Any],
    labels: dict[str, Any],
) -> None:
    template = parse_template(source, fields=FIELDS)
    noisy = copy.deepcopy(context)
    noisy["Object"].update(top)
    noisy["Object"]["metadata"].update(metadata)
    noisy["Object"]["metadata"]["labels"].update({f"not-{key}": value for key, value in labels.items()})
    noisy["Unlisted"] = "secret"
    assert outcome(template, noisy) == outcome(template, context)


@given(_templates, _contexts(), st.integers(min_value=0, max_value=253))
def test_the_output_never_exceeds_its_limit(source: str, context: dict[str, Any], limit: int) -> None:
    result = outcome(parse_template(source, fields=FIELDS), context, limit=limit)
    assert result is TemplateError or len(result) <= limit


# The template each `$` placeholder stands for (for a namespaced remote object).
_EQUIVALENT = {
    "$remoteClusterName": "{{ .ClusterName }}",
    "$remoteNamespace": "{{ .Object.metadata.namespace }}",
    "$remoteNamespaceHash": "{{ shortHash .Object.metadata.namespace }}",
    "$remoteName": "{{ .Object.metadata.name }}",
    "$remoteNameHash": "{{ .Object.metadata.name | shortHash }}",
}
_labels = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?", fullmatch=True)
_pieces = st.lists(
    st.one_of(
        st.sampled_from(PLACEHOLDERS).map(lambda p: (p, _EQUIVALENT[p])),
        st.text(alphabet="abcX-._0", min_size=1, max_size=5).map(lambda t: (t, t)),
    ),
    min_size=1,
    max_size=5,
)


@given(_pieces, _pieces, _labels, _labels, st.text(alphabet="abc-.", min_size=1, max_size=12), st.booleans())
def test_a_dollar_pattern_and_its_template_give_the_same_local_name(
    namespace_pieces: list[tuple[str, str]],
    name_pieces: list[tuple[str, str]],
    cluster: str,
    namespace: str,
    name: str,
    local_namespaced: bool,
) -> None:
    remote = RemoteKey(cluster=cluster, namespace=namespace, name=name)
    obj = {"metadata": {"name": name, "namespace": namespace}}

    def key(index: int) -> LocalKey | Problem:
        naming = Naming(
            namespace="".join(p[index] for p in namespace_pieces),
            name="".join(p[index] for p in name_pieces),
            allow_shared_namespaces=True,
        )
        return local_key_for(
            naming=naming, remote=remote, local_namespaced=local_namespaced, remote_namespaced=True, remote_object=obj
        )

    dollar, template = key(0), key(1)
    if isinstance(dollar, Problem):
        assert isinstance(template, Problem) and template.field == dollar.field
    else:
        assert template == dollar
