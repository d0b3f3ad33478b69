"""Converting a PublishedResource of kcp's api-syncagent (`syncagent.kcp.io/v1alpha1`) into the servlet's.

The peer's API (v0.7) and ours share most of their shape; this module maps it field by field and
says what it could not carry over, one note per field with the reason, so a service owner can
decide before applying the result. It never drops a field silently: every field of the input is
either carried over, mapped to its equivalent, or named in a note.

The result is checked by our own parser (`convert_checked.py`): a value the servlet refuses
(a system namespace in `naming`, an expression our templates lack) is dropped with the parser's
reason, so every converted PublishedResource is valid; what cannot be dropped (the resource
itself) fails the conversion.

Deliberately not here: reading files and printing (the `servlet convert` command), and related
resources (`convert_related.py`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from attrs import frozen

from servlet.core.convert_checked import checked
from servlet.core.convert_mutation import convert_mutation
from servlet.core.convert_notes import ConversionNote, Notes
from servlet.core.convert_related import convert_related
from servlet.core.fields import describe, is_dns1035
from servlet.core.parsing import API_VERSION, KIND

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["PEER_API_VERSION", "Conversion", "ConversionNote", "convert_published_resource"]

PEER_API_VERSION = "syncagent.kcp.io/v1alpha1"
# A namespace selector that names exactly one namespace: Kubernetes labels every namespace so.
_NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
_KEPT_METADATA = ("name", "labels", "annotations")
_KUBECTL_LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
_PEER_DEFAULT_NAME = "{{ .Object.metadata.namespace | sha3short }}-{{ .Object.metadata.name | sha3short }}"


@frozen
class Conversion:
    """The converted manifest (None when nothing could be converted), the notes, and the errors.

    `notes`: fields not carried over (or changed), each with why; the result is valid without them.
    `errors`: why there is no result."""

    name: str
    manifest: dict[str, Any] | None
    notes: tuple[ConversionNote, ...] = ()
    errors: tuple[ConversionNote, ...] = ()


def convert_published_resource(manifest: object) -> Conversion:
    """`manifest`, a peer PublishedResource, as one of ours; pure: the input is not changed."""
    if not isinstance(manifest, Mapping):
        return _failed("", ConversionNote("", f"a PublishedResource must be a map, not {describe(manifest)}"))
    metadata = manifest.get("metadata")
    name = str(metadata.get("name") or "") if isinstance(metadata, Mapping) else ""
    api_version, kind = manifest.get("apiVersion"), manifest.get("kind")
    if api_version == API_VERSION and kind == KIND:
        return _failed(name, ConversionNote("apiVersion", f"is already {API_VERSION}: nothing to convert"))
    if api_version != PEER_API_VERSION or kind != KIND:
        shown = f"{describe(api_version)} {describe(kind)}"
        return _failed(name, ConversionNote("apiVersion", f"must be {PEER_API_VERSION} {KIND}, not {shown}"))
    notes = Notes()
    for key in manifest:
        if key not in ("apiVersion", "kind", "metadata", "spec", "status"):
            notes.add(key, "unknown field of a PublishedResource; dropped")
    if "status" in manifest:
        notes.add("status", "written by the servlet itself; dropped")
    spec = manifest.get("spec")
    if not isinstance(spec, Mapping):
        return _failed(name, ConversionNote("spec", f"must be a map, not {describe(spec)}"))
    spec_converted, related_origins = _spec(spec, notes)
    converted: dict[str, Any] = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": _metadata(metadata, notes),
        "spec": spec_converted,
    }
    result, errors = checked(converted, notes, related_origins=related_origins)
    return Conversion(name=name, manifest=result, notes=notes.items(), errors=errors)


def _failed(name: str, error: ConversionNote) -> Conversion:
    return Conversion(name=name, manifest=None, errors=(error,))


def _metadata(metadata: object, notes: Notes) -> dict[str, Any]:
    if not isinstance(metadata, Mapping):
        return {}
    kept: dict[str, Any] = {}
    for key, value in metadata.items():
        if key not in _KEPT_METADATA:
            notes.add(f"metadata.{key}", "set by the API server or the api-syncagent; dropped")
        elif key == "annotations" and isinstance(value, Mapping) and _KUBECTL_LAST_APPLIED in value:
            notes.add(
                f"metadata.annotations.{_KUBECTL_LAST_APPLIED}",
                "kubectl's record of the api-syncagent's manifest; dropped",
            )
            kept[key] = {k: v for k, v in value.items() if k != _KUBECTL_LAST_APPLIED}
        else:
            kept[key] = value
    return {key: value for key, value in kept.items() if value != {}}


_SPEC_HANDLED = (
    "resource",
    "filter",
    "naming",
    "projection",
    "related",
    "mutation",
    "synchronization",
    "enableWorkspacePaths",
)


def _spec(spec: Mapping[str, Any], notes: Notes) -> tuple[dict[str, Any], list[int]]:
    """The converted spec, and for each converted related entry its index in the peer's list."""
    result: dict[str, Any] = {"resource": _resource(spec.get("resource"), notes)}
    for key in spec:
        if key not in _SPEC_HANDLED:
            notes.add(f"spec.{key}", "unknown field of the api-syncagent's PublishedResource (v0.7); dropped")
    filter_ = _filter(spec.get("filter"), notes)
    if filter_:
        result["filter"] = filter_
    projection = _projection(spec.get("projection"), notes)
    if projection:
        result["projection"] = projection
    naming = _naming(spec.get("naming"), notes)
    if naming:
        result["naming"] = naming
    if spec.get("enableWorkspacePaths") is not None:
        result["enableWorkspacePaths"] = spec["enableWorkspacePaths"]
    synchronization = spec.get("synchronization")
    if isinstance(synchronization, Mapping):
        for key in synchronization:
            if key != "enabled":
                notes.add(f"spec.synchronization.{key}", "unknown field; dropped")
        if "enabled" in synchronization:
            result["synchronization"] = {"enabled": synchronization["enabled"]}
        else:
            notes.add("spec.synchronization", "has no enabled, which the api-syncagent requires; dropped")
    elif synchronization is not None:
        result["synchronization"] = synchronization  # our parser names what is wrong with it
    related = convert_related(spec.get("related"), notes)
    if related:
        result["related"] = [entry for _, entry in related]
    mutation = convert_mutation(spec.get("mutation"), path="spec.mutation", notes=notes)
    if mutation is not None:
        result["mutation"] = mutation
    return result, [index for index, _ in related]


