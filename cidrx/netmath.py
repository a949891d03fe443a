"""CIDR algebra for cidrx: parsing, overlap, free-block search and the clouds' own address rules.

Every plan cidrx makes ends in "use this range": a secondary range for a GKE subnet, a secondary VPC CIDR
and per-AZ subnets for EKS custom networking, free /28s for prefix delegation. Getting that wrong is
expensive (an overlapping range breaks routing; a range the cloud forbids fails halfway through an apply),
so the arithmetic lives here, pure and exhaustively tested, with no I/O.

Searches work on sorted integer intervals ``(start, end_exclusive)`` rather than on ``ipaddress``
objects: exact, and fast enough for tens of thousands of occupied ranges. ``ipaddress`` is used for
parsing and for the values handed back to callers. IPv4 only.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator
from ipaddress import AddressValueError, IPv4Address, IPv4Network, NetmaskValueError

from cidrx.errors import InvalidInput

Interval = tuple[int, int]
"""A half-open address range ``(first_address, one_past_last_address)`` as integers."""

_ADDRESS_SPACE = 1 << 32
_END_MASK = (1 << 33) - 1

# --- well-known ranges --------------------------------------------------------------------------------


def _net(text: str) -> IPv4Network:
    return IPv4Network(text)


RFC1918: tuple[IPv4Network, ...] = (_net("10.0.0.0/8"), _net("172.16.0.0/12"), _net("192.168.0.0/16"))
CGNAT = _net("100.64.0.0/10")
BENCHMARK = _net("198.18.0.0/15")
CLASS_E = _net("240.0.0.0/4")
TEST_NETS: tuple[IPv4Network, ...] = (
    _net("192.0.0.0/24"),
    _net("192.0.2.0/24"),
    _net("198.51.100.0/24"),
    _net("203.0.113.0/24"),
)

_NEVER_ALLOWED_NAMES: dict[IPv4Network, str] = {
    _net("0.0.0.0/8"): "'this network'",
    _net("127.0.0.0/8"): "loopback",
    _net("169.254.0.0/16"): "link-local",
    _net("224.0.0.0/4"): "multicast",
    _net("255.255.255.255/32"): "limited broadcast",
}
NEVER_ALLOWED: tuple[IPv4Network, ...] = tuple(_NEVER_ALLOWED_NAMES)

# --- parsing ------------------------------------------------------------------------------------------


def parse_cidr(text: str) -> IPv4Network:
    """Parse an IPv4 CIDR strictly: a prefix length is required and host bits must be zero."""
    raw = text.strip()
    if ":" in raw:
        raise InvalidInput(f"IPv6 is not supported: '{raw}'", hint="give an IPv4 CIDR such as 100.64.0.0/16")
    if "/" not in raw and _is_ipv4(raw):
        raise InvalidInput(
            f"'{raw}' is an address, not a range: a CIDR needs a prefix length (/N) saying how big the range is",
            hint="write it as NETWORK/N, e.g. 100.64.0.0/20 (4,096 addresses)",
        )
    try:
        loose = IPv4Network(raw, strict=False)
        address = IPv4Address(raw.split("/", 1)[0])
    except (AddressValueError, NetmaskValueError, ValueError):
        raise InvalidInput(
            f"'{raw}' is not a valid IPv4 CIDR",
            hint="expected A.B.C.D/N, N from 0 to 32, e.g. 10.0.0.0/16",
        ) from None
    if address != loose.network_address:
        raise InvalidInput(f"{raw} has host bits set; did you mean {loose}?")
    return loose


def parse_ip(text: str) -> IPv4Address:
    """Parse one IPv4 address."""
    raw = text.strip()
    if ":" in raw:
        raise InvalidInput(f"IPv6 is not supported: '{raw}'", hint="give an IPv4 address such as 10.0.0.5")
    try:
        return IPv4Address(raw)
    except AddressValueError:
        raise InvalidInput(f"'{raw}' is not a valid IPv4 address", hint="expected A.B.C.D") from None


def _is_ipv4(text: str) -> bool:
    try:
        IPv4Address(text)
    except AddressValueError:
        return False
    return True


def _check_prefixlen(prefixlen: int) -> None:
    if not 0 <= prefixlen <= 32:
        raise InvalidInput(f"/{prefixlen} is not a valid IPv4 prefix length", hint="use 0 to 32")


# --- sizes --------------------------------------------------------------------------------------------


def next_pow2(n: int) -> int:
    """Smallest power of two >= n (1 for n <= 1)."""
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def address_count(net: IPv4Network) -> int:
    """Number of addresses in ``net``, network and broadcast included."""
    return net.num_addresses


def smallest_prefix_for(count_addresses: int) -> int:
    """Longest prefix whose block still holds ``count_addresses`` addresses (1 -> /32, 256 -> /24)."""
    if not 1 <= count_addresses <= _ADDRESS_SPACE:
        raise InvalidInput(f"cannot size a block for {count_addresses} addresses", hint="use 1 to 2^32")
    return 32 - (next_pow2(count_addresses).bit_length() - 1)


# --- intervals ----------------------------------------------------------------------------------------


def to_interval(net: IPv4Network | Interval) -> Interval:
    """``10.0.0.0/24`` -> ``(167772160, 167772416)``; an interval passes through unchanged."""
    if isinstance(net, tuple):
        return net
    start = int(net.network_address)
    return start, start + (1 << (32 - net.prefixlen))


def merge_intervals(ranges: Iterable[IPv4Network | Interval]) -> list[Interval]:
    """Sort and coalesce ranges; overlapping and adjacent ones merge, empty ones vanish."""
    # Each interval is packed into one int (start above end) so the sort compares ints, not tuples.
    packed = []
    for item in ranges:
        if isinstance(item, tuple):
            start, end = item
        else:
            start = int(item.network_address)
            end = start + (1 << (32 - item.prefixlen))
        if start < end:
            packed.append(pack_interval(start, end))
    return merge_packed(packed)


def pack_interval(start: int, end: int) -> int:
    """[start, end) as one int (start above end): sorts as the pair does, in a fraction of its memory."""
    return start << 33 | end


def merge_packed(packed: list[int]) -> list[Interval]:
    """`merge_intervals` of intervals packed by `pack_interval` (non-empty ones); sorts `packed` in place."""
    packed.sort()
    merged: list[Interval] = []
    low = high = -1
    for key in packed:
        start, end = key >> 33, key & _END_MASK
        if start <= high:
            if end > high:
                high = end
        else:
            if high >= 0:
                merged.append((low, high))
            low, high = start, end
    if high >= 0:
        merged.append((low, high))
    return merged


def overlaps(a: IPv4Network | Interval, b: IPv4Network | Interval) -> bool:
    """True when the two ranges share at least one address."""
    a_start, a_end = to_interval(a)
    b_start, b_end = to_interval(b)
    return a_start < b_end and b_start < a_end


def overlapping(candidate: IPv4Network, occupied: Iterable[IPv4Network]) -> list[IPv4Network]:
    """The members of ``occupied`` that collide with ``candidate``, in their given order."""
    start, end = to_interval(candidate)
    found: list[IPv4Network] = []
    for net in occupied:
        o_start, o_end = to_interval(net)
        if start < o_end and o_start < end:
            found.append(net)
    return found


# --- free-block search --------------------------------------------------------------------------------


def _free_gaps(
    prefixlen: int, within: Iterable[IPv4Network], occupied: Iterable[IPv4Network | Interval]
) -> Iterator[Interval]:
    """Unoccupied stretches of each space in ``within`` that can hold a block of ``prefixlen``.

    Spaces are taken in the given order, each gap ascending. A block lies inside one space; when spaces
    nest, blocks of an earlier space are not offered again for a later one.
    """
    merged = merge_intervals(occupied)
    ends = [end for _, end in merged]
    seen: list[IPv4Network] = []
    for space in within:
        if space.prefixlen > prefixlen or any(space.subnet_of(earlier) for earlier in seen):
            seen.append(space)
            continue
        # Earlier spaces nested in this one already offered every block that fits inside them; since CIDR
        # blocks either nest or are disjoint, masking them out removes exactly those duplicates.
        repeats = [to_interval(e) for e in seen if e.prefixlen <= prefixlen and e.subnet_of(space)]
        seen.append(space)
        low, high = to_interval(space)
        first = bisect.bisect_right(ends, low)
        last = bisect.bisect_left(merged, (high, high), lo=first)
        blocking = merge_intervals(merged[first:last] + repeats) if repeats else merged[first:last]
        cursor = low
        for start, end in blocking:
            if start > cursor:
                yield cursor, start
            cursor = max(cursor, end)
            if cursor >= high:
                break
        if cursor < high:
            yield cursor, high


def free_blocks(
    prefixlen: int,
    within: Iterable[IPv4Network],
    occupied: Iterable[IPv4Network | Interval],
    limit: int | None = None,
) -> Iterator[IPv4Network]:
    """Aligned blocks of exactly ``/prefixlen`` inside one of ``within`` that overlap nothing occupied.

    ``within`` is taken in the given order (list preferred spaces first); blocks ascend within a space.
    Stops after ``limit`` blocks when given. The prefix length is checked at once, the search is lazy.
    """
    _check_prefixlen(prefixlen)
    return _enumerate_blocks(prefixlen, _free_gaps(prefixlen, within, occupied), limit)


def _enumerate_blocks(prefixlen: int, gaps: Iterator[Interval], limit: int | None) -> Iterator[IPv4Network]:
    size = 1 << (32 - prefixlen)
    produced = 0
    if limit is not None and limit <= 0:
        return
    for start, end in gaps:
        block = -(-start // size) * size
        while block + size <= end:
            yield IPv4Network((block, prefixlen))
            produced += 1
            if produced == limit:
                return
            block += size


def first_free_block(
    prefixlen: int, within: Iterable[IPv4Network], occupied: Iterable[IPv4Network | Interval]
) -> IPv4Network | None:
    """The first block ``free_blocks`` would yield, or None when there is no room."""
    return next(free_blocks(prefixlen, within, occupied, limit=1), None)


def count_free_blocks(prefixlen: int, within: Iterable[IPv4Network], occupied: Iterable[IPv4Network | Interval]) -> int:
    """How many blocks ``free_blocks`` would yield, computed per gap without enumerating them."""
    _check_prefixlen(prefixlen)
    size = 1 << (32 - prefixlen)
    total = 0
    for start, end in _free_gaps(prefixlen, within, occupied):
        total += max(0, end // size - -(-start // size))
    return total


def split_equal(net: IPv4Network, parts: int) -> list[IPv4Network]:
    """Split ``net`` into equal aligned pieces: ``parts`` is rounded up to a power of two for the piece
    size, and the first ``parts`` pieces are returned (3 parts of a /20 -> three /22s)."""
    if parts < 1:
        raise InvalidInput(f"cannot split {net} into {parts} parts", hint="ask for at least one part")
    new_prefix = net.prefixlen + (next_pow2(parts).bit_length() - 1)
    if new_prefix > 32:
        raise InvalidInput(
            f"{net} is too small to split into {parts} parts",
            hint=f"use a block of /{32 - (new_prefix - net.prefixlen)} or larger",
        )
    start = int(net.network_address)
    size = 1 << (32 - new_prefix)
    return [IPv4Network((start + i * size, new_prefix)) for i in range(parts)]


# --- forbidden and reserved ranges --------------------------------------------------------------------


def check_not_forbidden(net: IPv4Network) -> None:
    """Reject ranges that no cloud or cluster may use (loopback, link-local, multicast...)."""
    for bad, name in _NEVER_ALLOWED_NAMES.items():
        if overlaps(net, bad):
            raise InvalidInput(
                f"{net} overlaps {bad} ({name}), which can never hold cluster addresses",
                hint="choose a range in RFC 1918 or 100.64.0.0/10",
            )


# --- GCP / GKE ----------------------------------------------------------------------------------------

# GCP also accepts the deprecated 6to4 relay range for subnet ranges (docs/cloud-facts.md, "GKE / Compute Engine").
_GCP_ALSO_VALID: tuple[IPv4Network, ...] = (*TEST_NETS, _net("192.88.99.0/24"))


def gcp_allowed_spaces(include_class_e: bool = False) -> list[IPv4Network]:
    """Where cidrx looks for new GCP ranges, most preferred first."""
    spaces = [*RFC1918, CGNAT, BENCHMARK]
    if include_class_e:
        spaces.append(CLASS_E)
    return spaces


def gcp_check_allowed(net: IPv4Network, include_class_e: bool = False) -> None:
    """Raise InvalidInput unless GCP accepts ``net`` as a subnet range and cidrx is willing to use it."""
    check_not_forbidden(net)
    if overlaps(net, CLASS_E) and not include_class_e:
        raise InvalidInput(
            f"{net} is in {CLASS_E} (class E), which is only used when class E is explicitly allowed",
            hint="many on-premises devices and operating systems drop class E traffic; check first",
        )
    allowed = [*gcp_allowed_spaces(include_class_e), *_GCP_ALSO_VALID]
    if not any(net.subnet_of(space) for space in allowed):
        raise InvalidInput(
            f"{net} is not in a private range GCP accepts for subnet ranges",
            hint="use RFC 1918, 100.64.0.0/10 or 198.18.0.0/15 (public ranges are not used)",
        )


def gke_pod_block_prefix(max_pods_per_node: int) -> int:
    """Prefix of the pod block GKE gives each node: twice max pods, rounded up to a power of two
    (docs/cloud-facts.md, "GKE / Compute Engine")."""
    if not 8 <= max_pods_per_node <= 256:
        raise InvalidInput(
            f"max pods per node must be between 8 and 256, got {max_pods_per_node}",
            hint="GKE accepts 8 to 256 pods per node",
        )
    return 32 - (next_pow2(2 * max_pods_per_node).bit_length() - 1)


def gke_max_nodes(range_prefix: int, node_prefix: int) -> int:
    """How many per-node pod blocks of ``/node_prefix`` fit in a pod range of ``/range_prefix``."""
    _check_prefixlen(range_prefix)
    _check_prefixlen(node_prefix)
    return 1 << (node_prefix - range_prefix) if node_prefix >= range_prefix else 0


# --- AWS: secondary VPC CIDRs -------------------------------------------------------------------------

AWS_SECONDARY_MIN_PREFIX = 16
AWS_SECONDARY_MAX_PREFIX = 28

_TEN, _ONE_SEVEN_TWO, _ONE_NINE_TWO = RFC1918
_AWS_198_19 = _net("198.19.0.0/16")
_AWS_172_31 = _net("172.31.0.0/16")
_AWS_10_0_15 = _net("10.0.0.0/15")
_AWS_10_0_16 = _net("10.0.0.0/16")
_DOCKER_BRIDGE = _net("172.17.0.0/16")


def _aws_restricted(primary: IPv4Network) -> list[IPv4Network]:
    """Ranges AWS refuses as secondary CIDRs of a VPC with this primary CIDR.

    Source: Amazon VPC User Guide, table "IPv4 CIDR block association restrictions"
    (docs/cloud-facts.md, "AWS / EKS (VPC CNI)").
    """
    if primary.subnet_of(_TEN):
        restricted = [_ONE_SEVEN_TWO, _ONE_NINE_TWO, _AWS_198_19]
        # Surprising row of the table: a primary inside 10.0.0.0/15 also rules out all of 10.0.0.0/16,
        # even the parts of it the primary does not cover.
        if primary.subnet_of(_AWS_10_0_15):
            restricted.append(_AWS_10_0_16)
        return restricted
    if primary.subnet_of(_ONE_SEVEN_TWO):
        # The table restricts 172.31.0.0/16 (the default VPC's range) even though it is in the same /12.
        return [_TEN, _ONE_NINE_TWO, _AWS_172_31, _AWS_198_19]
    if primary.subnet_of(_ONE_NINE_TWO):
        return [_TEN, _ONE_SEVEN_TWO, _AWS_198_19]
    # Primary in 198.19.0.0/16: the table restricts RFC 1918 and lists 198.19.0.0/16 as permitted for
    # no row, so it is treated as restricted here too. Any other primary (public or 100.64.0.0/10):
    # RFC 1918 and 198.19.0.0/16 are restricted.
    return [*RFC1918, _AWS_198_19]


def aws_secondary_restriction(primary: IPv4Network, candidate: IPv4Network) -> str | None:
    """Why AWS refuses ``candidate`` as a secondary CIDR of a VPC whose primary CIDR is ``primary``,
    or None when the restriction table allows it (size and overlap are checked by aws_check_secondary)."""
    for restricted in _aws_restricted(primary):
        if overlaps(candidate, restricted):
            return (
                f"AWS does not allow {candidate} (in {restricted}) as a secondary CIDR of a VPC whose "
                f"primary CIDR is {primary}"
            )
    return None


def aws_check_secondary(
    primary: IPv4Network,
    existing_vpc_cidrs: Iterable[IPv4Network],
    candidate: IPv4Network,
    occupied: Iterable[IPv4Network],
) -> None:
    """Raise InvalidInput unless AWS would accept ``candidate`` as a new secondary VPC CIDR and it collides
    with nothing in ``occupied`` (peered VPCs, routes in the VPC's route tables, on-premises ranges)."""
    check_not_forbidden(candidate)
    if not AWS_SECONDARY_MIN_PREFIX <= candidate.prefixlen <= AWS_SECONDARY_MAX_PREFIX:
        raise InvalidInput(
            f"{candidate} cannot be a VPC CIDR: AWS accepts sizes from /{AWS_SECONDARY_MIN_PREFIX} "
            f"to /{AWS_SECONDARY_MAX_PREFIX}",
            hint="pick a block within that size range",
        )
    hits = overlapping(candidate, [primary, *existing_vpc_cidrs])
    if hits:
        raise InvalidInput(f"{candidate} overlaps {hits[0]} (existing VPC CIDR)", hint="pick a free range")
    reason = aws_secondary_restriction(primary, candidate)
    if reason is not None:
        raise InvalidInput(reason, hint="100.64.0.0/10 is always allowed")
    hits = overlapping(candidate, occupied)
    if hits:
        raise InvalidInput(
            f"{candidate} overlaps {hits[0]} (routed range)", hint="pick a range that overlaps nothing routed"
        )


def aws_secondary_candidate_spaces(primary: IPv4Network) -> list[IPv4Network]:
    """Where to look for a secondary VPC CIDR, most preferred first: 100.64.0.0/10 (AWS's advice for
    custom networking), then the RFC 1918 space the restriction table allows, then 198.18.0.0/16."""
    restricted = _aws_restricted(primary)
    # Not a restriction, but the VPC guide ("VPC CIDR blocks") warns that some AWS services and Docker's
    # default bridge use 172.17.0.0/16; never propose it (docs/cloud-facts.md).
    avoid = [*restricted, _DOCKER_BRIDGE]
    spaces: list[IPv4Network] = []
    for base in (CGNAT, *RFC1918, BENCHMARK):
        pieces = [base]
        for hole in avoid:
            pieces = [rest for piece in pieces for rest in _subtract(piece, hole)]
        spaces.extend(sorted(pieces))
    return spaces


def _subtract(net: IPv4Network, hole: IPv4Network) -> list[IPv4Network]:
    if not overlaps(net, hole):
        return [net]
    if net.subnet_of(hole):
        return []
    return list(net.address_exclude(hole))


# --- AWS: subnets and max pods ------------------------------------------------------------------------

AWS_RESERVED_PER_SUBNET = 5


def aws_reserved_addresses(subnet: IPv4Network) -> list[IPv4Network]:
    """The addresses AWS keeps in every subnet (first four and the last), as /32s
    (docs/cloud-facts.md, "AWS / EKS (VPC CNI)")."""
    start, end = to_interval(subnet)
    offsets = sorted({a for a in (start, start + 1, start + 2, start + 3, end - 1) if start <= a < end})
    return [IPv4Network((a, 32)) for a in offsets]


def eni_max_pods(
    enis: int, ips_per_eni: int, *, prefix_delegation: bool = False, custom_networking: bool = False
) -> int:
    """Pods the AWS VPC CNI can address on one node, before any recommended cap.

    Each ENI keeps its primary address for itself; with prefix delegation every other slot holds a /28
    (16 addresses). Custom networking leaves the primary ENI out of pod networking. The +2 is for
    host-network pods (aws-node, kube-proxy). Source: docs/cloud-facts.md, "AWS / EKS (VPC CNI)".
    """
    if enis < 1 or ips_per_eni < 1:
        raise InvalidInput(
            f"an instance needs at least one ENI and one IP per ENI, got {enis} and {ips_per_eni}",
            hint="take the values from describe_instance_types NetworkInfo",
        )
    pod_enis = enis - 1 if custom_networking else enis
    per_eni = (ips_per_eni - 1) * (16 if prefix_delegation else 1)
    return pod_enis * per_eni + 2


def aws_recommended_max_pods(vcpus: int, raw_max: int) -> int:
    """Apply EKS's max-pods cap: 110 up to 30 vCPUs, 250 above (the calculator tests `CPU_COUNT -gt 30`).

    Source: the EKS AMI's max-pods-calculator.sh (docs/cloud-facts.md, "EKS max pods and warm pools");
    managed node groups enforce this cap with or without prefix delegation, so callers apply it always.
    """
    return min(raw_max, 250 if vcpus > 30 else 110)
