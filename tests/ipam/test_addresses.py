"""Property: the integer fast paths for addresses (cidrx.ipam.addresses, and the IPAM functions built on them)
answer exactly as the `ipaddress` code they replace, for dotted quads of every spelling (leading zeros,
octets past 255, prefixes, spaces), IPv6 (IPv4-mapped included), Whereabouts reservation names and junk.
The references below are the `ipaddress` forms, written out here as the oracle.
"""

from __future__ import annotations

import ipaddress

from hypothesis import example, given
from hypothesis import strategies as st

from cidrx.ipam import addresses
from cidrx.ipam.liveness import canonical_ip
from cidrx.ipam.whereabouts.collect import offset_ip, parse_network
from cidrx.ipam.whereabouts.model import go_ip_string, name_addresses, reservation_name
from cidrx.kube.collect import AddressRanges

_OCTETS = st.sampled_from(["0", "00", "01", "1", "9", "10", "99", "100", "199", "255", "256", "300", "007", "1e1", ""])
_QUADS = st.lists(_OCTETS, min_size=3, max_size=5).map(".".join)
_V6 = st.integers(0, (1 << 128) - 1).map(lambda v: str(ipaddress.IPv6Address(v)))
_MAPPED = st.integers(0, (1 << 32) - 1).map(lambda v: f"::ffff:{ipaddress.IPv4Address(v)}")
_V4 = st.integers(0, (1 << 32) - 1).map(lambda v: str(ipaddress.IPv4Address(v)))
_DECORATED = st.tuples(
    st.one_of(_V4, _QUADS), st.sampled_from(["", " ", "/24", "/33", "\n", "x", ":1"]), st.sampled_from(["", " ", "-"])
).map(lambda t: t[2] + t[0] + t[1])
TEXTS = st.one_of(_V4, _QUADS, _V6, _MAPPED, _DECORATED, st.text(alphabet="0123456789abcdef.:-/ x", max_size=24))


def _key(text: str) -> tuple[int, int] | None:
    try:
        addr = ipaddress.ip_address(text)
    except ValueError:
        return None
    return addr.version, int(addr)


@given(TEXTS)
@example("1.2.3.4")
@example("01.2.3.4")
@example("1.2.3.4/32")
@example("255.255.255.256")
@example("::ffff:10.0.0.1")
def test_parsing_is_ipaddress(text: str) -> None:
    expected = _key(text)
    assert addresses.is_address(text) is (expected is not None)
    assert (addresses.v4_value(text) is not None) is (expected is not None and expected[0] == 4)
    if expected is None:
        for parse in (addresses.address_key, addresses.address_int):
            try:
                parse(text)
            except ValueError:
                continue
            raise AssertionError(f"{parse.__name__} accepted {text!r}")
        return
    assert addresses.address_key(text) == expected
    assert addresses.address_int(text) == expected[1]


@given(st.one_of(st.integers(0, (1 << 32) - 1), st.integers(-5, (1 << 129))))
@example(0)
@example((1 << 32) - 1)
@example(1 << 32)
def test_printing_is_ipaddress(value: int) -> None:
    try:
        expected = str(ipaddress.ip_address(value))
    except ValueError:
        expected = None
    try:
        got = addresses.address_text(value)
    except ValueError:
        got = None
    assert got == expected
    if 0 <= value < 1 << 32:
        assert addresses.v4_text(value) == expected


def _go_ip_string(ip: str) -> str:
    try:
        addr = ipaddress.ip_address(ip.strip())
    except ValueError:
        return ip
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        return str(addr.ipv4_mapped)
    return str(addr)


def _name_addresses(name: str) -> tuple[str, ...]:
    found: list[str] = []
    tails = [name] + [name[i + 1 :] for i, ch in enumerate(name) if ch == "-"]
    for tail in tails:
        for text in (tail, tail.replace("-", ":")):
            try:
                addr = ipaddress.ip_address(text)
            except ValueError:
                continue
            if reservation_name(str(addr)) == tail and str(addr) not in found:
                found.append(str(addr))
    return tuple(found)


NAMES = st.one_of(
    st.tuples(st.sampled_from(["", "blue", "net-a", "net-fd00", "01"]), st.one_of(_V4, _V6, _MAPPED, _QUADS)).map(
        lambda t: reservation_name(t[1], t[0])
    ),
    TEXTS.map(lambda t: t.replace(":", "-")),
)


@given(TEXTS)
def test_go_ip_string_and_canonical_ip_as_ipaddress(text: str) -> None:
    assert go_ip_string(text) == _go_ip_string(text)
    try:
        expected = str(ipaddress.ip_address(text.strip())) if ":" in text else text.strip()
    except ValueError:
        expected = text
    assert canonical_ip(text) == expected


@given(NAMES)
@example("net-fd00-1--5")
@example("blue-10.0.0.1")
def test_name_addresses_as_ipaddress(name: str) -> None:
    assert name_addresses(name) == _name_addresses(name)


@given(
    st.sampled_from(["10.0.0.0/24", "10.0.0.7/24", "10.0.0.0/30", "fd00::/120", "::/96", "255.255.255.0/24", "x"]),
    st.one_of(st.integers(0, 300).map(str), st.sampled_from(["-1", "+1", "01", "1.5", "", "4294967296"])),
)
def test_offset_ip_as_ipaddress(cidr: str, key: str) -> None:
    network = parse_network(cidr)
    first = ipaddress.ip_interface(cidr).ip if network is not None else None
    expected = ""
    if network is not None and key.isdigit() and key.isascii():
        value = int(first if first is not None else network.network_address) + int(key)
        if value <= int(network.broadcast_address):
            expected = str(ipaddress.ip_address(value))
    assert offset_ip(network, key, first) == expected


@given(st.lists(TEXTS, max_size=4), st.lists(st.integers(0, (1 << 32) - 1), max_size=4))
@example(["10.0.0.5/24", "10.0.1.0/24", "0.0.0.0/0"], [])
@example(["10.0.0.5", "fd00::/120", "::ffff:10.0.0.1"], [])
def test_address_ranges_as_ipaddress(cidrs: list[str], values: list[int]) -> None:
    """The pod filter (dotted quads read with integers) holds exactly the addresses of ipaddress's networks:
    probed at both ends of each network, just outside them, and anywhere."""
    nets = []
    for cidr in cidrs:
        try:
            nets.append(ipaddress.ip_network(cidr, strict=False))
        except ValueError:
            continue
    probes = [ipaddress.ip_address(v) for v in values]
    for net in nets:
        top = (1 << net.max_prefixlen) - 1
        first, last = int(net.network_address), int(net.broadcast_address)
        probes += [type(net.network_address)(v) for v in (first - 1, first, last, last + 1) if 0 <= v <= top]
    ranges = AddressRanges.of(cidrs)
    for ip in probes:
        assert ranges.contains(str(ip)) is any(ip.version == n.version and ip in n for n in nets), ip
