"""The whole life of an AKS incident through the CLI, Azure CNI node subnet: the full node subnet of
tests/support/estates/aks.py in the loopback ARM fake, its cluster side in the fake API server, driven by the real
azure-mgmt and Kubernetes clients.

diagnose (exit 3) -> expand --plan -> --apply -> AKS brings the new pool's node up (the test plays AKS's part: the
node in the API server, its 31 addresses in the new subnet, the pool's systemData.createdAt) -> diagnose exits 0
naming the applied plan: the full old subnet is information, since nothing has to move (Azure CNI gave the old
node its pods' addresses when it was created; new nodes go to the new pool), and the SubnetIsFull event from before
the apply no longer counts -> expand --plan exits 2 naming the plan -> rollback refuses while the new pool has a
node, then removes pool and subnet once it is gone -> diagnose exits 3 again.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from cidrx.model.plan import load_plan
from tests.support.cli import run
from tests.support.estates import aks as aw
from tests.support.fakes.arm_server import FakeArm
from tests.support.fakes.kube_server import FakeKubeServer

POOL_LABEL = "kubernetes.azure.com/agentpool"
MAX_PODS = 30  # the template pool's, copied: a node takes 31 addresses of its subnet


def node_object(name: str, pool: str, ip: str, created: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {POOL_LABEL: pool, "topology.kubernetes.io/zone": f"{aw.LOCATION}-1"},
            "creationTimestamp": created,
        },
        "status": {
            "addresses": [{"type": "InternalIP", "address": ip}],
            "allocatable": {"pods": str(MAX_PODS)},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def incident_objects() -> list[dict[str, Any]]:
    """The estate's cluster side (aw.node_subnet_kube()) as API objects: its node and the SubnetIsFull event."""
    section = aw.node_subnet_kube()
    objs = [node_object(n.name, n.pool, n.internal_ip, n.created) for n in section.nodes]
    for i, e in enumerate(section.events):
        objs.append(
            {
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": f"{e.name}.{i:04x}", "namespace": e.namespace},
                "involvedObject": {"kind": e.kind, "name": e.name, "namespace": e.namespace},
                "reason": e.reason,
                "type": e.type,
                "message": e.message,
                "count": e.count,
                "lastTimestamp": e.last_seen,
                "source": {"component": e.source},
            }
        )
    return objs


def diagnose(*args: str) -> tuple[int, dict[str, Any]]:
    result = run("diagnose", *args, "-o", "json")
    assert "Traceback" not in result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, doc


def by_id(doc: dict[str, Any], finding_id: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["id"] == finding_id]


