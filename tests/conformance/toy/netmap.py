"""The toy IPAM's address maps for the HTML report: one map per pool."""

from __future__ import annotations

from ipaddress import IPv4Network

from cidrx.model.kube import KubeSection
from cidrx.model.netmap import Area, NetworkMap
from tests.conformance.toy.model import ToySection


def address_maps(section: ToySection | None, kube: KubeSection) -> list[NetworkMap]:
    if section is None:
        return []
    out = []
    for pool in section.pools:
        size = IPv4Network(pool.cidr).num_addresses
        area = Area(pool.cidr, pool.name, "pool", size, used=pool.used, exhausted=pool.used >= size)
        out.append(NetworkMap("toy-pool", pool.name, pool.cidr, (area,), title=f"Toy pool {pool.name} {pool.cidr}"))
    return out
