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

import re
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network

from cidrx import netmath
from cidrx.errors import CidrxError
from cidrx.model.findings import utilization
from cidrx.providers.gke.facts.occupied import occupied_space, parse_ipv4, short_region
from cidrx.providers.gke.model import FirewallRule, GkeSection

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


# The largest IPv4 subnet range GCP accepts is a /8 (cidrx never proposes more: netmath.gcp_allowed_spaces).
LARGEST_PREFIX = 8


def aligned_supernet(cidr: IPv4Network, prefix: int) -> IPv4Network:
    """The range `gcloud compute networks subnets expand-ip-range --prefix-length` asks for: the current range's
    network address with the new prefix, host bits cleared (Cloud SDK surface/compute/networks/subnets/
    expand_ip_range.py `_InferNewIpCidrRange`), so the network address may move down (10.0.1.0/24 -> /16 is
    10.0.0.0/16)."""
    return IPv4Network((int(cidr.network_address), prefix), strict=False)


@dataclass(frozen=True)
class Expansion:
    """What expanding the primary range can do: `cidr`, the smallest aligned supernet that holds `needed` more
    nodes and overlaps nothing (None when none does); `largest`, the largest that overlaps nothing (None when not
    even the next one fits), with how many more nodes it holds; and what stops the next larger one."""

    current: IPv4Network
    needed: int
    cidr: IPv4Network | None
    largest: IPv4Network | None
    largest_holds: int
    blocker: str  # what the first supernet too large overlaps ("" when the search ran out of allowed space)


def _conflicts(gke: GkeSection, candidate: IPv4Network, current: IPv4Network) -> list[str]:
    """What in the network `candidate` would overlap: every range occupied_space lists (every subnet's primary and
    secondary ranges in every region, this subnet's own secondary ranges, peering routes, private services access,
    routes, routes-based clusters' pod ranges, the control plane) except this subnet's primary range itself and
    anything inside it (it overlaps today already)."""
    own = f"subnet {short_region(gke.subnet.region)}/{gke.subnet.name}"
    return [
        f"{net} ({where})"
        for net, where in occupied_space(gke)
        if where != own and not net.subnet_of(current) and netmath.overlaps(candidate, net)
    ]


def _allowed(candidate: IPv4Network) -> bool:
    try:
        netmath.gcp_check_allowed(candidate, include_class_e=True)
    except CidrxError:
        return False
    return True


def plan_expansion(gke: GkeSection, used: int, needed: int) -> Expansion:
    """The smallest aligned supernet of the subnet's primary range with room for `needed` more nodes (one address
    each, after `used` and the 4 GCP reserves) that overlaps nothing occupied. A larger supernet contains every
    smaller one, so once one overlaps something every larger one does too: the search stops there."""
    current = parse_ipv4(gke.subnet.ip_cidr_range)
    if current is None:
        raise CidrxError(f"subnet {gke.subnet.name} has no IPv4 primary range")
    largest: IPv4Network | None = None
    blocker = ""
    for prefix in range(current.prefixlen - 1, LARGEST_PREFIX - 1, -1):
        candidate = aligned_supernet(current, prefix)
        if not _allowed(candidate):
            blocker = f"{candidate} leaves the private ranges GCP accepts for subnets"
            break
        found = _conflicts(gke, candidate, current)
        if found:
            blocker = f"{candidate} would overlap {', '.join(found[:3])}"
            break
        largest = candidate
        if nodes_that_fit(candidate, used) >= needed:
            return Expansion(current, needed, candidate, largest, nodes_that_fit(candidate, used), "")
    holds = nodes_that_fit(largest, used) if largest is not None else 0
    return Expansion(current, needed, None, largest, holds, blocker)


def vms_firewalls(gke: GkeSection, current: IPv4Network) -> list[FirewallRule]:
    """GKE's own `gke-<cluster>-<hash>-vms` rule(s) of the cluster (GKE "Automatically created firewall rules":
    intra-cluster traffic from the node addresses), those whose source ranges name the current primary range or
    lie inside it; expanding the range does not widen them (docs/cloud-facts.md)."""
    pattern = re.compile(rf"^gke-{re.escape(gke.cluster.name)}-[0-9a-f]+-vms$")
    out = []
    for rule in gke.firewalls or ():
        nets = [n for n in (parse_ipv4(t) for t in rule.source_ranges) if n is not None]
        if pattern.match(rule.name) and rule.direction == "INGRESS" and any(n.subnet_of(current) for n in nets):
            out.append(rule)
    return out


def other_firewalls(gke: GkeSection, current: IPv4Network, new: IPv4Network) -> list[FirewallRule]:
    """Other rules that name the current primary range (or a range inside it) and do not cover the new range:
    cidrx leaves them to their owners and says so."""
    vms = {r.name for r in vms_firewalls(gke, current)}
    out = []
    for rule in gke.firewalls or ():
        nets = [n for n in (parse_ipv4(t) for t in rule.ranges) if n is not None and n.prefixlen > 0]
        if rule.name in vms or any(new.subnet_of(n) for n in nets):
            continue
        if any(n.subnet_of(current) for n in nets):
            out.append(rule)
    return out
