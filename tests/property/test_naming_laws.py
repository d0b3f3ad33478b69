"""Laws of local naming (SPEC 5): deterministic, no placeholder left, valid DNS or a Problem, no collisions."""

from __future__ import annotations

from hypothesis import assume, given, strategies as st

from servlet.core.model import LocalKey, Naming, Problem, RemoteKey
from servlet.core.naming import (
    PLACEHOLDERS,
    _placeholder_local_key,
    expand,
    is_dns1123_label,
    is_dns1123_subdomain,
    local_key_for,
    unknown_placeholders,
)

_labels = st.from_regex(r"[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?", fullmatch=True)
# Logical cluster names as kcp makes them (a DNS label of at least two characters).
_cluster_names = st.from_regex(r"[a-z0-9][-a-z0-9]{0,20}[a-z0-9]", fullmatch=True)
# Kubernetes object names: DNS subdomains.
_object_names = st.lists(_labels, min_size=1, max_size=3).map(".".join)


@st.composite
def _remote_keys(draw: st.DrawFn, *, namespaced: bool) -> RemoteKey:
    namespace = draw(_labels) if namespaced else ""
    return RemoteKey(cluster=draw(_cluster_names), namespace=namespace, name=draw(_object_names))


# Anything a user might type, including near-miss placeholders and characters DNS forbids.
_any_remote_keys = st.builds(
    RemoteKey, cluster=st.text(max_size=12), namespace=st.text(max_size=12), name=st.text(max_size=12)
)
_text_pieces = st.text(alphabet="abcXY-._ 0", max_size=6)
_patterns = st.lists(
    st.one_of(
        st.sampled_from(PLACEHOLDERS),
        st.sampled_from(["$remoteNme", "$remote", "$", "$remoteNameHashes"]),
        _text_pieces,
    ),
    max_size=6,
).map("".join)
_clean_patterns = st.lists(st.one_of(st.sampled_from(PLACEHOLDERS), _text_pieces), max_size=6).map("".join)
_namings = st.builds(Naming, namespace=st.none() | _patterns, name=st.none() | _patterns)
_scopes = st.tuples(st.booleans(), st.booleans())


@given(_namings, _any_remote_keys, _scopes)
def test_naming_is_deterministic(naming: Naming, remote: RemoteKey, scopes: tuple[bool, bool]) -> None:
    local_namespaced, remote_namespaced = scopes
    # Computed twice past the memo (which would hand back its first answer whatever the rule
    # does), then the memoised answer must be that same computed one.
    compute = _placeholder_local_key.__wrapped__
    first = compute(
        naming=naming,
        remote=remote,
        local_namespaced=local_namespaced,
        remote_namespaced=remote_namespaced,
        protected_namespaces=frozenset(),
    )
    again = compute(
        naming=Naming(namespace=naming.namespace, name=naming.name),
        remote=RemoteKey(cluster=remote.cluster, namespace=remote.namespace, name=remote.name),
        local_namespaced=local_namespaced,
        remote_namespaced=remote_namespaced,
        protected_namespaces=frozenset(),
    )
    assert first == again
    assert (
        local_key_for(
            naming=naming, remote=remote, local_namespaced=local_namespaced, remote_namespaced=remote_namespaced
        )
        == first
    )


@given(_namings, _any_remote_keys, _scopes)
def test_naming_yields_valid_dns_names_or_a_problem(
    naming: Naming,
    remote: RemoteKey,
    scopes: tuple[bool, bool],
) -> None:
    local_namespaced, remote_namespaced = scopes
    key = local_key_for(
        naming=naming, remote=remote, local_namespaced=local_namespaced, remote_namespaced=remote_namespaced
    )
    if isinstance(key, Problem):
        assert key.field in ("spec.naming.namespace", "spec.naming.name")
        assert "yields" in key.message
        return
    assert "$remote" not in key.namespace + key.name
    assert is_dns1123_label(key.namespace) if local_namespaced else key.namespace == ""
    assert is_dns1123_subdomain(key.name)


@given(_clean_patterns, _remote_keys(namespaced=True))
def test_expansion_leaves_no_placeholder_behind(pattern: str, remote: RemoteKey) -> None:
    # A placeholder directly followed by letters (`$remoteNameX`) is one unknown token, not ours.
    assume(unknown_placeholders(pattern) == ())
    assert "$" not in expand(pattern, remote=remote)


@given(_patterns)
def test_unknown_placeholders_are_dollar_tokens_that_are_not_placeholders(pattern: str) -> None:
    for token in unknown_placeholders(pattern):
        assert token.startswith("$")
        assert token in pattern
        assert token not in PLACEHOLDERS


@given(st.data(), _scopes)
def test_default_names_of_distinct_remote_objects_are_distinct(data: st.DataObject, scopes: tuple[bool, bool]) -> None:
    local_namespaced, remote_namespaced = scopes
    first = data.draw(_remote_keys(namespaced=remote_namespaced))
    # Often share parts, so the law is tested where collisions would hide.
    second = RemoteKey(
        cluster=data.draw(st.sampled_from([first.cluster]) | _cluster_names),
        namespace=data.draw(st.sampled_from([first.namespace]))
        if not remote_namespaced
        else data.draw(st.sampled_from([first.namespace]) | _labels),
        name=data.draw(st.sampled_from([first.name]) | _object_names),
    )
    keys = [
        local_key_for(
            naming=Naming(), remote=remote, local_namespaced=local_namespaced, remote_namespaced=remote_namespaced
        )
        for remote in (first, second)
    ]
    assert all(isinstance(key, LocalKey) for key in keys)
    assert (keys[0] == keys[1]) is (first == second)
