"""The pod ranges of a GKE cluster counted in per-node blocks, and the per-node block of each node pool.

Why a module of its own: every node of a VPC-native cluster takes a whole pod block (2 x max pods, rounded up
to a power of two) from its node pool's pod range, so a range's capacity is counted in node blocks, not in
pods. Diagnosis (cidrx.providers.gke.analyze), the address maps (cidrx.providers.gke.netmap) and the plans
(cidrx.providers.gke.strategies) all count them the same way, from here. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

from cidrx import netmath
from cidrx.errors import InvalidInput
from cidrx.model.findings import utilization
from cidrx.model.kube import KubeSection
from cidrx.providers.gke.model import GkeSection, NodePool

DEFAULT_NODE_PREFIX = 24  # 110 max pods, GKE's default (docs/cloud-facts.md, "GKE / Compute Engine")
ROUTES_ROLE = "routes-based cluster"
# GKE takes the cluster's services range from the end of a routes-based cluster's clusterIpv4Cidr: a /20
# (gcpdiag test-data/gke1/json-dumps/container-clusters.json, commit 06ec8584: 10.4.0.0/14 -> services
# 10.7.240.0/20; 10.1.0.0/19 -> 10.1.16.0/20). gcloud's "can accommodate at most N node(s)" note counts
# the per-node blocks left after it (a /14 with /24 per node: 1008). docs/cloud-facts.md, GKE section.
ROUTES_SERVICES_PREFIX = 20


@dataclass(frozen=True)
class RangeUse:
    """One pod range as the cluster uses it, counted in per-node blocks."""

    name: str  # secondary range name ("" for a range GKE manages without one)
    cidr: str
    role: str  # "cluster default" | "cluster additional" | "node pool"
    size: int  # addresses
    node_prefix: int  # the largest per-node block among the pools using it (the one that fits least often)
    prefixes: tuple[int, ...]  # every per-node block size the range serves, largest block first
    pools: tuple[str, ...]
    nodes: int  # nodes holding a block of this range now
    used: int  # addresses held by those blocks
    free_blocks: tuple[tuple[int, int], ...]  # (prefix, how many more blocks of it fit)
    max_nodes: int  # nodes + free blocks of node_prefix
    autoscaler_max: int  # sum of the pools' node limits (autoscaling max, or fixed size)
    autoscaling: bool  # some pool using it autoscales
    exact: bool  # counted from the nodes' podCIDRs (True) or estimated from GKE's utilisation fields
    utilization_known: bool = True

    @property
    def label(self) -> str:
        return f"{self.name} ({self.cidr})" if self.name else self.cidr

    @property
    def node_utilization(self) -> float:
        return utilization(self.nodes, self.max_nodes)

    def free_for(self, prefix: int) -> int:
        return dict(self.free_blocks).get(prefix, 0)


def pool_node_prefix(pool: NodePool) -> int:
    """The pool's per-node pod block prefix: GKE's pod_ipv4_cidr_size, else derived from max pods."""
    if pool.pod_ipv4_cidr_size:
        return pool.pod_ipv4_cidr_size
    return _prefix_for_max_pods(pool.max_pods_per_node)


def _prefix_for_max_pods(max_pods: int) -> int:
    try:
        return netmath.gke_pod_block_prefix(max_pods)
    except InvalidInput:
        return DEFAULT_NODE_PREFIX


def pool_max_nodes(pool: NodePool) -> int:
    """The most nodes the pool may have: its autoscaling limit (total, or per zone x zones), else its
    fixed size (initial_node_count is per zone)."""
    zones = max(1, len(pool.locations))
    a = pool.autoscaling
    if a.enabled:
        return a.total_max_node_count if a.total_max_node_count else a.max_node_count * zones
    return pool.initial_node_count * zones


def pool_range_key(gke: GkeSection, pool: NodePool) -> str:
    """Which pod range a pool's nodes take their blocks from (name, or CIDR for an unnamed range)."""
    c = gke.cluster
    if pool.pod_range:
        return pool.pod_range
    if pool.pod_cidr and pool.pod_cidr != c.pod_cidr:
        return pool.pod_cidr
    return c.pod_range_name or c.pod_cidr


