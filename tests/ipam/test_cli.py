"""In-cluster IPAMs through the CLI, on the fake Kubernetes API server with the real client: `diagnose
--k8s` finds the Whereabouts and Calico incidents through the ordinary collector (IPAM objects first,
then one pod list kept to the pods they name), `reclaim --plan` / `reclaim --apply` release exactly the
stale addresses, and a second apply writes nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cidrx.app.plan import strategies
from cidrx.cli.expand import STRATEGIES
from cidrx.model.plan import load_plan
from tests.support.cases import calico as calico_cases
from tests.support.cases import whereabouts as wc
from tests.support.cli import run
from tests.support.fakes.kube_server import FakeKubeServer, is_lock


def writes(server: FakeKubeServer) -> list[str]:
    writing = ("POST", "PUT", "PATCH", "DELETE")
    return [f"{r.method} {r.path}" for r in server.requests() if r.method in writing and not is_lock(r)]


@pytest.fixture
def whereabouts(kube_server: FakeKubeServer, kubeconfig_path: Path) -> list[str]:
    kube_server.put_many(wc.crashed_node_objects())
    return ["--k8s", "--kubeconfig", str(kubeconfig_path)]


@pytest.fixture
def calico(kube_server: FakeKubeServer, kubeconfig_path: Path) -> list[str]:
    kube_server.put_many(calico_cases.incident().objects())
    return ["--k8s", "--kubeconfig", str(kubeconfig_path)]


def test_diagnose_k8s_finds_the_full_whereabouts_pool(whereabouts: list[str]) -> None:
    result = run("diagnose", *whereabouts, "-o", "json")
    assert result.exit_code == 3, result.output
    d = json.loads(result.stdout)
    ids = {f["id"] for f in d["findings"]}
    assert {"WHEREABOUTS-POOL-FULL", "WHEREABOUTS-STALE-ALLOCATION"} <= ids
    pool = next(c for c in d["capacity"] if c["kind"] == "whereabouts-pool")
    assert (pool["size"], pool["free"], pool["extra"]["stale"]) == (14, 0, 6)


def test_reclaim_plan_apply_then_nothing_left(
    whereabouts: list[str], kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    plan_path = tmp_path / "r.json"
    made = run("reclaim", *whereabouts, "--ipam", "whereabouts", "--plan", "--out", str(plan_path))
    assert made.exit_code == 0, made.output
    plan = load_plan(plan_path)
    assert plan.strategy == "whereabouts-reclaim"
    kubeconfig = whereabouts[2]
    applied = run("reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig)
    assert applied.exit_code == 0, applied.output
    # The apply ends with a fresh look: the pool before -> after, and which findings it resolved.
    said = " ".join(applied.stdout.split())
    pool_line = f"whereabouts-pool {wc.POOL_NS}/{wc.POOL} 10.10.0.0/28: 14/14 used, 0 free (100.0%) -> 8/14 used"
    assert f"{pool_line}, 6 free (57.1%)" in said
    resolved = said.split("Findings resolved (2)")[1].split("Still open (0)")[0]
    assert "WHEREABOUTS-POOL-FULL (critical)" in resolved and "WHEREABOUTS-STALE-ALLOCATION (warning)" in resolved
    assert "New (0)" in said
    after = json.loads(run("diagnose", *whereabouts, "-o", "json").stdout)
    pool = next(c for c in after["capacity"] if c["kind"] == "whereabouts-pool")
    assert (pool["used"], pool["free"], pool["extra"]["stale"]) == (8, 6, 0)
    kube_server.reset_log()
    again = run("reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", kubeconfig)
    assert again.exit_code == 0, again.output
    assert writes(kube_server) == []


def test_reclaim_apply_json_reports_steps_and_the_fresh_look(
    whereabouts: list[str], kube_server: FakeKubeServer, tmp_path: Path
) -> None:
    plan_path = tmp_path / "r.json"
    assert run("reclaim", *whereabouts, "--ipam", "whereabouts", "--plan", "--out", str(plan_path)).exit_code == 0
    applied = run("reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", whereabouts[2], "-o", "json")
    assert applied.exit_code == 0, applied.output
    doc = json.loads(applied.stdout)
    plan = load_plan(plan_path)
    assert doc["schema"] == "cidrx.apply/v1" and doc["plan_id"] == plan.plan_id
    assert [s["step"] for s in doc["steps"]] == [s.id for s in plan.steps]
    assert {s["status"] for s in doc["steps"]} == {"done"}
    (pool,) = [c for c in doc["verification"]["capacity"] if c["kind"] == "whereabouts-pool"]
    assert (pool["before"]["used"], pool["before"]["free"]) == (14, 0)
    assert (pool["after"]["used"], pool["after"]["free"]) == (8, 6)
    resolved = {f["id"] for f in doc["verification"]["resolved"]}
    assert resolved == {"WHEREABOUTS-POOL-FULL", "WHEREABOUTS-STALE-ALLOCATION"}
    assert doc["verification"]["still_open"] == doc["verification"]["new"] == []
    assert doc["verification_error"] is None and doc["next_steps"] == list(plan.notes)
    journal = [json.loads(line) for line in Path(f"{plan_path}.journal.jsonl").read_text().splitlines()]
    assert journal[-1]["event"] == "verified" and journal[-1]["outputs"] == doc["verification"]


def test_an_expand_apply_of_a_reclaim_plan_is_refused(whereabouts: list[str], tmp_path: Path) -> None:
    plan_path = tmp_path / "r.json"
    assert run("reclaim", *whereabouts, "--ipam", "whereabouts", "--plan", "--out", str(plan_path)).exit_code == 0
    result = run("expand", "--apply", str(plan_path), "--yes", "--kubeconfig", whereabouts[2])
    assert result.exit_code == 2
    assert "cidrx reclaim --apply" in result.output


def test_reclaim_calico_releases_leaks_and_keeps_borrowing_visible(calico: list[str], tmp_path: Path) -> None:
    before = json.loads(run("diagnose", *calico, "-o", "json").stdout)
    ids = {f["id"] for f in before["findings"]}
    assert {"CALICO-BORROWED-IPS", "CALICO-LEAKED-IP"} <= ids
    plan_path = tmp_path / "c.json"
    assert run("reclaim", *calico, "--ipam", "calico", "--plan", "--out", str(plan_path)).exit_code == 0
    applied = run("reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", calico[2])
    assert applied.exit_code == 0, applied.output
    after = json.loads(run("diagnose", *calico, "-o", "json").stdout)
    assert "CALICO-LEAKED-IP" not in {f["id"] for f in after["findings"]}


def test_calico_pool_expand_plans_a_new_pool(calico: list[str], tmp_path: Path) -> None:
    plan_path = tmp_path / "p.json"
    made = run("expand", *calico, "--plan", "--strategy", "calico-pool", "--out", str(plan_path))
    assert made.exit_code == 0, made.output
    assert [s.action for s in load_plan(plan_path).steps] == ["calico.create-ippool"]


def test_reclaim_needs_an_ipam_and_a_cluster_that_runs_it(whereabouts: list[str]) -> None:
    missing = run("reclaim", *whereabouts, "--plan")
    assert missing.exit_code == 2
    assert "--ipam" in missing.output
    absent = run("reclaim", *whereabouts, "--ipam", "calico", "--plan", "--out", "-")
    assert absent.exit_code == 2
    assert "no calico IP pools found" in absent.output


def test_a_strategy_of_another_provider_is_refused() -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "eks-demo-ip.snapshot.json"
    result = run("expand", "--snapshot", str(example), "--plan", "--strategy", "node-pool", "--out", "-")
    assert result.exit_code == 2
    assert "does not apply to eks" in result.output


def test_the_cli_strategy_list_matches_the_providers() -> None:
    assert set(STRATEGIES) == set(strategies())
