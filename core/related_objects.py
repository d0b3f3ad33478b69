"""Related objects as data: where they live, what was read of them, what is recorded.

The vocabulary `related.py` plans with (SPEC 8): the coordinates of a related object on each
side (a path into that side's primary, so each side finds its own name even when the service
rewrote the field), the snapshot of what the caller read, the content that is synced, and the
sync state the servlet records on the local primary for each related entry:

- `ServiceState` (service origin): where the workspace copy is, whether the servlet created it
  and the content last synced (Secret values left out);
- `PlatformState` (platform origin): where the local copy is and which workspace object it copies.
  The copy's own link metadata and last-known-state still do the syncing; the record is only there
  so a copy that is no longer named (the tenant renamed or removed the reference) can be found
  and deleted.

Both records are written only after the copy they name provably exists as the servlet's own (see
`related.py`), so a record is proof of ownership, never a promise.

Deliberately not here: deciding anything (`related.py`) or reading any cluster.
"""

from __future__ import annotations

import enum
import functools
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from attrs import field, frozen
from jsonpath_ng.jsonpath import JSONPath
from jsonpath_ng.parser import parse

from servlet.core import metadata, naming, patch, related_templates, rewrite
from servlet.core.actions import ObjectRef, Side
from servlet.core.model import Problem, RelatedResource, RemoteKey, ResourceType, ValueReference
from servlet.core.targets import CONFIGMAP_TYPE, SECRET_TYPE, related_resource_type, related_type
from servlet.core.templates import TemplateError


@frozen
class Coordinates:
    """Where a related object lives on one side (related objects are always namespaced)."""

    namespace: str
    name: str


@frozen
class Resolved:
    """Both sides' coordinates of one related object; None on a side not resolvable yet."""

    remote: Coordinates | None
    local: Coordinates | None


@frozen
class RelatedKey:
    """One related object the planner may look at: side, type and coordinates.

    The type may be given as a `RelatedKind` (the Secret and ConfigMap shorthand): keys compare
    by the type it names."""

    side: Side
    resource: ResourceType = field(converter=related_resource_type)
    namespace: str
    name: str

    @classmethod
    def at(cls, side: Side, resource: ResourceType, coordinates: Coordinates) -> RelatedKey:
        return cls(side, resource, coordinates.namespace, coordinates.name)


class Presence(enum.Enum):
    """What the caller knows of one related object."""

    PRESENT = "present"
    ABSENT = "absent"  # read, and confirmed not there
    UNCONFIRMED = "unconfirmed"  # not seen, but only a cache said so: may still exist
    UNREADABLE = "unreadable"  # could not be read at all (forbidden, a claim not accepted, an error)


def _read_only(value: Mapping[RelatedKey, Mapping[str, Any]]) -> Mapping[RelatedKey, Mapping[str, Any]]:
    return MappingProxyType(dict(value))


def _read_only_matched(value: Mapping[str, tuple[str, ...] | None]) -> Mapping[str, tuple[str, ...] | None]:
    return MappingProxyType(dict(value))


@frozen
class RelatedSnapshot:
    """What exists of the related objects and destination namespaces, as the caller read it.

    The remote side is the remote primary's workspace. A key in `objects` is present. A key the
    caller could not read belongs in `unreadable`; one it only found missing in a cache (not by a
    direct read) in `unconfirmed`. Any other key is absent, and its absence is confirmed: the
    defaults describe a caller that read everything directly.
    """

    objects: Mapping[RelatedKey, Mapping[str, Any]] = field(factory=dict, converter=_read_only)
    namespaces: frozenset[tuple[Side, str]] = frozenset()
    unreadable: frozenset[RelatedKey] = frozenset()
    unconfirmed: frozenset[RelatedKey] = frozenset()
    # Per entry with a selector (by identifier): the origin names its labels found, sorted; None
    # when the origin side could not be listed. An entry missing here found nothing to look at.
    matched: Mapping[str, tuple[str, ...] | None] = field(factory=dict, converter=_read_only_matched)

    def get(self, side: Side, resource: ResourceType, coordinates: Coordinates) -> Mapping[str, Any] | None:
        return self.objects.get(RelatedKey(side, resource, coordinates.namespace, coordinates.name))

    def presence(self, key: RelatedKey) -> Presence:
        if key in self.objects:
            return Presence.PRESENT
        if key in self.unreadable:
            return Presence.UNREADABLE
        if key in self.unconfirmed:
            return Presence.UNCONFIRMED
        return Presence.ABSENT

    def has_namespace(self, side: Side, name: str) -> bool:
        return (side, name) in self.namespaces


@frozen
class RelatedReads:
    """What the caller must fetch to build a complete `RelatedSnapshot` for one primary."""

    objects: tuple[RelatedKey, ...]
    namespaces: tuple[tuple[Side, str], ...]


@frozen
class Primaries:
    """The pair of primary objects the related objects hang off, with what a plan needs of them."""

    servlet_name: str
    remote_key: RemoteKey
    remote: Mapping[str, Any]
    local: Mapping[str, Any]
    local_ref: ObjectRef


