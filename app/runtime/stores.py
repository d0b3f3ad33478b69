"""What an informer keeps of each object, and how: as decoded dicts, or compact, as their JSON bytes.

A decoded object costs several times its JSON in Python dicts and strings (measured on the
benchmark's Widgets: about 5 KB of heap for the 1.5 KB of JSON of an object and its copy). The informers of the synced kinds hold
every object of every workspace, so they keep each object as the bytes of its JSON and decode it on
every read: a read costs a decode (about as much as `json.loads` of the object, which the planning
benchmark prices), and memory follows the JSON. The informers whose objects are read in bulk on every
reconcile (CRDs, PublishedResources) keep the plain store.

The two stores answer every read the same (a property test proves it); `PlainStore` is the rule.
A value the JSON encoder refuses (a lone surrogate, an integer beyond 64 bits, which the fallback
decoder of `jsontext` accepts) is kept decoded, so nothing the plain store holds is lost.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, Protocol, TypeVar

import msgspec

from servlet.core import jsontext
from servlet.core.keys import CLUSTER_ANNOTATION

Key = TypeVar("Key")
Object = dict[str, Any]
_encoder = msgspec.json.Encoder()
# msgspec's `encode` hands back its growing buffer, about half as large again as the JSON, and a
# cache keeps it for the object's lifetime; encoding into one reused buffer and copying out the
# JSON keeps exactly its bytes, at the same speed (measured: 748 against 1,096 bytes a 705-byte
# object).
_buffer = bytearray()
METADATA_API_VERSION = "meta.k8s.io/v1"
PARTIAL_KIND = "PartialObjectMetadata"
# The metadata a metadata-only informer keeps (plus the kcp.io/cluster annotation).
_IDENTITY_FIELDS = ("name", "namespace", "uid", "resourceVersion", "deletionTimestamp")
# Of its ownerReferences, what names an owner (`watch.byOwner` wakes it), for at most this many:
# what a tenant can make the servlet hold per object stays bounded.
OWNER_FIELDS = ("apiVersion", "kind", "name", "uid")
MAX_OWNER_REFERENCES = 8


class ObjectStore(Protocol[Key]):
    """The objects of one informer by key; reads hand out objects the caller must not change."""

    def get(self, key: Key) -> Object | None: ...

    def version(self, key: Key) -> str | None:
        """The stored object's resourceVersion ("" when it has none), None when nothing is stored."""
        ...

    def put(self, key: Key, obj: Object) -> None: ...

    def pop(self, key: Key) -> Object | None: ...

    def keys(self) -> list[Key]: ...

    def items(self) -> Iterator[tuple[Key, Object]]: ...

    def __contains__(self, key: object) -> bool: ...

    def __len__(self) -> int: ...


def version_of(obj: Object) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class PlainStore(ObjectStore[Key]):
    """The objects as they were decoded: reads are free, memory is that of Python dicts."""

    def __init__(self) -> None:
        self._objects: dict[Key, Object] = {}

    def get(self, key: Key) -> Object | None:
        return self._objects.get(key)

    def version(self, key: Key) -> str | None:
        obj = self._objects.get(key)
        return None if obj is None else version_of(obj)

    def put(self, key: Key, obj: Object) -> None:
        self._objects[key] = obj

    def pop(self, key: Key) -> Object | None:
        return self._objects.pop(key, None)

    def keys(self) -> list[Key]:
        return list(self._objects)

    def items(self) -> Iterator[tuple[Key, Object]]:
        yield from self._objects.items()

    def __contains__(self, key: object) -> bool:
        return key in self._objects

    def __len__(self) -> int:
        return len(self._objects)


class CompactStore(ObjectStore[Key]):
    """The objects as JSON bytes next to their resourceVersion; every read decodes a fresh copy."""

    def __init__(self) -> None:
        self._entries: dict[Key, tuple[str, bytes | Object]] = {}

    def get(self, key: Key) -> Object | None:
        entry = self._entries.get(key)
        return None if entry is None else _decoded(entry[1])

    def version(self, key: Key) -> str | None:
        entry = self._entries.get(key)
        return None if entry is None else entry[0]

    def put(self, key: Key, obj: Object) -> None:
        try:
            _encoder.encode_into(obj, _buffer)
            stored: bytes | Object = bytes(_buffer)
        except (TypeError, ValueError, OverflowError, UnicodeEncodeError, msgspec.MsgspecError):
            stored = obj
        self._entries[key] = (version_of(obj), stored)

    def pop(self, key: Key) -> Object | None:
        entry = self._entries.pop(key, None)
        return None if entry is None else _decoded(entry[1])

    def keys(self) -> list[Key]:
        return list(self._entries)

    def items(self) -> Iterator[tuple[Key, Object]]:
        for key, (_, stored) in list(self._entries.items()):
            yield key, _decoded(stored)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)


def _decoded(stored: bytes | Object) -> Object:
    if isinstance(stored, bytes):
        obj: Object = jsontext.decode(stored)
        return obj
    return stored


def without_managed_fields(obj: Any) -> Any:
    """The object without `metadata.managedFields` (changed in place; it was just decoded).

    They serve server-side apply, which the servlet never uses, and can be as large as the rest of
    the object; every object of every workspace is cached (client-go informers trim them too).
    """
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


def identity_of(obj: Any) -> Any:
    """What a metadata-only informer keeps of an object: its key, uid, version and deletion mark,
    and who owns it (the first `MAX_OWNER_REFERENCES` ownerReferences, naming fields only).

    Enough to know that an object exists, to notice any change of it (every change moves the
    resourceVersion), to tell whether a held copy of its content is current, and to find the
    primary that owns it.
    """
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(metadata, dict):
        return obj
    kept = {field: metadata[field] for field in _IDENTITY_FIELDS if field in metadata}
    cluster = (metadata.get("annotations") or {}).get(CLUSTER_ANNOTATION)
    if cluster is not None:
        kept["annotations"] = {CLUSTER_ANNOTATION: cluster}
    owners = metadata.get("ownerReferences")
    if isinstance(owners, list) and owners:
        kept["ownerReferences"] = [
            {field: owner[field] for field in OWNER_FIELDS if field in owner}
            for owner in owners[:MAX_OWNER_REFERENCES]
            if isinstance(owner, dict)
        ]
    return {"apiVersion": METADATA_API_VERSION, "kind": PARTIAL_KIND, "metadata": kept}


def is_partial(obj: Mapping[str, Any]) -> bool:
    """Whether `obj` is only an object's metadata (from a metadata-only informer)."""
    return obj.get("kind") == PARTIAL_KIND and obj.get("apiVersion") == METADATA_API_VERSION
