"""Applying a JSON merge patch (RFC 7386): null deletes, an object merges, anything else replaces.

`apply_merge_patch` is the rule and changes nothing it is given. `merge_owned_patch` gives the
same result without copying, for a target and a patch that nobody else holds; the property tests
prove the two equal.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core.json_values import drop_null_members, is_mapping, json_copy


def apply_merge_patch(target: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """RFC 7386: null deletes, an object merges, anything else replaces. Inputs are not changed."""
    merged = {key: json_copy(value) for key, value in target.items()}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        elif is_mapping(value):
            current = merged.get(key)
            # A map patched onto anything but a map starts from an empty map (RFC 7386).
            merged[key] = apply_merge_patch(current if is_mapping(current) else {}, value)
        else:
            merged[key] = json_copy(value)
    return merged


def merge_owned_patch(target: dict[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """`apply_merge_patch` into `target` itself, taking the patch's values without copying them.

    Only for a target and a patch the caller just built and nobody else holds (a new object and
    its first content patch): copying both again would be wasted work on every create.
    """
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif is_mapping(value):
            current = target.get(key)
            if type(current) is dict:
                target[key] = merge_owned_patch(current, value)
            elif type(value) is dict:
                # A map patched onto anything but a map starts from an empty map (RFC 7386): the
                # result is the patch's own map without its null members.
                drop_null_members(value)
                target[key] = value
            else:
                target[key] = merge_owned_patch({}, value)
        else:
            target[key] = value
    return target
