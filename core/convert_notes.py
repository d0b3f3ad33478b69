"""The notes of a conversion (`convert.py`): which field was not carried over, and why.

Deliberately not here: deciding what to note.
"""

from __future__ import annotations

from attrs import frozen


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
