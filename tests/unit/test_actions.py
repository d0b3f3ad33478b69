"""The kinds of write actions are: what an executor sends for each, and how actions compare."""

from __future__ import annotations

import typing

import pytest

from servlet.core.actions import (
    ACTION_TYPES,
    Action,
    AddFinalizer,
    ObjectRef,
    Release,
    RemoveFinalizer,
    Side,
    Write,
)
from servlet.core.model import ResourceType

WIDGETS = ResourceType(group="example.corp", version="v1", kind="Widget", plural="widgets", namespaced=True)
PRIMARY = ObjectRef(side=Side.REMOTE, resource=WIDGETS, namespace="default", name="w", cluster="k7v2m9x4q1w8z3r5")
ACTION_CLASSES = typing.get_args(Action)


@pytest.mark.parametrize("action_class", ACTION_CLASSES, ids=lambda cls: cls.__name__)
def test_an_action_writes_exactly_when_its_kind_of_write_sends_something(action_class: type[Action]) -> None:
    assert isinstance(action_class.write, Write)
    assert action_class.is_write is (action_class.write is not Write.NOTHING)


def test_every_printed_action_type_belongs_to_one_action_class() -> None:
    assert sorted(ACTION_TYPES) == sorted(cls.type for cls in ACTION_CLASSES)
    assert len(set(ACTION_TYPES)) == len(ACTION_TYPES)


def test_finalizer_changes_with_the_same_list_stay_different_actions() -> None:
    changes = [
        kind(target=PRIMARY, finalizers=("other",), resource_version="7")
        for kind in (AddFinalizer, RemoveFinalizer, Release)
    ]
    assert len(set(changes)) == 3
    assert [change.to_dict()["type"] for change in changes] == ["addFinalizer", "removeFinalizer", "release"]
    assert all(
        change.to_dict()["patch"] == {"metadata": {"finalizers": ["other"], "resourceVersion": "7"}}
        for change in changes
    )
    assert all(change.write is Write.FINALIZERS for change in changes)
