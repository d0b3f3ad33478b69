"""Which type a related entry's `group`/`version`/`resource` names, and the claim kcp needs for it.

A related entry of the general form names its type by group, version and resource. Writing an
object needs its kind and scope too, and the type must be served on the service cluster: the
answer comes from what the service cluster serves, its CustomResourceDefinitions plus the
Kubernetes built-ins below (the service cluster's discovery of them). The daemon, `servlet plan`
(offline from the given CRDs, live from the cluster's) and the library resolve the same way.

In kcp the type is read through the export's virtual workspace, which serves it only with a
permission claim on the APIExport (`required_claims`), unless the export provides the type itself.

Deliberately not here: reading discovery (the callers pass the CRDs), deciding anything about
objects (`related.py`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import attrs
from attrs import frozen

from servlet.core.model import Origin, PublishedResource, RelatedAPI, RelatedKind, RelatedResource, ResourceType

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["Claim", "related_crds", "required_claims", "resolve_related_types"]

Manifest = Mapping[str, Any]

# How many related objects one primary may have: an entry through a list path may name at most this
# many, and all entries together, selectors included, may find at most this many. Each is read,
# held and recorded in the local primary's annotations, and the tenant chooses how many.
RELATED_OBJECTS_PER_PRIMARY_MAX = 64

# Namespaced built-in types a related entry may name (their kcp claims need no identity hash).
_BUILTIN = (
    ResourceType("", "v1", "Secret", "secrets", True),
    ResourceType("", "v1", "ConfigMap", "configmaps", True),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True),
    ResourceType("", "v1", "Service", "services", True),
    ResourceType("", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True),
    ResourceType("apps", "v1", "Deployment", "deployments", True),
    ResourceType("apps", "v1", "StatefulSet", "statefulsets", True),
    ResourceType("batch", "v1", "Job", "jobs", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    ResourceType("networking.k8s.io", "v1", "Ingress", "ingresses", True),
)
_BUILTIN_BY_API = {(t.group, t.version, t.plural): t for t in _BUILTIN}
# What kcp lets an export claim without an identity hash: its claimable built-ins, and the group
# apis.kcp.io. Anything else (a Deployment too: kcp serves none of its own) needs the identity
# hash of the export that provides it.
_CLAIMABLE_BUILTINS = frozenset(
    {
        *(("", resource) for resource in ("namespaces", "configmaps", "secrets", "serviceaccounts", "events")),
        ("", "resourcequotas"),
        *(
            ("rbac.authorization.k8s.io", resource)
            for resource in ("clusterroles", "clusterrolebindings", "roles", "rolebindings")
        ),
        ("events.k8s.io", "events"),
        ("coordination.k8s.io", "leases"),
        ("certificates.k8s.io", "certificatesigningrequests"),
        *(
            ("admissionregistration.k8s.io", resource)
            for resource in (
                "mutatingwebhookconfigurations",
                "validatingwebhookconfigurations",
                "mutatingadmissionpolicies",
                "mutatingadmissionpolicybindings",
                "validatingadmissionpolicies",
                "validatingadmissionpolicybindings",
            )
        ),
        ("apiextensions.k8s.io", "customresourcedefinitions"),
        ("core.kcp.io", "logicalclusters"),
    }
)
_CLAIMABLE_GROUPS = frozenset({"apis.kcp.io"})


def _mapping(value: object) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def crd_type(crds: Iterable[Manifest], api: RelatedAPI) -> ResourceType | None:
    """The type a served version of a CRD on the service cluster gives `api`, else None."""
    for crd in crds:
        spec = _mapping(crd.get("spec"))
        names = _mapping(spec.get("names"))
        if (spec.get("group"), names.get("plural")) != (api.group, api.resource):
            continue
        if _mapping(crd.get("metadata")).get("deletionTimestamp"):
            return None
        versions = spec.get("versions")
        served = {
            _mapping(version).get("name")
            for version in (versions if isinstance(versions, list) else ())
            if _mapping(version).get("served", True)
        }
        kind = names.get("kind")
        if api.version not in served or not isinstance(kind, str):
            return None
        return ResourceType(api.group, api.version, kind, api.resource, spec.get("scope") != "Cluster")
    return None


def resolve_related_types(published: PublishedResource, crds: Iterable[Manifest]) -> PublishedResource:
    """`published` with each `group`/`version`/`resource` entry's type resolved where served.

    An entry whose type is not served keeps `resolved` None: its objects are reported, never
    synced, while every other entry keeps working.
    """
    related = published.spec.related
    if all(item.api is None and item.projection is None and not item.sync_status for item in related):
        return published
    crds = list(crds)
    resolved = tuple(
        attrs.evolve(
            item,
            resolved=item.resolved if item.api is None else _served(item.api, crds),
            resolved_projection=None if item.projection is None else _served(item.projection, crds),
            status_subresource=_has_status_subresource(crds, _status_api(item)),
        )
        for item in related
    )
    return attrs.evolve(published, spec=attrs.evolve(published.spec, related=resolved))


def related_crds(published: PublishedResource, crds: Iterable[Manifest]) -> list[Manifest]:
    """The CRDs among `crds` that the related entries of `published` name (to read or watch them)."""
    wanted = {
        (api.group, api.resource)
        for item in published.spec.related
        for api in (item.api, item.projection)
        if api is not None
    }
    if not wanted:
        return []
    return [
        crd
        for crd in crds
        if (_mapping(crd.get("spec")).get("group"), _mapping(_mapping(crd.get("spec")).get("names")).get("plural"))
        in wanted
    ]


def _status_api(item: RelatedResource) -> RelatedAPI | None:
    """The type whose status `syncStatus` writes: the copy's (origin service), the origin's (origin platform)."""
    return item.api if item.origin is Origin.PLATFORM else item.projection or item.api


def _has_status_subresource(crds: list[Manifest], api: RelatedAPI | None) -> bool:
    """Whether the CRD of `api` has a status subresource in that version (built-ins here have none)."""
    if api is None:
        return False
    for crd in crds:
        spec = _mapping(crd.get("spec"))
        if (spec.get("group"), _mapping(spec.get("names")).get("plural")) != (api.group, api.resource):
            continue
        versions = spec.get("versions")
        for version in versions if isinstance(versions, list) else ():
            if _mapping(version).get("name") == api.version:
                return "status" in _mapping(_mapping(version).get("subresources"))
    return False


def _served(api: RelatedAPI, crds: list[Manifest]) -> ResourceType | None:
    return _BUILTIN_BY_API.get(_key(api)) or crd_type(crds, api)


def _key(api: RelatedAPI) -> tuple[str, str, str]:
    return (api.group, api.version, api.resource)


@frozen(order=True)
class Claim:
    """A permission claim on the APIExport: a type kcp serves through the virtual workspace."""

    group: str
    resource: str
    identity_hash: str = ""

    def to_dict(self) -> dict[str, Any]:
        # kcp rejects a v1alpha1 claim that has neither `all: true` nor a resource selector.
        claim: dict[str, Any] = {"group": self.group, "resource": self.resource}
        if self.identity_hash:
            claim["identityHash"] = self.identity_hash
        claim["all"] = True
        return claim


def platform_api(item: RelatedResource) -> RelatedAPI:
    """The type a related entry's objects have in kcp: the projected one for objects going up."""
    if item.projection is not None and item.origin is Origin.SERVICE:
        return item.projection
    if item.api is not None:
        return item.api
    plural = "secrets" if item.kind is RelatedKind.SECRET else "configmaps"
    return RelatedAPI(group="", version="v1", resource=plural)


def required_claims(related: Iterable[RelatedResource], *, exported: Iterable[tuple[str, str]]) -> frozenset[Claim]:
    """The claims the related entries need: every kcp-side type but those the export provides.

    `exported` holds the (group, resource) pairs of the export's own schemas. A type of another
    group is claimed with the identity hash of the export that provides it; without one kcp
    refuses the claim (and with it the whole patch of the export), so it is left out here and
    the entry's objects are reported as unreadable instead.
    """
    own = set(exported)
    claims: set[Claim] = set()
    for item in related:
        api = platform_api(item)
        if (api.group, api.resource) in own:
            continue
        if api.identity_hash:
            claims.add(Claim(api.group, api.resource, api.identity_hash))
        elif (api.group, api.resource) in _CLAIMABLE_BUILTINS or api.group in _CLAIMABLE_GROUPS:
            claims.add(Claim(api.group, api.resource))
    return frozenset(claims)
