"""Human-readable rendering of a servlet plan, in the spirit of `terraform plan`.

Works on the plan's JSON form (`ServletPlan.to_dict()`), so what a person reads and what a tool
consumes can never disagree. Markers: `+` creates, `~` changes, `-` removes, `!` needs attention.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import yaml

from servlet.core.redaction import REDACTED

_MARKERS = {
    "create": "+",
    "createNamespace": "+",
    "addFinalizer": "+",
    "createRelated": "+",
    "patch": "~",
    "adopt": "~",
    "patchRemoteStatus": "~",
    "patchRelated": "~",
    "recordRelatedState": "~",
    "deleteLocal": "-",
    "removeFinalizer": "-",
    "release": "-",
    "deleteRelated": "-",
    "conflict": "!",
    "error": "!",
}
_INDENT = "    "
_ABSENT_TEXT = "(none)"
_VALUE_LIMIT = 100  # longer values (a last-known-state annotation) are cut in the text form only
_CONTEXT = 20  # characters shown before the first difference of two long values


def _scalar(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def flatten_patch(patch: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    """Merge-patch lines: `path = value` for a set, `path removed` for a null."""
    for key in sorted(patch):
        value = patch[key]
        path = f"{prefix}.{key}" if prefix else key
        if isinstance(value, Mapping) and value:
            yield from flatten_patch(value, path)
        elif value is None:
            yield f"- {path}"
        else:
            yield f"~ {path} = {_scalar(value)}"


def change_lines(changes: Iterable[Mapping[str, Any]]) -> Iterator[str]:
    """Field changes (`plan_changes.field_changes`) as `path: old -> new`, `(none)` where absent."""
    for change in changes:
        marker = "+" if "old" not in change else "-" if "new" not in change else "~"
        old, new = (_scalar(change[name]) if name in change else _ABSENT_TEXT for name in ("old", "new"))
        if old == new:  # what differs is hidden (`core.redaction`): say so, without the long text
            yield f"{marker} {change['path']}: {REDACTED} -> {REDACTED}"
            continue
        # Long values are shown from a little before where they first differ.
        start = max(0, next((i for i, (a, b) in enumerate(zip(old, new)) if a != b), 0) - _CONTEXT)
        yield f"{marker} {change['path']}: {_cut(old, start)} -> {_cut(new, start)}"


def _cut(text: str, start: int) -> str:
    if len(text) <= _VALUE_LIMIT:
        return text
    start = min(start, len(text) - _VALUE_LIMIT)
    shown = text[start : start + _VALUE_LIMIT]
    return ("..." if start else "") + shown + ("..." if start + _VALUE_LIMIT < len(text) else "")


def _yaml_lines(value: Any) -> list[str]:
    text = yaml.safe_dump(value, sort_keys=True, default_flow_style=False, allow_unicode=True)
    return text.rstrip("\n").splitlines()


def _where(entry: Mapping[str, Any] | None) -> str:
    if not entry:
        return "(no local object)"
    parts = [entry.get("cluster"), entry.get("namespace"), entry.get("name")]
    return f"{entry.get('kind')} {'/'.join(str(part) for part in parts if part)}"


def _target(action: Mapping[str, Any]) -> str:
    """`remote Zertifikat k7v2m9x4q1w8z3r5:default/web`, the object an action writes."""
    if not action.get("name"):
        return ""
    where = f"{action['namespace']}/{action['name']}" if action.get("namespace") else str(action["name"])
    if action.get("cluster"):
        where = f"{action['cluster']}:{where}"
    related = f" [{action['identifier']}]" if action.get("identifier") else ""
    return f" {action.get('side', '')} {action.get('kind', '')} {where}{related}"


def _action_lines(action: Mapping[str, Any]) -> list[str]:
    kind = str(action.get("type"))
    lines = [f"{_MARKERS.get(kind, '?')} {kind}{_target(action)}"]
    if action.get("reason"):
        lines.append(f"{_INDENT}{action['reason']}")
    if isinstance(action.get("object"), Mapping):
        lines.extend(f"{_INDENT}+ {line}" for line in _yaml_lines(action["object"]))
    if action.get("changes"):
        lines.extend(f"{_INDENT}{line}" for line in change_lines(action["changes"]))
    elif isinstance(action.get("patch"), Mapping):
        lines.extend(f"{_INDENT}{line}" for line in flatten_patch(action["patch"]))
    elif "status" in action:
        lines.extend(f"{_INDENT}~ {line}" for line in _yaml_lines({"status": action["status"]}))
    return lines


def render_text(plan: Mapping[str, Any]) -> str:
    out: list[str] = [f"Servlet {plan['servlet']}", ""]

    out.append("APIResourceSchemas")
    for schema in plan["schemas"]:
        marker = "+" if schema["action"] == "create" else "="
        verb = "create" if schema["action"] == "create" else "exists"
        names = schema["spec"].get("names", {})
        versions = [str(v.get("name")) for v in schema["spec"].get("versions") or []]
        stored = next(
            (str(v.get("name")) for v in schema["spec"].get("versions") or [] if v.get("storage")),
            versions[0] if versions else None,
        )
        out.append(f"  {marker} {verb} {schema['name']}  (from PublishedResource {schema['publishedResource']})")
        out.append(
            f"{_INDENT}{schema['spec'].get('group')}/{stored} {names.get('kind')}, "
            f"plural {names.get('plural')}, {schema['spec'].get('scope')}"
        )
        if len(versions) > 1:
            out.append(f"{_INDENT}versions {', '.join(versions)}; stored and synced as {stored}")
    if not plan["schemas"]:
        out.append("  (none)")
    out.append("")

    export = plan["apiExport"]
    out.append(f"APIExport {export['name'] or '(unnamed)'}")
    if export["action"] == "none":
        out.append("  = no change")
    else:
        if export["action"] == "missing":
            out.append("  ! not among the inputs: compared against an empty export; the servlet never creates it")
        out.extend(f"  {line}" for line in flatten_patch(export["patch"] or {}))
    out.append("")

    out.append("Objects")
    for obj in plan["objects"]:
        out.append(f"  {_where(obj['remote'])}  ->  {_where(obj['local'])}")
        if not obj["actions"]:
            out.append(f"{_INDENT}= in sync, nothing to do")
        for action in obj["actions"]:
            out.extend(f"{_INDENT}{line}" for line in _action_lines(action))
    for schema_only in plan.get("schemaOnly") or ():
        out.append(f"  = PublishedResource {schema_only['publishedResource']}: {schema_only['message']}")
    if not plan["objects"] and not plan.get("schemaOnly"):
        out.append("  (no remote objects of a published resource)")

    if plan.get("orphans"):
        out.extend(["", "Orphans (local copies whose workspace object is gone)"])
        for orphan in plan["orphans"]:
            marker, verb = (
                ("-", "delete") if orphan["action"] == "delete" else ("=", "keep (--delete-orphans deletes it)")
            )
            local, remote = orphan["local"], orphan["remote"]
            out.append(
                f"  {marker} {verb} {local['namespace']}/{local['name']}  (the copy of "
                f"{remote['cluster']}:{remote['namespace']}/{remote['name']}, "
                f"PublishedResource {orphan['publishedResource']})"
            )

    if plan.get("warnings"):
        out.extend(["", "Warnings"])
        for warning in plan["warnings"]:
            out.append(f"  ! {warning['object']}: {warning['field']}: {warning['message']}")

    if plan["errors"]:
        out.extend(["", "Errors"])
        for error in plan["errors"]:
            field = f" {error['field']}:" if error["field"] else ""
            out.append(f"  ! {error['object']}:{field} {error['message']}")
    return "\n".join(out) + "\n"
