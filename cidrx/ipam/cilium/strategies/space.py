"""What a new Cilium pod range must stay clear of, and the Cilium section a plan reads. Pure: no I/O.

Why it exists: a pod range Cilium routes must not overlap any range already in use: Cilium's own (the cluster
pool's entries, every CiliumPodIPPool CIDR, every CIDR a CiliumNode holds), the nodes' Node.spec.podCIDR, the
node networks, the Service ranges (ServiceCIDR objects, else the range around the `kubernetes` Service's
ClusterIP), and, when the target is also a cloud, every range the cloud's address maps show.
"""

from __future__ import annotations

from ipaddress import IPv4Network

from cidrx import netmath, registry
from cidrx.errors import InvalidInput, StalePlan
from cidrx.ipam.addresses import v4_network
from cidrx.ipam.cilium.model import CLUSTER_POOL, CiliumSection
from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot

NODE_NETWORK_PREFIX = 16  # node InternalIPs come without their mask: keep clear the /16 around each
# kubeadm's default Service CIDR (--service-cidr 10.96.0.0/12), assumed around the `kubernetes` Service's ClusterIP
# when the cluster has no ServiceCIDR objects (networking.k8s.io/v1, Kubernetes 1.33+).
SERVICE_PREFIX = 12
DEFAULT_SERVICE_CIDR = netmath.parse_cidr("10.96.0.0/12")
SPACES: tuple[IPv4Network, ...] = (*netmath.RFC1918, netmath.CGNAT)


def cilium_section(snapshot: Snapshot) -> CiliumSection:
    section: CiliumSection | None = snapshot.kube.cilium
    if section is None:
        raise InvalidInput(
            f"no Cilium IPAM found in {snapshot.target.label()} (cilium.io is not served or kube-system/cilium-config "
            "is missing)"
        )
    return section


def current_section(plan: Plan, snapshot: Snapshot) -> CiliumSection:
    """The section a drift check reads: refused when the snapshot is of another target (InvalidInput) or
    Cilium is gone (StalePlan, exit 4)."""
    if snapshot.target != plan.target:
        raise InvalidInput(f"plan is for {plan.target.label()}, not {snapshot.target.label()}")
    section: CiliumSection | None = snapshot.kube.cilium
    if section is None:
        raise StalePlan("the plan is stale: Cilium (kube-system/cilium-config) is no longer found. Nothing was applied")
    return section


def service_ranges(section: CiliumSection) -> list[tuple[IPv4Network, str]]:
    """The Service ranges: the ServiceCIDR objects', else the /12 around the `kubernetes` Service's ClusterIP,
    else kubeadm's default."""
    found = [(n, "ServiceCIDR") for n in map(v4_network, section.service_cidrs) if n is not None]
    if found:
        return found
    ip = v4_network(section.kubernetes_service_ip) if section.kubernetes_service_ip else None
    if ip is not None:
        around = ip.supernet(new_prefix=SERVICE_PREFIX)
        return [(around, f"Service range around the kubernetes Service {section.kubernetes_service_ip} (assumed /12)")]
    return [(DEFAULT_SERVICE_CIDR, "kubeadm's default Service CIDR (no ServiceCIDR or kubernetes Service read)")]


def _cloud_space(snapshot: Snapshot) -> list[tuple[IPv4Network, str]]:
    """Every range of the cloud's address maps, and each map's own block unless it is a whole private space,
    when the target is a cloud whose section the snapshot holds."""
    spec = registry.provider_spec(snapshot.target.provider)
    if spec is None or not spec.section or getattr(snapshot, spec.name, None) is None:
        return []
    maps = registry.load(spec.maps)(snapshot) if spec.maps else registry.load(spec.provider).address_maps(snapshot)
    out = []
    spaces = set(SPACES)
    for m in maps:
        extent = v4_network(m.cidr)
        if extent is not None and extent not in spaces:  # a network's own block (a VPC CIDR), not a whole space
            out.append((extent, f"{spec.title} {m.title or m.name}"))
        for area in m.areas:
            net = v4_network(area.cidr)
            if net is not None and not area.planned:
                out.append((net, f"{spec.title} {area.role} {area.name}"))
    return out


def occupied_space(
    snapshot: Snapshot, section: CiliumSection, *, ours: IPv4Network | None = None, added_to: str = ""
) -> list[tuple[IPv4Network, str]]:
    """What a new range must not overlap, each with where it comes from. `ours` (a range a plan added to
    `added_to`: "cluster-pool" or a pool's name) is left out there, and so are the CIDRs nodes were given from
    it (the plan's own progress); the same range anywhere else is someone else's."""

    def mine(net: IPv4Network | None) -> bool:
        return ours is not None and net is not None and net.subnet_of(ours)

    out: list[tuple[IPv4Network, str]] = []
    if section.config.mode == CLUSTER_POOL:
        for text in section.config.cluster_pool:
            net = v4_network(text)
            if net is not None and not (added_to == CLUSTER_POOL and net == ours):
                out.append((net, "cluster-pool-ipv4-cidr entry"))
    for pool in section.ippools:
        for text in pool.cidrs:
            net = v4_network(text)
            if net is not None and not (added_to == pool.name and net == ours):
                out.append((net, f"CiliumPodIPPool {pool.name}"))
    for node in section.nodes:
        held = [*node.pod_cidrs, *(c for a in node.allocated for c in a.cidrs)]
        for text in held:
            net = v4_network(text)
            if net is not None and not mine(net):
                out.append((net, f"pod CIDR of CiliumNode {node.name}"))
    for k in snapshot.kube.nodes:
        for text in k.pod_cidrs:
            net = v4_network(text)
            if net is not None:
                out.append((net, f"Node.spec.podCIDR of {k.name}"))
        if k.internal_ip and ":" not in k.internal_ip:
            net = IPv4Network(f"{k.internal_ip}/{NODE_NETWORK_PREFIX}", strict=False)
            out.append((net, f"network of node {k.name} ({k.internal_ip}, assumed /{NODE_NETWORK_PREFIX})"))
    out += service_ranges(section)
    out += _cloud_space(snapshot)
    return out


def first_overlap(net: IPv4Network, occupied: list[tuple[IPv4Network, str]]) -> tuple[IPv4Network, str] | None:
    return next(((o, where) for o, where in occupied if netmath.overlaps(net, o)), None)


def pick_range(snapshot: Snapshot, section: CiliumSection, cidr: str | None, prefix: int, what: str) -> IPv4Network:
    """`cidr` when given and clear (InvalidInput naming the overlap otherwise), else the first free /`prefix`."""
    occupied = occupied_space(snapshot, section)
    if cidr:
        net = netmath.parse_cidr(cidr)
        netmath.check_not_forbidden(net)
        hit = first_overlap(net, occupied)
        if hit is not None:
            raise InvalidInput(f"{net} overlaps {hit[1]} ({hit[0]})", hint="choose a free range or omit --cidr")
        return net
    found = netmath.first_free_block(prefix, SPACES, [n for n, _ in occupied])
    if found is None:
        raise InvalidInput(f"no free /{prefix} in RFC 1918 or 100.64.0.0/10 for {what}; pass --cidr")
    return found
