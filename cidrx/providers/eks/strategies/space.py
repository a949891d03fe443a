"""Address space for new pod subnets: everything a new VPC CIDR must not overlap (with where each range
comes from), the size a secondary CIDR needs for a number of pods, and the first free block AWS allows. Shared
by the strategies that add VPC space (custom networking, subnet discovery).
"""

from __future__ import annotations

import math
from ipaddress import IPv4Network

from cidrx import netmath
from cidrx.errors import InvalidInput
from cidrx.model.plan import DIGEST_TAG
from cidrx.providers.eks.facts.routing import routed_elsewhere
from cidrx.providers.eks.facts.subnets import subnet_label
from cidrx.providers.eks.model import EksSection

DEFAULT_CIDR_PREFIX = 20  # the incident's 100.64.0.0/20: room to grow, cheap in 100.64/10


ACTIVE_STATES = ("associated", "associating")


SUBNET_MAX_PREFIX = 28  # CreateSubnet accepts /16 to /28


def occupied_space(eks: EksSection, *, ignore_plan: str | None = None) -> list[tuple[IPv4Network, str]]:
    """Everything a new VPC CIDR must not overlap, each with where it comes from.

    Subnets tagged with `ignore_plan` are left out (a resumed apply made them); so is 0.0.0.0/0.
    """
    out: list[tuple[IPv4Network, str]] = []
    for c in eks.vpc.cidrs:
        if c.state in ACTIVE_STATES:
            out.append((netmath.parse_cidr(c.cidr), f"VPC {eks.vpc.vpc_id} CIDR {c.cidr}"))
    for s in eks.subnets:
        if ignore_plan and s.tags.get(DIGEST_TAG) == ignore_plan:
            continue
        out.append((netmath.parse_cidr(s.cidr), f"subnet {subnet_label(s)}"))
    for p in eks.peerings:
        for cidr in p.cidrs:
            out.append((netmath.parse_cidr(cidr), f"peered VPC {p.peer_vpc_id} ({p.peering_id})"))
    for rt in eks.route_tables:
        for dest in rt.destinations:
            net = IPv4Network(dest, strict=False)
            if net.prefixlen == 0:
                continue
            vgw = (eks.vgw_routes or {}).get(rt.route_table_id, ())
            propagated = " (propagated by a virtual private gateway)" if dest in vgw else ""
            out.append((net, f"route to {dest} in {rt.route_table_id}{propagated}"))
    out += routed_elsewhere(eks)
    return out


def cidr_prefixes_for(pods_needed: int, zones: int) -> tuple[int, int]:
    """(preferred, largest acceptable) prefix lengths for a secondary CIDR holding `pods_needed` pod
    addresses split over `zones` subnets: at least the needed size, /20 by default when less is needed."""
    per_zone = math.ceil(pods_needed / zones) + netmath.AWS_RESERVED_PER_SUBNET
    needed = netmath.smallest_prefix_for(per_zone) - math.ceil(math.log2(zones)) if zones > 1 else 0
    if zones <= 1:
        needed = netmath.smallest_prefix_for(per_zone)
    if needed < netmath.AWS_SECONDARY_MIN_PREFIX:
        raise InvalidInput(
            f"{pods_needed} pod addresses do not fit one secondary CIDR (AWS allows /16 at most); "
            "lower --add-nodes or run expand twice"
        )
    # One size up for headroom (so today's scale-up is not the next incident), /20 at least, /16 at most.
    return max(netmath.AWS_SECONDARY_MIN_PREFIX, min(needed - 1, DEFAULT_CIDR_PREFIX)), needed


def choose_cidr(eks: EksSection, preferred: int, needed: int) -> IPv4Network:
    """The first free block, largest preferred size first, that no occupied range touches and AWS allows."""
    occupied = [net for net, _ in occupied_space(eks)]
    primary = netmath.parse_cidr(eks.vpc.primary_cidr)
    spaces = netmath.aws_secondary_candidate_spaces(primary)
    for pre in range(preferred, needed + 1):
        found = netmath.first_free_block(pre, spaces, occupied)
        if found is not None:
            return found
    raise InvalidInput(f"no free /{needed} or larger for a secondary CIDR in VPC {eks.vpc.vpc_id}; pass --cidr")


def validate_cidr(eks: EksSection, text: str) -> IPv4Network:
    net = netmath.parse_cidr(text)
    netmath.check_not_forbidden(net)
    primary = netmath.parse_cidr(eks.vpc.primary_cidr)
    existing = [netmath.parse_cidr(c.cidr) for c in eks.vpc.cidrs if c.state in ACTIVE_STATES]
    occupied = occupied_space(eks)
    netmath.aws_check_secondary(primary, existing, net, [n for n, _ in occupied])
    return net


def active_cidrs(eks: EksSection) -> list[str]:
    return sorted(c.cidr for c in eks.vpc.cidrs if c.state in ACTIVE_STATES)
