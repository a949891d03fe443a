"""What moto 5.2 does not model about routes, answered through botocore events with the real EC2 client:

- `FakeTgwRoutes`: SearchTransitGatewayRoutes for chosen TGW route tables, with propagated routes, routes to
  prefix lists and attachments lists (moto stores only static routes and answers the attachments as a map),
  one page of `page_size` routes per request with `nextToken` (moto ignores paging), or an access error
  (a route table in another account). A `before-send` handler: botocore builds, signs and parses each request.
- `VgwPropagation`: the routes a virtual private gateway propagates into a route table (moto has no
  EnableVgwRoutePropagation): an `after-call` handler adds them to DescribeRouteTables answers, with
  `Origin: EnableVgwRoutePropagation`, as AWS shows them.

Shapes and element names follow the EC2 API reference (SearchTransitGatewayRoutes, TransitGatewayRoute,
Route) and botocore's ec2 service model, which parses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs
from xml.sax.saxutils import escape

from tests.support.fakes.eks_addons import raw_response

EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"


def _form(request: Any) -> dict[str, str]:
    body = request.body.decode() if isinstance(request.body, bytes) else str(request.body or "")
    return {k: v[0] for k, v in parse_qs(body).items()}


def _route_xml(r: dict[str, Any]) -> str:
    parts = []
    if r.get("DestinationCidrBlock"):
        parts.append(f"<destinationCidrBlock>{escape(r['DestinationCidrBlock'])}</destinationCidrBlock>")
    if r.get("PrefixListId"):
        parts.append(f"<prefixListId>{escape(r['PrefixListId'])}</prefixListId>")
    items = "".join(
        f"<item><transitGatewayAttachmentId>{escape(a)}</transitGatewayAttachmentId><resourceType>vpc</resourceType>"
        "</item>"
        for a in r.get("Attachments", ())
    )
    parts.append(f"<transitGatewayAttachments>{items}</transitGatewayAttachments>")
    parts.append(f"<type>{escape(r.get('Type', 'static'))}</type><state>{escape(r.get('State', 'active'))}</state>")
    return "<item>" + "".join(parts) + "</item>"


@dataclass
class FakeTgwRoutes:
    """Route tables id -> routes (dicts with DestinationCidrBlock | PrefixListId, Type, State, Attachments)."""

    tables: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    denied: set[str] = field(default_factory=set)
    page_size: int = 2
    requests: list[dict[str, str]] = field(default_factory=list)

    def spec(self) -> tuple[str, Any, object]:
        from botocore.handlers import REGISTER_FIRST

        return ("before-send.ec2.SearchTransitGatewayRoutes", self, REGISTER_FIRST)

    def __call__(self, request: Any, **_: Any) -> Any:
        form = _form(request)
        table = form.get("TransitGatewayRouteTableId", "")
        if table in self.denied:
            self.requests.append(form)
            body = (
                "<Response><Errors><Error><Code>UnauthorizedOperation</Code><Message>You are not authorized to "
                "perform this operation.</Message></Error></Errors><RequestID>fake</RequestID></Response>"
            )
            return raw_response(request.url, 403, body.encode(), {"Content-Type": "text/xml"})
        if table not in self.tables:
            return None  # moto answers
        self.requests.append(form)
        start = int(form.get("NextToken") or 0)
        routes: Sequence[dict[str, Any]] = self.tables[table]
        page = routes[start : start + self.page_size]
        more = start + self.page_size < len(routes)
        token = f"<nextToken>{start + self.page_size}</nextToken>" if more else ""
        body = (
            f'<SearchTransitGatewayRoutesResponse xmlns="{EC2_NS}"><requestId>fake</requestId>'
            f"<routeSet>{''.join(_route_xml(r) for r in page)}</routeSet>"
            f"<additionalRoutesAvailable>{'true' if more else 'false'}</additionalRoutesAvailable>{token}"
            "</SearchTransitGatewayRoutesResponse>"
        )
        return raw_response(request.url, 200, body.encode(), {"Content-Type": "text/xml"})


@dataclass
class VgwPropagation:
    """Route table id -> (VGW id, CIDRs it propagates)."""

    tables: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)

    def spec(self) -> tuple[str, Any]:
        return ("after-call.ec2.DescribeRouteTables", self)

    def __call__(self, parsed: dict[str, Any], **_: Any) -> None:
        for table in parsed.get("RouteTables") or ():
            if table.get("RouteTableId") not in self.tables:
                continue
            vgw, cidrs = self.tables[table["RouteTableId"]]
            table.setdefault("PropagatingVgws", []).append({"GatewayId": vgw})
            for cidr in cidrs:
                table.setdefault("Routes", []).append(
                    {
                        "DestinationCidrBlock": cidr,
                        "GatewayId": vgw,
                        "Origin": "EnableVgwRoutePropagation",
                        "State": "active",
                    }
                )
