"""GKE end to end through the CLI: the talk's incident in the loopback GCP fake, driven by the real
google-cloud clients. diagnose (exit 3) -> expand --plan -> expand --apply -> the end state read back from
the fake -> a second apply that changes nothing -> a diagnosis that no longer finds the range full.

The cluster side is skipped (--no-kube): analysis then counts nodes from GKE's own utilisation fields,
which is what a user without cluster credentials gets.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cidrx.cli import cli
from cidrx.model.plan import load_plan
from tests import gke_world
from tests.fakes.gcp_server import FakeGcp
from tests.gke_world import CLUSTER, LOCATION, POD_CIDR, POD_RANGE, PROJECT, REGION, SERVICES_CIDR, SUBNET

gcp = gke_world.gcp

TARGET = ["--gke", "--project", PROJECT, "--location", LOCATION, "--cluster", CLUSTER, "--no-kube"]


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def ranges(fake: FakeGcp) -> dict[str, str]:
    subnet = fake.subnet(PROJECT, REGION, SUBNET)
    assert subnet is not None
    return {r["rangeName"]: r["ipCidrRange"] for r in subnet.get("secondaryIpRanges", [])}


def writes(fake: FakeGcp) -> list[str]:
    return [f"{r.method} {r.path}" for r in fake.request_log if r.method in ("POST", "PATCH", "PUT", "DELETE")]


def test_diagnose_finds_the_full_pod_range(gcp: FakeGcp) -> None:
    result = run("diagnose", *TARGET, "-o", "json")
    assert result.exit_code == 3, result.output
    d = json.loads(result.output)
    ids = {f["id"] for f in d["findings"]}
    assert "GKE-POD-RANGE-EXHAUSTED" in ids
    row = next(c for c in d["capacity"] if c["kind"] == "pod-range" and c["cidr"] == POD_CIDR)
    assert row["max_nodes"] == 4


@pytest.mark.parametrize("strategy", ["node-pool", "cluster-range"])
def test_plan_apply_and_a_second_apply_that_changes_nothing(gcp: FakeGcp, tmp_path: Path, strategy: str) -> None:
    plan_path = tmp_path / "plan.json"
    made = run("expand", *TARGET, "--plan", "--strategy", strategy, "--out", str(plan_path))
    assert made.exit_code == 0, made.output
    plan = load_plan(plan_path)
    new_range, cidr = plan.basis["range_name"], plan.basis["cidr"]
    assert new_range not in ranges(gcp)
    gcp.reset_log()

    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert applied.exit_code == 0, applied.output

    # The subnet keeps its ranges and gains the planned one.
    assert ranges(gcp) == {POD_RANGE: POD_CIDR, "services": SERVICES_CIDR, new_range: cidr}
    patch = next(r for r in gcp.request_log if r.method == "PATCH")
    assert patch.body["fingerprint"]
    cluster = gcp.cluster(PROJECT, LOCATION, CLUSTER)
    assert cluster is not None
    if strategy == "node-pool":
        pool = gcp.node_pool(PROJECT, LOCATION, CLUSTER, plan.basis["node_pool_name"])
        assert pool is not None
        assert pool["networkConfig"]["podRange"] == new_range
        assert pool["config"]["resourceLabels"]["cidrx-plan"] == plan.plan_id
        assert pool["config"]["machineType"] == "e2-standard-4"
    else:
        names = cluster["ipAllocationPolicy"]["additionalPodRangesConfig"]["podRangeNames"]
        assert new_range in names

    gcp.reset_log()
    again = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert again.exit_code == 0, again.output
    assert writes(gcp) == []


def test_a_plan_is_refused_when_someone_took_its_range_meanwhile(gcp: FakeGcp, tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.json"
    assert run("expand", *TARGET, "--plan", "--out", str(plan_path)).exit_code == 0
    cidr = load_plan(plan_path).basis["cidr"]
    gcp.add_subnet(PROJECT, "us-east1", {"name": "squatter", "network": "demo-vpc", "ipCidrRange": cidr})
    gcp.reset_log()
    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert applied.exit_code == 4, applied.output
    assert "squatter" in applied.output
    assert writes(gcp) == []


def test_an_overlapping_cidr_is_refused_at_plan_time(gcp: FakeGcp, tmp_path: Path) -> None:
    result = run("expand", *TARGET, "--plan", "--cidr", "10.100.0.0/20", "--out", str(tmp_path / "p.json"))
    assert result.exit_code == 2
    assert "10.100.0.0/16" in result.output
    assert "Traceback" not in result.output


def test_snapshot_then_offline_diagnose_gives_the_same_result(gcp: FakeGcp, tmp_path: Path) -> None:
    snap = tmp_path / "snap.json"
    assert run("snapshot", *TARGET, "--out", str(snap)).exit_code == 0
    live = run("diagnose", *TARGET, "-o", "json")
    offline = run("diagnose", "--snapshot", str(snap), "-o", "json")
    assert offline.exit_code == live.exit_code == 3
    assert json.loads(offline.output)["findings"] == json.loads(live.output)["findings"]


def test_missing_cluster_is_an_access_error(gcp: FakeGcp) -> None:
    result = run("diagnose", "--gke", "--project", PROJECT, "--location", LOCATION, "--cluster", "nope", "--no-kube")
    assert result.exit_code == 6, result.output
    assert "nope" in result.output