@frozen
class ServiceState:
    """The related-state annotation of a service-origin object: where its workspace copy is,
    whether the servlet created it (only then may it delete it) and the content last synced."""

    namespace: str
    name: str
    created: bool
    content: dict[str, Any]
    # Where the origin is: recorded for objects found by a selector only, whose origin name
    # cannot be computed again once the object no longer matches.
    origin: Coordinates | None = None

    @property
    def coordinates(self) -> Coordinates:
        return Coordinates(self.namespace, self.name)

    def to_dict(self) -> dict[str, Any]:
        data = {"namespace": self.namespace, "name": self.name, "created": self.created, "content": self.content}
        if self.origin is not None:
            data["origin"] = {"namespace": self.origin.namespace, "name": self.origin.name}
        return data


@frozen
class PlatformState:
    """The related-state annotation of a platform-origin object: where the local copy the servlet
    owns is (`copy`) and which workspace object it copies (`origin`, in the primary's workspace)."""

    copy: Coordinates
    origin: Coordinates

    def to_dict(self) -> dict[str, Any]:
        return {
            "namespace": self.copy.namespace,
            "name": self.copy.name,
            "origin": {"namespace": self.origin.namespace, "name": self.origin.name},
        }


# --- coordinates -------------------------------------------------------------------------------


@functools.lru_cache(maxsize=256)
def _compiled(path: str) -> JSONPath:
    return parse(path)


def resolve_value(reference: ValueReference, obj: Mapping[str, Any], *, field_path: str) -> str | Problem | None:
    """The reference's value in `obj`: first match of the path, rewritten by the regex rule.

    None when the path matches nothing or a non-string (not resolvable yet); a Problem only for
    a path or regex that can never work.
    """
    try:
        matches = _compiled(reference.path).find(obj)
    except Exception as error:  # jsonpath_ng raises several unrelated types for bad input
        return Problem(field=f"{field_path}.path", message=f"{reference.path!r} is not a valid JSONPath: {error}")
    if not matches or not isinstance(matches[0].value, str):
        return None
    value: str = matches[0].value
    rule = reference.regex
    if rule is None:
        return value
    if not rule.pattern:
        # The documented way to inject a constant: any resolvable value, an empty pattern.
        return rule.replacement
    # RE2, linear in the value: the pattern is the service owner's, the value the tenant's.
    return rewrite.rewrite(rule, value, field=f"{field_path}.regex")


