"""Where a remote object's local copy lives: placeholder patterns, default rules, DNS checks (SPEC 5).

A local namespace and name are computed once, when the local copy is created; afterwards the copy
is found by its link labels (`metadata.py`), so nothing here is ever used to *find* an object.

Deliberately not here: parsing `spec.naming` out of a manifest (`parsing.py` reports unknown
placeholders there) and any knowledge of which objects already exist.
"""

from __future__ import annotations

import functools
import re

from servlet.core.hashing import name_sha1
from servlet.core.model import LocalKey, Naming, Problem, RemoteKey

CLUSTER_NAME = "$remoteClusterName"
NAMESPACE = "$remoteNamespace"
NAMESPACE_HASH = "$remoteNamespaceHash"
NAME = "$remoteName"
NAME_HASH = "$remoteNameHash"

# Longest first: a single left-to-right alternation then never reads `$remoteNamespaceHash`
# as `$remoteNamespace` followed by the text `Hash`.
PLACEHOLDERS: tuple[str, ...] = tuple(
    sorted((CLUSTER_NAME, NAMESPACE, NAMESPACE_HASH, NAME, NAME_HASH), key=lambda p: (-len(p), p))
)
HASH_LENGTH = 20

_PLACEHOLDER_RE = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))
# A `$remote` word: letters only, so `$remoteName2` is `$remoteName` followed by "2", while a
# misspelling such as `$remoteNme` or `$remoteNameHashes` is one unknown token.
_TOKEN_RE = re.compile(r"\$remote[A-Za-z]*")

_DNS_LABEL_RE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
DNS_LABEL_MAX = 63
DNS_SUBDOMAIN_MAX = 253

_LABEL_RULE = (
    "a DNS-1123 label (lower-case letters, digits and '-', starting and ending with a letter "
    "or digit, at most 63 characters)"
)
_SUBDOMAIN_RULE = (
    "a DNS-1123 subdomain (dot-separated parts of lower-case letters, digits and '-' that start and end "
    "with a letter or digit, at most 253 characters)"
)


def is_dns1123_label(value: str) -> bool:
    return len(value) <= DNS_LABEL_MAX and _DNS_LABEL_RE.fullmatch(value) is not None


def is_dns1123_subdomain(value: str) -> bool:
    # As the API server checks it: only the total length is limited, not each part's.
    return len(value) <= DNS_SUBDOMAIN_MAX and all(_DNS_LABEL_RE.fullmatch(part) for part in value.split("."))


def unknown_placeholders(pattern: str) -> tuple[str, ...]:
    """Every `$remote...` token of `pattern` that is not a placeholder, once each, in order."""
    unknown = [token for token in _TOKEN_RE.findall(pattern) if token not in PLACEHOLDERS]
    return tuple(dict.fromkeys(unknown))


def short_hash(value: str) -> str:
    """The placeholder hash: first 20 hex characters of SHA-1, and "" for "" (no namespace)."""
    return name_sha1(value)[:HASH_LENGTH] if value else ""


def expand(pattern: str, *, remote: RemoteKey) -> str:
    # One pass over the pattern's parts: text produced by a replacement is never scanned again;
    # hashes only when asked for.
    values = {
        CLUSTER_NAME: remote.cluster,
        NAMESPACE: remote.namespace,
        NAME: remote.name,
    }
    parts = _parts(pattern)
    if NAMESPACE_HASH in parts:
        values[NAMESPACE_HASH] = short_hash(remote.namespace)
    if NAME_HASH in parts:
        values[NAME_HASH] = short_hash(remote.name)
    return "".join([values[part] if part in _PLACEHOLDER_SET else part for part in parts])


_PLACEHOLDER_SET = frozenset(PLACEHOLDERS)


@functools.lru_cache(maxsize=256)
def _parts(pattern: str) -> tuple[str, ...]:
    """`pattern` split into literal text and placeholders, in order (a pattern is split once)."""
    return tuple(part for part in re.split(f"({_PLACEHOLDER_RE.pattern})", pattern) if part)


def default_naming(*, local_namespaced: bool, remote_namespaced: bool) -> Naming:
    """The SPEC 5 default rule; every combination keeps distinct remote objects apart."""
    return Naming(
        namespace=CLUSTER_NAME if local_namespaced else None,
        name=_default_name(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced),
    )


def _default_name(*, local_namespaced: bool, remote_namespaced: bool) -> str:
    name = f"{NAMESPACE_HASH}-{NAME_HASH}" if remote_namespaced else NAME_HASH
    # Without a namespace to keep workspaces apart, the cluster name moves into the name.
    return name if local_namespaced else f"{CLUSTER_NAME}-{name}"


@functools.lru_cache(maxsize=1024)  # asked twice in a reconcile: for the namespace, then for the plan
def local_key_for(
    *, naming: Naming, remote: RemoteKey, local_namespaced: bool, remote_namespaced: bool,
) -> LocalKey | Problem:
    """The local namespace and name for `remote`, or a Problem naming the rule and its result.

    Unset fields of `naming` fall back to the default rule of the scope combination. A
    cluster-scoped local object gets namespace "" whatever `naming.namespace` says.
    """
    namespace = ""
    if local_namespaced:
        namespace_rule = CLUSTER_NAME if naming.namespace is None else naming.namespace
        namespace = expand(namespace_rule, remote=remote)
        if not is_dns1123_label(namespace):
            return _invalid(
                field="spec.naming.namespace", rule=namespace_rule, result=namespace,
                by_default=naming.namespace is None, expected=_LABEL_RULE,
            )
    name_rule = naming.name
    if name_rule is None:
        name_rule = _default_name(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced)
    name = expand(name_rule, remote=remote)
    if not is_dns1123_subdomain(name):
        return _invalid(
            field="spec.naming.name", rule=name_rule, result=name,
            by_default=naming.name is None, expected=_SUBDOMAIN_RULE,
        )
    return LocalKey(namespace, name)  # positional: a class called with keywords costs a dict per call


def _invalid(*, field: str, rule: str, result: str, by_default: bool, expected: str) -> Problem:
    source = "default naming" if by_default else "pattern"
    return Problem(
        field=field,
        message=f"{source} '{rule}' yields '{result}', which is not {expected}",
    )
