"""kcpsim's strategic merge patch: the built-ins' merge keys and the patch directives, each as
kube-apiserver applies it to the same object."""

from __future__ import annotations

from typing import Any

import pytest

from kcpsim.errors import StatusError
from kcpsim.strategic import strategic_merge_patch

RBAC = "rbac.authorization.k8s.io"


def _meta(**fields: Any) -> dict[str, Any]:
    return {"metadata": {"name": "x", **fields}}


def _refs(*uids: str, **extra: Any) -> list[dict[str, Any]]:
    return [{"uid": uid, "name": f"owner-{uid}", **extra} for uid in uids]


@pytest.mark.parametrize(
    ("target", "patch", "expected"),
    [
        (["a", "b"], ["b", "c", "c"], ["a", "b", "c"]),
        (["a", "b", "z"], {"$setElementOrder/finalizers": ["b", "a", "c"], "finalizers": ["c"]}, ["b", "a", "c", "z"]),
        (["a", "z", "b"], {"$setElementOrder/finalizers": ["b", "a"]}, ["z", "b", "a"]),
        (["a", "b"], {"$deleteFromPrimitiveList/finalizers": ["a"]}, ["b"]),
    ],
    ids=["merged-as-a-set", "set-element-order", "server-only-item-keeps-its-place", "delete-from-primitive-list"],
)
def test_finalizers_merge_as_a_set(target: list[str], patch: Any, expected: list[str]) -> None:
    body = {"metadata": patch if isinstance(patch, dict) else {"finalizers": patch}}
    assert strategic_merge_patch(_meta(finalizers=target), body, kind="ConfigMap")["metadata"]["finalizers"] == expected


def test_owner_references_merge_by_uid() -> None:
    target = _meta(ownerReferences=_refs("1", "2", controller=False))
    patch = {"metadata": {"ownerReferences": [{"uid": "1", "controller": True}, {"uid": "3", "name": "owner-3"}]}}
    refs = strategic_merge_patch(target, patch, kind="ConfigMap")["metadata"]["ownerReferences"]
    # The patch's items in its order; the server's "2" cannot be placed against the new "3", so it
    # goes last, as apimachinery places it.
    assert refs == [
        {"uid": "1", "name": "owner-1", "controller": True},
        {"uid": "3", "name": "owner-3"},
        {"uid": "2", "name": "owner-2", "controller": False},
    ]


def test_list_item_directives_delete_and_replace() -> None:
    target = _meta(ownerReferences=_refs("1", "2"))
    deleted = strategic_merge_patch(target, {"metadata": {"ownerReferences": [{"uid": "1", "$patch": "delete"}]}})
    assert deleted["metadata"]["ownerReferences"] == _refs("2")
    replaced = strategic_merge_patch(target, {"metadata": {"ownerReferences": [{"$patch": "replace"}, *_refs("9")]}})
    assert replaced["metadata"]["ownerReferences"] == _refs("9")


def test_set_element_order_reorders_a_keyed_list() -> None:
    target = _meta(ownerReferences=_refs("1", "2", "3"))
    patch = {"metadata": {"$setElementOrder/ownerReferences": [{"uid": "3"}, {"uid": "1"}]}}
    refs = strategic_merge_patch(target, patch, kind="ConfigMap")["metadata"]["ownerReferences"]
    assert [ref["uid"] for ref in refs] == ["2", "3", "1"]  # "2" was before "3" on the server


@pytest.mark.parametrize(
    ("kind", "field", "key"),
    [(("", "ServiceAccount"), ("secrets",), "name"), (("", "Namespace"), ("status", "conditions"), "type")],
)
def test_the_kinds_own_merging_lists(kind: tuple[str, str], field: tuple[str, ...], key: str) -> None:
    def nest(value: Any) -> dict[str, Any]:
        for part in reversed(field):
            value = {part: value}
        return value  # type: ignore[no-any-return]

    target = nest([{key: "a", "v": 1}, {key: "b", "v": 1}])
    patched = strategic_merge_patch(target, nest([{key: "b", "v": 2}]), group=kind[0], kind=kind[1])
    for part in field:
        patched = patched[part]
    assert patched == [{key: "a", "v": 1}, {key: "b", "v": 2}]


@pytest.mark.parametrize(
    ("kind", "field"),
    [("Role", "rules"), ("RoleBinding", "subjects"), ("ClusterRole", "rules"), ("ClusterRoleBinding", "subjects")],
)
def test_rbac_lists_are_atomic(kind: str, field: str) -> None:
    target = {field: [{"name": "a"}, {"name": "b"}]}
    assert strategic_merge_patch(target, {field: [{"name": "c"}]}, group=RBAC, kind=kind) == {field: [{"name": "c"}]}


def test_map_directives_replace_delete_and_retain_keys() -> None:
    target = {"data": {"a": "1", "b": "2"}, "other": {"k": "v"}}
    assert strategic_merge_patch(target, {"data": {"$patch": "replace", "c": "3"}})["data"] == {"c": "3"}
    assert strategic_merge_patch(target, {"data": {"$patch": "delete"}}) == {"other": {"k": "v"}}
    assert strategic_merge_patch(target, {"data": {"$patch": "merge", "c": "3"}})["data"] == {
        "a": "1",
        "b": "2",
        "c": "3",
    }
    retained = strategic_merge_patch(target, {"data": {"$retainKeys": ["b", "c"], "c": "3"}})
    assert retained["data"] == {"b": "2", "c": "3"}


def test_an_item_without_its_merge_key_is_a_bad_request() -> None:
    with pytest.raises(StatusError) as caught:
        strategic_merge_patch(_meta(ownerReferences=_refs("1")), {"metadata": {"ownerReferences": [{"name": "n"}]}})
    assert caught.value.code == 400
    assert "does not contain declared merge key: uid" in caught.value.message