def _resource(resource: object, notes: Notes) -> object:
    if not isinstance(resource, Mapping):
        return resource  # our parser reports it, and the conversion fails on it
    result: dict[str, Any] = {}
    for key, value in resource.items():
        if key in ("apiGroup", "kind", "version", "versions"):
            result[key] = value
        else:
            notes.add(f"spec.resource.{key}", "unknown field; dropped")
    if result.get("version") and result.get("versions"):
        notes.add("spec.resource.version", "set next to versions, which the servlet reads alone; dropped")
        del result["version"]
    if not result.get("version") and not result.get("versions"):
        # The peer publishes every version then; the servlet does so for an empty list.
        result.pop("version", None)
        result["versions"] = []
    return result


def _projection(projection: object, notes: Notes) -> dict[str, Any]:
    if not isinstance(projection, Mapping):
        if projection is not None:
            notes.add("spec.projection", f"must be a map, not {describe(projection)}; dropped")
        return {}
    result: dict[str, Any] = {}
    for key, value in projection.items():
        path = f"spec.projection.{key}"
        if key in ("group", "apiGroup"):
            notes.add(path, "the API group in kcp is always the servlet's (--api-group); dropped")
        elif key == "plural" and isinstance(value, str) and not is_dns1035(value) and is_dns1035(value.lower()):
            notes.add(path, f"{describe(value)} lower-cased: kcp takes lower-case plurals only")
            result[key] = value.lower()
        elif key in ("version", "versions", "kind", "plural", "shortNames", "categories", "scope"):
            if value is not None and value != "":
                result[key] = value
        else:
            notes.add(path, "unknown field; dropped")
    kind = result.get("kind")
    if isinstance(kind, str) and kind and "plural" not in result:
        # The peer derives the plural as the lower-case kind + "s"; the servlet knows more English.
        result["plural"] = kind.lower() + "s"
    return result


def _filter(resource_filter: object, notes: Notes) -> dict[str, Any]:
    if not isinstance(resource_filter, Mapping):
        return {}
    result: dict[str, Any] = {}
    for key, value in resource_filter.items():
        if key == "resource":
            result[key] = value
        elif key == "namespace":
            namespace = _one_namespace(value)
            if namespace is not None:
                result[key] = namespace
            else:
                notes.add(
                    "spec.filter.namespace",
                    "a label selector on namespaces; the servlet filters by one namespace name only, so "
                    "the filter is dropped and objects of every namespace are synced",
                )
        else:
            notes.add(f"spec.filter.{key}", "unknown field; dropped")
    return result


def _one_namespace(value: object) -> str | None:
    """The one namespace a namespace filter admits, when it admits exactly one by name."""
    if isinstance(value, str):
        return value  # as the peer's documentation writes it
    if isinstance(value, Mapping) and set(value) == {"matchLabels"}:
        labels = value.get("matchLabels")
        if isinstance(labels, Mapping) and set(labels) == {_NAMESPACE_NAME_LABEL}:
            name = labels[_NAMESPACE_NAME_LABEL]
            return name if isinstance(name, str) else None
    return None


def _naming(naming: object, notes: Notes) -> dict[str, Any]:
    if not isinstance(naming, Mapping) or not naming.get("name"):
        notes.add(
            "spec.naming.name",
            "not set: the api-syncagent's default names copies with SHA3 hashes, the servlet's default with "
            f"SHA-1 hashes; set it to {_PEER_DEFAULT_NAME!r} to keep the api-syncagent's names of namespaced objects",
        )
    if not isinstance(naming, Mapping):
        return {}
    result: dict[str, Any] = {}
    for key, value in naming.items():
        if key in ("name", "namespace") and value:
            result[key] = value
        elif key not in ("name", "namespace"):
            notes.add(f"spec.naming.{key}", "unknown field; dropped")
    return result
