"""Which naming patterns keep tenants apart: namespace safety of a pattern (SPEC 5).

`naming.py` computes a local key for one object and refuses system namespaces for every object;
this module judges a pattern before any object meets it: whether the objects of one workspace can
land in namespaces the tenant chooses (`tenant_steers_namespace`), whether two workspaces can never
share a namespace (`is_per_workspace`), and what a PublishedResource must not ask for
(`namespace_pattern_problems`, `related_namespace_problem`, used by `parsing.py`).
"""

from __future__ import annotations

from servlet.core import name_templates, related_templates
from servlet.core.model import Naming, Origin, Problem, RelatedResource
from servlet.core.naming import (
    _PLACEHOLDER_SET,
    CLUSTER_NAME,
    DEFAULT_NAMESPACE,
    NAME,
    NAME_HASH,
    NAMESPACE,
    NAMESPACE_HASH,
    SHARED_OPT_IN,
    SYSTEM_PREFIX,
    _parts,
)
from servlet.core.templates import TemplateError, is_template

# Placeholders whose value comes from the tenant's object: verbatim, or as a hash the tenant
# cannot steer to a chosen value (finding a name for a given SHA-1 prefix of 80 bits is infeasible).
_TENANT_TEXT = frozenset({NAMESPACE, NAME})
_TENANT_VALUES = frozenset({NAMESPACE, NAMESPACE_HASH, NAME, NAME_HASH})


def tenant_steers_namespace(pattern: str) -> bool:
    """Whether the objects of one workspace can land in different namespaces under `pattern`."""
    if is_template(pattern):
        template = name_templates.parsed(pattern)
        return not isinstance(template, TemplateError) and name_templates.reads_tenant_data(template)
    return any(part in _TENANT_VALUES for part in _parts(pattern))


def is_per_workspace(pattern: str) -> bool:
    """Whether two workspaces can never get the same namespace from `pattern`.

    True when the pattern holds `$remoteClusterName` and takes the remote namespace and name
    only as hashes. The reason is length, not separators: a kcp logical cluster name may hold
    every character a namespace can ('-' included), so no character marks where it ends. Every
    other part of such a pattern has a length fixed for a PublishedResource (literal text; a hash
    is 20 characters, or empty for every object of a cluster-scoped resource), so the length of
    a namespace gives the cluster name's length and place, hence the cluster name. Verbatim text
    breaks it: under `$remoteClusterName-$remoteNamespace`, workspace `a` with namespace `b-c`
    and workspace `a-b` with namespace `c` both get `a-b-c`. A template is judged by the same
    argument (`name_templates.is_per_workspace`).
    """
    if is_template(pattern):
        template = name_templates.parsed(pattern)
        return not isinstance(template, TemplateError) and name_templates.is_per_workspace(template)
    parts = _parts(pattern)
    return CLUSTER_NAME in parts and not any(part in _TENANT_TEXT for part in parts)


def shares_tenant_chosen_namespaces(naming: Naming) -> bool:
    """Whether tenants of different workspaces choose, and may share, the local namespace."""
    pattern = naming.namespace
    return pattern is not None and tenant_steers_namespace(pattern) and not is_per_workspace(pattern)


def namespace_pattern_problems(naming: Naming) -> list[Problem]:
    """What is wrong with `naming.namespace` whatever object it meets; [] when nothing is."""
    pattern = naming.namespace
    if pattern is None:
        return []
    field = "spec.naming.namespace"
    problems = []
    literal_start = _literal_start(pattern)
    if literal_start.startswith(SYSTEM_PREFIX):
        problems.append(
            Problem(
                field=field,
                message=(
                    f"'{pattern}' always yields a system namespace (kube-*), where the cluster keeps its own "
                    "workloads and credentials; no copy is ever written there"
                ),
            )
        )
    elif pattern == DEFAULT_NAMESPACE and not naming.allow_shared_namespaces:
        problems.append(
            Problem(
                field=field,
                message=(
                    f"'default' is the cluster's default namespace, shared with everything else on it; copies go "
                    f"there only with {SHARED_OPT_IN}: true"
                ),
            )
        )
    if shares_tenant_chosen_namespaces(naming) and not naming.allow_shared_namespaces:
        problems.append(
            Problem(
                field=field,
                message=(
                    f"'{pattern}' lets tenants choose the local namespace, so objects of different workspaces can land "
                    "in the same one (another workspace's namespace, or one such as kube-system); make it per-workspace "
                    "with $remoteClusterName, taking the remote namespace and name only as $remoteNamespaceHash and "
                    f"$remoteNameHash, or share namespaces on purpose with {SHARED_OPT_IN}: true"
                ),
            )
        )
    return problems


def _literal_start(pattern: str) -> str:
    """The text every namespace of `pattern` starts with."""
    if is_template(pattern):
        template = name_templates.parsed(pattern)
        return "" if isinstance(template, TemplateError) else name_templates.leading_text(template)
    parts = _parts(pattern)
    return parts[0] if parts and parts[0] not in _PLACEHOLDER_SET else ""


# Paths into the local primary that name its own namespace, which the naming pattern chose.
_NAMESPACE_PATHS = ("metadata.namespace",)


def related_namespace_problem(naming: Naming, related: RelatedResource, *, path: str) -> Problem | None:
    """A service-origin related object read from a namespace the tenant chose, or None.

    Under shared, tenant-chosen namespaces the primary's local namespace may be one the tenant
    merely named (another workspace's, or a service's own), and a Secret of origin service found
    there by a name the tenant also chooses would be copied up into the tenant's workspace.
    """
    if related.origin is not Origin.SERVICE or not shares_tenant_chosen_namespaces(naming):
        return None
    namespace = related.reference.namespace
    if isinstance(namespace, str):
        # A template: the primary's namespace is the one field it may read that the tenant steers.
        if not related_templates.reads_namespace(namespace):
            return None
    elif namespace is not None:
        constant = namespace.regex is not None and namespace.regex.pattern == ""
        rooted = any(namespace.path == root or namespace.path.startswith(f"{root}.") for root in _NAMESPACE_PATHS)
        if constant or not rooted:
            return None
    source = (
        "the primary's namespace"
        if namespace is None
        else f"{namespace!r}"
        if isinstance(namespace, str)
        else f"{namespace.path!r}"
    )
    return Problem(
        field=f"{path}.{'object' if related.reference.object_form else 'reference'}.namespace",
        message=(
            f"origin service reads the object from {source}, which the tenant chooses through spec.naming.namespace "
            f"'{naming.namespace}' ({SHARED_OPT_IN}); a tenant could have Secrets or ConfigMaps of any such namespace "
            "copied into its workspace; take the namespace from a path under status or a constant (a regex with an "
            "empty pattern and the namespace as replacement)"
        ),
    )
