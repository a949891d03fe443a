"""The whole life of a GKE incident through the CLI, node-pool path: the talk's incident in the loopback GCP fake with
its cluster side in the fake API server, driven by the real google-cloud and Kubernetes clients.

diagnose (exit 3) -> expand --plan -> --apply -> GKE brings the new pool's nodes up and the waiting pods land on
them (the test plays GKE's part in the API server) -> diagnose exits 0 naming the applied plan: the full old range
is information, since GKE needs no migration (nodes keep their pod blocks; new nodes go to the new pool), and the
autoscaler's "IP space exhausted" events from before the apply no longer count -> expand --plan exits 2 naming the
plan -> rollback refuses while the new pool has nodes, then removes it once they are gone -> diagnose exits 3 again.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import pytest

from cidrx.model.plan import load_plan
from tests.support.cli import run
from tests.support.estates import gke as gw
from tests.support.fakes.gcp_server import FakeGcp
from tests.support.fakes.kube_server import FakeKubeServer

POOL_LABEL = "cloud.google.com/gke-nodepool"
NEW_NODES = 3  # GKE creates the copied pool with its template's initial count (1 per zone, 3 zones)
MOVED = 3  # waiting pods the new nodes take; the other two stay Pending, with their autoscaler events of before


def diagnose(*args: str) -> tuple[int, dict[str, Any]]:
    result = run("diagnose", *args, "-o", "json")
    assert "Traceback" not in result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return result.exit_code, doc


def by_id(doc: dict[str, Any], finding_id: str) -> list[dict[str, Any]]:
    return [f for f in doc["findings"] if f["id"] == finding_id]


def row(doc: dict[str, Any], kind: str, name: str) -> dict[str, Any]:
    found: dict[str, Any] = next(c for c in doc["capacity"] if c["kind"] == kind and c["name"] == name)
    return found


def new_pool_comes_up(kube: FakeKubeServer, pool: str, cidr: str) -> list[str]:
    """What GKE and the scheduler do after the apply: the new pool's nodes register with a /24 each from the new
    range, created now (after every autoscaler event of the incident), and the first waiting pods run on them."""
    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    blocks = list(IPv4Network(cidr).subnets(new_prefix=24))
    names = [f"gke-{gw.CLUSTER}-{pool}-7d1e0c4b-{i:04d}" for i in range(NEW_NODES)]
    for i, name in enumerate(names):
        kube.put(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {POOL_LABEL: pool, "topology.kubernetes.io/zone": gw.ZONES[i]},
                    "creationTimestamp": now,
                },
                "spec": {"podCIDR": str(blocks[i]), "podCIDRs": [str(blocks[i])]},
                "status": {
                    "addresses": [{"type": "InternalIP", "address": f"10.0.0.{40 + i}"}],
                    "allocatable": {"pods": str(gw.MAX_PODS)},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    for i, pod in enumerate(gw.incident_kube().waiting_pods[:MOVED]):
        placed = kube.get("", "v1", "pods", pod.name, pod.namespace)
        assert placed is not None
        placed["spec"]["nodeName"] = names[i]
        placed["status"] = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
        kube.put(placed)
    return names


def new_pool_scaled_to_zero(kube: FakeKubeServer, names: list[str]) -> None:
    """The new pool's nodes go (scaled to 0 before the rollback); their pods wait again."""
    for name in names:
        kube.delete("", "v1", "nodes", name)
    for pod in gw.incident_kube().waiting_pods[:MOVED]:
        waiting = kube.get("", "v1", "pods", pod.name, pod.namespace)
        assert waiting is not None
        waiting["spec"].pop("nodeName", None)
        waiting["status"] = {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        }
        kube.put(waiting)


