"""Address space the VPC routes elsewhere but cannot see in its own tables: transit gateway route tables,
managed prefix lists and VGW-propagated routes. All of it is occupied for a new VPC CIDR.

Why it exists: a VPC whose route tables send 0.0.0.0/0 (or a prefix list) to a transit gateway shows none of
the other VPCs' and on-premises ranges locally; only the TGW route table associated with the VPC's
attachment does (SearchTransitGatewayRoutes), and a route to a prefix list names its ranges only through
GetManagedPrefixListEntries. Routes a virtual private gateway propagates already appear in DescribeRouteTables
with `Origin: EnableVgwRoutePropagation` (Amazon VPC User Guide, "Route propagation"); they are kept apart to
be shown as such. `collect_routes` reads (through EksApi); everything else is pure.

A TGW route table owned by another account (a TGW shared through RAM) may not be readable from the VPC's
account: it is recorded as unreadable, not skipped silently, and analysis says what that hides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from ipaddress import IPv4Network
from typing import Any

from cidrx.errors import AccessDenied
from cidrx.providers.eks.api import EksApi
from cidrx.providers.eks.model import EksSection, PrefixList, TgwRoute, TgwRouteTable

Json = Mapping[str, Any]


def tgw_route_from(d: Json, vpc_attachments: Iterable[str]) -> TgwRoute:
    """SearchTransitGatewayRoutes' `Routes[i]`; `vpc_attachments` are this VPC's own attachment ids."""
    mine = set(vpc_attachments)
    targets = [str(a.get("TransitGatewayAttachmentId", "")) for a in d.get("TransitGatewayAttachments") or ()]
    return TgwRoute(
        cidr=str(d["DestinationCidrBlock"]) if d.get("DestinationCidrBlock") else None,
        type=str(d.get("Type", "")),
        state=str(d.get("State", "")),
        prefix_list_id=str(d.get("PrefixListId") or ""),
        to_this_vpc=bool(targets) and all(t in mine for t in targets),
    )


def _ipv4(cidr: str) -> bool:
    return "." in cidr and ":" not in cidr


def collect_routes(
    api: EksApi, vpc_id: str, route_prefix_lists: Mapping[str, Sequence[str]]
) -> tuple[tuple[TgwRouteTable, ...], tuple[PrefixList, ...]]:
    """The TGW route tables associated with the VPC's attachments, and every prefix list the VPC's and those
    tables' routes refer to. Bounded by the VPC's attachments and prefix lists, not by routes."""
    attachments = api.describe_tgw_attachments(vpc_id)
    own = [str(a["TransitGatewayAttachmentId"]) for a in attachments]
    tables: list[TgwRouteTable] = []
    for a in sorted(attachments, key=lambda a: str(a["TransitGatewayAttachmentId"])):
        attachment_id, tgw = str(a["TransitGatewayAttachmentId"]), str(a.get("TransitGatewayId", ""))
        rt = str((a.get("Association") or {}).get("TransitGatewayRouteTableId") or "")
        if not rt:
            why = "the attachment shows no associated route table (not associated, or the TGW's owner hides it)"
            tables.append(TgwRouteTable(attachment_id, tgw, "", unreadable=why))
            continue
        try:
            found = api.search_tgw_routes(rt)
        except AccessDenied as exc:
            tables.append(TgwRouteTable(attachment_id, tgw, rt, unreadable=str(exc)))
            continue
        routes = [
            tgw_route_from(r, own)
            for r in found
            if not r.get("DestinationCidrBlock") or _ipv4(r["DestinationCidrBlock"])
        ]
        key = [(r.cidr or "", r.prefix_list_id, r.type, r.state) for r in routes]
        ordered = tuple(r for _, r in sorted(zip(key, routes, strict=True), key=lambda p: p[0]))
        tables.append(TgwRouteTable(attachment_id, tgw, rt, routes=ordered))
    wanted = {p for lists in route_prefix_lists.values() for p in lists}
    wanted |= {r.prefix_list_id for t in tables for r in t.routes if r.prefix_list_id}
    lists: list[PrefixList] = []
    for pl in sorted(wanted):
        try:
            entries = api.get_prefix_list_entries(pl)
        except AccessDenied as exc:
            lists.append(PrefixList(pl, unreadable=str(exc)))
            continue
        cidrs = sorted({str(e["Cidr"]) for e in entries if e.get("Cidr") and _ipv4(str(e["Cidr"]))})
        lists.append(PrefixList(pl, tuple(sorted(cidrs, key=lambda c: IPv4Network(c, strict=False)))))
    return tuple(tables), tuple(lists)


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
