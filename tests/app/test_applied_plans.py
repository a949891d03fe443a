"""cidrx recognises its own applied plans: after an EKS expansion, diagnose reports the migration pending (and
the full subnets' fix is the migration, not `expand`), and `expand --plan` exits 2 naming the applied
plan while its new subnets still have room (the hourly CI recipe used to stack a second expansion every hour);
`--force` plans anyway and the plan's notes say why. On the incident in moto and the fake API server."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.cases import case_for
from tests.support.cases.live import EksLive
from tests.support.cli import run

pytestmark = pytest.mark.usefixtures("shared_botocore")


def test_expand_refuses_while_an_applied_plan_has_room_and_force_records_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with case_for("custom-networking").estate(tmp_path, monkeypatch) as live:
        first = tmp_path / "first.json"
        made = run("expand", *live.target, "--strategy", "custom-networking", "--plan", "--out", str(first))
        assert made.exit_code == 0, made.output
        plan_id = json.loads(first.read_text())["digest"][:16]
        started = datetime.now(UTC).replace(microsecond=0)
        applied = run("expand", "--apply", str(first), "--yes", *live.access)
        assert applied.exit_code == 0, applied.output
        # What the apply created carries the time it was created beside the plan tag (EC2 keeps no creation time
        # for subnets); diagnose says when the plan was applied from it.
        assert isinstance(live, EksLive) and live.estate is not None
        ec2 = live.estate.ec2
        tagged = ec2.describe_subnets(Filters=[{"Name": "tag:cidrx.io/plan", "Values": [plan_id]}])["Subnets"]
        times = {t["Value"] for s in tagged for t in s["Tags"] if t["Key"] == "cidrx.io/applied-at"}
        assert len(tagged) == 2 and len(times) >= 1
        first_at = min(times)
        assert started <= datetime.strptime(first_at, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC) <= datetime.now(UTC)

        diagnosed = run("diagnose", *live.target, "-o", "json")
        assert diagnosed.exit_code == 3, diagnosed.output  # the old subnets are still full
        findings = json.loads(diagnosed.stdout)["findings"]
        pending = [f for f in findings if f["id"] == "EKS-PLAN-MIGRATION-PENDING"]
        assert [f["subject"] for f in pending] == [f"plan {plan_id}"], findings
        assert pending[0]["summary"].startswith(f"plan {plan_id} applied {first_at}, migration pending"), pending
        assert "--plan --out plan.json --strategy eks-migrate" in pending[0]["remediation"]  # the fix is cidrx's
        assert "migration pending" in pending[0]["summary"] and "node(s) in full subnets" in pending[0]["summary"]
        assert all("cidrx expand" not in f["remediation"] for f in findings if f["id"] == "EKS-SUBNET-EXHAUSTED")

        again = run("expand", *live.target, "--plan", "--out", str(tmp_path / "second.json"))
        assert again.exit_code == 2, again.output
        assert (
            f"plan {plan_id}" in again.output
            and "still has room in its new space" in again.output
            and "addresses free" in again.output
        )
        assert f"plan {plan_id} applied 20" in again.output  # when: the time tag beside the plan tag
        assert "--force" in again.output and "Traceback" not in again.output
        assert not (tmp_path / "second.json").exists()

        forced = tmp_path / "forced.json"
        made = run("expand", *live.target, "--strategy", "custom-networking", "--plan", "--force", "--out", str(forced))
        assert made.exit_code == 0, made.output
        notes = json.loads(forced.read_text())["notes"]
        assert any(n.startswith("Planned with --force") and plan_id in n for n in notes), notes


def test_gke_node_pool_plan_is_recognised_by_its_pool_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GKE: the node pool a node-pool plan created carries its plan label; while that pool's pod range has room,
    `expand --plan` exits 2 naming the plan (ProviderSpec.applied_plans), and --force plans anyway."""
    with case_for("node-pool").estate(tmp_path, monkeypatch) as live:
        first = tmp_path / "first.json"
        made = run("expand", *live.target, "--strategy", "node-pool", "--plan", "--out", str(first))
        assert made.exit_code == 0, made.output
        plan_id = json.loads(first.read_text())["digest"][:16]
        applied = run("expand", "--apply", str(first), "--yes", *live.access)
        assert applied.exit_code == 0, applied.output
        live.settle()
        again = run("expand", *live.target, "--plan", "--out", str(tmp_path / "second.json"))
        assert again.exit_code == 2, again.output
        assert (
            f"plan {plan_id}" in again.output
            and "still has room in its new space" in again.output
            and "node pool" in again.output
        ), again.output
        assert not (tmp_path / "second.json").exists()
        forced = run(
            "expand", *live.target, "--strategy", "node-pool", "--plan", "--force", "--out", str(tmp_path / "f.json")
        )
        assert forced.exit_code == 0, forced.output
