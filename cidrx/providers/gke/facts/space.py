"""The unallocated network-space rows of a GKE diagnosis, computed on integer intervals.

Why it exists: the rows (one per private address space the network uses: how much of it some range takes,
the largest block nobody has) are what `cidrx.model.netmap.unallocated_capacity` makes of the address maps
of cidrx.providers.gke.netmap, but those maps build an `Area` per range with `ipaddress` objects, which the
HTML map needs and the rows do not. A network with 20,000 routes and 5,000 subnets spent most of its
analysis there. This module gives the same rows from (start, end) integers, sorted once; the address maps
stay for HTML output. tests/providers/gke/test_space.py checks both agree.
"""

from __future__ import annotations

import re
from ipaddress import IPv4Network

from cidrx import netmath
from cidrx.model.findings import Capacity, utilization
from cidrx.model.snapshot import Snapshot
from cidrx.providers.gke.facts.occupied import is_outside_route, occupied_entries

KIND = "network-space"  # the kind of these rows and of the address maps they summarise
Interval = tuple[int, int]  # [start, end) of an IPv4 network


_OCTET = r"(0|[1-9][0-9]{0,2})"
_DOTTED = re.compile(rf"{_OCTET}\.{_OCTET}\.{_OCTET}\.{_OCTET}(?:/(0|[1-9][0-9]?))?")


def parse4(text: str) -> tuple[int, int] | None:
    """(network address as int, prefix length) of an IPv4 CIDR or address, host bits cleared as
    `IPv4Network(text, strict=False)` does; None for anything else (IPv6, empty, malformed). Plain dotted
    text is parsed here; anything unusual is left to `ipaddress`, so both always agree."""
    found = _DOTTED.fullmatch(text)
    if found is not None:
        a, b, c, d, bits = found.groups()
        prefix = int(bits) if bits is not None else 32
        value = (int(a) << 24) | (int(b) << 16) | (int(c) << 8) | int(d)
        if value < 1 << 32 and int(a) <= 255 and int(b) <= 255 and int(c) <= 255 and int(d) <= 255 and prefix <= 32:
            return value & (((1 << prefix) - 1) << (32 - prefix)), prefix
    try:
        net = IPv4Network(text.strip(), strict=False)
    except ValueError:
        return None
    return int(net.network_address), net.prefixlen


def _spaces() -> list[Interval]:
    """The extents the address maps group ranges into, in netmap._space_of's order of preference."""
    nets = [*netmath.gcp_allowed_spaces(include_class_e=True), *netmath.TEST_NETS]
    return [(int(n.network_address), int(n.broadcast_address) + 1) for n in nets]


def _space_of(start: int, end: int, prefix: int, spaces: list[Interval]) -> tuple[int, int]:
    """(space start, space prefix) for a range, as netmap._space_of decides."""
    for lo, hi in spaces:
        if lo <= start and end <= hi:
            return lo, 32 - (hi - lo).bit_length() + 1
    top = min(prefix, 8)
    size = 1 << (32 - top)
    return start & ~(size - 1) & 0xFFFFFFFF, top


def _largest_block(lo: int, hi: int) -> int:
    """The smallest prefix length of the aligned blocks that exactly cover [lo, hi)."""
    best = 33
    while lo < hi:
        size = lo & -lo if lo else 1 << 32
        while size > hi - lo:
            size >>= 1
        best = min(best, 33 - size.bit_length())
        lo += size
    return best


def _row(network: str, space: tuple[int, int], packed: list[int], count: int) -> Capacity:
    """`packed`: the ranges in `space`, as `netmath.pack_interval` ints (sorted in place here)."""
    start, prefix = space
    end = start + (1 << (32 - prefix))
    used = 0
    largest = 33
    cursor = start
    for lo, hi in netmath.merge_packed(packed):
        lo, hi = max(lo, start), min(hi, end)
        if hi <= lo:
            continue
        used += hi - lo
        if lo > cursor:
            largest = min(largest, _largest_block(cursor, lo))
        cursor = max(cursor, hi)
    if cursor < end:
        largest = min(largest, _largest_block(cursor, end))
    size = end - start
    note = f"unallocated space; {count} range(s) in it; " + (
        f"largest free block /{largest}" if largest <= 32 else "no free block"
    )
    cidr = f"{start >> 24}.{(start >> 16) & 255}.{(start >> 8) & 255}.{start & 255}/{prefix}"
    return Capacity(
        kind=KIND,
        name=network,
        cidr=cidr,
        size=size,
        used=used,
        free=size - used,
        utilization=utilization(used, size),
        note=note,
    )


def network_space_capacity(snapshot: Snapshot) -> list[Capacity]:
    """The same rows as `[unallocated_capacity(m) for m in address_maps(snapshot)]`, in the same order."""
    gke = snapshot.gke
    if gke is None:
        return []
    spaces = _spaces()
    # Ranges as one int each (a network's tens of thousands of routes: tuples of ints cost three times more).
    seen: set[int] = set()
    by_space: dict[tuple[int, int], list[int]] = {}
    for text, _where in occupied_entries(gke):
        parsed = parse4(text)
        if parsed is None or parsed[1] == 0:
            continue
        start, prefix = parsed
        key = start << 6 | prefix
        if key in seen:
            continue
        seen.add(key)
        end = start + (1 << (32 - prefix))
        by_space.setdefault(_space_of(start, end, prefix, spaces), []).append(netmath.pack_interval(start, end))
    return [
        _row(gke.cluster.network, space, by_space[space], len(by_space[space]))
        for space in sorted(by_space, key=lambda s: s[0])
    ]


def route_only_spaces(snapshot: Snapshot) -> set[str]:
    """The CIDRs of the network-space rows whose every occupant is a route to somewhere outside the cluster
    (a VPN or interconnect route, a route imported over peering): context for where a new range may go, not
    address space the cluster has used up, so the diagnosis leaves them out of its capacity rows."""
    gke = snapshot.gke
    if gke is None:
        return set()
    spaces = _spaces()
    routes_only: dict[tuple[int, int], bool] = {}
    for text, where in occupied_entries(gke):
        parsed = parse4(text)
        if parsed is None or parsed[1] == 0:
            continue
        start, prefix = parsed
        space = _space_of(start, start + (1 << (32 - prefix)), prefix, spaces)
        routes_only[space] = routes_only.get(space, True) and is_outside_route(where)
    return {
        f"{s >> 24}.{(s >> 16) & 255}.{(s >> 8) & 255}.{s & 255}/{p}" for (s, p), only in routes_only.items() if only
    }
