"""Hints and messages that send nobody wrong: each names only what applies to the case at hand."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from cidrx.cli import cli
from cidrx.kube.kubeconfig import tried
from cidrx.model.findings import kube_unreachable

ROOT = Path(__file__).resolve().parents[2]
EKS = str(ROOT / "examples/eks-demo-ip.snapshot.json")


def run(*args: str, env: dict[str, str | None] | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_every_cloud_sdk_is_a_dependency_and_no_extra_names_one() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deps = " ".join(project["dependencies"])
    for sdk in ("boto3", "google-cloud-container", "google-cloud-compute", "lightkube"):
        assert sdk in deps
    assert set(project["optional-dependencies"]) == {"test"}
    for path in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "cidrx").rglob("*.py")]:
        assert "cidrx[gke]" not in path.read_text() and ".[gke]" not in path.read_text(), path


def test_a_missing_cluster_names_only_the_cluster_variable() -> None:
    code, _, err = run("diagnose", "--eks", "--region", "ap-southeast-2", env={"CIDRX_CLUSTER": None})
    assert code == 2
    assert "--eks needs --cluster (or CIDRX_CLUSTER)" in err
    assert "AWS_REGION" not in err and "CIDRX_REGION" not in err


def test_a_missing_region_names_the_region_variables() -> None:
    env = {"CIDRX_REGION": None, "AWS_REGION": None, "AWS_DEFAULT_REGION": None, "CIDRX_CLUSTER": None}
    code, _, err = run("diagnose", "--eks", "--cluster", "c", env=env)
    assert code == 2
    assert "--eks needs --region (or CIDRX_REGION / AWS_REGION / AWS_DEFAULT_REGION)" in err


def test_rollback_help_does_not_speak_of_apply_for_wait_for_lock() -> None:
    code, out, _ = run("rollback", "--help")
    assert code == 0
    assert "--wait-for-lock" in out and "With --apply" not in " ".join(out.split())


@pytest.mark.parametrize("cidr", ["", "  "])
def test_an_empty_cidr_is_an_error_not_pick_for_me(cidr: str, tmp_path: Path) -> None:
    code, _, err = run("expand", "--snapshot", EKS, "--plan", "--cidr", cidr, "--out", str(tmp_path / "p.json"))
    assert code == 2
    assert "--cidr is empty" in err
    assert not (tmp_path / "p.json").exists()


def test_an_address_without_prefix_asks_for_a_prefix_length(tmp_path: Path) -> None:
    code, _, err = run("expand", "--snapshot", EKS, "--plan", "--cidr", "100.64.0.0", "--out", str(tmp_path / "p"))
    assert code == 2
    assert "prefix length" in err and "/32" not in err and "single address" not in err


def test_kube_unreachable_with_kubeconfig_from_the_environment_says_what_was_tried(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "kc"
    config.write_text("apiVersion: v1\nkind: Config\ncurrent-context: prod\ncontexts: [{name: prod, context: {}}]\n")
    monkeypatch.setenv("KUBECONFIG", str(config))
    said = tried(None, None)
    assert said == f"tried $KUBECONFIG={config}, context prod"
    f = kube_unreachable("skipped", "Pass --kubeconfig/--context to include events.", reason=f"refused ({said})")
    assert "--kubeconfig" not in f.remediation and "KUBECONFIG is set" in f.remediation
    assert f.evidence == (f"refused ({said})",)
    monkeypatch.delenv("KUBECONFIG")
    assert tried(str(config), "other") == f"tried --kubeconfig {config}, context other"
    plain = kube_unreachable("skipped", "Pass --kubeconfig/--context to include events.", reason="refused")
    assert plain.remediation.startswith("Pass --kubeconfig")
