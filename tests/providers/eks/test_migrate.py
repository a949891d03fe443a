"""The life of an EKS incident through the migration, on the incident in moto and the fake API server: a
custom-networking expansion applied leaves the old group's nodes in the full subnets (diagnose: migration
pending); `expand --plan --strategy eks-migrate` is planned although the applied plan's space has room, and
its apply cordons those nodes, evicts their pods through the Eviction API and scales the old node group to 0.
A PodDisruptionBudget that never allows stops the apply naming it, with nothing deleted; rollback uncordons
the nodes and scales the group back to the size the journal recorded."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cidrx.model import codec
from cidrx.model.plan import Plan, save_plan, seal
from tests.support.cases import case_for
from tests.support.cases.eks_migrate import after_expansion
from tests.support.cases.live import EksLive
from tests.support.cli import run

pytestmark = pytest.mark.usefixtures("shared_botocore")

PENDING = "EKS-PLAN-MIGRATION-PENDING"
NODEGROUP = "managed-ng"


def findings(live: EksLive) -> tuple[int, list[dict[str, Any]]]:
    result = run("diagnose", *live.target, "-o", "json")
    return result.exit_code, json.loads(result.stdout)["findings"]


def scaling(live: EksLive) -> dict[str, int]:
    assert live.estate is not None
    ng = live.estate.eks.describe_nodegroup(clusterName="demo", nodegroupName=NODEGROUP)["nodegroup"]
    return {k: int(v) for k, v in ng["scalingConfig"].items()}


def cordoned(live: EksLive) -> dict[str, bool]:
    assert live.kube is not None
    return {
        n["metadata"]["name"]: bool(n.get("spec", {}).get("unschedulable")) for n in live.kube.list("", "v1", "nodes")
    }


def migrate_plan(live: EksLive, path: Path) -> dict[str, Any]:
    made = run("expand", *live.target, "--strategy", "eks-migrate", "--plan", "--out", str(path))
    assert made.exit_code == 0, made.output
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def test_expansion_then_migration_leaves_no_migration_pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with after_expansion(tmp_path, monkeypatch) as live:
        assert isinstance(live, EksLive) and live.kube is not None
        code, before = findings(live)
        assert code == 3 and [f["id"] for f in before].count(PENDING) == 1
        was = scaling(live)
        plan = migrate_plan(live, tmp_path / "migrate.json")
        actions = [s["action"] for s in plan["steps"]]
        assert actions.count("eks.cordon-node") == 2 and actions.count("eks.scale-nodegroup") == 1
        assert plan["basis"]["nodegroups"] == {NODEGROUP: was}
        applied = run("expand", "--apply", str(tmp_path / "migrate.json"), "--yes", *live.access)
        assert applied.exit_code == 0, applied.output
        assert all(cordoned(live).values())
        assert scaling(live)["desiredSize"] == 0 and scaling(live)["minSize"] == 0
        assert live.kube.evicted and live.kube.count("DELETE", "pods") == 0  # evicted, never deleted
        code, emptied = findings(live)
        assert code == 3 and PENDING not in [f["id"] for f in emptied], emptied  # nothing left to move
        # The scale-down terminates the old nodes (moto runs no instances for node groups: the Node objects go
        # as the kubelets deregister).
        for name in cordoned(live):
            live.kube.delete("", "v1", "nodes", name)
        code, after = findings(live)
        assert PENDING not in [f["id"] for f in after], after
        full = [f for f in after if f["id"] == "EKS-SUBNET-EXHAUSTED"]
        assert full and all(f["severity"] == "info" for f in full), full
        # Nothing critical or warning is left: the control plane has roomy subnets of its own, and the VPC CNI's
        # failure event is of a pod the migration evicted.
        assert code == 0 and not [f for f in after if f["severity"] in ("critical", "warning")], after


def test_a_budget_that_never_allows_stops_the_apply_and_rollback_takes_the_migration_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with after_expansion(tmp_path, monkeypatch) as live:
        assert isinstance(live, EksLive) and live.kube is not None
        was = scaling(live)
        pods = [p for p in live.kube.list("", "v1", "pods") if p["metadata"]["namespace"] == "default"]
        labels = pods[0]["metadata"].get("labels") or {"app": "held"}
        for p in pods:
            p["metadata"]["labels"] = labels
            p.setdefault("status", {})["conditions"] = [{"type": "Ready", "status": "True"}]
            live.kube.put(p)
        live.kube.put(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": "keep-all", "namespace": "default"},
                "spec": {"selector": {"matchLabels": labels}, "minAvailable": "100%"},
            }
        )
        path = tmp_path / "migrate.json"
        migrate_plan(live, path)
        # A per-node deadline of 0 s: one round of evictions, then the verdict (no test waits for real).
        plan = codec.loads(path.read_text(), Plan, what="plan")
        steps = tuple(
            replace(s, params={**s.params, "timeout_seconds": 0.001}) if s.action == "eks.evict-node-pods" else s
            for s in plan.steps
        )
        save_plan(seal(replace(plan, steps=steps, digest="")), path)
        stopped = run("expand", "--apply", str(path), "--yes", *live.access)
        assert stopped.exit_code == 5 and "Traceback" not in stopped.output  # stopped partway: rerun resumes
        assert "could not be evicted" in stopped.output and "budgets: default/keep-all" in stopped.output, (
            stopped.output
        )
        assert live.kube.evicted == [] and live.kube.count("DELETE", "pods") == 0
        assert scaling(live) == was  # the group is not scaled while its nodes still run pods
        undone = run("rollback", str(path), "--yes", *live.access)
        assert undone.exit_code == 0, undone.output
        assert not any(cordoned(live).values()) and scaling(live) == was


def test_subnet_discovery_needs_no_migration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With subnet discovery the nodes in the full subnets take pod addresses from the new tagged subnets of their
    zone: nothing is pending after the expansion, the apply names no follow-up, and the migration has nothing to
    plan (exit 2, one line)."""
    with case_for("subnet-discovery").estate(tmp_path, monkeypatch) as live:
        assert isinstance(live, EksLive)
        path = tmp_path / "expansion.json"
        made = run("expand", *live.target, "--strategy", "subnet-discovery", "--plan", "--out", str(path))
        assert made.exit_code == 0, made.output
        applied = run("expand", "--apply", str(path), "--yes", *live.access)
        assert applied.exit_code == 0 and "eks-migrate" not in applied.output, applied.output
        _, after = findings(live)
        assert PENDING not in [f["id"] for f in after] and "EKS-SUBNET-EXHAUSTED" not in [f["id"] for f in after]
        # The kubelet retries the sandbox and the VPC CNI now finds addresses: the stuck pod starts (the fake runs
        # no kubelet, so the test moves it to Running); its old FailedCreatePodSandBox event no longer counts.
        assert live.kube is not None
        for pod in live.kube.list("", "v1", "pods"):
            if pod.get("status", {}).get("phase") == "Pending":
                pod["status"] = {
                    "phase": "Running",
                    "containerStatuses": [{"name": "c", "ready": True, "state": {"running": {}}}],
                }
                live.kube.put(pod)
        code, started = findings(live)
        # Only the control plane's own full subnets are left (a warning here; `--strategy control-plane-subnets`).
        assert code == 0 and not [f for f in started if f["severity"] == "critical"], started
        refused = run("expand", *live.target, "--strategy", "eks-migrate", "--plan", "--out", str(tmp_path / "m.json"))
        assert refused.exit_code == 2 and "nothing to migrate" in refused.output, refused.output
        assert "Traceback" not in refused.output and not (tmp_path / "m.json").exists()


