"""GKE end to end through the CLI: the talk's incident in the loopback GCP fake, driven by the real
google-cloud clients. diagnose (exit 3) -> expand --plan -> expand --apply -> the end state read back from
the fake -> a second apply that changes nothing -> a diagnosis that no longer finds the range full. And
`--emit terraform` at each point (before, after an apply that stopped partway, after the apply, and when
adopting a plan applied long ago): parsed back with python-hcl2, `terraform fmt` clean, the import block
naming the node pool the apply really created.

The cluster side is skipped (--no-kube): analysis then counts nodes from GKE's own utilisation fields,
which is what a user without cluster credentials gets.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from ipaddress import ip_network
from pathlib import Path

import pytest

from cidrx.model.plan import load_plan
from tests.support.cli import run
from tests.support.estates import gke as gke_world
from tests.support.estates.gke import (
    CLUSTER,
    LOCATION,
    OTHER_SUBNETS,
    PEERING_ROUTE,
    POD_CIDR,
    POD_RANGE,
    PROJECT,
    PSA_CIDR,
    REGION,
    SERVICES_CIDR,
    SUBNET,
)
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.terraform_check import fmt_check, imports, needs_terraform, parse, resources

TARGET = ["--gke", "--project", PROJECT, "--location", LOCATION, "--cluster", CLUSTER, "--no-kube"]


def ranges(fake: FakeGcp) -> dict[str, str]:
    subnet = fake.subnet(PROJECT, REGION, SUBNET)
    assert subnet is not None
    return {r["rangeName"]: r["ipCidrRange"] for r in subnet.get("secondaryIpRanges", [])}


def writes(fake: FakeGcp) -> list[str]:
    return [f"{r.method} {r.path}" for r in fake.request_log if r.method in ("POST", "PATCH", "PUT", "DELETE")]


def test_diagnose_finds_the_full_pod_range(gcp: FakeGcp) -> None:
    result = run("diagnose", *TARGET, "-o", "json")
    assert result.exit_code == 3, result.output
    d = json.loads(result.stdout)  # stderr may warn that in-cluster checks did not run
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
    # Nothing the network already routes: other regions' subnets and their secondaries, peering, PSA.
    taken = [PEERING_ROUTE, PSA_CIDR, POD_CIDR, SERVICES_CIDR]
    taken += [c for _, primary, secondary in OTHER_SUBNETS.values() for c in (primary, *secondary.values())]
    assert not any(ip_network(cidr).overlaps(ip_network(t)) for t in taken)
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


def emit_scenario(gcp: FakeGcp, tmp_path: Path) -> dict[str, str]:
    """plan --emit terraform -> apply --emit terraform stopped by a rejected node pool (exit 5) -> the same
    apply again, to the end -> once more with the journal and the .tf deleted. The .tf at each point."""
    plan_path = tmp_path / "plan.json"
    tf = tmp_path / "plan.tf"
    made = run("expand", *TARGET, "--plan", "--out", str(plan_path), "--emit", "terraform")
    assert made.exit_code == 0, made.output
    texts = {"planned": tf.read_text()}
    apply = ("expand", "--apply", str(plan_path), "--yes", "--no-kube", "--emit", "terraform")

    gcp.inject(400, method="POST", path_contains="/nodePools", times=1)
    partial = run(*apply)
    assert partial.exit_code == 5, partial.output
    assert f"Terraform with import blocks for what was applied so far written to {tf}" in partial.stderr
    assert partial.stderr.rstrip().splitlines()[-1].startswith("cidrx: error: step create-node-pool")
    texts["partial"] = tf.read_text()

    applied = run(*apply)
    assert applied.exit_code == 0, applied.output
    texts["applied"] = tf.read_text()

    tf.unlink()
    (tmp_path / "plan.json.journal.jsonl").unlink()
    gcp.reset_log()
    adopted = run(*apply)
    assert adopted.exit_code == 0, adopted.output
    assert writes(gcp) == []  # a fully applied plan: nothing changes
    texts["adopted"] = tf.read_text()
    return texts


def test_emit_terraform_imports_the_node_pool_apply_created(gcp: FakeGcp, tmp_path: Path) -> None:
    texts = emit_scenario(gcp, tmp_path)
    plan = load_plan(tmp_path / "plan.json")
    pool_name = plan.basis["node_pool_name"]
    assert gcp.node_pool(PROJECT, LOCATION, CLUSTER, pool_name) is not None
    address = f"google_container_node_pool.{pool_name.replace('-', '_')}"
    pool_id = f"projects/{PROJECT}/locations/{LOCATION}/clusters/{CLUSTER}/nodePools/{pool_name}"

    planned = parse(texts["planned"])
    assert "import" not in planned
    assert address in {f"{t}.{n}" for t, n in resources(planned)}
    # Stopped before the node pool existed: the .tf is written all the same, with nothing to import yet
    # (the secondary range it did add is a snippet for the subnet resource, not an import).
    partial = parse(texts["partial"])
    assert "import" not in partial and resources(partial) == resources(planned)
    assert plan.basis["range_name"] in texts["partial"]
    assert imports(parse(texts["applied"])) == {address: pool_id}
    assert imports(parse(texts["adopted"])) == {address: pool_id}


@needs_terraform
def test_emitted_terraform_is_fmt_clean(gcp: FakeGcp, tmp_path: Path) -> None:
    out = tmp_path / "tf"
    out.mkdir()
    for name, text in emit_scenario(gcp, tmp_path).items():
        (out / f"{name}.tf").write_text(text)
    result = fmt_check(out)
    assert result.returncode == 0, result.stdout + result.stderr


def test_a_refused_apply_keeps_its_exit_code_when_the_tf_cannot_be_written(gcp: FakeGcp, tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.json"
    assert run("expand", *TARGET, "--plan", "--out", str(plan_path)).exit_code == 0
    gcp.add_subnet(
        PROJECT,
        "us-east1",
        {"name": "squatter", "network": "demo-vpc", "ipCidrRange": load_plan(plan_path).basis["cidr"]},
    )
    (tmp_path / "plan.tf").mkdir()  # in the way of the .tf
    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube", "--emit", "terraform")
    assert applied.exit_code == 4, applied.output
    lines = applied.stderr.rstrip().splitlines()
    assert lines[-2].startswith(
        f"cidrx: warning: no Terraform written: refusing to write {tmp_path / 'plan.tf'}: it is a directory"
    )
    assert lines[-1].startswith("cidrx: error: the plan is stale:")


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
    # The same findings; only the fix commands plan from the file instead of the live cluster.
    flags = f"--gke --project {PROJECT} --location {LOCATION} --cluster {CLUSTER}"
    online = [
        {**f, "remediation": f["remediation"].replace(flags, f"--snapshot {snap}")}
        for f in json.loads(live.stdout)["findings"]
    ]
    assert json.loads(offline.stdout)["findings"] == online
    assert any(f"cidrx expand --snapshot {snap} --plan" in f["remediation"] for f in online)


def test_missing_cluster_is_an_access_error(gcp: FakeGcp) -> None:
    result = run("diagnose", "--gke", "--project", PROJECT, "--location", LOCATION, "--cluster", "nope", "--no-kube")
    assert result.exit_code == 6, result.output
    assert "nope" in result.output


def test_a_fingerprint_gone_stale_mid_apply_is_re_read_and_applied(gcp: FakeGcp, tmp_path: Path) -> None:
    plan_path = tmp_path / "plan.json"
    assert run("expand", *TARGET, "--plan", "--out", str(plan_path)).exit_code == 0
    plan = load_plan(plan_path)
    # Someone else changes the subnet (a harmless range elsewhere) between our read and our patch: GCE
    # answers 412 to the patch carrying the old fingerprint.
    gcp.inject(412, method="PATCH", path_contains=f"/subnetworks/{SUBNET}", times=1)
    applied = run("expand", "--apply", str(plan_path), "--yes", "--no-kube")
    assert applied.exit_code == 0, applied.output
    assert ranges(gcp)[plan.basis["range_name"]] == plan.basis["cidr"]
    assert gcp.count("PATCH", "/subnetworks/") == 2


def test_the_console_script_reaches_the_endpoints_from_the_environment(gcp: FakeGcp) -> None:
    """A separate process, as a CI job runs it: the CIDRX_* endpoint variables alone point it at the fake."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("CIDRX_")} | gke_world.gcp_env(gcp)
    proc = subprocess.run(
        [sys.executable, "-m", "cidrx", "diagnose", *TARGET, "-o", "json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 3, proc.stderr
    assert "GKE-POD-RANGE-EXHAUSTED" in {f["id"] for f in json.loads(proc.stdout)["findings"]}
