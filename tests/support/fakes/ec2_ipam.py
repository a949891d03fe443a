"""AWS VPC IPAM, which moto 5.2 does not model, answered in front of moto's botocore stub with the real EC2
client (it builds, signs and parses every request; only the HTTP exchange is replaced). botocore calls every
`before-send` handler, and moto raises on EC2 actions it lacks, so this fake wraps moto's stub (`wrap`, the
`eks_estate(wrap_moto=...)` door) rather than answering beside it.

`FakeIpam` holds pools (with allocation rules and provisioned CIDRs) and their allocations, and answers
DescribeIpamPools, GetIpamPoolAllocations and GetIpamPoolCidrs (one page of `page_size` per request, with
`nextToken`). AssociateVpcCidrBlock with `Ipv4IpamPoolId` is checked against the pool's rules the way IPAM
refuses (netmask outside the pool's min/max, missing allocation resource tags, no free block), then the next
free block of that size is allocated and the request is rewritten to carry it as `CidrBlock`, so moto makes
the association itself. Empty (no pools), it is the account without IPAM every other EKS world runs in.

Shapes and element names follow botocore's ec2 service model (IpamPool, IpamPoolAllocation, IpamPoolCidr);
errors use EC2's XML error format.
"""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Iterator
from dataclasses import dataclass, field
from ipaddress import IPv4Network
from typing import Any
from urllib.parse import parse_qs, urlencode
from xml.sax.saxutils import escape

import pytest

from tests.support.fakes.eks_addons import raw_response

EC2_NS = "http://ec2.amazonaws.com/doc/2016-11-15/"
_ids = itertools.count(1)


@dataclass
class Pool:
    pool_id: str
    cidrs: list[str]
    locale: str = "ap-southeast-2"
    min_netmask: int | None = None
    max_netmask: int | None = None
    default_netmask: int | None = None
    resource_tags: dict[str, str] = field(default_factory=dict)
    allocations: list[dict[str, str]] = field(default_factory=list)  # Cidr, ResourceId, ResourceType

    def allocate(self, cidr: str, resource_id: str) -> None:
        self.allocations.append(
            {"Cidr": cidr, "ResourceId": resource_id, "ResourceType": "vpc", "Id": f"ipam-pool-alloc-{next(_ids):017x}"}
        )

    def next_free(self, netmask: int) -> str | None:
        taken = [IPv4Network(a["Cidr"]) for a in self.allocations]
        for base in (IPv4Network(c) for c in self.cidrs):
            if netmask < base.prefixlen:
                continue
            for block in base.subnets(new_prefix=netmask):
                if not any(block.overlaps(t) for t in taken):
                    return str(block)
        return None


def is_moto_stub(handler: Any) -> bool:
    """moto's botocore stub, bare or inside a fake's wrapper (a test's own monkeypatch of BUILTIN_HANDLERS, undone
    after ours, can leave a wrapper behind: it then stands for the bare stub)."""
    from moto.core.models import botocore_stubber

    return handler is botocore_stubber or getattr(handler, "moto_stub", None) is botocore_stubber


def _form(request: Any) -> dict[str, str]:
    body = request.body.decode() if isinstance(request.body, bytes) else str(request.body or "")
    return {k: v[0] for k, v in parse_qs(body).items()}


def _el(name: str, value: Any) -> str:
    if value is None:
        return ""
    text = str(value).lower() if isinstance(value, bool) else str(value)
    return f"<{name}>{escape(text)}</{name}>"


