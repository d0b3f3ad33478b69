"""Object-name rules of the apiserver (DNS-1123 subdomain / label) and kcp path grammar."""

from __future__ import annotations

import re

_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_CLUSTER_SEGMENT = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def subdomain_problem(name: str) -> str | None:
    if len(name) > 253:
        return f'Invalid value: "{name}": must be no more than 253 characters'
    if not _SUBDOMAIN.match(name):
        return (
            f'Invalid value: "{name}": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
            "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
            "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        )
    return None


def label_problem(name: str) -> str | None:
    if len(name) > 63:
        return f'Invalid value: "{name}": must be no more than 63 characters'
    if not _LABEL.match(name):
        return (
            f'Invalid value: "{name}": a lowercase RFC 1123 label must consist of lower case alphanumeric '
            "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name', or "
            "'123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        )
    return None


def is_cluster_path(text: str) -> bool:
    return text == "*" or all(_CLUSTER_SEGMENT.match(seg) for seg in text.split(":"))


def is_cluster_name(text: str) -> bool:
    return bool(_CLUSTER_SEGMENT.match(text))
