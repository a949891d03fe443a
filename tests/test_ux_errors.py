"""Issue 16 (part A): cidrx never misleads about what went wrong, and its exit codes say what to do.

Each test here failed on the behaviour the issue reported: an apply that writes before proving it can reach
the cluster, a digest that leaves what reviewers read unsealed, a target named "current-context", plan
JSON written into a .tf file, a TLS failure retried and called "cannot reach", options only before the
subcommand, flags accepted and ignored, an unknown snapshot schema reported as a missing field, fix text
with "..." in it. Live rows use the real clients against moto and the fake Kubernetes API server.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cidrx.cli import cli
from tests.eks_world import AwsCalls, fake_aws_env, moto_incident
from tests.fakes.kube_server import FakeKubeServer

REPO = Path(__file__).resolve().parent.parent
EKS_EX = str(REPO / "examples" / "eks-demo-ip.snapshot.json")
GKE_EX = str(REPO / "examples" / "gke-demo-ip.snapshot.json")
WB_EX = str(REPO / "examples" / "whereabouts-stale.snapshot.json")
CALICO_EX = str(REPO / "examples" / "calico-borrowing.snapshot.json")
WRITES = ("POST", "PUT", "PATCH", "DELETE")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("CIDRX_") or name == "KUBECONFIG":
            monkeypatch.delenv(name)
    monkeypatch.setenv("CIDRX_RETRY_MAX_ATTEMPTS", "2")


def run(*args: str, env: dict[str, str | None] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


def error_line(result: Result) -> str:
    """The `cidrx: error:` line (there must be one, and no traceback)."""
    assert "Traceback" not in result.output, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("cidrx: error: ")]
    assert lines, result.stderr
    return lines[-1]


# --- item 1: access to everything a plan needs is proven before its first write ---------------------------


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any, AwsCalls]]:
    import botocore.handlers
    import moto  # noqa: F401  (registers its own handler first; the patch below must not drop it)

    fake_aws_env(monkeypatch)
    calls = AwsCalls()
    monkeypatch.setattr(
        botocore.handlers, "BUILTIN_HANDLERS", [*botocore.handlers.BUILTIN_HANDLERS, ("before-call", calls)]
    )
    with moto_incident(cluster="demo-ip") as (session, world):
        yield session, world, calls


def _eks_plan(world: Any, path: Path) -> None:
    target = ["--eks", "--region", world.region, "--cluster", world.cluster, "--no-kube"]
    made = run("expand", *target, "--plan", "--out", str(path), "--cidr", "100.64.0.0/20")
    assert made.exit_code == 0, made.output
    assert "eniconfig" in path.read_text().lower()  # the plan changes in-cluster objects too


def _closed_port_kubeconfig(tmp_path: Path) -> str:
    with FakeKubeServer() as server:
        path = str(server.kubeconfig(tmp_path / "kubeconfig"))
    return path  # the server is stopped: connections to it are refused


def test_eks_apply_with_an_unreachable_cluster_is_6_and_writes_nothing(
    aws: tuple[Any, Any, AwsCalls], tmp_path: Path
) -> None:
    _, world, calls = aws
    plan = tmp_path / "plan.json"
    _eks_plan(world, plan)
    calls.calls.clear()
    result = run("expand", "--apply", str(plan), "--yes", "--kubeconfig", _closed_port_kubeconfig(tmp_path))
    assert result.exit_code == 6, result.output
    line = error_line(result)
    assert "cannot reach the cluster" in line and "nothing was changed" in line
    assert calls.calls and calls.writes() == []
    assert not Path(f"{plan}.journal.jsonl").exists()


def test_eks_apply_without_any_kubeconfig_is_6_and_writes_nothing(
    aws: tuple[Any, Any, AwsCalls], tmp_path: Path
) -> None:
    _, world, calls = aws
    plan = tmp_path / "plan.json"
    _eks_plan(world, plan)
    calls.calls.clear()
    result = run("expand", "--apply", str(plan), "--yes", env={"HOME": str(tmp_path), "KUBECONFIG": None})
    assert result.exit_code == 6, result.output
    assert "cannot reach the cluster" in error_line(result)
    assert calls.writes() == []


def test_eks_apply_of_a_plan_that_changes_the_cluster_refuses_no_kube_before_writing(
    aws: tuple[Any, Any, AwsCalls], tmp_path: Path
) -> None:
    _, world, calls = aws
    plan = tmp_path / "plan.json"
    _eks_plan(world, plan)
    calls.calls.clear()
    result = run("expand", "--apply", str(plan), "--yes", "--no-kube")
    assert result.exit_code == 2, result.output
    assert "drop --no-kube" in error_line(result)
    assert calls.writes() == []


def test_eks_apply_with_an_unreachable_cloud_is_6_and_writes_nothing(
    aws: tuple[Any, Any, AwsCalls], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, world, _calls = aws
    plan = tmp_path / "plan.json"
    _eks_plan(world, plan)
    with FakeKubeServer() as server:
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:1")
        result = run("expand", "--apply", str(plan), "--yes", "--kubeconfig", kubeconfig)
        assert [r for r in server.requests() if r.method in WRITES] == []
    assert result.exit_code == 6, result.output
    assert "cannot reach" in error_line(result)


def test_reclaim_apply_against_an_unreachable_cluster_says_cannot_reach_not_stale(tmp_path: Path) -> None:
    from tests import whereabouts_cases as wc

    path = tmp_path / "reclaim.json"
    with FakeKubeServer() as server:
        server.put_many(wc.crashed_node_objects())
        kubeconfig = str(server.kubeconfig(tmp_path / "kubeconfig"))
        made = run("reclaim", "--k8s", "--kubeconfig", kubeconfig, "--ipam", "whereabouts", "--plan", "--out", str(path))
        assert made.exit_code == 0, made.output
    result = run("reclaim", "--apply", str(path), "--yes", "--kubeconfig", kubeconfig)
    assert result.exit_code == 6, result.output
    line = error_line(result)
    assert "cannot reach" in line and "stale" not in line
