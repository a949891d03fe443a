"""Under Shared VPC, every call cidrx makes in the host project is granted by what `cidrx permissions --gke`
prints for the host project, and every call in the service project by what it prints for the service
project: a diagnose, a plan and an apply of the Shared VPC estate (tests/support/estates/gke_shared_vpc.py), with the
calls read from the GCP fake's request log (each record names its discovery method and project)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cidrx.providers.gke.api import SUBNET_ADDRESS_READS
from tests.app.test_permissions_calls import GCP_ALSO, GCP_PERMISSION
from tests.support.cli import run
from tests.support.estates import gke_shared_vpc as se
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.permissions import printed

TARGET = ["--gke", "--project", se.SERVICE, "--location", se.LOCATION, "--cluster", se.CLUSTER, "--no-kube"]
_PROJECT = re.compile(r"/projects/([^/]+)/")


@pytest.fixture
def estate(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeGcp]:
    with se.shared_vpc_estate(monkeypatch) as fake:
        yield fake


def calls_by_project(fake: FakeGcp) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for rec in fake.request_log:
        assert rec.method_id in GCP_PERMISSION, f"{rec.method} {rec.path} ({rec.method_id}): add it to the table"
        found = _PROJECT.search(rec.path)
        assert found is not None, rec.path
        out.setdefault(found.group(1), set()).update({GCP_PERMISSION[rec.method_id], *GCP_ALSO.get(rec.method_id, ())})
    return out


def test_shared_vpc_calls_are_granted_in_the_project_they_are_made_in(estate: FakeGcp, tmp_path: Path) -> None:
    split = printed("gke", "apply")["gcp_projects"]
    plan = tmp_path / "plan.json"
    assert run("diagnose", *TARGET, "-o", "json").exit_code == 3
    assert run("expand", *TARGET, "--plan", "--out", str(plan)).exit_code == 0
    applied = run("expand", "--apply", str(plan), "--yes", "--no-kube")
    assert applied.exit_code == 0, applied.output
    used = calls_by_project(estate)
    assert set(used) == {se.HOST, se.SERVICE}
    assert used[se.HOST] <= set(split["host_project"]), used[se.HOST] - set(split["host_project"])
    assert used[se.SERVICE] <= set(split["service_project"]), used[se.SERVICE] - set(split["service_project"])
    # The subnet patch and its operation really happen in the host project, the node pool in the service one.
    assert {"compute.subnetworks.update", "compute.regionOperations.get"} <= used[se.HOST]
    assert "container.clusters.update" in used[se.SERVICE]
    # Of compute, the service project is only read for what holds addresses of the host's subnet (its
    # GKE nodes and internal load balancers live there).
    assert {p for p in used[se.SERVICE] if p.startswith("compute.")} <= set(SUBNET_ADDRESS_READS)