def _ipv4(text: str) -> IPv4Network | None:
    if not text or ":" in text:
        return None
    try:
        return IPv4Network(text, strict=False)
    except ValueError:
        return None


def _range_sources(gke: GkeSection) -> list[tuple[str, str, str, float | None]]:
    """(key, cidr, role, GKE's utilisation) per pod range, default first, without duplicates."""
    c = gke.cluster
    secondary = {r.range_name: r.ip_cidr_range for r in gke.subnet.secondary_ranges}
    out: list[tuple[str, str, str, float | None]] = []
    seen: set[str] = set()

    def add(key: str, cidr: str, role: str, util: float | None) -> None:
        if key and key not in seen and _ipv4(cidr) is not None:
            seen.add(key)
            out.append((key, cidr, role, util))

    default_cidr = c.pod_cidr or secondary.get(c.pod_range_name, "")
    add(c.pod_range_name or c.pod_cidr, default_cidr, "cluster default", c.default_pod_range_utilization)
    for info in c.additional_pod_ranges:
        add(info.range_name, secondary.get(info.range_name, ""), "cluster additional", info.utilization)
    for p in gke.node_pools:
        key = pool_range_key(gke, p)
        add(key, p.pod_cidr or secondary.get(key, ""), "node pool", p.pod_range_utilization)
    return out


def routes_services_block(gke: GkeSection) -> IPv4Network | None:
    """The services range GKE carved out of a routes-based cluster's clusterIpv4Cidr: servicesIpv4Cidr when
    it lies inside, else the last /20 (None when the range is smaller than that)."""
    c = gke.cluster
    net = _ipv4(c.pod_cidr)
    if net is None:
        return None
    services = _ipv4(c.services_cidr)
    if services is not None and services.subnet_of(net):
        return services
    if net.prefixlen > ROUTES_SERVICES_PREFIX:
        return None
    size = 1 << (32 - ROUTES_SERVICES_PREFIX)
    return IPv4Network((int(net.broadcast_address) + 1 - size, ROUTES_SERVICES_PREFIX))


def _routes_range(gke: GkeSection, kube: KubeSection) -> RangeUse | None:
    """A routes-based cluster's clusterIpv4Cidr as one range of per-node blocks: its node count from the
    nodes' podCIDRs when the cluster was reachable, else from the GKE node routes of the network (one per
    node, next hop its instance): never from initialNodeCount, which says nothing about today."""
    c = gke.cluster
    net = _ipv4(c.pod_cidr)
    if net is None:
        return None
    node_prefix = c.node_ipv4_cidr_size or min(
        (pool_node_prefix(p) for p in gke.node_pools if pool_range_key(gke, p) == c.pod_cidr), default=0
    )
    node_prefix = max(node_prefix or DEFAULT_NODE_PREFIX, net.prefixlen)
    services = routes_services_block(gke)
    blocks: list[IPv4Network] = []
    names: set[str] = set()
    exact = kube.available and any(n.pod_cidrs for n in kube.nodes)
    if exact:
        for n in kube.nodes:
            for text in n.pod_cidrs:
                b = _ipv4(text)
                if b is not None and b.subnet_of(net):
                    blocks.append(b)
                    names.add(n.name)
    else:
        for r in gke.routes or ():
            b = _ipv4(r.dest_range)
            if r.next_hop == "instance" and b is not None and b.subnet_of(net) and b.prefixlen >= node_prefix:
                blocks.append(b)
                names.add(r.name)
    taken = [*blocks, *([services] if services is not None else [])]
    free = netmath.count_free_blocks(node_prefix, [net], taken)
    pools = [p for p in gke.node_pools if pool_range_key(gke, p) == c.pod_cidr]
    nodes = len(names)
    return RangeUse(
        name="",
        cidr=str(net),
        role=ROUTES_ROLE,
        size=net.num_addresses - (services.num_addresses if services is not None else 0),
        node_prefix=node_prefix,
        prefixes=(node_prefix,),
        pools=tuple(p.name for p in pools),
        nodes=nodes,
        used=sum(b.num_addresses for b in set(blocks)),
        free_blocks=((node_prefix, free),),
        max_nodes=nodes + free,
        autoscaler_max=sum(pool_max_nodes(p) for p in pools),
        autoscaling=any(p.autoscaling.enabled for p in pools),
        exact=bool(exact),
        utilization_known=True,
    )


