"""Laws of kcpsim's strategic merge patch (kcpsim/strategic.py) over generated documents.

Without lists and without directives a strategic merge patch is a JSON merge patch: the
strategies and directives only ever decide about lists and `$` keys. Keys include the names of
the built-ins' merging lists so that the generated maps sit where those lists would be.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, strategies as st

from kcpsim.patching import merge_patch
from kcpsim.strategic import strategic_merge_patch

KEYS = st.sampled_from(["metadata", "finalizers", "ownerReferences", "status", "conditions", "secrets", "a", "b"])
SCALARS = st.booleans() | st.integers(min_value=-3, max_value=3) | st.sampled_from(["", "x", "y"])

# Documents: maps of maps and scalars, no lists; a patch may also hold null, which deletes.
DOCUMENTS = st.recursive(SCALARS, lambda inner: st.dictionaries(KEYS, inner, max_size=4), max_leaves=12)
PATCHES = st.recursive(st.none() | SCALARS, lambda inner: st.dictionaries(KEYS, inner, max_size=4), max_leaves=12)
KINDS = st.sampled_from(
    [("", "ConfigMap"), ("", "Namespace"), ("", "ServiceAccount"), ("rbac.authorization.k8s.io", "Role")]
)


@given(
    target=st.dictionaries(KEYS, DOCUMENTS, max_size=4), patch=st.dictionaries(KEYS, PATCHES, max_size=4), kind=KINDS
)
def test_without_lists_or_directives_it_is_a_json_merge_patch(
    target: dict[str, Any], patch: dict[str, Any], kind: tuple[str, str]
) -> None:
    group, name = kind
    assert strategic_merge_patch(target, patch, group=group, kind=name) == merge_patch(target, patch)


@given(target=st.dictionaries(KEYS, DOCUMENTS, max_size=4), patch=st.dictionaries(KEYS, PATCHES, max_size=4))
def test_the_target_is_never_changed_in_place(target: dict[str, Any], patch: dict[str, Any]) -> None:
    before = repr(target)
    strategic_merge_patch(target, patch, group="", kind="Namespace")
    assert repr(target) == before
