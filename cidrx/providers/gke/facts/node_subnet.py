"""The cluster subnet's PRIMARY range counted in addresses: every GKE node takes one (its VM's `networkIP`), and
so do other VMs, internal load balancers' forwarding rules and reserved internal addresses of the subnet.

Why a module of its own: cluster-autoscaler words a full primary range exactly as a full pod range ("IP space
exhausted"), so diagnosis (cidrx.providers.gke.analyze) must count both to blame the right one, and the
`subnet-expand` plan (cidrx.providers.gke.strategies.subnet_expand) sizes the expansion from the same count.
GCP reserves 4 addresses of every primary range (the network and gateway addresses, the second-to-last and the
broadcast address: https://cloud.google.com/vpc/docs/subnets#unusable-ip-addresses-in-every-subnet), so a
/24 holds 252 nodes and VMs at most. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from cidrx.model.findings import utilization
from cidrx.providers.gke.facts.occupied import parse_ipv4
from cidrx.providers.gke.model import GkeSection

GCP_RESERVED_PER_PRIMARY_RANGE = 4
# When one address is named by several resources (a reserved address a VM or a forwarding rule uses), it is
# counted once, as the first of these kinds.
KIND_ORDER = ("instance", "forwarding-rule", "address")


def reserved_addresses(cidr: IPv4Network) -> tuple[IPv4Address, ...]:
    """The four addresses GCP keeps of a primary range (the VPC docs' "Unusable addresses in IPv4 subnet
    ranges"): network, gateway (network + 1), second-to-last and broadcast."""
    first, last = int(cidr.network_address), int(cidr.broadcast_address)
    return tuple(IPv4Address(a) for a in (first, first + 1, last - 1, last))


def usable_addresses(cidr: IPv4Network) -> int:
    """Addresses of a primary range VMs and forwarding rules can have: its size less the 4 GCP reserves."""
    return max(0, cidr.num_addresses - GCP_RESERVED_PER_PRIMARY_RANGE)


@dataclass(frozen=True)
class NodeSubnetUse:
    """The cluster subnet's primary range: how many of its usable addresses are held, by what."""

    subnet: str  # region/name
    cidr: IPv4Network
    usable: int
    nodes: int  # this cluster's nodes (GKE node VMs whose cluster-name is the cluster's)
    other_vms: int  # other VMs (other clusters' nodes included)
    forwarding_rules: int
    reserved: int  # reserved internal addresses nothing above uses
    autoscaler_max: int  # the cluster's node pools' node limits, summed (they take their addresses here)

    @property
    def used(self) -> int:
        return self.nodes + self.other_vms + self.forwarding_rules + self.reserved

    @property
    def free(self) -> int:
        return max(0, self.usable - self.used)

    @property
    def max_nodes(self) -> int:
        """This cluster's nodes plus the nodes that still fit (one address each)."""
        return self.nodes + self.free

    @property
    def utilization(self) -> float:
        return utilization(self.used, self.usable)

    @property
    def label(self) -> str:
        return f"primary range {self.cidr} of subnet {self.subnet}"


def node_subnet_use(gke: GkeSection, autoscaler_max: int = 0) -> NodeSubnetUse | None:
    """The count, or None when the snapshot holds no addresses of the subnet (taken before cidrx read them)."""
    cidr = parse_ipv4(gke.subnet.ip_cidr_range)
    if gke.subnet_addresses is None or cidr is None:
        return None
    reserved = set(reserved_addresses(cidr))
    kinds: dict[IPv4Address, tuple[int, bool]] = {}  # address -> (rank of its kind, a node of this cluster)
    for a in gke.subnet_addresses:
        try:
            ip = IPv4Address(a.address)
        except ValueError:
            continue
        if ip not in cidr or ip in reserved or a.kind not in KIND_ORDER:
            continue
        entry = (KIND_ORDER.index(a.kind), a.kind == "instance" and a.gke_cluster == gke.cluster.name)
        kinds[ip] = min(kinds.get(ip, entry), entry)
    ranks = list(kinds.values())
    nodes = sum(1 for rank, mine in ranks if mine)
    region = gke.subnet.region.rstrip("/").rsplit("/", 1)[-1]
    return NodeSubnetUse(
        subnet=f"{region}/{gke.subnet.name}",
        cidr=cidr,
        usable=usable_addresses(cidr),
        nodes=nodes,
        other_vms=sum(1 for rank, mine in ranks if rank == 0) - nodes,
        forwarding_rules=sum(1 for rank, _ in ranks if rank == 1),
        reserved=sum(1 for rank, _ in ranks if rank == 2),
        autoscaler_max=autoscaler_max,
    )


def nodes_that_fit(cidr: IPv4Network, used: int) -> int:
    """How many more nodes a primary range of `cidr` holds when `used` of its usable addresses are held."""
    return max(0, usable_addresses(cidr) - used)