def pod_ranges(gke: GkeSection, kube: KubeSection) -> list[RangeUse]:
    """Every pod range of the cluster with its node capacity, exact from the nodes' podCIDRs when the
    cluster was reachable, else estimated from GKE's own utilisation fields."""
    c = gke.cluster
    out: list[RangeUse] = []
    node_blocks = [(n.name, net) for n in kube.nodes for text in n.pod_cidrs if (net := _ipv4(text)) is not None]
    routes_range = _routes_range(gke, kube) if c.use_routes else None
    if routes_range is not None:
        out.append(routes_range)
    for key, cidr, role, api_util in _range_sources(gke):
        if routes_range is not None and key == c.pod_cidr:
            continue
        net = IPv4Network(cidr, strict=False)
        pools = [p for p in gke.node_pools if pool_range_key(gke, p) == key]
        prefixes = sorted({pool_node_prefix(p) for p in pools}) or [_prefix_for_max_pods(c.default_max_pods_per_node)]
        # A per-node block larger than the range (a /24 per node from a /26) fits no node at all: 0 nodes,
        # never the range itself counted as one block (netmath.gke_max_nodes; docs/cloud-facts.md).
        node_prefix = prefixes[0]
        size = net.num_addresses
        known = True
        # Nodes without podCIDRs (a reader without node access, routes-based leftovers) say nothing about
        # the range: then GKE's own utilisation field is the better figure.
        if kube.available and node_blocks:
            mine = [(name, b) for name, b in node_blocks if b.subnet_of(net)]
            nodes = len({name for name, _ in mine})
            used = sum(b.num_addresses for _, b in _unique_blocks(mine))
            blocks = [b for _, b in mine]
            free = tuple((p, netmath.count_free_blocks(p, [net], blocks)) for p in prefixes)
            exact = True
        else:
            known = api_util is not None
            used = round((api_util or 0.0) * size)
            free = tuple((p, (size - used) >> (32 - p)) for p in prefixes)
            nodes = round(used / (1 << (32 - node_prefix)))
            exact = False
        free_main = dict(free)[node_prefix]
        autoscaler_max = sum(pool_max_nodes(p) for p in pools)
        out.append(
            RangeUse(
                name=key if key != cidr else "",
                cidr=str(net),
                role=role,
                size=size,
                node_prefix=node_prefix,
                prefixes=tuple(prefixes),
                pools=tuple(p.name for p in pools),
                nodes=nodes,
                used=used,
                free_blocks=free,
                max_nodes=nodes + free_main,
                autoscaler_max=autoscaler_max,
                autoscaling=any(p.autoscaling.enabled for p in pools),
                exact=exact,
                utilization_known=known,
            )
        )
    return out


def _unique_blocks(blocks: list[tuple[str, IPv4Network]]) -> list[tuple[str, IPv4Network]]:
    """Node blocks without duplicates (a node listing one CIDR twice, two records of one node)."""
    seen: set[IPv4Network] = set()
    out = []
    for name, b in blocks:
        if b not in seen:
            seen.add(b)
            out.append((name, b))
    return out
