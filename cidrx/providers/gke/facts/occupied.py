"""Everything in a GKE cluster's VPC network that a new range must not overlap, with where each comes from.

Why a module of its own: the plans choose and check new pod ranges against it (cidrx.providers.gke.strategies),
the address maps draw it (cidrx.providers.gke.netmap) and the network-space rows of a diagnosis count it
(cidrx.providers.gke.facts.space); all three must agree on what is occupied. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator
from ipaddress import IPv4Network

from cidrx.providers.gke.model import GkeSection, Subnetwork


def short_region(region: str) -> str:
    """The region's name from its URL or name (".../regions/europe-west1" -> "europe-west1")."""
    return region.rstrip("/").rsplit("/", 1)[-1]


def parse_ipv4(text: str) -> IPv4Network | None:
    """An IPv4 network from snapshot text (host bits cleared); None for IPv6, empty or unparsable text."""
    if not text or ":" in text:
        return None
    try:
        return IPv4Network(text.strip(), strict=False)
    except ValueError:
        return None


def range_label(subnet: Subnetwork, range_name: str) -> str:
    """How plans and the occupied space name a subnet's secondary range."""
    return f"secondary range {range_name} of subnet {short_region(subnet.region)}/{subnet.name}"


def all_subnets(gke: GkeSection) -> list[Subnetwork]:
    """Every subnet of the network, the cluster's own first when the listing lacks it."""
    key = (gke.subnet.name, short_region(gke.subnet.region))
    listed = list(gke.subnets)
    if all((s.name, short_region(s.region)) != key for s in listed):
        listed.insert(0, gke.subnet)
    return listed


ROUTE_WHERE = "network route "  # how occupied_space names a route of the network (see route_where)


def is_outside_route(where: str) -> bool:
    """Whether an occupied entry is a route to a network outside the cluster (a VPN or interconnect route, a
    route imported over peering): context for where a new range may go, not space the cluster used up."""
    return where.startswith(ROUTE_WHERE) or (where.startswith("route ") and " over peering " in where)


def route_where(name: str, dest: str, hop: str) -> str:
    return f"{ROUTE_WHERE}{name} to {dest}" + (f" (next hop: {hop})" if hop else "")


def occupied_entries(gke: GkeSection) -> Iterator[tuple[str, str]]:
    """(CIDR text as the snapshot has it, where it comes from) of everything a new range must not overlap in
    the cluster's network: every subnet's primary and secondary ranges (all regions), routes imported over
    peerings, private services access allocations, the cluster's own pod, services and control-plane ranges,
    every route of the network (GKE node routes, static routes, VPN/interconnect routes) and the whole
    clusterIpv4Cidr of routes-based clusters on the network. Unparsed: see occupied_space."""
    for s in all_subnets(gke):
        yield s.ip_cidr_range, f"subnet {short_region(s.region)}/{s.name}"
        for r in s.secondary_ranges:
            yield r.ip_cidr_range, range_label(s, r.range_name)
    for route in gke.peering_routes:
        yield route.dest_range, f"route {route.dest_range} imported over peering {route.peering}"
    for rr in gke.reserved_ranges:
        yield rr.cidr, f"private services access range {rr.name}"
    c = gke.cluster
    yield c.pod_cidr, f"pod range of cluster {c.name}"
    yield c.services_cidr, f"services range of cluster {c.name}"
    yield c.master_ipv4_cidr_block, f"control plane range of cluster {c.name}"
    for rc in gke.routes_clusters or ():
        yield rc.cluster_ipv4_cidr, f"pod range of routes-based cluster {rc.project}/{rc.location}/{rc.name}"
    for nr in gke.routes or ():
        yield nr.dest_range, route_where(nr.name, nr.dest_range, nr.next_hop)


def occupied_space(gke: GkeSection) -> list[tuple[IPv4Network, str]]:
    """occupied_entries as IPv4 networks; IPv6 and unparsable entries left out, and /0 (a default route
    imported over peering blocks nothing)."""
    out: list[tuple[IPv4Network, str]] = []
    for text, where in occupied_entries(gke):
        net = parse_ipv4(text)
        if net is not None and net.prefixlen > 0:
            out.append((net, where))
    return out