def new_subnet(arm: FakeArm, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(s for s in arm.subnets(aw.SUB, aw.RG, aw.NODE_VNET) if s["name"] == name)
    return found


def new_pool_comes_up(arm: FakeArm, kube: FakeKubeServer, pool: str, subnet: str, created: str) -> str:
    """What AKS does after the apply: ARM reports when the pool was created (`created`), and its first VM joins
    (now) with its node address and its 30 pre-allocated pod addresses in the new subnet."""
    arm.pools[(aw.SUB, aw.RG, aw.NODE_CLUSTER, pool)]["systemData"] = {"createdAt": created, "createdByType": "User"}
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    s = new_subnet(arm, subnet)
    s["properties"]["ipConfigurations"] = aw.ip_configs(aw.NODE_VNET, subnet, MAX_PODS + 1)
    arm.put_subnet(aw.SUB, aw.RG, aw.NODE_VNET, s)
    name = f"aks-{pool}-51515151-vmss000000"
    kube.put(node_object(name, pool, "10.10.3.4", now))
    return name


def new_pool_scaled_to_zero(arm: FakeArm, kube: FakeKubeServer, node: str, subnet: str) -> None:
    """The pool is scaled to 0 before the rollback: its VM and NIC go, and the node with them."""
    kube.delete("", "v1", "nodes", node)
    s = new_subnet(arm, subnet)
    s["properties"].pop("ipConfigurations", None)
    arm.put_subnet(aw.SUB, aw.RG, aw.NODE_VNET, s)


def test_the_life_of_an_aks_incident_on_the_node_pool_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with aw.aks_estate(monkeypatch, aw.build_node_subnet) as arm, FakeKubeServer() as kube:
        kube.put_many(incident_objects())
        access = ["--kubeconfig", str(kube.kubeconfig(tmp_path / "kubeconfig"))]
        target = [*aw.target_flags(aw.NODE_CLUSTER), *access]

        code, before = diagnose(*target)
        assert code == 3
        assert {f["id"] for f in before["findings"] if f["severity"] == "critical"} == {
            "AKS-SUBNET-FULL",
            "AKS-SUBNET-TOO-SMALL",
            "AKS-SUBNET-ERRORS-SEEN",
        }

        plan_path = tmp_path / "plan.json"
        made = run("expand", *target, "--plan", "--out", str(plan_path))
        assert made.exit_code == 0, made.output
        plan = load_plan(plan_path)
        assert plan.strategy == "aks-node-pool"
        (subnet_step,) = [s for s in plan.steps if s.id == "create-subnet"]
        (pool_step,) = [s for s in plan.steps if s.id == "create-agent-pool"]
        subnet, cidr, pool = (
            subnet_step.params["subnet"],
            subnet_step.params["body"]["properties"]["addressPrefix"],
            pool_step.params["pool"],
        )
        applied = run("expand", "--apply", str(plan_path), "--yes", *access)
        assert applied.exit_code == 0, applied.output
        tags = arm.pools[(aw.SUB, aw.RG, aw.NODE_CLUSTER, pool)]["properties"]["tags"]
        assert tags["cidrx-plan"] == plan.plan_id
        created = (datetime.now(UTC) - timedelta(minutes=4)).strftime("%Y-%m-%dT%H:%M:%SZ")
        node = new_pool_comes_up(arm, kube, pool, subnet, created)

        code, after = diagnose(*target)
        assert code == 0, after["findings"]
        assert [f for f in after["findings"] if f["severity"] != "info"] == []
        (done,) = by_id(after, "AKS-PLAN-APPLIED")
        assert done["subject"] == f"plan {plan.plan_id}"
        # 10.10.3.0/24: 251 usable, the new node took 31, so 220 are free: room for 7 more nodes of 31.
        assert done["summary"] == (
            f"plan {plan.plan_id} applied {created}: agent pool {pool} takes new nodes in subnet {subnet} ({cidr}), "
            "220 addresses free, room for 7 more node(s)"
        )
        assert any("no longer count" in e for e in done["evidence"]), done["evidence"]
        (full,) = by_id(after, "AKS-SUBNET-FULL")
        assert full["subject"] == "subnet aks-nodes" and full["severity"] == "info"
        assert full["remediation"].startswith("Nothing has to move: Azure CNI gave each node on subnet aks-nodes")
        assert [f["severity"] for f in by_id(after, "AKS-SUBNET-TOO-SMALL")] == ["info"]
        assert by_id(after, "AKS-SUBNET-ERRORS-SEEN") == []

        again = run("expand", *target, "--plan", "--out", str(tmp_path / "second.json"))
        assert again.exit_code == 2, again.output
        assert (
            f"plan {plan.plan_id}" in again.output
            and "still has room in its new space" in again.output
            and f"agent pool {pool}" in again.output
        )
        assert not (tmp_path / "second.json").exists()

        refused = run("rollback", str(plan_path), "--yes", *access)
        assert refused.exit_code == 4, refused.output
        assert f"agent pool {pool} still has 1 node(s)" in refused.output
        new_pool_scaled_to_zero(arm, kube, node, subnet)
        undone = run("rollback", str(plan_path), "--yes", *access)
        assert undone.exit_code == 0, undone.output
        assert (aw.SUB, aw.RG, aw.NODE_CLUSTER, pool) not in arm.pools
        assert subnet not in {s["name"] for s in arm.subnets(aw.SUB, aw.RG, aw.NODE_VNET)}

        code, undone_doc = diagnose(*target)
        assert code == 3
        assert by_id(undone_doc, "AKS-PLAN-APPLIED") == []
        assert [f["severity"] for f in by_id(undone_doc, "AKS-SUBNET-FULL")] == ["critical"]
        assert [f["severity"] for f in by_id(undone_doc, "AKS-SUBNET-ERRORS-SEEN")] == ["critical"]
    assert not kube.errors


def test_the_pod_subnet_path_migrates_the_old_pool_and_rolls_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """aks-pod-subnet applied -> diagnose: migration pending, the fix is `--strategy aks-migrate` -> its plan ->
    apply: the old pool's nodes cordoned, their pods evicted through the Eviction API (the DaemonSet pods stay),
    the pool at 0 with autoscaling off -> AKS releases the old pool's pod addresses (the test plays it) -> diagnose
    exits 0 with nothing pending -> rollback uncordons the nodes and restores count and autoscaler."""
    from tests.support.cases.aks_migrate import APP_PODS, after_expansion

    key = (aw.SUB, aw.RG, aw.POD_CLUSTER, "workers")
    with after_expansion(tmp_path, monkeypatch) as live:
        assert live.arm is not None and live.kube is not None
        arm, kube = live.arm, live.kube
        code, before = diagnose(*live.target)
        (pending,) = by_id(before, "AKS-PLAN-APPLIED")
        assert pending["severity"] == "warning" and pending["summary"].endswith("migration pending")
        assert "--plan --out plan.json --strategy aks-migrate" in pending["remediation"]

        plan_path = tmp_path / "migrate.json"
        made = run("expand", *live.target, "--strategy", "aks-migrate", "--plan", "--out", str(plan_path))
        assert made.exit_code == 0, made.output
        plan = load_plan(plan_path)
        nodes = sorted(plan.basis["nodes"])
        assert len(nodes) == 3 and plan.basis["agent_pools"] == {
            "workers": {"count": 3, "enableAutoScaling": True, "minCount": 2, "maxCount": 6}
        }
        applied = run("expand", "--apply", str(plan_path), "--yes", *live.access)
        assert applied.exit_code == 0, applied.output
        for name in nodes:
            node = kube.get("", "v1", "nodes", name)
            assert node is not None and node["spec"]["unschedulable"] is True
        left = sorted(p["metadata"]["name"] for p in kube.list("", "v1", "pods"))
        assert left == sorted(f"azure-cns-{n[-1]}" for n in nodes)  # the DaemonSet pods stay
        assert kube.count("POST", "pods", path_contains="/eviction") == APP_PODS * len(nodes)
        assert kube.count("DELETE", "pods") == 0  # evicted, never deleted
        props = arm.pools[key]["properties"]
        assert props["count"] == 0 and props["enableAutoScaling"] is False
        assert "minCount" not in props and "maxCount" not in props

        # AKS takes the pool's VMs away: their pod addresses go back to the old pod subnet.
        old = next(s for s in arm.subnets(aw.SUB, aw.RG, aw.POD_VNET) if s["name"] == "pods")
        old["properties"].pop("ipConfigurations", None)
        arm.put_subnet(aw.SUB, aw.RG, aw.POD_VNET, old)
        code, after = diagnose(*live.target)
        assert code == 0, after["findings"]
        (done,) = by_id(after, "AKS-PLAN-APPLIED")
        assert done["severity"] == "info" and "migration pending" not in done["summary"]

        undone = run("rollback", str(plan_path), "--yes", *live.rollback_access)
        assert undone.exit_code == 0, undone.output
        for name in nodes:
            node = kube.get("", "v1", "nodes", name)
            assert node is not None and not node["spec"].get("unschedulable")
        props = arm.pools[key]["properties"]
        assert (props["count"], props["enableAutoScaling"], props["minCount"], props["maxCount"]) == (3, True, 2, 6)
