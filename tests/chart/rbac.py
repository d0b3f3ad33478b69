"""What the chart's RBAC allows, as a set of single grants, and what its README documents.

A `Grant` is one verb on one resource (subresources spelt `resource/sub`) in one API group,
either cluster-wide (`namespace == ""`: a ClusterRole bound by a ClusterRoleBinding) or in one
namespace (a Role or ClusterRole bound by a RoleBinding). `allows` answers as the API server's RBAC
authorizer would for a request of the servlet's ServiceAccount: a request without a namespace (a
cluster-scoped object, or a list across all namespaces) needs a cluster-wide grant.

Deliberately not here: aggregation labels, non-resource URLs and resourceNames; the chart uses
none of them, and `granted` fails when it meets one rather than guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from tests.chart.rendering import CHART

README = CHART / "README.md"
TABLE_MARKER = "<!-- rbac-table"


@attrs.frozen(order=True)
class Grant:
    group: str
    resource: str
    verb: str
    namespace: str = ""  # "" = cluster-wide

    def describe(self) -> str:
        where = f"in namespace {self.namespace}" if self.namespace else "cluster-wide"
        return f"{self.verb} {self.resource}.{self.group or 'core'} {where}"


def _rules(role: Mapping[str, Any]) -> set[tuple[str, str, str]]:
    found: set[tuple[str, str, str]] = set()
    for rule in role.get("rules") or []:
        unsupported = set(rule) - {"apiGroups", "resources", "verbs"}
        assert not unsupported, f"{role['metadata']['name']}: unexpected rule fields {sorted(unsupported)}"
        for field in ("apiGroups", "resources", "verbs"):
            assert "*" not in rule[field], f"{role['metadata']['name']}: wildcard in {field}"
        found |= {(g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    return found


def _binds(binding: Mapping[str, Any], *, service_account: str, namespace: str) -> bool:
    return any(
        s.get("kind") == "ServiceAccount" and s.get("name") == service_account and s.get("namespace") == namespace
        for s in binding.get("subjects") or []
    )


def granted(documents: Iterable[Mapping[str, Any]], *, service_account: str, namespace: str) -> set[Grant]:
    """Every grant the rendered RBAC gives the ServiceAccount `namespace/service_account`."""
    documents = list(documents)
    roles = {
        (d["kind"], d["metadata"].get("namespace", ""), d["metadata"]["name"]): d
        for d in documents
        if d["kind"] in ("Role", "ClusterRole")
    }
    grants: set[Grant] = set()
    for binding in documents:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not _binds(binding, service_account=service_account, namespace=namespace):
            continue
        where = binding["metadata"].get("namespace", "") if binding["kind"] == "RoleBinding" else ""
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], where if ref["kind"] == "Role" else "", ref["name"]))
        assert role is not None, f"{binding['kind']} {binding['metadata']['name']} refers to a missing {ref['kind']}"
        grants |= {Grant(group=g, resource=r, verb=v, namespace=where) for g, r, v in _rules(role)}
    return grants


def allows(grants: set[Grant], *, verb: str, group: str, resource: str, namespace: str) -> bool:
    if Grant(group=group, resource=resource, verb=verb) in grants:
        return True
    return bool(namespace) and Grant(group=group, resource=resource, verb=verb, namespace=namespace) in grants


# ---- the README's table ------------------------------------------------------------------------

_CODE = re.compile(r"`([^`]*)`")


def table_rows(text: str | None = None) -> list[list[str]]:
    """The cells of the RBAC table in the chart's README (header and separator left out)."""
    text = README.read_text() if text is None else text
    assert TABLE_MARKER in text, "the chart README lost its RBAC table marker"
    lines = text.split(TABLE_MARKER, 1)[1].splitlines()[1:]
    rows: list[list[str]] = []
    for line in lines:
        if not line.startswith("|"):
            if rows or not line.strip():
                break
            continue
        rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
    return rows[2:]


def documented(values: Mapping[str, Any], *, namespace: str, text: str | None = None) -> set[Grant]:
    """The grants the README's table allows for these values: an upper bound, every row applied
    (the conditions written in prose, such as related kinds, are tested separately)."""
    grants: set[Grant] = set()
    for group_cell, resource_cell, scope_cell, verbs_cell, _why in table_rows(text):
        verbs = _CODE.findall(verbs_cell)
        assert verbs, f"no verbs in row {resource_cell}"
        assert scope_cell in ("cluster", "release namespace", "namespace `default`"), f"unknown scope {scope_cell!r}"
        where = {"cluster": "", "release namespace": namespace}.get(scope_cell, "default")
        generated = next(
            (key for key in ("publishedResources", "relatedResources") if group_cell.startswith(f"each `{key}[]")), None
        )
        if generated is not None:
            pairs = [
                (entry["apiGroup"], plural) for entry in values.get(generated) or [] for plural in entry["resources"]
            ]
        else:
            (group,) = _CODE.findall(group_cell)
            group = "" if group == '""' else group
            (resource,) = _CODE.findall(resource_cell)
            pairs = [(group, resource)]
        grants |= {Grant(group=g, resource=r, verb=v, namespace=where) for g, r in pairs for v in verbs}
    return grants
