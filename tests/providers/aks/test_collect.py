"""AKS collect through the real azure-mgmt clients against the loopback ARM fake, and the bundled examples
(examples/aks-*.snapshot.json) made from it. Set CIDRX_UPDATE_EXAMPLES=1 to rewrite the examples on purpose."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cidrx.model.snapshot import load_snapshot, save_snapshot
from cidrx.providers.aks.api import AksApi
from cidrx.providers.aks.collect.collect import collect_aks
from tests.support.estates import aks as aw
from tests.support.fakes.arm_server import FakeArm

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
UPDATE = os.environ.get("CIDRX_UPDATE_EXAMPLES") == "1"  # read before the fixtures clear CIDRX_*
FILES = {
    "node-subnet": "aks-cni-node-subnet.snapshot.json",
    "pod-subnet": "aks-dynamic-pod-subnet.snapshot.json",
    "overlay": "aks-overlay-pod-cidr.snapshot.json",
}


def test_collect_the_node_subnet_cluster(arm: FakeArm) -> None:
    aks = collect_aks(AksApi(aw.SUB), aw.RG, aw.NODE_CLUSTER)
    assert (aks.cluster.network_plugin, aks.cluster.network_plugin_mode, aks.cluster.service_cidr) == (
        "azure",
        "",
        "10.0.0.0/16",
    )
    [pool] = aks.agent_pools
    assert (pool.count, pool.max_pods, pool.max_count, pool.max_nodes) == (1, 30, 5, 5)
    assert pool.properties["nodeTaints"] == ["dedicated=platform:NoSchedule"]
    assert aks.vnet is not None and aks.vnet.address_prefixes == ("10.10.0.0/16",)
    assert [(s.name, s.address_prefix, s.ip_configurations) for s in aks.vnet.subnets] == [
        ("aks-nodes", "10.10.0.0/26", 31),
        ("AzureBastionSubnet", "10.10.1.0/26", 2),
        ("db", "10.10.2.0/24", 4),
    ]
    assert aks.vnet.peerings[0].remote_address_prefixes == ("10.100.0.0/16",)
    [table] = aks.route_tables
    assert [(r.name, r.address_prefix) for r in table.routes] == [("to-firewall", "10.10.4.0/22")]


@pytest.mark.parametrize("estate", sorted(FILES))
def test_the_bundled_examples_are_what_collect_reads(arm: FakeArm, estate: str) -> None:
    cluster, _build, kube = aw.ESTATES[estate]
    snapshot = aw.example_snapshot(collect_aks(AksApi(aw.SUB), aw.RG, cluster), kube())
    path = EXAMPLES / FILES[estate]
    if UPDATE:
        save_snapshot(snapshot, path)
    assert load_snapshot(path) == snapshot
    assert json.loads(path.read_text())["target"]["provider"] == "aks"


def test_fleet_mode_lists_the_subscriptions_clusters(arm: FakeArm) -> None:
    from tests.support.cli import run

    result = run("diagnose", "--aks", "--subscription", aw.SUB, "--all-clusters", "--no-kube", "-o", "json")
    assert result.exit_code == 3, result.output
    doc = json.loads(result.stdout)
    text = json.dumps(doc)
    for cluster in (aw.NODE_CLUSTER, aw.POD_CLUSTER, aw.OVERLAY_CLUSTER):
        assert cluster in text
    assert "AKS-OVERLAY-POD-CIDR-EXHAUSTED" in text and "AKS-POD-SUBNET-EXHAUSTED" in text


def test_the_cluster_side_reads_cluster_subnet_states_and_agent_pool_labels(arm: FakeArm, tmp_path: Path) -> None:
    from cidrx.providers.aks.analyze.analyze import analyze
    from tests.support.cli import run
    from tests.support.fakes.kube_server import FakeKubeServer

    with FakeKubeServer() as kube:
        kube.register("acn.azure.com", "v1alpha1", "clustersubnetstates", "ClusterSubnetState", True)
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": "aks-workers-vmss000000", "labels": {"kubernetes.azure.com/agentpool": "workers"}},
            "status": {"addresses": [{"type": "InternalIP", "address": "10.30.0.4"}]},
        }
        state = {
            "apiVersion": "acn.azure.com/v1alpha1",
            "kind": "ClusterSubnetState",
            "metadata": {"name": "pods", "namespace": "kube-system"},
            "status": {"exhausted": True, "timestamp": "1741944300"},
        }
        kube.put_many([node, state])
        kubeconfig = str(kube.kubeconfig(tmp_path / "kubeconfig"))
        out = tmp_path / "snap.json"
        made = run("snapshot", *aw.target_flags(aw.POD_CLUSTER), "--kubeconfig", kubeconfig, "--out", str(out))
        assert made.exit_code == 0, made.output
    snap = load_snapshot(out)
    assert [n.pool for n in snap.kube.nodes] == ["workers"]
    [read] = snap.kube.cluster_subnet_states
    assert (read.namespace, read.name, read.exhausted) == ("kube-system", "pods", True)
    [f] = [f for f in analyze(snap).findings if f.id == "AKS-POD-SUBNET-EXHAUSTED"]
    assert "ClusterSubnetState pods: status.exhausted is true" in f.evidence