def test_the_life_of_a_gke_incident_on_the_node_pool_path(
    gcp: FakeGcp, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    with FakeKubeServer() as kube:
        kube.put_many(gw.incident_kube_objects())
        access = ["--kubeconfig", str(kube.kubeconfig(tmp_path / "kubeconfig"))]
        target = ["--gke", "--project", gw.PROJECT, "--location", gw.LOCATION, "--cluster", gw.CLUSTER, *access]

        code, before = diagnose(*target)
        assert code == 3
        assert {f["id"] for f in before["findings"] if f["severity"] == "critical"} == {
            "GKE-POD-RANGE-EXHAUSTED",
            "GKE-SCALE-UP-IP-EXHAUSTED",
        }

        plan_path = tmp_path / "plan.json"
        made = run("expand", *target, "--plan", "--strategy", "node-pool", "--out", str(plan_path))
        assert made.exit_code == 0, made.output
        plan = load_plan(plan_path)
        plan_id, pool, cidr, range_name = (
            plan.plan_id,
            plan.basis["node_pool_name"],
            plan.basis["cidr"],
            plan.basis["range_name"],
        )
        applied = run("expand", "--apply", str(plan_path), "--yes", *access)
        assert applied.exit_code == 0, applied.output
        assert gcp.node_pool(gw.PROJECT, gw.LOCATION, gw.CLUSTER, pool) is not None
        names = new_pool_comes_up(kube, pool, cidr)

        code, after = diagnose(*target)
        assert code == 0, after["findings"]
        assert [f for f in after["findings"] if f["severity"] != "info"] == []
        (done,) = by_id(after, "GKE-PLAN-APPLIED")
        assert done["subject"] == f"plan {plan_id}"
        assert f"node pool {pool} takes new nodes from pod range {range_name} ({cidr})" in done["summary"]
        assert "room for 13 more node(s); its first node joined" in done["summary"]
        assert any("no longer count" in e for e in done["evidence"]), done["evidence"]
        (full,) = by_id(after, "GKE-POD-RANGE-EXHAUSTED")
        assert full["severity"] == "info" and full["remediation"].startswith("Nothing to do: GKE needs no migration.")
        assert by_id(after, "GKE-SCALE-UP-IP-EXHAUSTED") == []
        # Capacity: the new range and pool are room, not "0 free" / 100%.
        new_range = row(after, "pod-range", range_name)
        assert (new_range["nodes"], new_range["max_nodes"], new_range["nodes_fit"]) == (NEW_NODES, 16, 13)
        assert new_range["utilization"] < 0.2
        new_pool = row(after, "node-pool", pool)
        assert new_pool["nodes_fit"] == 13 and new_pool["free"] > 0 and new_pool["utilization"] < 0.1
        table = run("diagnose", *target, env={"COLUMNS": "200"})
        assert table.exit_code == 0, table.output
        lines = {line.split()[1]: line for line in table.stdout.splitlines() if line.startswith(("pod-range", "node-"))}
        assert "100.0%" not in lines[pool] and "3/16" in lines[range_name], table.stdout

        again = run("expand", *target, "--plan", "--out", str(tmp_path / "second.json"))
        assert again.exit_code == 2, again.output
        assert (
            f"plan {plan_id}" in again.output
            and "still has room in its new space" in again.output
            and f"node pool {pool}" in again.output
        )
        assert not (tmp_path / "second.json").exists()

        refused = run("rollback", str(plan_path), "--yes", *access)
        assert refused.exit_code == 4, refused.output
        assert f"node pool {pool} still has {NEW_NODES} node(s)" in refused.output
        new_pool_scaled_to_zero(kube, names)
        undone = run("rollback", str(plan_path), "--yes", *access)
        assert undone.exit_code == 0, undone.output
        assert gcp.node_pool(gw.PROJECT, gw.LOCATION, gw.CLUSTER, pool) is None
        subnet = gcp.subnet(gw.PROJECT, gw.REGION, gw.SUBNET)
        assert subnet is not None and range_name not in {r["rangeName"] for r in subnet["secondaryIpRanges"]}

        code, undone_doc = diagnose(*target)
        assert code == 3
        assert by_id(undone_doc, "GKE-PLAN-APPLIED") == []
        assert [f["severity"] for f in by_id(undone_doc, "GKE-POD-RANGE-EXHAUSTED")] == ["critical"]
        assert [f["severity"] for f in by_id(undone_doc, "GKE-SCALE-UP-IP-EXHAUSTED")] == ["critical"]
    assert not kube.errors
