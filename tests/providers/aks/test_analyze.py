"""AKS diagnosis on the bundled examples and on the address rules of each plugin mode (pure)."""

from __future__ import annotations

from pathlib import Path

import pytest

from cidrx.model.findings import Severity
from cidrx.model.snapshot import load_snapshot
from cidrx.providers.aks.analyze.analyze import analyze
from cidrx.providers.aks.facts.subnets import up_front, usable
from cidrx.providers.aks.model import AgentPool, AksCluster, Subnet

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def cluster(plugin: str = "azure", mode: str = "") -> AksCluster:
    return AksCluster("id", "c", "westeurope", "Succeeded", "1.30", plugin, mode)


def pool(count: int, max_pods: int, max_count: int | None = None, pod_subnet: str = "") -> AgentPool:
    return AgentPool(
        "p", "User", "Standard_D4s_v5", "Linux", count, max_pods, "s", pod_subnet, max_count is not None, 1, max_count
    )


# The sizing example of Microsoft's IP address planning page (concepts-network-ip-address-planning): 50 nodes of
# max pods 30 need (50 + 1) + (50 + 1) x 30 = 1,581 addresses, so a /21; with Overlay or kubenet only the nodes
# (+ 1) take subnet addresses.
@pytest.mark.parametrize(
    ("plugin", "mode", "nodes", "max_pods", "expected"),
    [
        ("azure", "", 50, 30, 1581),
        ("azure", "", 50, 110, 5661),
        ("azure", "overlay", 50, 250, 51),
        ("kubenet", "", 50, 110, 51),
    ],
)
def test_up_front_reservation(plugin: str, mode: str, nodes: int, max_pods: int, expected: int) -> None:
    assert up_front(cluster(plugin, mode), pool(nodes, max_pods)) == expected


def test_the_autoscaler_max_count_is_what_is_reserved() -> None:
    assert up_front(cluster(), pool(1, 30, max_count=5)) == 6 * 31
    assert up_front(cluster(), pool(1, 30, max_count=5, pod_subnet="ps")) == 6  # nodes only in the node subnet


def test_azure_keeps_five_addresses_per_subnet() -> None:
    assert usable(Subnet("i", "s", "10.0.0.0/29")) == 3
    assert usable(Subnet("i", "s", "10.0.0.0/24")) == 251


def findings(name: str) -> dict[str, Severity]:
    d = analyze(load_snapshot(EXAMPLES / name))
    return {f.id: f.severity for f in d.findings}


def test_the_node_subnet_example_is_full_and_too_small() -> None:
    assert findings("aks-cni-node-subnet.snapshot.json") == {
        "AKS-SUBNET-FULL": Severity.CRITICAL,
        "AKS-SUBNET-TOO-SMALL": Severity.CRITICAL,
        "AKS-SUBNET-ERRORS-SEEN": Severity.CRITICAL,
    }


def test_the_pod_subnet_example_is_exhausted_by_its_cluster_subnet_state_too() -> None:
    d = analyze(load_snapshot(EXAMPLES / "aks-dynamic-pod-subnet.snapshot.json"))
    [exhausted] = [f for f in d.findings if f.id == "AKS-POD-SUBNET-EXHAUSTED"]
    assert exhausted.severity is Severity.CRITICAL and exhausted.subject == "subnet pods"
    assert any("ClusterSubnetState pods" in e for e in exhausted.evidence)


def test_the_overlay_example_says_its_pod_cidr_cannot_grow() -> None:
    d = analyze(load_snapshot(EXAMPLES / "aks-overlay-pod-cidr.snapshot.json"))
    [f] = [f for f in d.findings if f.id == "AKS-OVERLAY-POD-CIDR-EXHAUSTED"]
    assert f.severity is Severity.CRITICAL and "cannot expand" in f.remediation and "Azure/AKS#4591" in f.remediation
    [row] = [c for c in d.capacity if c.kind == "pod-cidr"]
    assert (row.size, row.used, row.free) == (4, 4, 0)


def kubenet_snapshot(nodes: int, most: int, routes: int) -> object:
    from cidrx.model.kube import KubeSection
    from cidrx.model.snapshot import Snapshot, seal, with_sections
    from cidrx.providers.aks.model import AksSection, Route, RouteTable, VirtualNetwork
    from tests.support.estates import aks as aw

    sid = aw.subnet_id("v", "nodes")
    c = AksCluster("id", "kn", "westeurope", "Succeeded", "1.30", "kubenet", "", "10.244.0.0/14", "10.0.0.0/16")
    p = AgentPool("np", "System", "Standard_D4s_v5", "Linux", nodes, 110, sid, "", True, 1, most)
    vnet = VirtualNetwork(
        aw.vnet_id("v"), "v", aw.RG, "westeurope", ("10.8.0.0/16",), (Subnet(sid, "nodes", "10.8.0.0/22", nodes),)
    )
    table = RouteTable("rt", "aks-agentpool-rt", tuple(Route(f"r{i}", f"10.244.{i % 256}.0/24") for i in range(routes)))
    aks = AksSection(aw.SUB, aw.RG, c, (p,), vnet, (table,))
    base = Snapshot(target=aw.target("kn"), taken_at=aw.EXAMPLE_TAKEN_AT, kube=KubeSection(available=False))
    return seal(with_sections(base, aks=aks))


@pytest.mark.parametrize(
    ("nodes", "most", "routes", "severity"), [(400, 400, 400, Severity.CRITICAL), (300, 450, 300, Severity.WARNING)]
)
def test_kubenet_clusters_stop_at_400_routes(nodes: int, most: int, routes: int, severity: Severity) -> None:
    d = analyze(kubenet_snapshot(nodes, most, routes))  # type: ignore[arg-type]
    [f] = [f for f in d.findings if f.id == "AKS-KUBENET-ROUTE-LIMIT"]
    assert f.severity is severity
    [row] = [c for c in d.capacity if c.kind == "route-table"]
    assert (row.size, row.used) == (400, routes)


def test_kubenet_below_the_limit_raises_nothing() -> None:
    d = analyze(kubenet_snapshot(10, 20, 10))  # type: ignore[arg-type]
    assert not [f for f in d.findings if f.id == "AKS-KUBENET-ROUTE-LIMIT"]
