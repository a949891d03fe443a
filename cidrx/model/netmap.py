"""Address maps: what occupies each network's address space, for the HTML map and the unallocated rows.

A capacity row says how full one range is; a map says where ranges sit in the space around them and how
much of it nobody has taken yet (the room a fix can use). Each provider builds its maps purely from a
snapshot (`cidrx.<provider>.netmap`); the HTML renderer draws them and analysis turns each map into one
Capacity row of unallocated space.
"""

from __future__ import annotations

from dataclasses import dataclass
from ipaddress import IPv4Network

from cidrx import netmath
from cidrx.model.findings import Capacity, utilization


@dataclass(frozen=True)
class Area:
    """One range inside a map: a subnet, a secondary range, an IPAM block, another team's range, a plan's.

    `used` is None when nothing is known about its occupancy (another cluster's range, a peering route):
    it is drawn as taken. `reserved` counts addresses the provider keeps (AWS: 5 per subnet).
    """

    cidr: str
    name: str
    role: str  # subnet | pods | services | nodes | control-plane | other | peering | reserved | block | pool
    size: int
    used: int | None = None
    reserved: int = 0
    exhausted: bool = False
    planned: bool = False
    detail: str = ""

    @property
    def free(self) -> int | None:
        return None if self.used is None else max(0, self.size - self.reserved - self.used)


@dataclass(frozen=True)
class NetworkMap:
    """The areas inside one extent (an address block of a cloud network, a private address space, an IPAM
    pool), in address order. `kind`/`name` become the unallocated Capacity row's kind and name."""

    kind: str
    name: str
    cidr: str
    areas: tuple[Area, ...]
    planned: bool = False
    title: str = ""
    exhausted: bool = False  # nothing left to hand out (an IPAM pool with no free address or block)


def _net(text: str) -> IPv4Network | None:
    try:
        return IPv4Network(text, strict=False)
    except ValueError:
        return None


def free_blocks(m: NetworkMap, *, include_planned: bool = False) -> list[IPv4Network]:
    """The largest aligned blocks of the extent that no area overlaps (planned areas count as taken only
    with `include_planned`), in address order."""
    extent = _net(m.cidr)
    if extent is None:
        return []
    taken = [n for a in m.areas if (n := _net(a.cidr)) is not None and (include_planned or not a.planned)]
    return _gaps(extent, taken)


def _gaps(extent: IPv4Network, occupied: list[IPv4Network]) -> list[IPv4Network]:
    out: list[IPv4Network] = []
    start = int(extent.network_address)
    end = int(extent.broadcast_address) + 1
    for lo, hi in netmath.merge_intervals(occupied):
        lo, hi = max(lo, start), min(hi, end)
        if lo > start:
            out += _cover(start, lo)
        start = max(start, hi)
    if start < end:
        out += _cover(start, end)
    return out


def _cover(lo: int, hi: int) -> list[IPv4Network]:
    """The aligned CIDR blocks that exactly cover [lo, hi)."""
    from ipaddress import IPv4Address, summarize_address_range

    return list(summarize_address_range(IPv4Address(lo), IPv4Address(hi - 1)))


def covered(m: NetworkMap) -> int:
    """Addresses of the extent some (not planned) area takes."""
    extent = _net(m.cidr)
    if extent is None:
        return 0
    start, end = int(extent.network_address), int(extent.broadcast_address) + 1
    nets = [n for a in m.areas if (n := _net(a.cidr)) is not None and not a.planned]
    return sum(max(0, min(hi, end) - max(lo, start)) for lo, hi in netmath.merge_intervals(nets))


def unallocated_capacity(m: NetworkMap) -> Capacity:
    """The map as one capacity row: `used` = addresses some range takes, `free` = not yet allocated."""
    extent = _net(m.cidr)
    size = extent.num_addresses if extent is not None else 0
    used = covered(m)
    gaps = free_blocks(m)
    largest = min((g.prefixlen for g in gaps), default=None)
    taken = [a for a in m.areas if not a.planned]
    note = f"unallocated space; {len(taken)} range(s) in it; " + (
        f"largest free block /{largest}" if largest is not None else "no free block"
    )
    return Capacity(
        kind=m.kind,
        name=m.name,
        cidr=m.cidr,
        size=size,
        used=used,
        free=size - used,
        utilization=utilization(used, size),
        note=note,
    )
