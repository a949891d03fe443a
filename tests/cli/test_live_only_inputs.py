"""Inputs meant for live runs do not leak into offline ones: `--snapshot` ignores the environment a live run
would use (CIDRX_CLUSTER, AWS_REGION, CIDRX_CONTEXT, ...) and refuses live-only flags given beside it with one
line naming them; an apply that must reach the cluster refuses --no-kube before it reads the cloud."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.cli import one_line_error, run

REPO = Path(__file__).resolve().parents[2]
EKS_EX = str(REPO / "examples" / "eks-demo-ip.snapshot.json")
GKE_EX = str(REPO / "examples" / "gke-demo-ip.snapshot.json")


@pytest.mark.parametrize(
    "env",
    [
        {"CIDRX_CLUSTER": "prod"},
        {"CIDRX_REGION": "us-east-1", "AWS_REGION": "eu-west-1"},
        {"CIDRX_CONTEXT": "prod", "CIDRX_KUBECONFIG": "/nonexistent", "CIDRX_NO_KUBE": "1"},
        {"CIDRX_GKE": "1", "CIDRX_PROJECT": "other"},
        {"CIDRX_PROFILE": "ci"},
    ],
    ids=["cluster", "region", "kube", "other-provider", "profile"],
)
@pytest.mark.parametrize("command", ["diagnose", "expand"])
def test_environment_meant_for_live_runs_is_ignored_with_a_snapshot(env: dict[str, str], command: str) -> None:
    args = ["diagnose", "--snapshot", EKS_EX] if command == "diagnose" else ["expand", "--plan", "--snapshot", EKS_EX]
    result = run(*args, "-o", "json", *(["--out", "-"] if command == "expand" else []), env=env)
    assert result.exit_code in (0, 3), result.output


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--context", "prod"], "--context does not apply"),
        (["--no-kube"], "--no-kube does not apply"),
        (["--kubeconfig", "/tmp/k", "--context", "c"], "--context, --kubeconfig do not apply"),
        (["--eks", "--profile", "ci"], "--profile does not apply"),
    ],
)
def test_live_only_flags_beside_a_snapshot_are_refused_naming_them(flags: list[str], named: str) -> None:
    result = run("diagnose", "--snapshot", EKS_EX, *flags)
    assert result.exit_code == 2, result.output
    assert named in one_line_error(result)


def test_target_flags_typed_beside_a_snapshot_still_must_match() -> None:
    result = run("diagnose", "--snapshot", EKS_EX, "--cluster", "prod")
    assert result.exit_code == 2 and "but --cluster prod was given" in one_line_error(result)
    result = run("diagnose", "--snapshot", GKE_EX, "--eks")
    assert result.exit_code == 2 and "but --eks was given" in one_line_error(result)


def test_no_kube_apply_of_a_plan_with_in_cluster_steps_refuses_before_reading_aws(tmp_path: Path) -> None:
    plan = tmp_path / "p.json"
    assert run("expand", "--plan", "--snapshot", EKS_EX, "--out", str(plan)).exit_code == 0
    # Port 9 refuses connections: reading AWS first would end in exit 6, not the refusal.
    env = {
        "AWS_ENDPOINT_URL": "http://127.0.0.1:9",
        "AWS_ACCESS_KEY_ID": "x",
        "AWS_SECRET_ACCESS_KEY": "y",
        "CIDRX_RETRY_MAX_ATTEMPTS": "1",
    }
    result = run("expand", "--apply", str(plan), "--yes", "--no-kube", env=env)
    assert result.exit_code == 2, result.output
    assert "changes in-cluster objects" in one_line_error(result) and "drop --no-kube" in result.stderr
    assert "reading" not in result.stderr and not (tmp_path / "p.json.journal.jsonl").exists()
