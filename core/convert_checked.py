"""The last step of a conversion: our own parser reads the result, and what it refuses is dropped with its reason.

The mapping in `convert.py` keeps the peer's values; some of them the servlet refuses (a naming
namespace such as `kube-system`, a template function it does not have, a related identifier
that is no DNS label). Such a value is dropped with the parser's own message as the reason,
taking with it the smallest part that makes sense alone (one naming pattern, one projection
field, one related entry), until the result parses without problems. A problem in what cannot
be dropped (the resource itself, the metadata) fails the conversion.

Deliberately not here: the mapping itself.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from servlet.core.convert_notes import ConversionNote, Notes
from servlet.core.parsing import parse_published_resource

# Every round drops at least one part, so this bounds nothing a real manifest reaches.
_MAX_ROUNDS = 50
_DROPPABLE = re.compile(
    r"^spec\.(?:(?P<related>related)\[(?P<index>\d+)\]|(?P<section>naming|projection|filter)\.(?P<key>\w+)|"
    r"(?P<switch>synchronization|enableWorkspacePaths))"
)


def checked(
    manifest: dict[str, Any], notes: Notes, *, related_origins: list[int]
) -> tuple[dict[str, Any] | None, tuple[ConversionNote, ...]]:
    """`manifest` with what our parser refuses dropped (and noted), or None and why it cannot be valid.

    `related_origins[i]` is the index in the peer's list of the converted `spec.related[i]`, so a
    note names the entry the service owner wrote."""
    current = copy.deepcopy(manifest)
    origins = list(related_origins)
    for _ in range(_MAX_ROUNDS):
        problems = parse_published_resource(current).problems
        if not problems:
            return current, ()
        fatal = tuple(
            ConversionNote(problem.field, f"the servlet refuses the converted value: {problem.message}")
            for problem in problems
            if _DROPPABLE.match(problem.field) is None
        )
        if fatal:
            return None, fatal
        related_drops: set[int] = set()
        for problem in problems:
            match = _DROPPABLE.match(problem.field)
            assert match is not None  # every unmatched problem is fatal, above
            spec = current["spec"]
            if match["related"]:
                index = int(match["index"])
                if index not in related_drops:
                    related_drops.add(index)
                    inside = problem.field[match.end() :].lstrip(".")
                    where = f"{inside}: " if inside else ""
                    notes.add(
                        f"spec.related[{origins[index]}]",
                        f"entry dropped: the servlet refuses it: {where}{problem.message}",
                    )
            elif match["section"]:
                section, key = match["section"], match["key"]
                if key in (spec.get(section) or {}):
                    notes.add(f"spec.{section}.{key}", f"the servlet refuses it: {problem.message}; dropped")
                    del spec[section][key]
                    if not spec[section]:
                        del spec[section]
            elif match["switch"] in spec:
                notes.add(f"spec.{match['switch']}", f"the servlet refuses it: {problem.message}; dropped")
                del spec[match["switch"]]
        for index in sorted(related_drops, reverse=True):
            del current["spec"]["related"][index]
            del origins[index]
        if "related" in current["spec"] and not current["spec"]["related"]:
            del current["spec"]["related"]
    return None, (ConversionNote("", "the converted PublishedResource could not be made valid"),)