@dataclass
class FakeIpam:
    pools: dict[str, Pool] = field(default_factory=dict)
    page_size: int = 1
    calls: list[str] = field(default_factory=list)
    tags_of: Any = None  # callable(vpc_id) -> tags, to read the VPC's tags from moto at association time

    def add_pool(self, pool: Pool) -> Pool:
        self.pools[pool.pool_id] = pool
        return pool

    def wrap(self, stub: Any) -> Any:
        """moto's `before-send` stub with IPAM in front of it."""
        answers = {
            "before-send.ec2.DescribeIpamPools": self._describe_pools,
            "before-send.ec2.GetIpamPoolAllocations": self._allocations,
            "before-send.ec2.GetIpamPoolCidrs": self._cidrs,
            "before-send.ec2.AssociateVpcCidrBlock": self._associate,
        }

        def handler(event_name: str, request: Any, **kwargs: Any) -> Any:
            # Outside mock_aws moto's stub lets requests through; so does the fake.
            answer = answers.get(event_name) if getattr(stub, "enabled", True) else None
            found = answer(request) if answer is not None else None
            return found if found is not None else stub(event_name=event_name, request=request, **kwargs)

        handler.moto_stub = stub  # type: ignore[attr-defined]
        return handler

    @contextlib.contextmanager
    def in_front_of_moto(self) -> Iterator[FakeIpam]:
        """Every botocore session made inside the block (cidrx's own too) has the fake in front of moto's stub."""
        import botocore.handlers
        from moto.core.models import botocore_stubber

        wrapped = self.wrap(botocore_stubber)
        specs = [(s[0], wrapped, *s[2:]) if is_moto_stub(s[1]) else s for s in botocore.handlers.BUILTIN_HANDLERS]
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(botocore.handlers, "BUILTIN_HANDLERS", specs)
            yield self

    # -- handlers -----------------------------------------------------------------------------------------

    def _page(self, request: Any, op: str, set_name: str, items: list[str]) -> Any:
        start = int(_form(request).get("NextToken") or 0)
        page = items[start : start + self.page_size]
        token = _el("nextToken", start + self.page_size) if start + self.page_size < len(items) else ""
        body = (
            f'<{op}Response xmlns="{EC2_NS}"><requestId>fake</requestId>'
            f"<{set_name}>{''.join(page)}</{set_name}>{token}</{op}Response>"
        )
        return raw_response(request.url, 200, body.encode(), {"Content-Type": "text/xml"})

    def _error(self, request: Any, code: str, message: str) -> Any:
        body = (
            f"<Response><Errors><Error><Code>{escape(code)}</Code><Message>{escape(message)}</Message></Error>"
            "</Errors><RequestID>fake</RequestID></Response>"
        )
        return raw_response(request.url, 400, body.encode(), {"Content-Type": "text/xml"})

    def _describe_pools(self, request: Any) -> Any:
        self.calls.append("DescribeIpamPools")
        items = []
        for p in self.pools.values():
            tags = "".join(f"<item>{_el('key', k)}{_el('value', v)}</item>" for k, v in p.resource_tags.items())
            items.append(
                "<item>"
                + _el("ipamPoolId", p.pool_id)
                + _el("ipamPoolArn", f"arn:aws:ec2::123456789012:ipam-pool/{p.pool_id}")
                + _el("locale", p.locale)
                + _el("state", "create-complete")
                + _el("addressFamily", "ipv4")
                + _el("ipamScopeType", "private")
                + _el("allocationMinNetmaskLength", p.min_netmask)
                + _el("allocationMaxNetmaskLength", p.max_netmask)
                + _el("allocationDefaultNetmaskLength", p.default_netmask)
                + f"<allocationResourceTagSet>{tags}</allocationResourceTagSet>"
                + "</item>"
            )
        return self._page(request, "DescribeIpamPools", "ipamPoolSet", items)

    def _pool(self, request: Any) -> Pool | None:
        return self.pools.get(_form(request).get("IpamPoolId", ""))

    def _allocations(self, request: Any) -> Any:
        self.calls.append("GetIpamPoolAllocations")
        pool = self._pool(request)
        if pool is None:
            return self._error(request, "InvalidIpamPoolId.NotFound", "The pool ID does not exist")
        items = [
            "<item>"
            + _el("cidr", a["Cidr"])
            + _el("ipamPoolAllocationId", a["Id"])
            + _el("resourceId", a["ResourceId"])
            + _el("resourceType", a["ResourceType"])
            + _el("resourceRegion", pool.locale)
            + "</item>"
            for a in pool.allocations
        ]
        return self._page(request, "GetIpamPoolAllocations", "ipamPoolAllocationSet", items)

    def _cidrs(self, request: Any) -> Any:
        self.calls.append("GetIpamPoolCidrs")
        pool = self._pool(request)
        if pool is None:
            return self._error(request, "InvalidIpamPoolId.NotFound", "The pool ID does not exist")
        items = [f"<item>{_el('cidr', c)}{_el('state', 'provisioned')}</item>" for c in pool.cidrs]
        return self._page(request, "GetIpamPoolCidrs", "ipamPoolCidrSet", items)

    def _associate(self, request: Any) -> Any:
        form = _form(request)
        if "Ipv4IpamPoolId" not in form:
            return None  # a plain CIDR: moto answers
        self.calls.append("AssociateVpcCidrBlock")
        pool = self.pools.get(form["Ipv4IpamPoolId"])
        if pool is None:
            return self._error(request, "InvalidIpamPoolId.NotFound", "The pool ID does not exist")
        netmask = int(form.get("Ipv4NetmaskLength") or pool.default_netmask or 0)
        if (
            not netmask
            or (pool.min_netmask and netmask < pool.min_netmask)
            or (pool.max_netmask and netmask > pool.max_netmask)
        ):
            return self._error(
                request, "InvalidParameterValue", f"netmask length {netmask} is outside the pool's rules"
            )
        tags = self.tags_of(form["VpcId"]) if self.tags_of else {}
        if any(tags.get(k) != v for k, v in pool.resource_tags.items()):
            return self._error(request, "InvalidParameterValue", "the VPC lacks the pool's allocation resource tags")
        cidr = pool.next_free(netmask)
        if cidr is None:
            return self._error(request, "InsufficientCidrBlocks", "The pool has no free CIDR of that size")
        pool.allocate(cidr, form["VpcId"])
        rest = {k: v for k, v in form.items() if k not in ("Ipv4IpamPoolId", "Ipv4NetmaskLength")}
        request.body = urlencode({**rest, "CidrBlock": cidr}).encode()
        request.headers["Content-Length"] = str(len(request.body))
        return None  # moto associates the allocated block
