"""The one CEL transition rule CRDs use most, `self == oldSelf` (immutability).

Structural validation and pruning live in validation.py, defaulting in defaulting.py.
"""

from __future__ import annotations

from typing import Any

_IMMUTABLE_RULES = {"self == oldSelf", "oldSelf == self"}


def transition_problems(old: Any, new: Any, schema: dict[str, Any] | None, path: str = "") -> list[tuple[str, str]]:
    """Evaluate the one CEL transition rule CRDs use most, `self == oldSelf` (immutability).

    Other `x-kubernetes-validations` rules are ignored; a real apiserver would evaluate them.
    """
    if not schema or old is None or new is None:
        return []
    problems = []
    for rule in schema.get("x-kubernetes-validations") or []:
        if str(rule.get("rule", "")).strip() in _IMMUTABLE_RULES and old != new:
            problems.append(
                (path or "<root>", f'Invalid value: "object": {rule.get("message") or "failed rule: " + rule["rule"]}')
            )
    if isinstance(old, dict) and isinstance(new, dict):
        for key, sub in (schema.get("properties") or {}).items():
            if path == "" and key in ("apiVersion", "kind", "metadata", "status"):
                continue
            problems += transition_problems(old.get(key), new.get(key), sub, f"{path}.{key}" if path else key)
    return problems