def test_self_managed_group_is_cordoned_drained_and_scaled_through_its_auto_scaling_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The incident's nodes in a self-managed Auto Scaling group (no managed node group): after a custom-networking
    expansion, the migration cordons and evicts as for a managed group, and scales the group down with
    UpdateAutoScalingGroup (MinSize and DesiredCapacity 0, MaxSize kept); rollback puts the recorded size back."""
    from tests.providers.eks.test_provisioners_live import world
    from tests.support.estates import eks_provisioners as pw

    with world("self-managed", tmp_path, monkeypatch) as env:
        asg = env.estate.session.client("autoscaling")

        def size() -> dict[str, int]:
            (g,) = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[pw.ASG])["AutoScalingGroups"]
            return {"minSize": g["MinSize"], "maxSize": g["MaxSize"], "desiredSize": g["DesiredCapacity"]}

        expansion = tmp_path / "expansion.json"
        env.plan(expansion)
        applied = env.apply(expansion)
        assert applied.exit_code == 0, applied.output
        was = size()
        before = env.cli("diagnose", *env.estate.target, "-o", "json")
        assert PENDING in [f["id"] for f in json.loads(before.stdout)["findings"]], before.output
        path = tmp_path / "migrate.json"
        made = env.cli("expand", *env.estate.target, "--strategy", "eks-migrate", "--plan", "--out", str(path))
        assert made.exit_code == 0, made.output
        plan = json.loads(path.read_text())
        actions = [s["action"] for s in plan["steps"]]
        assert actions.count("eks.cordon-node") == 2 and actions.count("eks.scale-auto-scaling-group") == 1, actions
        assert plan["basis"]["auto_scaling_groups"] == {pw.ASG: was} and plan["basis"]["nodegroups"] == {}
        scale = next(s for s in plan["steps"] if s["action"] == "eks.scale-auto-scaling-group")
        assert scale["params"] == {"name": pw.ASG, "to": {"minSize": 0, "maxSize": was["maxSize"], "desiredSize": 0}}
        assert "autoscaling:UpdateAutoScalingGroup" in scale["permissions"]

        done = env.apply(path)
        assert done.exit_code == 0, done.output
        assert size() == {"minSize": 0, "maxSize": was["maxSize"], "desiredSize": 0}
        nodes = env.estate.kube.list("", "v1", "nodes")
        assert all(n.get("spec", {}).get("unschedulable") for n in nodes)
        assert env.estate.kube.count("DELETE", "pods") == 0  # evicted, never deleted
        shown = env.cli("diagnose", *env.estate.target, "-o", "json")
        assert PENDING not in [f["id"] for f in json.loads(shown.stdout)["findings"]], shown.output

        # Scaling back up launches instances; moto 5 cannot launch from a launch template version made by
        # CreateLaunchTemplateVersion (it keeps that version's UserData undecoded and asserts on it), so the group
        # launches from the template's first version here.
        (g,) = asg.describe_auto_scaling_groups(AutoScalingGroupNames=[pw.ASG])["AutoScalingGroups"]
        lt = {"LaunchTemplateId": g["LaunchTemplate"]["LaunchTemplateId"], "Version": "1"}
        asg.update_auto_scaling_group(AutoScalingGroupName=pw.ASG, LaunchTemplate=lt)
        undone = env.rollback(path)
        assert undone.exit_code == 0, undone.output
        assert size() == was
        assert not any(n.get("spec", {}).get("unschedulable") for n in env.estate.kube.list("", "v1", "nodes"))
