"""Address space the VPC routes elsewhere but cannot see in its own tables: transit gateway route tables,
managed prefix lists and VGW-propagated routes. All of it is occupied for a new VPC CIDR.

Why it exists: a VPC whose route tables send 0.0.0.0/0 (or a prefix list) to a transit gateway shows none of
the other VPCs' and on-premises ranges locally; only the TGW route table associated with the VPC's
attachment does (SearchTransitGatewayRoutes), and a route to a prefix list names its ranges only through
GetManagedPrefixListEntries. Routes a virtual private gateway propagates already appear in DescribeRouteTables
with `Origin: EnableVgwRoutePropagation` (Amazon VPC User Guide, "Route propagation"); they are kept apart to
be shown as such. cidrx.providers.eks.collect.routes reads them; this module is pure.
"""

from __future__ import annotations

from ipaddress import IPv4Network

from cidrx.providers.eks.model import EksSection


def routed_elsewhere(eks: EksSection) -> list[tuple[IPv4Network, str]]:
    """Ranges the VPC routes through prefix lists or transit gateways (not 0.0.0.0/0, not the VPC's own
    CIDRs coming back from its own attachment), each with where it comes from. Blackhole routes count: the
    range is deliberately dropped, so a VPC CIDR there would be unreachable."""
    lists = {p.prefix_list_id: p for p in eks.prefix_lists or ()}
    out: list[tuple[IPv4Network, str]] = []

    def add(cidr: str, where: str) -> None:
        net = IPv4Network(cidr, strict=False)
        if net.prefixlen:
            out.append((net, where))

    for rt, used in (eks.route_prefix_lists or {}).items():
        for pl in used:
            for cidr in lists[pl].cidrs if pl in lists else ():
                add(cidr, f"prefix list {pl} (routed by {rt})")
    for t in eks.tgw_route_tables or ():
        for r in t.routes:
            if r.to_this_vpc:
                continue
            where = f"{r.type} route in transit gateway route table {t.route_table_id} ({t.transit_gateway_id})"
            if r.state != "active":
                where += f", {r.state}"
            if r.cidr:
                add(r.cidr, where)
            for cidr in lists[r.prefix_list_id].cidrs if r.prefix_list_id in lists else ():
                add(cidr, f"prefix list {r.prefix_list_id} in {where}")
    return out


def unreadable_routes(eks: EksSection) -> list[str]:
    """What could not be read, one line each: the space routed there is unknown to cidrx."""
    lines = [
        f"transit gateway route table {t.route_table_id or '(unknown)'} of attachment {t.attachment_id} "
        f"({t.transit_gateway_id}): {t.unreadable}"
        for t in eks.tgw_route_tables or ()
        if t.unreadable
    ]
    return lines + [f"prefix list {p.prefix_list_id}: {p.unreadable}" for p in eks.prefix_lists or () if p.unreadable]
