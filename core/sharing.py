"""Warnings about PublishedResources that put several tenants' objects in one local namespace.

The default naming gives every workspace its own local namespace (`$remoteClusterName`). A fixed
`naming.namespace` (or one built only from the remote namespace) is valid and sometimes wanted,
but then tenants share a namespace on the service cluster: their names can collide, and a related
Secret or ConfigMap of origin `service` is looked up by a name the tenant chooses, in a namespace
holding other tenants' copies (or, for `kube-system`, the cluster's own Secrets). These are risks
an operator should see before publishing, so `servlet plan` reports them as warnings.

A related object's namespace taken from the tenant's own spec is worse than a risk: parsing
refuses it (`parsing._check_namespace_source`), so it needs no warning here. So does a namespace
pattern that lets tenants choose shared namespaces without `allowSharedNamespaces`, or that always
yields a system namespace (`namespace_safety.namespace_pattern_problems`); the warnings below are about what
stays valid.

Deliberately not here: refusing a PublishedResource (`parsing.py`, `naming.py` do) and anything
that needs the cluster's state; the rules look at the spec alone.
"""

from __future__ import annotations

from attrs import frozen

from servlet.core.model import Origin, PublishedResource
from servlet.core.namespace_safety import is_per_workspace
from servlet.core.naming import PLACEHOLDERS, is_system_namespace


@frozen
class SharingWarning:
    """One risk of a valid PublishedResource: which field, and a plain sentence saying why."""

    published_resource: str
    field: str
    message: str

    def to_dict(self) -> dict[str, str]:
        return {"object": f"PublishedResource {self.published_resource}", "field": self.field, "message": self.message}


def shared_namespace_warnings(
    published: PublishedResource, *, servlet_namespace: str = ""
) -> tuple[SharingWarning, ...]:
    """What is risky about where `published` puts local copies; () for per-workspace namespaces.

    `servlet_namespace` is where the servlet itself runs (its Lease); copies landing there share
    it with the servlet's own objects. Only an explicit `naming.namespace` can be shared: the
    default is `$remoteClusterName`.
    """
    warnings: list[SharingWarning] = []
    pattern = published.spec.naming.namespace
    if pattern is None or is_per_workspace(pattern):
        return tuple(warnings)
    name = published.name
    field = "spec.naming.namespace"
    fixed = not any(placeholder in pattern for placeholder in PLACEHOLDERS)
    where = f"namespace '{pattern}'" if fixed else f"namespaces named by '{pattern}'"
    warnings.append(
        SharingWarning(
            published_resource=name,
            field=field,
            message=(
                f"'{pattern}' is not per-workspace (it lacks $remoteClusterName, or copies the remote namespace "
                f"or name verbatim), so local copies from every workspace share the {where}; objects of "
                "different tenants can collide there and the servlet will report them as conflicts instead of "
                "syncing them"
            ),
        )
    )
    service_related = [r for r in published.spec.related if r.origin is Origin.SERVICE]
    if published.spec.related:
        identifiers = ", ".join(r.identifier for r in published.spec.related)
        warnings.append(
            SharingWarning(
                published_resource=name,
                field="spec.related",
                message=(
                    f"related resources ({identifiers}) are read and written in the shared {where}: a tenant "
                    "chooses their names through the primary object, so one tenant can name another "
                    "tenant's Secret or ConfigMap there"
                ),
            )
        )
    if fixed and (is_system_namespace(pattern) or pattern == servlet_namespace):
        owner = "the servlet's own namespace" if pattern == servlet_namespace else "a system namespace"
        risk = (
            f"; with related resources of origin service ({', '.join(r.identifier for r in service_related)}) "
            "a tenant can have any Secret or ConfigMap of that namespace copied into their workspace"
            if service_related
            else ""
        )
        warnings.append(
            SharingWarning(
                published_resource=name,
                field=field,
                message=f"'{pattern}' is {owner}: tenants' objects would be written next to the cluster's own{risk}",
            )
        )
    return tuple(warnings)
