"""Every manifest the chart renders is valid Kubernetes, for the oldest and newest supported
version, with the defaults and with every optional part switched on or off."""

from __future__ import annotations

from typing import Any

import pytest

from tests.chart.rendering import (
    CERTIFICATES,
    KUBE_VERSIONS,
    PROXY_AND_CA,
    crds,
    kinds,
    one,
    render,
    validate_strict,
    with_required,
)

SCENARIOS: dict[str, dict[str, Any]] = {
    "required values only": with_required(),
    "cert-manager example": with_required(publishedResources=[CERTIFICATES]),
    "everything on": with_required(
        publishedResources=[
            CERTIFICATES,
            {"apiGroup": "example.com", "resources": ["widgets", "gadgets"], "relatedKinds": ["ConfigMap", "Secret"]},
        ],
        publishedResourceSelector="team in (certs, pki)",
        deleteOrphans=True,
        logFormat="console",
        metrics={"serviceMonitor": {"enabled": True, "labels": {"release": "prometheus"}}},
        podDisruptionBudget={"minAvailable": "50%"},
        image={"digest": "sha256:" + "a" * 64},
        imagePullSecrets=[{"name": "registry"}],
        podAnnotations={"team": "pki"},
        podLabels={"tier": "control"},
        nodeSelector={"kubernetes.io/os": "linux"},
        priorityClassName="system-cluster-critical",
        tolerations=[{"key": "dedicated", "operator": "Equal", "value": "kdp", "effect": "NoSchedule"}],
        topologySpreadConstraints=[
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": {"app.kubernetes.io/name": "servlet"}},
            }
        ],
        serviceAccount={"annotations": {"example.corp/owner": "pki"}},
        commonLabels={"example.corp/cost-centre": "pki"},
        extraEnv=PROXY_AND_CA["extraEnv"],
        extraVolumes=PROXY_AND_CA["extraVolumes"],
        extraVolumeMounts=PROXY_AND_CA["extraVolumeMounts"],
        extraEnvFrom=[{"configMapRef": {"name": "proxy-settings"}}],
        updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
        probes={"startup": {"initialDelaySeconds": 5, "failureThreshold": 60}, "liveness": {"enabled": False}},
    ),
    "recreated on update, monitored from another namespace": with_required(
        updateStrategy={"type": "Recreate"},
        metrics={
            "serviceMonitor": {
                "enabled": True,
                "namespace": "monitoring",
                "relabelings": [
                    {"sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node", "action": "replace"}
                ],
                "metricRelabelings": [{"sourceLabels": ["__name__"], "regex": "go_.*", "action": "drop"}],
            }
        },
    ),
    "one replica, no leader election, optional parts off": with_required(
        replicaCount=1,
        leaderElection={"enabled": False},
        podDisruptionBudget={"enabled": True},
        metrics={"service": {"enabled": False}},
        affinity={
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}]}
                    ]
                }
            }
        },
    ),
    "existing service account, no RBAC": with_required(
        serviceAccount={"create": False, "name": "kdp"}, rbac={"create": False}
    ),
}


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
@pytest.mark.parametrize("scenario", sorted(SCENARIOS))
def test_every_rendered_manifest_is_valid(scenario: str, kube_version: str) -> None:
    documents = render(SCENARIOS[scenario])
    assert documents, "the chart rendered nothing"
    for document in documents:
        validate_strict(document, kube_version=kube_version)


@pytest.mark.parametrize("kube_version", KUBE_VERSIONS)
def test_the_crd_helm_installs_is_valid(kube_version: str) -> None:
    (crd,) = crds()
    assert crd["metadata"]["name"] == "publishedresources.services.kdp.k8c.io"
    validate_strict(crd, kube_version=kube_version)


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        # Two Roles: the Lease's, and the Events' in `default`.
        (
            "required values only",
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "Deployment",
                "PodDisruptionBudget",
                "Role",
                "Role",
                "RoleBinding",
                "RoleBinding",
                "Service",
                "ServiceAccount",
            ],
        ),
        (
            "everything on",
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "Deployment",
                "PodDisruptionBudget",
                "Role",
                "Role",
                "RoleBinding",
                "RoleBinding",
                "Service",
                "ServiceAccount",
                "ServiceMonitor",
            ],
        ),
        # One replica: no PDB (it would block node drains), no Lease, so no Role for it.
        (
            "one replica, no leader election, optional parts off",
            ["ClusterRole", "ClusterRoleBinding", "Deployment", "Role", "RoleBinding", "ServiceAccount"],
        ),
        ("existing service account, no RBAC", ["Deployment", "PodDisruptionBudget", "Service"]),
    ],
)
def test_the_chart_renders_exactly_the_parts_asked_for(scenario: str, expected: list[str]) -> None:
    assert kinds(render(SCENARIOS[scenario])) == expected


def test_every_namespaced_object_lands_in_the_release_namespace() -> None:
    """All but the Role for Events about PublishedResources, which kubectl finds in `default`."""
    documents = render(SCENARIOS["everything on"], namespace="platform-sync")
    cluster_scoped = {"ClusterRole", "ClusterRoleBinding"}
    for document in documents:
        namespace = document["metadata"].get("namespace")
        if document["metadata"]["name"].endswith("-events"):
            assert (document["kind"], namespace) in {("Role", "default"), ("RoleBinding", "default")}
            continue
        assert namespace == (None if document["kind"] in cluster_scoped else "platform-sync"), document["kind"]


def test_two_releases_in_two_namespaces_do_not_share_cluster_scoped_names() -> None:
    first = render(with_required(), namespace="team-a")
    second = render(with_required(), namespace="team-b")
    for kind in ("ClusterRole", "ClusterRoleBinding"):
        assert one(first, kind)["metadata"]["name"] != one(second, kind)["metadata"]["name"]


def test_the_crd_helm_installs_keeps_spec_immutable_and_prints_what_an_owner_looks_for() -> None:
    (crd,) = crds()
    (version,) = crd["spec"]["versions"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert {"rule": "self == oldSelf", "message": "spec is immutable"} in spec["x-kubernetes-validations"]
    columns = {column["jsonPath"] for column in version["additionalPrinterColumns"]}
    # The resource (kind and group), the schema in use, readiness and age.
    assert {
        ".spec.resource.kind",
        ".spec.resource.apiGroup",
        ".status.resourceSchemaName",
        '.status.conditions[?(@.type=="Ready")].status',
        ".metadata.creationTimestamp",
    } <= columns
    assert version["subresources"] == {"status": {}}
