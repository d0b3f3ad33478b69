"""The sync manager's choices: which PublishedResources get a worker, which stop, whose finalizers go."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from servlet.core.actions import Side
from servlet.core.context import SyncContext
from servlet.core.model import ServletIdentity
from servlet.core.parsing import parse_published_resource
from servlet.core.projection import project
from servlet.core.releases import finalizer_releases, retry_after_conflict
from servlet.core.worker_choice import (
    RESOURCE_TAKEN,
    WAITING_FOR_EXPORT,
    Candidate,
    choose_workers,
    release_superseded,
    workers_to_stop,
)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "certificates"
SERVLET = ServletIdentity(name="tom", api_group="certificates.example.corp")
FINALIZER = "syncer.kdp.k8c.io/cleanup"


def _context(name: str, *, group: str = "cert-manager.io", kind: str = "Zertifikat") -> SyncContext:
    """The example's PublishedResource under `name`, for a CRD of `group`, projected to `kind`."""
    crd = yaml.safe_load((EXAMPLE / "crd-certificates.yaml").read_text())
    crd["spec"]["group"] = group
    manifest = yaml.safe_load((EXAMPLE / "publishedresource.yaml").read_text())
    manifest["metadata"]["name"] = name
    manifest["spec"]["resource"]["apiGroup"] = group
    manifest["spec"]["projection"].update(kind=kind, plural=kind.lower() + "s")
    published = parse_published_resource(manifest).value
    assert published is not None
    projected = project(crd=crd, published=published, api_group=SERVLET.api_group)
    assert not isinstance(projected, tuple), projected
    return SyncContext(servlet=SERVLET, published=published, projected=projected)


def test_a_worker_runs_for_each_exported_resource_and_the_others_say_why_not() -> None:
    certs, waiting = _context("certs"), _context("waiting", kind="Antrag")
    choice = choose_workers(
        [
            Candidate(name="certs", context=certs),
            Candidate(name="waiting", context=waiting),
            Candidate(name="broken", context=None),
        ],
        exported={certs.projected.schema_name},
    )
    assert dict(choice.run) == {"certs": certs}
    assert choice.unsyncable == {"broken"}
    assert set(choice.held) == {"waiting"}
    assert choice.held["waiting"].reason == WAITING_FOR_EXPORT
    assert waiting.projected.schema_name in choice.held["waiting"].message
    assert choice.orphan_scan_off == frozenset()


def test_of_two_with_the_same_schema_only_the_older_runs_and_the_younger_names_it() -> None:
    older, younger = _context("zeta"), _context("alpha", group="twin.example.org")
    assert older.projected.schema_name == younger.projected.schema_name
    choice = choose_workers(
        [
            Candidate(name="alpha", context=younger, created="2025-03-04T09:00:00Z"),
            Candidate(name="zeta", context=older, created="2025-03-03T09:00:00Z"),
        ],
        exported={older.projected.schema_name},
    )
    assert list(choice.run) == ["zeta"]
    assert choice.held["alpha"].reason == RESOURCE_TAKEN
    assert "PublishedResource zeta" in choice.held["alpha"].message


def test_workers_sharing_a_local_resource_run_without_orphan_scan() -> None:
    first, second = _context("first"), _context("second", kind="Antrag")
    assert first.projected.local == second.projected.local
    choice = choose_workers(
        [Candidate(name="first", context=first), Candidate(name="second", context=second)],
        exported={first.projected.schema_name, second.projected.schema_name},
    )
    assert set(choice.run) == {"first", "second"}
    assert choice.orphan_scan_off == {"first", "second"}


def test_a_worker_stops_when_its_resource_changes_or_goes_and_releases_only_when_nothing_syncs_again() -> None:
    certs, other = _context("certs"), _context("other", kind="Antrag")
    choice = choose_workers(
        [Candidate(name="certs", context=certs), Candidate(name="broken", context=None)],
        exported={certs.projected.schema_name},
    )
    running = {"certs": certs, "deleted": certs, "broken": certs, "changed": other}
    stops = workers_to_stop(running, choice, existing={"certs", "broken", "changed"})
    # "changed" still exists and can be published: its new worker will sync the objects again.
    assert stops == {"deleted": True, "broken": True, "changed": False}
    moved = workers_to_stop({"certs": other}, choice, existing={"certs"})
    assert moved == {"certs": False}


def test_pending_releases_are_dropped_once_a_worker_syncs_the_resource_again() -> None:
    certs, other = _context("certs"), _context("other", group="other.example.org", kind="Antrag")
    assert release_superseded(certs.projected.remote, [other, certs])
    assert not release_superseded(certs.projected.remote, [other])


def _remote(name: str, *finalizers: str, version: str = "7") -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": "default",
            "resourceVersion": version,
            "annotations": {"kcp.io/cluster": "team-a"},
            "finalizers": list(finalizers),
        }
    }


def test_releases_take_only_the_servlet_finalizer_off_objects_that_carry_it() -> None:
    resource = _context("certs").projected.remote
    releases = finalizer_releases(
        [_remote("ours", "other.example.org/keep", FINALIZER), _remote("not-ours", "other.example.org/keep")],
        resource=resource,
    )
    [release] = releases
    assert (release.target.side, release.target.cluster, release.target.namespace, release.target.name) == (
        Side.REMOTE,
        "team-a",
        "default",
        "ours",
    )
    assert release.patch == {"metadata": {"finalizers": ["other.example.org/keep"], "resourceVersion": "7"}}


def test_a_release_is_retried_after_a_conflict_without_the_version_check() -> None:
    [release] = finalizer_releases([_remote("ours", FINALIZER)], resource=_context("certs").projected.remote)
    retried = retry_after_conflict(release)
    assert retried.patch == {"metadata": {"finalizers": []}}
    assert retried.target == release.target
