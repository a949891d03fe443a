"""Address parsing and printing with integers, for the hot loops of in-cluster IPAM collection and analysis.

Why it exists: a large cluster has tens of thousands of allocations, reservations and pod addresses, and
building an `ipaddress` object for each costs seconds. Almost all of them are IPv4 dotted quads in the one
spelling `ipaddress` accepts (no leading zeros), which integer arithmetic reads and writes exactly; anything
else (IPv6, CIDRs, junk) still goes through `ipaddress`, so every function here answers exactly as its
`ipaddress` counterpart does (tests/ipam/test_addresses.py compares them).
"""

from __future__ import annotations

import ipaddress
from ipaddress import IPv4Network

from cidrx.model.validation import CANONICAL_V4, v4_int

_V4_SPACE = 1 << 32


def v4_value(text: str) -> int | None:
    """The integer of `text` when it is an IPv4 address as `ipaddress.ip_address` accepts one (a dotted quad
    without leading zeros or a prefix); None for everything else."""
    found = CANONICAL_V4.fullmatch(text)
    if found is None or found[2] is not None:
        return None
    return v4_int(text)


def v4_text(value: int) -> str:
    """The dotted quad of an integer 0 <= value < 2**32."""
    return f"{value >> 24}.{(value >> 16) & 255}.{(value >> 8) & 255}.{value & 255}"


def address_key(text: str) -> tuple[int, int]:
    """(version, integer) of the address `text`, as `ipaddress.ip_address(text)` has them; ValueError when
    `text` is none."""
    value = v4_value(text)
    if value is not None:
        return 4, value
    addr = ipaddress.ip_address(text)
    return addr.version, int(addr)


def address_int(text: str) -> int:
    """`int(ipaddress.ip_address(text))`; ValueError when `text` is no address."""
    value = v4_value(text)
    return value if value is not None else int(ipaddress.ip_address(text))


def address_text(value: int) -> str:
    """`str(ipaddress.ip_address(value))`: IPv4 below 2**32 (whatever the family it was counted in), IPv6
    above; ValueError when negative or too large."""
    if 0 <= value < _V4_SPACE:
        return v4_text(value)
    return str(ipaddress.ip_address(value))


def is_address(text: str) -> bool:
    """Whether `ipaddress.ip_address(text)` accepts `text`."""
    if v4_value(text) is not None:
        return True
    if ":" not in text:
        return False  # without a colon only a dotted quad is an address, and v4_value took every one
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def v4_network(text: str) -> IPv4Network | None:
    """The IPv4 network `text` names (host bits dropped), or None when it is not one (IPv6, junk)."""
    try:
        return IPv4Network(text, strict=False)
    except ValueError:
        return None
