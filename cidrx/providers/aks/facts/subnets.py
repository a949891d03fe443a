"""What each subnet an AKS cluster uses holds and must hold, under the network plugin mode of the pools on it.

Azure CNI takes pod addresses from the VNet, and how many a node needs depends on the mode (docs/cloud-facts.md,
"AKS"):
- node subnet (Azure CNI without a pod subnet): a node's address and one per pod (max pods) are taken when the
  node is created, and AKS checks a pool's whole autoscaler range up front: (max nodes + 1) x (max pods + 1)
  addresses must fit, or the operation fails with `InsufficientSubnetSize` (the + 1 node is the upgrade surge);
- pod subnet (`podSubnetID`): nodes take one address each from the node subnet; pods take addresses from the
  pod subnet in batches of 16 per node (dynamic allocation; static block allocation takes /28 blocks);
- Overlay and kubenet: nodes take one address each; pods come from the cluster's pod CIDR, a /24 per node.
Azure keeps 5 addresses of every subnet. Pure: no I/O.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from ipaddress import IPv4Network

from cidrx.providers.aks.model import AgentPool, AksCluster, AksSection, Subnet

AZURE_RESERVED_PER_SUBNET = 5  # network, gateway, 2 for Azure DNS, broadcast
POD_BATCH = 16  # dynamic pod IP allocation hands a node addresses 16 at a time
OVERLAY_NODE_PREFIX = 24  # Overlay and kubenet give every node a /24 of the pod CIDR
KUBENET_ROUTE_LIMIT = 400  # routes in one route table: kubenet clusters have at most 400 nodes

NODE_SUBNET, POD_SUBNET, OVERLAY, KUBENET = "node-subnet", "pod-subnet", "overlay", "kubenet"


def cluster_mode(cluster: AksCluster) -> str:
    """The cluster-wide mode: overlay, kubenet, or node-subnet (a pool with a pod subnet is pod-subnet)."""
    if cluster.network_plugin == "kubenet":
        return KUBENET
    if cluster.network_plugin_mode.lower() == "overlay":
        return OVERLAY
    return NODE_SUBNET


def pool_mode(cluster: AksCluster, pool: AgentPool) -> str:
    mode = cluster_mode(cluster)
    if mode == NODE_SUBNET and pool.pod_subnet_id:
        return POD_SUBNET
    return mode


def node_subnet_need(cluster: AksCluster, pool: AgentPool) -> int:
    """Addresses one node of `pool` takes from its node subnet."""
    return pool.max_pods + 1 if pool_mode(cluster, pool) == NODE_SUBNET else 1


def pod_subnet_need(pool: AgentPool) -> int:
    """Addresses one node of a pod-subnet pool takes from the pod subnet at most (whole batches of 16)."""
    return math.ceil(pool.max_pods / POD_BATCH) * POD_BATCH


def up_front(cluster: AksCluster, pool: AgentPool) -> int:
    """What AKS checks a node subnet has room for before it creates or scales `pool`: (max nodes + 1) x the
    addresses a node takes there."""
    return (pool.max_nodes + 1) * node_subnet_need(cluster, pool)


def usable(subnet: Subnet) -> int:
    if not subnet.address_prefix:
        return 0
    return max(0, IPv4Network(subnet.address_prefix, strict=False).num_addresses - AZURE_RESERVED_PER_SUBNET)


@dataclass(frozen=True)
class SubnetUse:
    """One subnet as the cluster uses it: its role (nodes, pods), the pools on it, what they take and need."""

    subnet: Subnet
    role: str  # nodes | pods
    pools: tuple[AgentPool, ...]
    size: int  # usable addresses (the 5 Azure keeps are left out)
    used: int
    per_node: int  # addresses one more node takes here (the largest of its pools)
    required: int  # what the pools' autoscaler ranges need here up front (node subnets) or at most (pods)
    nodes: int
    mode: str
    # Addresses a node holds here at most (pod subnets: whole batches for its max pods); per_node otherwise.
    per_node_most: int = 0

    @property
    def free(self) -> int:
        return max(0, self.size - self.used)

    @property
    def room_for_nodes(self) -> int:
        return self.free // self.per_node if self.per_node else 0

    @property
    def max_nodes(self) -> int:
        most = self.per_node_most or self.per_node
        return self.size // most if most else 0


def subnet_uses(aks: AksSection) -> list[SubnetUse]:
    """Every subnet of the VNet a pool uses, for nodes or pods, in the VNet's order."""
    vnet = aks.vnet
    if vnet is None:
        return []
    c = aks.cluster
    out: list[SubnetUse] = []
    for subnet in vnet.subnets:
        on_nodes = tuple(p for p in aks.agent_pools if p.vnet_subnet_id.lower() == subnet.id.lower())
        on_pods = tuple(p for p in aks.agent_pools if p.pod_subnet_id.lower() == subnet.id.lower())
        if on_nodes:
            out.append(
                SubnetUse(
                    subnet,
                    "nodes",
                    on_nodes,
                    usable(subnet),
                    subnet.ip_configurations,
                    max(node_subnet_need(c, p) for p in on_nodes),
                    sum(up_front(c, p) for p in on_nodes),
                    sum(p.count for p in on_nodes),
                    pool_mode(c, on_nodes[0]),
                )
            )
        if on_pods:
            out.append(
                SubnetUse(
                    subnet,
                    "pods",
                    on_pods,
                    usable(subnet),
                    subnet.ip_configurations,
                    POD_BATCH,
                    sum(p.max_nodes * pod_subnet_need(p) for p in on_pods),
                    sum(p.count for p in on_pods),
                    POD_SUBNET,
                    max(pod_subnet_need(p) for p in on_pods),
                )
            )
    return out


@dataclass(frozen=True)
class PodCidrUse:
    """The cluster's pod CIDR (Overlay, kubenet): a /24 per node."""

    cidr: str
    max_nodes: int
    nodes: int
    autoscaler_max: int


def pod_cidr_use(aks: AksSection) -> PodCidrUse | None:
    c = aks.cluster
    if cluster_mode(c) not in (OVERLAY, KUBENET) or not c.pod_cidr:
        return None
    net = IPv4Network(c.pod_cidr, strict=False)
    blocks = 2 ** max(0, OVERLAY_NODE_PREFIX - net.prefixlen)
    nodes = sum(p.count for p in aks.agent_pools)
    return PodCidrUse(str(net), blocks, nodes, sum(p.max_nodes for p in aks.agent_pools))
