"""The EKS address map: each CIDR block of the cluster's VPC with the subnets in it (pure, from a snapshot).

It shows what the capacity rows cannot: how much of each VPC block no subnet covers yet, i.e. whether a
new subnet fits in the VPC as it is or a secondary CIDR block is needed. Each block is also one capacity row
(`block_capacity`): a block carved entirely into subnets is allocated, not used, so the row counts as used only
the addresses its subnets use (and AWS reserves) and as free the unallocated space plus what its subnets still
have free; the unallocated part is a figure of its own.
"""

from __future__ import annotations

from dataclasses import replace
from ipaddress import IPv4Network

from cidrx import netmath
from cidrx.model.findings import Capacity, utilization
from cidrx.model.netmap import Area, NetworkMap, covered, free_blocks, unallocated_capacity
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.facts.cni import cni_config
from cidrx.providers.eks.facts.routing import routed_elsewhere
from cidrx.providers.eks.facts.subnets import subnet_label, subnet_uses
from cidrx.providers.eks.model import EksSection

KIND = "vpc-cidr"
ROUTED_KIND = "routed-space"
_ACTIVE = ("associated", "associating")


def address_maps(snapshot: Snapshot) -> tuple[NetworkMap, ...]:
    eks = snapshot.eks
    if eks is None:
        return ()
    uses = {u.subnet.subnet_id: u for u in subnet_uses(eks, snapshot.kube, cni_config(eks, snapshot.kube))}
    blocks = [c.cidr for c in eks.vpc.cidrs if c.state in _ACTIVE] or [eks.vpc.primary_cidr]
    out = []
    for block in dict.fromkeys(blocks):
        extent = IPv4Network(block, strict=False)
        areas = []
        for s in sorted(eks.subnets, key=lambda s: int(IPv4Network(s.cidr, strict=False).network_address)):
            net = IPv4Network(s.cidr, strict=False)
            if not net.subnet_of(extent):
                continue
            reserved = min(netmath.AWS_RESERVED_PER_SUBNET, net.num_addresses)
            used = max(0, net.num_addresses - reserved - s.available_ips)
            u = uses.get(s.subnet_id)
            roles = ", ".join(u.roles) if u else "not used by the cluster"
            areas.append(
                Area(
                    cidr=s.cidr,
                    name=subnet_label(s),
                    role="subnet" if u else "other",
                    size=net.num_addresses,
                    used=used,
                    reserved=reserved,
                    exhausted=u is not None and u.need > 0 and s.available_ips < u.need,
                    detail=f"{s.az}; {roles}",
                )
            )
        out.append(NetworkMap(KIND, eks.vpc.vpc_id, block, tuple(areas), title=f"VPC {eks.vpc.vpc_id} block {block}"))
    return (*out, *routed_maps(eks, blocks))


def block_capacity(m: NetworkMap) -> Capacity:
    """One block of the VPC as a capacity row: `used` = addresses its subnets use or AWS reserves (a range of
    unknown occupancy counts whole), `free` = the rest; extras `unallocated` (no subnet covers it, where a new
    subnet fits) and `free_in_subnets`."""
    row = unallocated_capacity(m)
    if m.kind != KIND:
        return row  # routed space: nothing is known about the use of what is in it
    taken = [a for a in m.areas if not a.planned]
    in_subnets = covered(m)
    free_in = sum(a.free or 0 for a in taken)
    unallocated = row.size - in_subnets
    used = row.size - unallocated - free_in
    largest = min((b.prefixlen for b in free_blocks(m)), default=None)
    note = f"{in_subnets} in {len(taken)} subnet(s), {free_in} free in them; {unallocated} unallocated" + (
        f", largest free block /{largest}" if largest is not None else ""
    )
    return replace(
        row,
        used=used,
        free=row.size - used,
        utilization=utilization(used, row.size),
        note=note,
        extra={"unallocated": unallocated, "free_in_subnets": free_in},
    )


def routed_maps(eks: EksSection, blocks: list[str]) -> list[NetworkMap]:
    """One map per private address space holding ranges the VPC routes through transit gateways or prefix
    lists: what a new VPC CIDR must avoid though the VPC's own tables do not show it (none without such routes)."""
    routed = routed_elsewhere(eks)
    out = []
    for space in (netmath.CGNAT, *netmath.RFC1918):
        inside = [(net, where) for net, where in routed if net.subnet_of(space)]
        if not inside:
            continue
        areas = [
            Area(
                cidr=b,
                name=f"{eks.vpc.vpc_id} {b}",
                role="subnet",
                size=IPv4Network(b).num_addresses,
                detail="this VPC",
            )
            for b in dict.fromkeys(blocks)
            if IPv4Network(b, strict=False).subnet_of(space)
        ]
        seen: set[IPv4Network] = set()
        for net, where in sorted(inside, key=lambda p: (int(p[0].network_address), p[0].prefixlen)):
            if net in seen:
                continue
            seen.add(net)
            areas.append(Area(cidr=str(net), name=where, role="other", size=net.num_addresses, detail="routed"))
        areas.sort(key=lambda a: (int(IPv4Network(a.cidr).network_address), IPv4Network(a.cidr).prefixlen))
        title = f"Routed elsewhere in {space} (transit gateways, prefix lists)"
        out.append(NetworkMap(ROUTED_KIND, str(space), str(space), tuple(areas), title=title))
    return out
