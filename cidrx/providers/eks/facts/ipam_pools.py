"""VPCs whose CIDRs come from an AWS VPC IPAM pool: the pool a new CIDR comes from, its size under
the pool's rules, and when those rules changed (collect.ipam_pools reads the pools; the association itself
is `actions.vpc_cidr.AssociateVpcCidrFromPool`).

Why it exists: organisations that allocate VPC space with IPAM (often enforced by an SCP) need
AssociateVpcCidrBlock with `Ipv4IpamPoolId` + `Ipv4NetmaskLength`, not a CIDR picked by cidrx. IPAM picks the
block, so the CIDR is known only after the call: the plan records pool and netmask length, the apply
records the CIDR in the journal, and the pod subnets are carved from it then (`carve` parameters).

Facts (Amazon VPC IPAM User Guide, "Create a pool" and "Allocate CIDRs"; EC2 API reference, IpamPool and
AssociateVpcCidrBlock): a pool's allocation rules bound the netmask length of what it hands out
(AllocationMinNetmaskLength is the largest block, AllocationMaxNetmaskLength the smallest) and may require
the resource to carry AllocationResourceTags; the VPC's own allocations appear in GetIpamPoolAllocations with
ResourceType `vpc` and ResourceId the VPC id.
"""

from __future__ import annotations

from collections.abc import Mapping
from ipaddress import IPv4Network
from typing import Any

from cidrx import netmath
from cidrx.errors import InvalidInput
from cidrx.providers.eks.model import EksSection, IpamPool

GONE = ("disassociating", "disassociated", "failing", "failed")


def vpc_pool(eks: EksSection) -> IpamPool | None:
    """The pool a new CIDR of this VPC comes from: the one that allocated the primary CIDR, else any that
    allocated one of its CIDRs."""
    primary = IPv4Network(eks.vpc.primary_cidr, strict=False)
    holding = [p for p in eks.ipam_pools or () if any(IPv4Network(c) == primary for c in p.vpc_cidrs)]
    return next(iter(holding or eks.ipam_pools or ()), None)


def pool_problems(eks: EksSection, pool: IpamPool, netmask: int) -> list[str]:
    """Why `pool` cannot give this VPC a /`netmask` now (empty when it can)."""
    problems = []
    if pool.state and pool.state not in ("create-complete", "modify-complete"):
        problems.append(f"IPAM pool {pool.pool_id} is {pool.state}")
    if pool.min_netmask is not None and netmask < pool.min_netmask:
        problems.append(f"IPAM pool {pool.pool_id} hands out /{pool.min_netmask} at most, not /{netmask}")
    if pool.max_netmask is not None and netmask > pool.max_netmask:
        problems.append(f"IPAM pool {pool.pool_id} hands out /{pool.max_netmask} at least, not /{netmask}")
    missing = {k: v for k, v in (pool.resource_tags or {}).items() if eks.vpc.tags.get(k) != v}
    if missing:
        tags = ", ".join(f"{k}={v}" for k, v in sorted(missing.items()))
        problems.append(f"IPAM pool {pool.pool_id} allocates only to resources tagged {tags}; {eks.vpc.vpc_id} is not")
    if pool.cidrs:
        free = netmath.first_free_block(
            netmask, [IPv4Network(c) for c in pool.cidrs], [IPv4Network(a) for a in pool.allocations]
        )
        if free is None:
            problems.append(f"IPAM pool {pool.pool_id} has no free /{netmask} left")
    return problems


def pool_netmask(eks: EksSection, pool: IpamPool, preferred: int, needed: int) -> int:
    """The netmask length to ask the pool for: `preferred` (or larger up to `needed`) within the pool's
    allocation rules; InvalidInput with the pool's reason when none fits."""
    low = max(preferred, pool.min_netmask or 0, netmath.AWS_SECONDARY_MIN_PREFIX)
    high = min(needed, pool.max_netmask if pool.max_netmask is not None else 28)
    reasons: list[str] = []
    for netmask in range(low, high + 1):
        reasons = pool_problems(eks, pool, netmask)
        if not reasons:
            return netmask
    reasons = reasons or pool_problems(eks, pool, needed)
    raise InvalidInput(
        f"the VPC's CIDRs come from IPAM pool {pool.pool_id}, which cannot give a /{needed} or larger: "
        + "; ".join(reasons or [f"its rules allow /{pool.min_netmask} to /{pool.max_netmask}"]),
        hint="adjust the pool's allocation rules or provision it more space, or pass --cidr to associate a "
        "CIDR without the pool (an SCP may forbid that)",
    )


def carve(step_ref: str, parts: int, index: int) -> dict[str, Any]:
    """CreateSubnet parameters for piece `index` of `parts` of a CIDR an earlier step will report."""
    return {"from": step_ref, "parts": parts, "index": index}


def subnet_cidr(params: Mapping[str, Any]) -> str:
    """The subnet CIDR of a CreateSubnet step: given, or carved from a resolved `carve`."""
    if params.get("cidr"):
        return str(params["cidr"])
    c = params["carve"]
    return str(netmath.split_equal(netmath.parse_cidr(str(c["from"])), int(c["parts"]))[int(c["index"])])


def pool_drift(basis: Mapping[str, Any], eks: EksSection) -> list[str]:
    """What no longer holds of an IPAM plan's basis: the pool, its rules, the VPC's CIDRs (apart from the one
    this plan associated)."""
    pool = next((p for p in eks.ipam_pools or () if p.pool_id == basis["ipam_pool_id"]), None)
    if pool is None:
        if eks.ipam_unreadable:
            return [f"IPAM pool {basis['ipam_pool_id']} could not be read ({eks.ipam_unreadable})"]
        return [f"IPAM pool {basis['ipam_pool_id']} no longer allocates to {eks.vpc.vpc_id}"]
    netmask = int(basis["netmask_length"])
    new = [c.cidr for c in eks.vpc.cidrs if c.state not in GONE and c.cidr not in basis["vpc_cidrs"]]
    ours = [c for c in new if IPv4Network(c).prefixlen == netmask and c in pool.vpc_cidrs]
    if len(new) > 1 or (new and not ours):
        return [f"{eks.vpc.vpc_id} gained CIDR(s) {', '.join(new)} since the plan was made"]
    if ours:
        return []  # this plan's association, made by an earlier run: the pool's rules were met then
    return pool_problems(eks, pool, netmask)