def metadata_of(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    value = obj.get("metadata")
    return value if isinstance(value, Mapping) else {}


def namespace_of(obj: Mapping[str, Any]) -> str:
    value = metadata_of(obj).get("namespace")
    return value if isinstance(value, str) else ""


def is_deleting(obj: Mapping[str, Any]) -> bool:
    return bool(metadata_of(obj).get("deletionTimestamp"))


def resolve_side(
    related: RelatedResource, *, index: int, primary: Mapping[str, Any], side: Side
) -> Coordinates | Problem | None:
    """Coordinates of a related object on one side, evaluated on that side's primary.

    An entry with a selector has none of its own (it is expanded, `related_selector.py`); an
    entry of that expansion has its coordinates `fixed`."""
    reference = related.reference
    if reference.fixed is not None:
        fixed_namespace, fixed_name = reference.fixed[0 if side is Side.REMOTE else 1]
        return Coordinates(namespace=fixed_namespace, name=fixed_name)
    if reference.selector is not None:
        return None
    base = f"spec.related[{index}].{'object' if reference.object_form else 'reference'}"
    name_field = (
        f"{base}.{'template' if isinstance(reference.name, str) else 'reference' if reference.object_form else 'name'}"
    )
    name = _value(reference.name, primary, side=side, field_path=name_field)
    if isinstance(name, Problem):
        return name
    namespace = resolve_namespace(related, index=index, primary=primary, side=side)
    if isinstance(namespace, Problem):
        return namespace
    if name is None or namespace is None:
        return None
    if not naming.is_dns1123_subdomain(name):
        return Problem(
            field=name_field, message=f"yields {name!r} on the {side.value} side, which is not a DNS-1123 subdomain"
        )
    return Coordinates(namespace=namespace, name=name)


def resolve_namespace(
    related: RelatedResource, *, index: int, primary: Mapping[str, Any], side: Side
) -> str | Problem | None:
    """The namespace of a related object on one side: `namespace` evaluated there, else the primary's."""
    reference = related.reference
    base = f"spec.related[{index}].{'object' if reference.object_form else 'reference'}"
    namespace: str | Problem | None
    if reference.namespace is not None:
        namespace = _value(reference.namespace, primary, side=side, field_path=f"{base}.namespace")
    else:
        namespace = namespace_of(primary)
        if not namespace:
            return Problem(
                field=f"{base}.namespace",
                message=f"the {side.value} primary object is cluster-scoped, so the related {kind_name(related)} "
                f"{related.identifier!r} needs a namespace reference",
            )
    if isinstance(namespace, str) and not naming.is_dns1123_label(namespace):
        return Problem(
            field=f"{base}.namespace",
            message=f"yields {namespace!r} on the {side.value} side, which is not a DNS-1123 label",
        )
    return namespace


def _value(
    reference: ValueReference | str, primary: Mapping[str, Any], *, side: Side, field_path: str
) -> str | Problem | None:
    """A path's value (`resolve_value`) or a template's output; None while either finds nothing yet."""
    if isinstance(reference, ValueReference):
        return resolve_value(reference, primary, field_path=field_path)
    output = related_templates.rendered(reference, primary=primary, side=side)
    if isinstance(output, TemplateError):
        return Problem(field=field_path, message=f"cannot be evaluated on the {side.value} side: {output}")
    # A field the template reads that is not set yet leaves the object pending, as a path does.
    return None if not output or "<no value>" in output else output


def resolve(
    related: RelatedResource, *, index: int, remote: Mapping[str, Any], local: Mapping[str, Any] | None
) -> Resolved | Problem:
    """Both sides' coordinates; the local side stays None while there is no local primary."""
    remote_side = resolve_side(related, index=index, primary=remote, side=Side.REMOTE)
    if isinstance(remote_side, Problem):
        return remote_side
    local_side = None if local is None else resolve_side(related, index=index, primary=local, side=Side.LOCAL)
    if isinstance(local_side, Problem):
        return local_side
    return Resolved(remote=remote_side, local=local_side)


# --- content and state -------------------------------------------------------------------------


def kind_name(item: RelatedResource) -> str:
    """How messages name the type of a related entry: its kind, else its resource and group."""
    resource = related_type(item)
    if resource is not None:
        return resource.kind
    api = item.api
    return "object" if api is None else f"{api.resource}.{api.group}".rstrip(".")


_SYNCED_FIELDS = {SECRET_TYPE: ("data", "type"), CONFIGMAP_TYPE: ("data", "binaryData")}
# Of any other type everything is synced but what the API server or its controllers own (as for primaries).
_NOT_CONTENT = frozenset({"apiVersion", "kind", "metadata", "status"})


def related_content(obj: Mapping[str, Any], resource: ResourceType) -> dict[str, Any]:
    """The part of a related object that is synced: its data fields (Secrets, ConfigMaps) or
    everything but metadata and status (any other type), and copyable labels/annotations."""
    fields = _SYNCED_FIELDS.get(resource)
    content: dict[str, Any] = (
        {key: obj[key] for key in fields if obj.get(key) is not None}
        if fields is not None
        else {key: value for key, value in obj.items() if key not in _NOT_CONTENT and value is not None}
    )
    meta = metadata_of(obj)
    copied: dict[str, Any] = {}
    for key in ("labels", "annotations"):
        values = metadata.copyable(meta.get(key))
        if values:
            copied[key] = values
    if copied:
        content["metadata"] = copied
    return content


def _recorded(local: Mapping[str, Any], identifier: str) -> dict[str, Any] | None:
    annotations = metadata_of(local).get("annotations")
    text = annotations.get(metadata.related_state_annotation(identifier)) if isinstance(annotations, Mapping) else None
    return patch.decode_state(text if isinstance(text, str) else None)


def read_service_state(local: Mapping[str, Any], identifier: str) -> ServiceState | None:
    """The related-state annotation on the local primary, or None when absent or unreadable."""
    decoded = _recorded(local, identifier)
    if decoded is None:
        return None
    namespace, name, created, content = (decoded.get(key) for key in ("namespace", "name", "created", "content"))
    if not (
        isinstance(namespace, str) and isinstance(name, str) and isinstance(created, bool) and isinstance(content, dict)
    ):
        return None
    origin = decoded.get("origin")
    origin_at = (
        Coordinates(origin["namespace"], origin["name"])
        if isinstance(origin, dict) and all(isinstance(origin.get(key), str) for key in ("namespace", "name"))
        else None
    )
    return ServiceState(namespace=namespace, name=name, created=created, content=content, origin=origin_at)


def read_platform_state(local: Mapping[str, Any], identifier: str) -> PlatformState | None:
    """The platform-origin record on the local primary, or None when absent or unreadable."""
    decoded = _recorded(local, identifier)
    origin = decoded.get("origin") if decoded is not None else None
    if decoded is None or not isinstance(origin, dict):
        return None
    values = (decoded.get("namespace"), decoded.get("name"), origin.get("namespace"), origin.get("name"))
    if not all(isinstance(value, str) and value for value in values):
        return None
    namespace, name, origin_namespace, origin_name = (str(value) for value in values)
    return PlatformState(copy=Coordinates(namespace, name), origin=Coordinates(origin_namespace, origin_name))


def state_content(content: Mapping[str, Any], resource: ResourceType) -> dict[str, Any]:
    """The content as remembered in the related-state annotation on the local primary.

    The three-way rule reads only the keys of the remembered content (a key the servlet wrote
    and the origin dropped is removed), never its values. So Secret values are left out: the
    primary is readable by far more people than the Secret, and must not leak it.
    """
    remembered = dict(content)
    data = content.get("data")
    if resource == SECRET_TYPE and isinstance(data, Mapping):
        remembered["data"] = dict.fromkeys(data, "")
    return remembered
