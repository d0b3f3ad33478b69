"""Kubernetes' order of API version names, as discovery and `kubectl` list them.

GA versions come before beta, beta before alpha; within a level the higher major number comes
first, then the higher alpha or beta number (v2 > v1 > v11beta2 > v10beta3 > v3beta1 >
v12alpha1). Names that are not of that shape (`foo1`, `v1gamma1`) come after every one that is,
in alphabetical order. This is apimachinery's version priority, written down here so the
schema's version list and its storage choice are the same on every machine.

It also says which names kcp accepts as versions of an APIResourceSchema (`is_kcp_version`).

Deliberately not here: which versions are published (`published_versions.py`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["by_version_priority", "version_priority_key"]

# [0-9], not \d: Python's \d also matches non-ASCII digits, which Kubernetes does not.
_KUBE_VERSION = re.compile(r"v([0-9]+)(?:(alpha|beta)([0-9]+))?")
_LEVEL_RANK = {None: 0, "beta": 1, "alpha": 2}
_NOT_KUBE_RANK = 3
# kcp's pattern for the version names of an APIResourceSchema: v1, v1alpha1, v2beta3.
_KCP_VERSION = re.compile(r"v[1-9][0-9]*([a-z]+[1-9][0-9]*)?")
_KCP_VERSION_MAX = 63


def is_kcp_version(name: str) -> bool:
    """Whether kcp accepts `name` as a version of an APIResourceSchema."""
    return len(name) <= _KCP_VERSION_MAX and _KCP_VERSION.fullmatch(name) is not None


def version_priority_key(name: str) -> tuple[int, int, int, str]:
    """A sort key: sorting ascending by it lists versions in Kubernetes' order, highest first.

    The name itself is the last element, so the order is total: `v1` and `v01` (the same
    priority to Kubernetes) still sort one way only.
    """
    match = _KUBE_VERSION.fullmatch(name)
    if match is None:
        return (_NOT_KUBE_RANK, 0, 0, name)
    major, level, minor = match.group(1), match.group(2), match.group(3)
    return (_LEVEL_RANK[level], -int(major), -int(minor or 0), name)


def by_version_priority(names: Iterable[str]) -> list[str]:
    """`names` in Kubernetes' order, highest priority first."""
    return sorted(names, key=version_priority_key)
