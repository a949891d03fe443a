"""Property tests: netmath's interval search against a brute-force walk with stdlib ipaddress."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, summarize_address_range
from itertools import islice, pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cidrx import netmath as nm
from cidrx.errors import InvalidInput

REGION = IPv4Network("10.0.0.0/22")  # spaces are drawn here; occupied ranges spill a little around it
REGION_START = int(REGION.network_address)
REGION_SIZE = REGION.num_addresses


@st.composite
def networks(draw: st.DrawFn, min_prefix: int, max_prefix: int, low: int, high: int) -> IPv4Network:
    prefix = draw(st.integers(min_prefix, max_prefix))
    address = draw(st.integers(low, high - 1))
    return IPv4Network((address, prefix), strict=False)


spaces = networks(22, 30, REGION_START, REGION_START + REGION_SIZE)
occupied_nets = networks(21, 32, REGION_START - REGION_SIZE // 4, REGION_START + REGION_SIZE + REGION_SIZE // 4)


@st.composite
def occupied_intervals(draw: st.DrawFn) -> tuple[int, int]:
    start = draw(st.integers(REGION_START - 64, REGION_START + REGION_SIZE))
    return start, start + draw(st.integers(0, 300))


occupied_items = st.lists(st.one_of(occupied_nets, occupied_nets, occupied_intervals()), max_size=25)


def as_networks(item: IPv4Network | tuple[int, int]) -> list[IPv4Network]:
    if isinstance(item, IPv4Network):
        return [item]
    start, end = item
    if start >= end:
        return []
    return list(summarize_address_range(IPv4Address(start), IPv4Address(end - 1)))


def brute_force(
    prefixlen: int, within: list[IPv4Network], occupied: list[IPv4Network | tuple[int, int]]
) -> list[IPv4Network]:
    taken = [net for item in occupied for net in as_networks(item)]
    found: list[IPv4Network] = []
    seen: set[IPv4Network] = set()
    for space in within:
        if space.prefixlen > prefixlen:
            continue
        near = [t for t in taken if t.overlaps(space)]
        for block in space.subnets(new_prefix=prefixlen):
            if block not in seen and not any(block.overlaps(t) for t in near):
                seen.add(block)
                found.append(block)
    return found


@settings(max_examples=300, deadline=None)
@given(
    within=st.lists(spaces, min_size=1, max_size=3),
    occupied=occupied_items,
    depth=st.integers(-1, 8),
    limit=st.one_of(st.none(), st.integers(0, 5)),
)
def test_free_blocks_match_brute_force(
    within: list[IPv4Network],
    occupied: list[IPv4Network | tuple[int, int]],
    depth: int,
    limit: int | None,
) -> None:
    # Blocks at most 2^8 times smaller than the largest space keep the brute force cheap.
    prefixlen = min(32, min(space.prefixlen for space in within) + depth)
    expected = brute_force(prefixlen, within, occupied)
    assert list(nm.free_blocks(prefixlen, within, occupied)) == expected
    assert nm.count_free_blocks(prefixlen, within, occupied) == len(expected)
    assert nm.first_free_block(prefixlen, within, occupied) == (expected[0] if expected else None)
    if limit is not None:
        assert list(nm.free_blocks(prefixlen, within, occupied, limit=limit)) == expected[:limit]


@settings(max_examples=60, deadline=None)
@given(
    space=networks(24, 24, REGION_START, REGION_START + REGION_SIZE),
    in_use=st.lists(st.booleans(), min_size=256, max_size=256),
    prefixlen=st.integers(24, 32),
    aws=st.booleans(),
)
def test_free_blocks_in_a_busy_subnet(space: IPv4Network, in_use: list[bool], prefixlen: int, aws: bool) -> None:
    start = int(space.network_address)
    occupied: list[IPv4Network | tuple[int, int]] = [
        *(nm.aws_reserved_addresses(space) if aws else []),
        *(IPv4Network((start + offset, 32)) for offset, used in enumerate(in_use) if used),
    ]
    expected = brute_force(prefixlen, [space], occupied)
    assert list(nm.free_blocks(prefixlen, [space], occupied)) == expected
    assert nm.count_free_blocks(prefixlen, [space], occupied) == len(expected)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 200), st.integers(0, 40)).map(lambda t: (t[0], t[0] + t[1]))))
def test_merge_intervals_preserves_membership(intervals: list[tuple[int, int]]) -> None:
    merged = nm.merge_intervals(intervals)
    for point in range(0, 245):
        assert any(s <= point < e for s, e in intervals) == any(s <= point < e for s, e in merged)
    for (_, end), (next_start, _) in pairwise(merged):
        assert end < next_start  # sorted, disjoint and not even adjacent
    assert all(s < e for s, e in merged)


@settings(max_examples=200, deadline=None)
@given(a=occupied_nets, b=occupied_nets)
def test_overlaps_matches_ipaddress(a: IPv4Network, b: IPv4Network) -> None:
    assert nm.overlaps(a, b) == a.overlaps(b) == nm.overlaps(b, a)
    assert (nm.overlapping(a, [b]) == [b]) == a.overlaps(b)


@settings(max_examples=300, deadline=None)
@given(
    net=networks(0, 32, 0, 2**32),
    parts=st.integers(1, 70),
)
def test_split_equal_pieces(net: IPv4Network, parts: int) -> None:
    bits = (parts - 1).bit_length()
    if net.prefixlen + bits > 32:
        with pytest.raises(InvalidInput):
            nm.split_equal(net, parts)
        return
    pieces = nm.split_equal(net, parts)
    assert len(pieces) == parts
    assert {p.prefixlen for p in pieces} == {net.prefixlen + bits}
    assert all(p.subnet_of(net) for p in pieces)
    assert pieces == list(islice(net.subnets(prefixlen_diff=bits), parts))  # disjoint, a prefix of net
