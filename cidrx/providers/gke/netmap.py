"""The GKE address map: for each private address space the cluster's VPC network uses (10.0.0.0/8,
172.16.0.0/12, ...), every range in it: subnets' primary and secondary ranges in all regions, routes
imported over peerings, private services access, the control plane (pure, from a snapshot).

A custom-mode VPC network has no CIDR of its own; the space a new range can come from is what these
ranges leave free, which is what the unallocated row and the HTML map show.
"""

from __future__ import annotations

from ipaddress import IPv4Network

from cidrx import netmath
from cidrx.model.netmap import Area, NetworkMap
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.facts.occupied import is_outside_route, occupied_space
from cidrx.providers.gke.facts.pod_ranges import pod_ranges
from cidrx.providers.gke.facts.space import KIND

# Addresses GCP keeps in every subnet's primary range (network, gateway, second-to-last, broadcast):
# https://cloud.google.com/vpc/docs/subnets#unusable-ip-addresses-in-every-subnet
GCP_RESERVED_PER_PRIMARY = 4


def _space_of(net: IPv4Network) -> IPv4Network:
    for space in [*netmath.gcp_allowed_spaces(include_class_e=True), *netmath.TEST_NETS]:
        if net.subnet_of(space):
            return space
    return net.supernet(new_prefix=min(net.prefixlen, 8))


def address_maps(snapshot: Snapshot) -> tuple[NetworkMap, ...]:
    gke = snapshot.gke
    if gke is None:
        return ()
    c = gke.cluster
    ranges = {r.cidr: r for r in pod_ranges(gke, snapshot.kube)}
    own_primary = str(IPv4Network(gke.subnet.ip_cidr_range, strict=False)) if gke.subnet.ip_cidr_range else ""
    nodes_here = len(snapshot.kube.nodes) if snapshot.kube.available else None
    seen: dict[str, Area] = {}
    for net, where in occupied_space(gke):
        cidr = str(net)
        if cidr in seen:
            continue
        r = ranges.get(cidr)
        if r is not None:
            area = Area(
                cidr,
                f"pod range {r.label}",
                "pods",
                r.size,
                used=r.used,
                exhausted=r.max_nodes <= r.nodes,
                detail=f"{r.nodes} of {r.max_nodes} node block(s) /{r.node_prefix} taken; pools {', '.join(r.pools)}",
            )
        elif cidr == own_primary:
            reserved = min(GCP_RESERVED_PER_PRIMARY, net.num_addresses)
            area = Area(
                cidr,
                f"nodes: {where}",
                "nodes",
                net.num_addresses,
                used=nodes_here,
                reserved=reserved,
                exhausted=nodes_here is not None and nodes_here >= net.num_addresses - reserved,
                detail="the cluster's node subnet",
            )
        elif c.services_cidr and cidr == str(IPv4Network(c.services_cidr, strict=False)):
            area = Area(cidr, f"services: {where}", "services", net.num_addresses, detail="cluster services")
        elif c.master_ipv4_cidr_block and cidr == str(IPv4Network(c.master_ipv4_cidr_block, strict=False)):
            area = Area(cidr, where, "control-plane", net.num_addresses)
        elif is_outside_route(where):
            area = Area(cidr, where, "route", net.num_addresses, detail="a route to a network outside the cluster")
        else:
            role = "peering" if where.startswith("route ") else "reserved" if "private services" in where else "other"
            area = Area(cidr, where, role, net.num_addresses)
        seen[cidr] = area
    by_space: dict[IPv4Network, list[Area]] = {}
    for area in seen.values():
        by_space.setdefault(_space_of(IPv4Network(area.cidr)), []).append(area)
    out = []
    for space in sorted(by_space, key=lambda s: int(s.network_address)):
        areas = sorted(by_space[space], key=lambda a: (int(IPv4Network(a.cidr).network_address), -a.size))
        title = f"network {c.network}: {space}"
        out.append(NetworkMap(KIND, c.network, str(space), tuple(areas), title=title))
    return tuple(out)
