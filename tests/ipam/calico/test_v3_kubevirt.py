"""Calico through the CLI on the fake API server: a cluster that serves only projectcalico.org/v3 (read and
written back in v3, with v3's shapes), a KubeVirt VM in live migration whose address is never planned,
pools by use (a LoadBalancer-only pool neither hides a starving node nor lends its settings), and the
bundled KubeVirt example."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cidrx.ipam.calico.strategies import pool as pool_strategy
from cidrx.model.options import PlanOptions
from cidrx.model.plan import load_plan
from cidrx.model.snapshot import load_snapshot
from tests.support.cases import calico as cases
from tests.support.cli import run
from tests.support.fakes.kube_server import FakeKubeServer, is_lock

V3 = "projectcalico.org/v3"
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "calico-kubevirt.snapshot.json"
VM_IP = "10.0.0.46"  # the VM's address (ordinal 46 of node-1's first block)


def as_v3(obj: dict[str, Any]) -> dict[str, Any]:
    """The same object as Calico's v3 CRDs hold it: apiVersion v3, IPAMConfiguration, boolean `deleted`."""
    if obj.get("apiVersion") != cases.API:
        return obj
    out = {**obj, "apiVersion": V3}
    if obj["kind"] == "IPAMConfig":
        out["kind"] = "IPAMConfiguration"
    if obj["kind"] == "BlockAffinity":
        out["spec"] = {**obj["spec"], "deleted": False, "type": "host"}
    return out


def kubevirt_world() -> cases.World:
    """The incident, plus a KubeVirt VM mid-migration in node-1's first block: `secondary` names the
    deleted source virt-launcher pod, `alternateOwnerAttrs` the Running target pod that reports the IP."""
    w = cases.incident()
    spec = w.blocks[0]["spec"]
    vm = {
        "handle_id": "k8s-pod-network.vms.vm-a",
        "secondary": {"namespace": "vms", "pod": "virt-launcher-vm-a-old", "node": "node-1", "vmi-name": "vm-a"},
        "alternateOwnerAttrs": {
            "namespace": "vms",
            "pod": "virt-launcher-vm-a-new",
            "node": "node-2",
            "vmi-name": "vm-a",
            "vmim-uid": "3f1c",
        },
    }
    spec["attributes"].append(vm)
    spec["allocations"][46] = len(spec["attributes"]) - 1
    spec["unallocated"].remove(46)
    w.pods.append(cases.pod("vms", "virt-launcher-vm-a-new", "node-2", "10.0.0.46"))
    # A LoadBalancer-only pool with free blocks must not hide node-3, which has no workload block.
    w.pools.append(cases.ippool("lb", "10.1.0.0/24", allowedUses=["LoadBalancer"], ipipMode="Never", natOutgoing=False))
    return w


@pytest.mark.parametrize("kube_server", [{"crds": ["projectcalico.org"]}], indirect=True)
def test_v3_only_cluster_diagnose_plan_apply(
    kube_server: FakeKubeServer, kubeconfig_path: Path, tmp_path: Path
) -> None:
    kube_server.put_many(as_v3(o) for o in kubevirt_world().objects())
    k8s = ["--k8s", "--kubeconfig", str(kubeconfig_path)]
    diag = run("diagnose", *k8s, "-o", "json")
    assert diag.exit_code == 3, diag.output
    ids = {f["id"] for f in json.loads(diag.stdout)["findings"]}
    assert {"CALICO-POOL-BLOCKS-EXHAUSTED", "CALICO-NODE-WITHOUT-BLOCK", "CALICO-LEAKED-IP"} <= ids

    plan_path = tmp_path / "r.json"
    made = run("reclaim", *k8s, "--ipam", "calico", "--plan", "--out", str(plan_path))
    assert made.exit_code == 0, made.output
    plan = load_plan(plan_path)
    ips = [e["ip"] for s in plan.steps for e in s.params.get("ips", [])]
    assert ips == ["10.0.0.44", "10.0.0.74"] and "10.0.0.46" not in ips
    assert all(s.params["api"] == V3 for s in plan.steps)

    applied = run("reclaim", "--apply", str(plan_path), "--yes", "--kubeconfig", str(kubeconfig_path))
    assert applied.exit_code == 0, applied.output
    writes = ("PUT", "DELETE", "POST", "PATCH")
    paths = [r.path for r in kube_server.requests() if r.method in writes and not is_lock(r)]
    assert paths and all(p.startswith("/apis/projectcalico.org/v3/") for p in paths)
    block = kube_server.get("projectcalico.org", "v3", "ipamblocks", "10-0-0-0-26")
    assert block is not None
    spec = block["spec"]
    assert spec["allocations"][44] is None and spec["sequenceNumber"] == 1
    vm = spec["attributes"][spec["allocations"][46]]
    assert vm["alternateOwnerAttrs"]["pod"] == "virt-launcher-vm-a-new"  # the VM's address untouched
    assert kube_server.get("projectcalico.org", "v3", "ipamhandles", "k8s-pod-network.vms.vm-a") is not None
    assert kube_server.get("projectcalico.org", "v3", "ipamblocks", "10-0-0-192-26") is None


def test_v1_cluster_sees_no_v3_types(kube_server: FakeKubeServer) -> None:
    groups = {t.group for t in kube_server.resource_types()}
    assert "crd.projectcalico.org" in groups and "projectcalico.org" not in groups


def test_new_pool_never_copies_a_load_balancer_pool() -> None:
    w = kubevirt_world()
    w.pools = [w.pools[1], cases.ippool("default-ipv4-ippool", "10.0.0.0/24", ipipMode="Never", vxlanMode="Always")]
    w.pools[0]["spec"]["ipipMode"] = "Always"
    plan = pool_strategy.make_plan(w.snapshot(), PlanOptions(), "2024-05-01T10:05:00Z")
    params = plan.steps[0].params
    assert (params["ipip_mode"], params["vxlan_mode"]) == ("Never", "Always")  # the workload pool's


def test_bundled_kubevirt_example(tmp_path: Path) -> None:
    snap = load_snapshot(EXAMPLE)
    assert snap.kube.calico is not None
    diag = run("diagnose", "--snapshot", str(EXAMPLE), "-o", "json")
    assert diag.exit_code == 3, diag.output
    ids = {f["id"] for f in json.loads(diag.stdout)["findings"]}
    assert "CALICO-NODE-WITHOUT-BLOCK" in ids  # the LoadBalancer pool's free blocks do not hide node-3
    out = tmp_path / "r.json"
    made = run("reclaim", "--snapshot", str(EXAMPLE), "--ipam", "calico", "--plan", "--out", str(out))
    assert made.exit_code == 0, made.output
    ips = [e["ip"] for s in load_plan(out).steps for e in s.params.get("ips", [])]
    assert VM_IP not in ips
    assert ips == ["10.0.0.44", "10.0.0.74"]


def test_bundled_kubevirt_example_is_generated_from_the_world() -> None:
    """examples/calico-kubevirt.snapshot.json is `kubevirt_world().snapshot()` (regenerate with save_snapshot)."""
    assert load_snapshot(EXAMPLE).fingerprint == kubevirt_world().snapshot().fingerprint
