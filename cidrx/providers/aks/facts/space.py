"""The address space around an AKS cluster's VNet: what is taken (every subnet, every peered VNet's address
space, every route of the route tables on its subnets, the cluster's service CIDR and, for Overlay and kubenet,
its pod CIDR) and where a new subnet can go. Pure: no I/O.

A new subnet must overlap none of them: Azure refuses overlapping subnets and peerings with overlapping spaces,
and a subnet inside a route's destination or the service CIDR would have its traffic sent elsewhere.
"""

from __future__ import annotations

from ipaddress import IPv4Network

from cidrx import netmath
from cidrx.providers.aks.model import AksSection

PRIVATE_SPACES = tuple(IPv4Network(s) for s in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


def _cidr(text: str) -> IPv4Network | None:
    try:
        return IPv4Network(text, strict=False)
    except ValueError:  # a route to a service tag, an IPv6 prefix
        return None


def occupied(aks: AksSection) -> list[tuple[IPv4Network, str]]:
    """(range, what holds it) for everything a new subnet must stay clear of."""
    out: list[tuple[IPv4Network, str]] = []
    vnet = aks.vnet
    if vnet is not None:
        for s in vnet.subnets:
            if (net := _cidr(s.address_prefix)) is not None:
                out.append((net, f"subnet {s.name}"))
        for p in vnet.peerings:
            for prefix in p.remote_address_prefixes:
                if (net := _cidr(prefix)) is not None:
                    out.append((net, f"peered VNet of {p.name}"))
    for table in aks.route_tables:
        for r in table.routes:
            if (net := _cidr(r.address_prefix)) is not None and net.prefixlen > 0:
                out.append((net, f"route {r.name} of route table {table.name}"))
    c = aks.cluster
    if c.service_cidr and (net := _cidr(c.service_cidr)) is not None:
        out.append((net, "the cluster's service CIDR"))
    if c.pod_cidr and (net := _cidr(c.pod_cidr)) is not None:
        out.append((net, "the cluster's pod CIDR"))
    return out


def vnet_spaces(aks: AksSection) -> list[IPv4Network]:
    return [n for p in (aks.vnet.address_prefixes if aks.vnet else ()) if (n := _cidr(p)) is not None]


def free_in_vnet(aks: AksSection, prefix: int) -> IPv4Network | None:
    """The first free /prefix inside the VNet's address spaces."""
    return netmath.first_free_block(prefix, vnet_spaces(aks), [n for n, _ in occupied(aks)])


def new_address_space(aks: AksSection, prefix: int) -> IPv4Network | None:
    """The first /prefix of private space outside the VNet's spaces and clear of everything occupied, for a new
    address space of the VNet (RFC 1918 first)."""
    taken = [*vnet_spaces(aks), *(n for n, _ in occupied(aks))]
    return netmath.first_free_block(prefix, PRIVATE_SPACES, taken)


def clashes(aks: AksSection, net: IPv4Network) -> list[str]:
    """What a user-given range overlaps (`--cidr`)."""
    return [f"{occ} ({where})" for occ, where in occupied(aks) if netmath.overlaps(net, occ)]
