"""Reading the switches of a PublishedResource spec: `synchronization` and `enableWorkspacePaths`.

Called from `parsing.py`, with its conventions: never raise, report every problem under the
manifest's field path, unknown fields included.

Deliberately not here: what the switches change (`worker_choice.py` decides who gets a sync worker,
`name_templates.py` which templates may read `.ClusterPath`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from servlet.core.fields import as_mapping, describe, report_unknown
from servlet.core.model import Problem, Synchronization


def parse_synchronization(data: object, *, problems: list[Problem]) -> Synchronization:
    path = "spec.synchronization"
    synchronization = None if data is None else as_mapping(data, path=path, problems=problems)
    if synchronization is None:
        return Synchronization()
    report_unknown(synchronization, path=path, known=("enabled",), problems=problems)
    if "enabled" not in synchronization:
        problems.append(Problem(field=f"{path}.enabled", message="is required (true or false)"))
        return Synchronization()
    return Synchronization(enabled=read_flag(synchronization, "enabled", path=path, problems=problems, default=True))


def read_flag(data: Mapping[str, Any], key: str, *, path: str, problems: list[Problem], default: bool) -> bool:
    """A boolean field; anything but true or false is a problem (and the default is used)."""
    value = data.get(key, default)
    if isinstance(value, bool):
        return value
    problems.append(Problem(field=f"{path}.{key}", message=f"must be true or false, not {describe(value)}"))
    return default
