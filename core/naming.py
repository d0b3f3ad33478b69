"""Where a remote object's local copy lives: placeholder patterns, default rules, DNS checks (SPEC 5).

A local namespace and name are computed once, when the local copy is created; afterwards the copy
is found by its link labels (`metadata.py`), so nothing here is ever used to *find* an object.

Namespace safety of a whole pattern (which patterns keep every workspace in namespaces of its
own) is judged in `namespace_safety.py`; the namespaces refused for every object are refused here
(`local_key_for`).

A pattern is either plain text with `$` placeholders or, when it holds `{{`, a Go template
(`name_templates.py`); `pattern_problems` refuses, before any object meets it, a pattern that
uses an unknown placeholder, field or function, or whose own text can never be part of a name.

Deliberately not here: parsing `spec.naming` out of a manifest (`parsing.py`) and any knowledge of
which objects already exist.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from typing import Any

from servlet.core import name_templates
from servlet.core.hashing import name_sha1
from servlet.core.model import LocalKey, Naming, Problem, RemoteKey
from servlet.core.templates import TemplateError, is_template

# The supported surface (see docs/library.md); other names here are internal and may change.
__all__ = ["PLACEHOLDERS", "default_naming", "expand", "local_key_for"]

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
# A `$` word: letters only, so `$remoteName2` is `$remoteName` followed by "2", while a
# misspelling such as `$remoteNme`, `$remoteNameHashes` or `$foo` is one unknown token (a `$` can
# never be part of a name, so none of them is meant as text).
_TOKEN_RE = re.compile(r"\$[A-Za-z]*")

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
    """Every `$` token of `pattern` that is not a placeholder, once each, in order."""
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


_NAME_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")


def pattern_problems(pattern: str, *, field: str, namespace: bool, workspace_paths: bool = False) -> list[Problem]:
    """Why `pattern` can never yield a name, whatever object it meets; [] when it may.

    Refused: an unknown `$` placeholder, a template the servlet cannot evaluate (unknown field or
    function, unsupported syntax), and text of the pattern's own that no name can hold
    (upper-case letters, `_`, a `.` in a namespace) or that is too long already. A template may
    read `.ClusterPath` only with `workspace_paths` (`spec.enableWorkspacePaths`).
    """
    if is_template(pattern):
        template = name_templates.parsed(pattern)
        if not isinstance(template, TemplateError):
            template = name_templates.path_problem(template, workspace_paths=workspace_paths) or template
        if isinstance(template, TemplateError):
            return [Problem(field=field, message=f"template {pattern!r}: {template}")]
        text = name_templates.literal_text(template)
    else:
        unknown = unknown_placeholders(pattern)
        if unknown:
            return [Problem(field=field, message=f"unknown placeholder {token}") for token in unknown]
        text = "".join(part for part in _parts(pattern) if part not in _PLACEHOLDER_SET)
    allowed = _NAME_CHARACTERS - {"."} if namespace else _NAME_CHARACTERS
    longest = DNS_LABEL_MAX if namespace else DNS_SUBDOMAIN_MAX
    kind = "namespace" if namespace else "name"
    never = sorted(set(text) - allowed)
    if never:
        shown = ", ".join(repr(character) for character in never)
        return [
            Problem(
                field=field,
                message=(
                    f"{pattern!r} can never yield a valid {kind}: its own text holds {shown}; a {kind} is "
                    f"{_LABEL_RULE if namespace else _SUBDOMAIN_RULE}"
                ),
            )
        ]
    if len(text) > longest:
        return [
            Problem(
                field=field,
                message=(
                    f"{pattern!r} can never yield a valid {kind}: its own text is {len(text)} characters, "
                    f"more than {longest}"
                ),
            )
        ]
    return []


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


def local_key_for(
    *,
    naming: Naming,
    remote: RemoteKey,
    local_namespaced: bool,
    remote_namespaced: bool,
    protected_namespaces: frozenset[str] = frozenset(),
    remote_object: Mapping[str, Any] | None = None,
    cluster_path: str | None = None,
) -> LocalKey | Problem:
    """The local namespace and name for `remote`, or a Problem naming the rule and its result.

    Unset fields of `naming` fall back to the default rule of the scope combination. A
    cluster-scoped local object gets namespace "" whatever `naming.namespace` says. A namespace
    that is a system one, or one of `protected_namespaces` (the servlet's own), is a Problem
    whatever the pattern: no copy is ever written there. `remote_object` is what a template's
    `.Object` reads; without it, `.Object` holds only the name and namespace of `remote`.
    `cluster_path` is what `.ClusterPath` reads (a template that reads it yields no name without).
    """
    if not any(is_template(pattern) for pattern in (naming.namespace, naming.name) if pattern is not None):
        return _placeholder_local_key(
            naming=naming,
            remote=remote,
            local_namespaced=local_namespaced,
            remote_namespaced=remote_namespaced,
            protected_namespaces=protected_namespaces,
        )
    return _local_key(
        naming=naming,
        remote=remote,
        local_namespaced=local_namespaced,
        remote_namespaced=remote_namespaced,
        protected_namespaces=protected_namespaces,
        remote_object=remote_object,
        cluster_path=cluster_path,
    )


@functools.lru_cache(maxsize=1024)  # asked twice in a reconcile: for the namespace, then for the plan
def _placeholder_local_key(
    *,
    naming: Naming,
    remote: RemoteKey,
    local_namespaced: bool,
    remote_namespaced: bool,
    protected_namespaces: frozenset[str],
) -> LocalKey | Problem:
    """`local_key_for` when no pattern reads the object beyond its key (so the key can be cached)."""
    return _local_key(
        naming=naming,
        remote=remote,
        local_namespaced=local_namespaced,
        remote_namespaced=remote_namespaced,
        protected_namespaces=protected_namespaces,
        remote_object=None,
        cluster_path=None,
    )


def _local_key(
    *,
    naming: Naming,
    remote: RemoteKey,
    local_namespaced: bool,
    remote_namespaced: bool,
    protected_namespaces: frozenset[str],
    remote_object: Mapping[str, Any] | None,
    cluster_path: str | None,
) -> LocalKey | Problem:
    namespace = ""
    if local_namespaced:
        namespace_rule = CLUSTER_NAME if naming.namespace is None else naming.namespace
        namespace_or_problem = _computed(
            namespace_rule,
            field="spec.naming.namespace",
            remote=remote,
            remote_object=remote_object,
            cluster_path=cluster_path,
        )
        if isinstance(namespace_or_problem, Problem):
            return namespace_or_problem
        namespace = namespace_or_problem
        if not is_dns1123_label(namespace):
            return _invalid(
                field="spec.naming.namespace",
                rule=namespace_rule,
                result=namespace,
                by_default=naming.namespace is None,
                expected=_LABEL_RULE,
            )
        refusal = _protected(namespace, protected=protected_namespaces, allow_default=naming.allow_shared_namespaces)
        if refusal is not None:
            source = "default naming" if naming.namespace is None else "pattern"
            return Problem(
                field="spec.naming.namespace",
                message=(
                    f"{source} '{namespace_rule}' yields '{namespace}', which is {refusal}; no copy is written there"
                ),
            )
    name_rule = naming.name
    if name_rule is None:
        name_rule = _default_name(local_namespaced=local_namespaced, remote_namespaced=remote_namespaced)
    name_or_problem = _computed(
        name_rule, field="spec.naming.name", remote=remote, remote_object=remote_object, cluster_path=cluster_path
    )
    if isinstance(name_or_problem, Problem):
        return name_or_problem
    name = name_or_problem
    if not is_dns1123_subdomain(name):
        return _invalid(
            field="spec.naming.name",
            rule=name_rule,
            result=name,
            by_default=naming.name is None,
            expected=_SUBDOMAIN_RULE,
        )
    return LocalKey(namespace, name)  # positional: a class called with keywords costs a dict per call


def _computed(
    pattern: str,
    *,
    field: str,
    remote: RemoteKey,
    remote_object: Mapping[str, Any] | None,
    cluster_path: str | None,
) -> str | Problem:
    """`pattern` for one object: `$` placeholders expanded, or a template evaluated."""
    if not is_template(pattern):
        return expand(pattern, remote=remote)
    template = name_templates.parsed(pattern)
    if isinstance(template, TemplateError):
        return Problem(field=field, message=f"template {pattern!r}: {template}")
    try:
        return name_templates.computed(
            template, remote=remote, remote_object=remote_object, limit=DNS_SUBDOMAIN_MAX, cluster_path=cluster_path
        )
    except TemplateError as error:
        return Problem(field=field, message=f"template {pattern!r} yields no name for this object: {error}")


def _invalid(*, field: str, rule: str, result: str, by_default: bool, expected: str) -> Problem:
    source = "default naming" if by_default else "pattern"
    return Problem(
        field=field,
        message=f"{source} '{rule}' yields '{result}', which is not {expected}",
    )


# -- namespace safety (SPEC 5) ---------------------------------------------------------------------

SYSTEM_PREFIX = "kube-"
DEFAULT_NAMESPACE = "default"
SHARED_OPT_IN = "spec.naming.allowSharedNamespaces"


def is_system_namespace(namespace: str) -> bool:
    """`kube-*` and `default`: where the cluster's own workloads and credentials live."""
    return namespace.startswith(SYSTEM_PREFIX) or namespace == DEFAULT_NAMESPACE


def _protected(namespace: str, *, protected: frozenset[str], allow_default: bool) -> str | None:
    """Why no copy may land in `namespace`, or None when it may."""
    if namespace.startswith(SYSTEM_PREFIX):
        return "a system namespace (kube-*)"
    if namespace == DEFAULT_NAMESPACE and not allow_default:
        return f"the cluster's default namespace (allowed only with {SHARED_OPT_IN}: true)"
    if namespace in protected:
        return "the servlet's own namespace"
    return None
