"""The values the core reasons about: PublishedResources, servlet identity, object coordinates.

Everything here is a frozen attrs value built from plain data. Parsing a manifest into these
values lives in `parsing.py`; this module only defines the shapes, so every other core module
can depend on it without pulling in validation logic.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping

from attrs import field, frozen

from servlet.core.mutation_steps import Mutation

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = [
    "LabelSelector",
    "LocalKey",
    "Naming",
    "Origin",
    "Problem",
    "Projection",
    "PublishedResource",
    "PublishedResourceSpec",
    "RegexRule",
    "RelatedAPI",
    "RelatedKind",
    "RelatedReference",
    "RelatedResource",
    "RelatedSelector",
    "RemoteKey",
    "ResourceFilter",
    "ResourceType",
    "Scope",
    "SelectorOperator",
    "SelectorRequirement",
    "ServletIdentity",
    "SourceResource",
    "Synchronization",
    "ValueReference",
]


@frozen
class Problem:
    """One thing wrong with user input: where (a field path) and what (a plain sentence)."""

    field: str
    message: str

    def __str__(self) -> str:
        return f"{self.field}: {self.message}" if self.field else self.message


class Scope(enum.Enum):
    NAMESPACED = "Namespaced"
    CLUSTER = "Cluster"


class Origin(enum.Enum):
    SERVICE = "service"
    PLATFORM = "platform"


class RelatedKind(enum.Enum):
    SECRET = "Secret"
    CONFIGMAP = "ConfigMap"

    @property
    def plural(self) -> str:
        return "secrets" if self is RelatedKind.SECRET else "configmaps"


class SelectorOperator(enum.Enum):
    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"


def _frozen_mapping(value: Mapping[str, str] | Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """Accepts a dict or the pairs themselves, so defaults and `attrs.evolve` round-trip."""
    pairs = value.items() if isinstance(value, Mapping) else value
    return tuple(sorted(pairs))


@frozen
class SelectorRequirement:
    key: str
    operator: SelectorOperator
    values: tuple[str, ...] = ()


@frozen
class LabelSelector:
    """A Kubernetes label selector; `match_labels` is kept as sorted pairs so it is hashable."""

    match_labels: tuple[tuple[str, str], ...] = field(default=(), converter=_frozen_mapping)
    match_expressions: tuple[SelectorRequirement, ...] = ()


@frozen
class ResourceFilter:
    namespace: str | None = None
    labels: LabelSelector | None = None


@frozen
class SourceResource:
    """`spec.resource`: which CRD on the service cluster is published, and which of its versions.

    `version` is the one-version form; `versions` a list (None: not set; `()`: every served
    version). Neither set: the CRD's storage version. Parsing never lets both be set.
    """

    api_group: str
    kind: str
    version: str | None = None
    versions: tuple[str, ...] | None = None


@frozen
class Projection:
    """`spec.projection`. None means "not set"; an empty tuple is an explicit empty list.

    `versions` renames published versions, as sorted (CRD version, name in kcp) pairs; `version`
    is the one-version form of it."""

    version: str | None = None
    versions: tuple[tuple[str, str], ...] = field(default=(), converter=_frozen_mapping)
    kind: str | None = None
    plural: str | None = None
    short_names: tuple[str, ...] | None = None
    categories: tuple[str, ...] | None = None
    scope: Scope | None = None


@frozen
class Naming:
    """`spec.naming`: patterns for the local namespace and name (None: use the default rule).

    `allow_shared_namespaces` is the explicit opt-in to a namespace pattern tenants can steer
    across workspaces (`naming.py` says which patterns need it).
    """

    namespace: str | None = None
    name: str | None = None
    allow_shared_namespaces: bool = False


@frozen
class RegexRule:
    pattern: str
    replacement: str


@frozen
class ValueReference:
    """A JSONPath (no leading dot) into a primary object, optionally rewritten by a regex."""

    path: str
    regex: RegexRule | None = None


@frozen
class RelatedSelector:
    """`object.selector`: the related objects are those of the origin namespace whose labels match.

    `match_labels` keys and values are templates evaluated on the origin side's primary (a plain
    string is a template without actions). `rewrite` maps each found origin name to the
    destination name: a regex rule, or a template (its source) that reads `.Value`."""

    match_labels: tuple[tuple[str, str], ...]
    match_expressions: tuple[SelectorRequirement, ...]
    rewrite: RegexRule | str


@frozen
class RelatedReference:
    """Where a related object is found: a path (`ValueReference`) or a template (its source, `str`)
    for its name and, optionally, its namespace. `object_form`: written as `object` rather than
    `reference`, which only changes the field paths problems name.

    `selector`: found by labels instead (`name` is then unused); the planner expands such an
    entry into one entry per found object, whose `fixed` coordinates, (namespace, name) on the
    remote then the local side, were computed by the expansion (`related_selector.py`)."""

    name: ValueReference | str
    namespace: ValueReference | str | None = None
    object_form: bool = False
    selector: RelatedSelector | None = None
    fixed: tuple[tuple[str, str], tuple[str, str]] | None = None


@frozen
class RelatedAPI:
    """`group`/`version`/`resource` of a related entry: its type on the origin side, any group.

    `identity_hash`: the identity of the foreign APIExport that provides the type in kcp; the
    permission claim for it names that export."""

    group: str
    version: str
    resource: str
    identity_hash: str = ""


@frozen
class RelatedWatch:
    """`spec.related[].watch`: a change of an origin object wakes the primaries on its side that
    own it (`by_owner`: its ownerReferences name the primary's kind and uid) or, with `selector`,
    every primary of its workspace (origin platform) or of the service cluster (origin service)
    whose labels match."""

    by_owner: bool = False
    selector: LabelSelector | None = None


@frozen
class RelatedResource:
    """One `spec.related[]` entry: `kind` (Secret or ConfigMap) or `api` (any type) names its type.

    `resolved` is the type as the service cluster serves it (kind and scope), filled in by
    `resolution.py`; None for an `api` type not found there (yet). `projection` is the type on
    the destination side (the fields it leaves empty are the origin type's), resolved alike into
    `resolved_projection`. `cleanup`: False keeps every copy, whatever becomes of its origin or
    primary (the servlet creates and updates copies, and never deletes one). `sync_status`: the
    origin's status is copied too; `status_subresource`, resolved with the types, says whether
    the destination type writes it through a status subresource. `mutation`: steps that change
    the origin object before it is copied (`related_mutation.py`). `watch`: which primaries a
    change of an origin object of this type wakes, besides those that read it (None: only those)."""

    identifier: str
    origin: Origin
    kind: RelatedKind | None
    reference: RelatedReference
    api: RelatedAPI | None = None
    resolved: ResourceType | None = None
    projection: RelatedAPI | None = None
    resolved_projection: ResourceType | None = None
    cleanup: bool = True
    sync_status: bool = False
    status_subresource: bool = False
    mutation: Mutation = Mutation()
    watch: RelatedWatch | None = None


@frozen
class Synchronization:
    """`spec.synchronization`: `enabled: false` publishes the schema and its export entry, and syncs nothing."""

    enabled: bool = True


@frozen
class PublishedResourceSpec:
    resource: SourceResource
    filter: ResourceFilter = ResourceFilter()
    projection: Projection = Projection()
    naming: Naming = Naming()
    related: tuple[RelatedResource, ...] = ()
    mutation: Mutation = Mutation()
    synchronization: Synchronization = Synchronization()
    # `spec.enableWorkspacePaths`: read each workspace's path, for `.ClusterPath` and an annotation.
    workspace_paths: bool = False


@frozen
class PublishedResource:
    name: str
    spec: PublishedResourceSpec
    uid: str = ""
    generation: int = 0


@frozen
class ServletIdentity:
    """Who the servlet is (`--name`, `--api-group`) and where it runs (`--namespace`, "" if unknown)."""

    name: str
    api_group: str
    namespace: str = ""

    @property
    def protected_namespaces(self) -> frozenset[str]:
        """Local namespaces no copy may land in besides the system ones: the servlet's own."""
        return frozenset({self.namespace} - {""})

    @property
    def fq_name(self) -> str:
        return f"{self.name}.{self.api_group}"


@frozen(order=True)
class RemoteKey:
    """Where a remote object lives: logical cluster, namespace ("" if cluster-scoped), name.

    Ordered by (cluster, namespace, name): the first of several fresh objects claiming one local
    name gets it."""

    cluster: str
    namespace: str
    name: str


@frozen
class LocalKey:
    """Where a local object lives on the service cluster (namespace "" if cluster-scoped)."""

    namespace: str
    name: str


@frozen
class ResourceType:
    """One served resource: group/version/kind, plural and scope."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version
