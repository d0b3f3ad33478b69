"""The notes of a conversion (`convert.py`): which field was not carried over, and why.

Deliberately not here: deciding what to note (except for mutations, noted alike in the spec and
in related entries).
"""

from __future__ import annotations

from collections.abc import Mapping

from attrs import frozen

from servlet.core.fields import describe


@frozen
class ConversionNote:
    """One field of the peer's PublishedResource (a path such as `spec.related[0].cleanup`) and why."""

    field: str
    reason: str

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}" if self.field else self.reason

    def to_dict(self) -> dict[str, str]:
        return {"field": self.field, "reason": self.reason}


class Notes:
    """The notes of one conversion, in the order they were found, each once."""

    def __init__(self) -> None:
        self._notes: dict[ConversionNote, None] = {}

    def add(self, field: str, reason: str) -> None:
        self._notes[ConversionNote(field, reason)] = None

    def items(self) -> tuple[ConversionNote, ...]:
        return tuple(self._notes)


def note_mutations(mutation: object, *, path: str, notes: Notes) -> None:
    """Mutations are not supported yet: each rule is named, so its absence is no surprise."""
    if mutation is None:
        return
    if not isinstance(mutation, Mapping):
        notes.add(path, "mutations are not supported by the servlet yet; dropped")
        return
    for direction, rules in mutation.items():
        if not isinstance(rules, list) or not rules:
            notes.add(f"{path}.{direction}", "mutations are not supported by the servlet yet; dropped")
            continue
        for index, rule in enumerate(rules):
            kinds = ", ".join(sorted(str(key) for key in rule)) if isinstance(rule, Mapping) else describe(rule)
            notes.add(
                f"{path}.{direction}[{index}]",
                f"mutation ({kinds}) not supported by the servlet yet: objects are synced unchanged; dropped",
            )
