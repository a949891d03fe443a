"""Reads the routes a VPC's own tables do not show: transit gateway route tables it is attached to and
the managed prefix lists its routes name (cidrx.providers.eks.facts.routing says why they matter).

A TGW route table owned by another account (a TGW shared through RAM) may not be readable from the VPC's
account: it is recorded as unreadable, not skipped silently, and analysis says what that hides.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from ipaddress import IPv4Network
from typing import Any

from cidrx.errors import AccessDenied
from cidrx.providers.eks.api import EksApi
from cidrx.providers.eks.model import PrefixList, TgwRoute, TgwRouteTable

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
