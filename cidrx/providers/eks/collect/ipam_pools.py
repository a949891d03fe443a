"""Reads the AWS VPC IPAM pools that allocated the VPC's CIDRs (cidrx.providers.eks.facts.ipam_pools says what
planning does with them). IPAM reads are best effort: an account without IPAM, or without the permission,
plans as before and the plan says IPAM could not be read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from ipaddress import IPv4Network
from typing import TYPE_CHECKING, Any

from cidrx.errors import CidrxError
from cidrx.providers.eks.model import IpamPool

if TYPE_CHECKING:
    from cidrx.providers.eks.api import EksApi


Json = Mapping[str, Any]


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int) else None


def pool_from(d: Json, *, cidrs: Sequence[Json], allocations: Sequence[Json], vpc_id: str) -> IpamPool:
    """DescribeIpamPools' `IpamPools[i]` with its CIDRs and allocations."""
    tags = {str(t["Key"]): str(t.get("Value", "")) for t in d.get("AllocationResourceTags") or () if "Key" in t}
    mine = [a for a in allocations if a.get("ResourceId") == vpc_id and a.get("ResourceType") == "vpc"]
    return IpamPool(
        pool_id=str(d["IpamPoolId"]),
        state=str(d.get("State", "")),
        locale=str(d.get("Locale") or ""),
        description=str(d.get("Description") or ""),
        min_netmask=_int(d.get("AllocationMinNetmaskLength")),
        max_netmask=_int(d.get("AllocationMaxNetmaskLength")),
        default_netmask=_int(d.get("AllocationDefaultNetmaskLength")),
        resource_tags=tags or None,
        cidrs=_cidrs(c.get("Cidr") for c in cidrs if c.get("State") in (None, "provisioned")),
        allocations=_cidrs(a.get("Cidr") for a in allocations),
        vpc_cidrs=_cidrs(a.get("Cidr") for a in mine),
    )


def _cidrs(values: Any) -> tuple[str, ...]:
    nets = {IPv4Network(str(v), strict=False) for v in values if v and ":" not in str(v)}
    return tuple(str(n) for n in sorted(nets))


def collect_pools(api: EksApi, vpc_id: str) -> tuple[tuple[IpamPool, ...], str]:
    """The IPv4 pools in this region that allocated one of the VPC's CIDRs, and why IPAM could not be read
    ("" when it could). Pools of other regions' locales cannot allocate here and are not read further."""
    try:
        pools = [
            p
            for p in api.describe_ipam_pools()
            if p.get("AddressFamily", "ipv4") == "ipv4" and (p.get("Locale") or "None") in (api.region, "None")
        ]
        found = []
        for p in sorted(pools, key=lambda p: str(p["IpamPoolId"])):
            allocations = api.get_ipam_pool_allocations(str(p["IpamPoolId"]))
            if not any(a.get("ResourceId") == vpc_id for a in allocations):
                continue
            cidrs = api.get_ipam_pool_cidrs(str(p["IpamPoolId"]))
            found.append(pool_from(p, cidrs=cidrs, allocations=allocations, vpc_id=vpc_id))
    except CidrxError as exc:
        text = str(exc)
        return (), text if len(text) <= 200 else text[:197] + "..."
    return tuple(found), ""
