"""Example-based tests for cidrx.netmath, including the numbers of the GKE/EKS exhaustion incident."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

import pytest

from cidrx import netmath as nm
from cidrx.errors import EXIT_USAGE, InvalidInput


def N(text: str) -> IPv4Network:
    return IPv4Network(text)


def nets(*texts: str) -> list[IPv4Network]:
    return [IPv4Network(t) for t in texts]


# --- parsing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("10.0.0.0/16", "10.0.0.0/16"),
        ("  100.64.0.0/20\n", "100.64.0.0/20"),
        ("0.0.0.0/0", "0.0.0.0/0"),
        ("10.0.208.27/32", "10.0.208.27/32"),
        ("10.0.0.0/255.255.0.0", "10.0.0.0/16"),
    ],
)
def test_parse_cidr_accepts(text: str, expected: str) -> None:
    assert nm.parse_cidr(text) == N(expected)


def test_parse_cidr_host_bits_suggests_network() -> None:
    with pytest.raises(InvalidInput) as err:
        nm.parse_cidr("10.0.0.1/16")
    assert err.value.message == "10.0.0.1/16 has host bits set; did you mean 10.0.0.0/16?"
    assert err.value.exit_code == EXIT_USAGE


@pytest.mark.parametrize("text", ["10.0.0.0/33", "10.0.0.256/24", "10.0.0/16", "banana", "", "10.0.0.0/-1"])
def test_parse_cidr_rejects_malformed(text: str) -> None:
    with pytest.raises(InvalidInput) as err:
        nm.parse_cidr(text)
    assert err.value.message == f"'{text}' is not a valid IPv4 CIDR"
    assert "e.g. 10.0.0.0/16" in str(err.value)


def test_parse_cidr_rejects_ipv6() -> None:
    for text in ("fd00::/8", "2001:db8::/32", "::ffff:10.0.0.0/104"):
        with pytest.raises(InvalidInput, match="IPv6 is not supported"):
            nm.parse_cidr(text)


def test_parse_cidr_requires_prefix_length() -> None:
    with pytest.raises(InvalidInput) as err:
        nm.parse_cidr("10.0.0.5")
    assert "a CIDR needs a prefix length" in err.value.message and "'10.0.0.5'" in err.value.message
    assert err.value.hint == "write it as NETWORK/N, e.g. 100.64.0.0/20 (4,096 addresses)"
    assert "/32" not in err.value.hint and "single address" not in err.value.hint


def test_parse_ip() -> None:
    assert nm.parse_ip(" 10.0.208.27 ") == IPv4Address("10.0.208.27")
    with pytest.raises(InvalidInput, match=r"'10\.0\.0\.5/32' is not a valid IPv4 address"):
        nm.parse_ip("10.0.0.5/32")
    with pytest.raises(InvalidInput, match="IPv6 is not supported"):
        nm.parse_ip("::1")


# --- sizes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("n", "expected"), [(-3, 1), (0, 1), (1, 1), (2, 2), (3, 4), (17, 32), (256, 256)])
def test_next_pow2(n: int, expected: int) -> None:
    assert nm.next_pow2(n) == expected


@pytest.mark.parametrize(
    ("count", "prefix"), [(1, 32), (2, 31), (3, 30), (16, 28), (17, 27), (256, 24), (257, 23), (2**32, 0)]
)
def test_smallest_prefix_for(count: int, prefix: int) -> None:
    assert nm.smallest_prefix_for(count) == prefix


@pytest.mark.parametrize("count", [0, -1, 2**32 + 1])
def test_smallest_prefix_for_rejects(count: int) -> None:
    with pytest.raises(InvalidInput):
        nm.smallest_prefix_for(count)


def test_address_count() -> None:
    assert nm.address_count(N("10.0.208.0/27")) == 32
    assert nm.address_count(N("0.0.0.0/0")) == 2**32


# --- intervals ----------------------------------------------------------------------------------------


def test_to_interval() -> None:
    assert nm.to_interval(N("10.0.0.0/24")) == (167772160, 167772416)
    assert nm.to_interval(N("255.255.255.255/32")) == (2**32 - 1, 2**32)
    assert nm.to_interval((5, 9)) == (5, 9)


def test_merge_intervals_coalesces_adjacent_overlapping_and_nested() -> None:
    merged = nm.merge_intervals(
        [N("10.0.0.128/25"), N("10.0.0.0/25"), N("10.0.1.0/24"), N("10.0.1.16/28"), N("10.0.3.0/24")]
    )
    assert merged == [nm.to_interval(N("10.0.0.0/23")), nm.to_interval(N("10.0.3.0/24"))]


def test_merge_intervals_mixes_tuples_and_drops_empty() -> None:
    assert nm.merge_intervals([(10, 20), (5, 5), (20, 25), (1, 3), (2, 4)]) == [(1, 4), (10, 25)]
    assert nm.merge_intervals([]) == []


def test_overlaps() -> None:
    assert nm.overlaps(N("10.0.0.0/16"), N("10.0.5.0/24"))
    assert nm.overlaps(N("10.0.5.0/24"), N("10.0.0.0/16"))
    assert not nm.overlaps(N("10.0.0.0/25"), N("10.0.0.128/25"))
    assert nm.overlaps((0, 10), N("0.0.0.9/32"))
    assert not nm.overlaps((0, 10), N("0.0.0.10/32"))


def test_overlapping_lists_collisions_in_order() -> None:
    occupied = nets("10.0.0.0/16", "172.16.0.0/20", "10.0.4.0/24", "10.1.0.0/16")
    assert nm.overlapping(N("10.0.4.0/22"), occupied) == nets("10.0.0.0/16", "10.0.4.0/24")
    assert nm.overlapping(N("100.64.0.0/10"), occupied) == []


# --- free-block search --------------------------------------------------------------------------------


def test_free_blocks_skips_unaligned_gaps() -> None:
    got = list(nm.free_blocks(25, [N("10.0.0.0/24")], [N("10.0.0.5/32")]))
    assert got == [N("10.0.0.128/25")]


def test_free_blocks_single_address_gaps() -> None:
    occupied = nets("10.0.0.0/32", "10.0.0.2/32", "10.0.0.6/32")
    expected = nets("10.0.0.1/32", "10.0.0.3/32", "10.0.0.4/32", "10.0.0.5/32", "10.0.0.7/32")
    assert list(nm.free_blocks(32, [N("10.0.0.0/29")], occupied)) == expected
    assert nm.count_free_blocks(32, [N("10.0.0.0/29")], occupied) == 5


def test_free_blocks_follows_order_of_within() -> None:
    got = list(nm.free_blocks(25, nets("192.168.0.0/24", "10.0.0.0/24"), [N("192.168.0.0/25")]))
    assert got == nets("192.168.0.128/25", "10.0.0.0/25", "10.0.0.128/25")


def test_free_blocks_limit() -> None:
    space = [N("100.64.0.0/20")]
    assert list(nm.free_blocks(24, space, [], limit=2)) == nets("100.64.0.0/24", "100.64.1.0/24")
    assert list(nm.free_blocks(24, space, [], limit=0)) == []
    assert len(list(nm.free_blocks(24, space, []))) == 16


def test_free_blocks_nested_spaces_offer_each_block_once() -> None:
    got = list(nm.free_blocks(26, nets("10.0.0.0/25", "10.0.0.0/24", "10.0.0.0/25"), []))
    assert got == nets("10.0.0.0/26", "10.0.0.64/26", "10.0.0.128/26", "10.0.0.192/26")
    # An earlier space too small for the block does not hide the larger block around it.
    assert list(nm.free_blocks(25, nets("10.0.0.0/26", "10.0.0.0/24"), [])) == nets("10.0.0.0/25", "10.0.0.128/25")
    assert nm.count_free_blocks(26, nets("10.0.0.0/25", "10.0.0.0/24"), []) == 4


def test_free_blocks_space_smaller_than_block_yields_nothing() -> None:
    assert list(nm.free_blocks(24, [N("10.0.0.0/25")], [])) == []
    assert nm.count_free_blocks(24, [N("10.0.0.0/25")], []) == 0


def test_free_blocks_whole_address_space_and_accepts_generators() -> None:
    assert list(nm.free_blocks(0, [N("0.0.0.0/0")], iter([]))) == [N("0.0.0.0/0")]
    occupied = (n for n in nets("0.0.0.0/8", "255.255.255.255/32"))
    assert nm.first_free_block(8, [N("0.0.0.0/0")], occupied) == N("1.0.0.0/8")


def test_free_blocks_interval_occupied() -> None:
    start, _ = nm.to_interval(N("10.0.0.0/24"))
    got = list(nm.free_blocks(26, [N("10.0.0.0/24")], [(start + 10, start + 70)]))
    assert got == nets("10.0.0.128/26", "10.0.0.192/26")


def test_free_blocks_checks_prefix_eagerly() -> None:
    with pytest.raises(InvalidInput, match="/33 is not a valid IPv4 prefix length"):
        nm.free_blocks(33, [N("10.0.0.0/8")], [])
    with pytest.raises(InvalidInput):
        nm.count_free_blocks(-1, [N("10.0.0.0/8")], [])


def test_first_free_block_none_when_full() -> None:
    assert nm.first_free_block(24, [N("10.0.0.0/23")], nets("10.0.0.0/24", "10.0.1.128/25")) is None


def test_count_free_blocks_aws_subnet_for_prefix_delegation() -> None:
    subnet = N("10.0.0.0/24")
    reserved = nm.aws_reserved_addresses(subnet)
    # The first /28 holds .0-.3 and the last one holds .255: 14 of 16 remain.
    assert nm.count_free_blocks(28, [subnet], reserved) == 14
    used = [*reserved, N("10.0.0.17/32"), N("10.0.0.100/32")]
    assert nm.count_free_blocks(28, [subnet], used) == 12
    assert nm.count_free_blocks(32, [subnet], used) == 256 - 7


def test_split_equal() -> None:
    space = N("100.64.0.0/20")
    assert nm.split_equal(space, 4) == nets("100.64.0.0/22", "100.64.4.0/22", "100.64.8.0/22", "100.64.12.0/22")
    assert nm.split_equal(space, 3) == nets("100.64.0.0/22", "100.64.4.0/22", "100.64.8.0/22")
    assert nm.split_equal(space, 1) == [space]
    assert nm.split_equal(N("10.0.0.7/32"), 1) == [N("10.0.0.7/32")]
    assert nm.split_equal(N("10.0.0.0/30"), 4) == nets("10.0.0.0/32", "10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32")


def test_split_equal_rejects() -> None:
    with pytest.raises(InvalidInput) as err:
        nm.split_equal(N("10.0.0.0/30"), 5)
    assert err.value.message == "10.0.0.0/30 is too small to split into 5 parts"
    assert err.value.hint == "use a block of /29 or larger"
    with pytest.raises(InvalidInput):
        nm.split_equal(N("10.0.0.0/24"), 0)


# --- forbidden ranges ---------------------------------------------------------------------------------


def test_constants() -> None:
    assert nets("0.0.0.0/8", "127.0.0.0/8", "169.254.0.0/16", "224.0.0.0/4", "255.255.255.255/32") == list(
        nm.NEVER_ALLOWED
    )
    assert list(nm.RFC1918) == nets("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
    assert (N("100.64.0.0/10"), N("198.18.0.0/15"), N("240.0.0.0/4")) == (nm.CGNAT, nm.BENCHMARK, nm.CLASS_E)
    assert list(nm.TEST_NETS) == nets("192.0.0.0/24", "192.0.2.0/24", "198.51.100.0/24", "203.0.113.0/24")


@pytest.mark.parametrize(
    ("cidr", "named"),
    [
        ("0.0.0.0/8", "0.0.0.0/8 ('this network')"),
        ("127.0.0.0/16", "127.0.0.0/8 (loopback)"),
        ("169.254.169.0/24", "169.254.0.0/16 (link-local)"),
        ("239.1.0.0/16", "224.0.0.0/4 (multicast)"),
        ("255.255.255.0/24", "255.255.255.255/32 (limited broadcast)"),
        ("0.0.0.0/0", "0.0.0.0/8 ('this network')"),
        ("168.0.0.0/6", "169.254.0.0/16 (link-local)"),
    ],
)
def test_check_not_forbidden_names_the_range(cidr: str, named: str) -> None:
    with pytest.raises(InvalidInput) as err:
        nm.check_not_forbidden(N(cidr))
    assert err.value.message == f"{cidr} overlaps {named}, which can never hold cluster addresses"


@pytest.mark.parametrize("cidr", ["10.0.0.0/8", "100.64.0.0/10", "198.18.0.0/15", "240.0.0.0/5", "8.8.8.0/24"])
def test_check_not_forbidden_passes(cidr: str) -> None:
    nm.check_not_forbidden(N(cidr))


# --- GCP / GKE ----------------------------------------------------------------------------------------


def test_gcp_allowed_spaces_order() -> None:
    assert nm.gcp_allowed_spaces() == nets(
        "10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10", "198.18.0.0/15"
    )
    assert nm.gcp_allowed_spaces(include_class_e=True)[-1] == N("240.0.0.0/4")


@pytest.mark.parametrize(
    "cidr", ["10.4.0.0/14", "172.16.0.0/20", "192.168.0.0/22", "100.64.0.0/10", "198.19.0.0/16", "192.0.2.0/24"]
)
def test_gcp_check_allowed_passes(cidr: str) -> None:
    nm.gcp_check_allowed(N(cidr))


def test_gcp_check_allowed_rejects() -> None:
    with pytest.raises(InvalidInput, match="class E"):
        nm.gcp_check_allowed(N("240.10.0.0/16"))
    nm.gcp_check_allowed(N("240.10.0.0/16"), include_class_e=True)
    with pytest.raises(InvalidInput, match=r"^8\.8\.8\.0/24 is not in a private range GCP accepts"):
        nm.gcp_check_allowed(N("8.8.8.0/24"))
    with pytest.raises(InvalidInput, match="link-local"):
        nm.gcp_check_allowed(N("169.254.0.0/16"), include_class_e=True)
    with pytest.raises(InvalidInput, match="not in a private range"):
        nm.gcp_check_allowed(N("10.0.0.0/7"))


@pytest.mark.parametrize(
    ("max_pods", "prefix"),
    [
        (8, 28),
        (9, 27),
        (16, 27),
        (17, 26),
        (32, 26),
        (33, 25),
        (64, 25),
        (65, 24),
        (110, 24),
        (111, 24),
        (128, 24),
        (129, 23),
        (256, 23),
    ],
)
def test_gke_pod_block_prefix(max_pods: int, prefix: int) -> None:
    assert nm.gke_pod_block_prefix(max_pods) == prefix


@pytest.mark.parametrize("max_pods", [0, 7, 257, 1000])
def test_gke_pod_block_prefix_rejects(max_pods: int) -> None:
    with pytest.raises(InvalidInput, match=f"max pods per node must be between 8 and 256, got {max_pods}"):
        nm.gke_pod_block_prefix(max_pods)


def test_gke_max_nodes() -> None:
    assert nm.gke_max_nodes(14, 24) == 1024
    assert nm.gke_max_nodes(24, 24) == 1
    assert nm.gke_max_nodes(24, 23) == 0
    with pytest.raises(InvalidInput):
        nm.gke_max_nodes(14, 33)


def test_gke_incident() -> None:
    """The talk's GKE cluster: pod range 10.0.0.0/26 at 16 pods per node stops at two nodes."""
    node_prefix = nm.gke_pod_block_prefix(16)
    assert node_prefix == 27
    assert nm.gke_max_nodes(26, node_prefix) == 2  # the autoscaler's 2->3 failed: IP space exhausted
    # The fix: a /22 secondary range for a node pool at 32 pods per node.
    assert nm.gke_max_nodes(22, nm.gke_pod_block_prefix(32)) == 16
    occupied = nets("10.1.0.0/16", "10.0.0.0/26", "172.16.0.0/20")
    found = nm.first_free_block(22, nm.gcp_allowed_spaces(), occupied)
    assert found == N("10.0.4.0/22")
    nm.gcp_check_allowed(found)
    # The range chosen by hand in the talk was free too.
    assert nm.overlapping(N("192.168.0.0/22"), occupied) == []


# --- AWS: secondary CIDRs -----------------------------------------------------------------------------

RESTRICTED = [
    # primary in 10/8
    ("10.0.0.0/16", "172.16.0.0/16", "172.16.0.0/12"),
    ("10.0.0.0/16", "192.168.0.0/16", "192.168.0.0/16"),
    ("10.0.0.0/16", "198.19.0.0/16", "198.19.0.0/16"),
    ("10.200.0.0/16", "172.31.0.0/16", "172.16.0.0/12"),
    ("10.1.0.0/16", "10.0.5.0/24", "10.0.0.0/16"),  # primary in 10.0.0.0/15 rules out 10.0.0.0/16
    # primary in 172.16/12
    ("172.16.0.0/16", "10.0.0.0/16", "10.0.0.0/8"),
    ("172.16.0.0/16", "192.168.0.0/16", "192.168.0.0/16"),
    ("172.16.0.0/16", "172.31.0.0/16", "172.31.0.0/16"),
    ("172.20.0.0/16", "172.31.128.0/20", "172.31.0.0/16"),
    ("172.16.0.0/16", "198.19.0.0/16", "198.19.0.0/16"),
    # primary in 192.168/16
    ("192.168.0.0/16", "10.0.0.0/16", "10.0.0.0/8"),
    ("192.168.0.0/20", "172.16.0.0/16", "172.16.0.0/12"),
    ("192.168.0.0/16", "198.19.0.0/16", "198.19.0.0/16"),
    # primary in 198.19/16
    ("198.19.0.0/16", "10.0.0.0/16", "10.0.0.0/8"),
    ("198.19.0.0/16", "172.16.0.0/16", "172.16.0.0/12"),
    ("198.19.0.0/16", "192.168.0.0/16", "192.168.0.0/16"),
    # primary in 100.64/10 or public
    ("100.64.0.0/16", "10.0.0.0/16", "10.0.0.0/8"),
    ("100.64.0.0/16", "198.19.0.0/16", "198.19.0.0/16"),
    ("52.94.0.0/16", "192.168.4.0/24", "192.168.0.0/16"),
    ("52.94.0.0/16", "172.16.0.0/16", "172.16.0.0/12"),
]


@pytest.mark.parametrize(("primary", "candidate", "range_named"), RESTRICTED)
def test_aws_secondary_restriction_table(primary: str, candidate: str, range_named: str) -> None:
    reason = nm.aws_secondary_restriction(N(primary), N(candidate))
    assert reason == (
        f"AWS does not allow {candidate} (in {range_named}) as a secondary CIDR of a VPC whose "
        f"primary CIDR is {primary}"
    )


ALLOWED = [
    ("10.0.0.0/16", "100.64.0.0/16"),
    ("10.0.0.0/16", "10.1.0.0/16"),
    ("10.2.0.0/16", "10.0.5.0/24"),
    ("10.0.0.0/16", "198.18.0.0/16"),
    ("10.0.0.0/16", "52.94.0.0/16"),
    ("172.16.0.0/16", "172.20.0.0/16"),
    ("172.16.0.0/16", "100.127.0.0/16"),
    ("192.168.0.0/20", "192.168.16.0/20"),
    ("192.168.0.0/16", "100.64.0.0/16"),
    ("198.19.0.0/16", "100.64.0.0/16"),
    ("198.19.0.0/16", "198.18.0.0/16"),
    ("100.64.0.0/16", "100.65.0.0/16"),
    ("52.94.0.0/16", "100.64.0.0/16"),
    ("52.94.0.0/16", "54.0.0.0/16"),
]


@pytest.mark.parametrize(("primary", "candidate"), ALLOWED)
def test_aws_secondary_restriction_allows(primary: str, candidate: str) -> None:
    assert nm.aws_secondary_restriction(N(primary), N(candidate)) is None


@pytest.mark.parametrize(
    "primary", ["10.0.0.0/16", "10.0.0.0/28", "172.31.0.0/16", "192.168.0.0/16", "198.19.0.0/16", "3.5.0.0/16"]
)
def test_aws_100_64_always_allowed(primary: str) -> None:
    assert nm.aws_secondary_restriction(N(primary), N("100.64.0.0/10")) is None


def test_aws_secondary_candidate_spaces() -> None:
    assert nm.aws_secondary_candidate_spaces(N("10.0.0.0/16")) == nets(
        "100.64.0.0/10",
        "10.1.0.0/16",
        "10.2.0.0/15",
        "10.4.0.0/14",
        "10.8.0.0/13",
        "10.16.0.0/12",
        "10.32.0.0/11",
        "10.64.0.0/10",
        "10.128.0.0/9",
        "198.18.0.0/16",
    )
    assert nm.aws_secondary_candidate_spaces(N("10.5.0.0/16")) == nets("100.64.0.0/10", "10.0.0.0/8", "198.18.0.0/16")
    assert nm.aws_secondary_candidate_spaces(N("172.31.0.0/16")) == nets(
        "100.64.0.0/10",
        "172.16.0.0/16",
        "172.18.0.0/15",
        "172.20.0.0/14",
        "172.24.0.0/14",
        "172.28.0.0/15",
        "172.30.0.0/16",
        "198.18.0.0/16",
    )
    assert nm.aws_secondary_candidate_spaces(N("192.168.0.0/16")) == nets(
        "100.64.0.0/10", "192.168.0.0/16", "198.18.0.0/16"
    )
    for primary in ("100.64.0.0/16", "198.19.0.0/16", "52.94.0.0/16"):
        assert nm.aws_secondary_candidate_spaces(N(primary)) == nets("100.64.0.0/10", "198.18.0.0/16")


@pytest.mark.parametrize(
    "primary", ["10.0.0.0/16", "10.1.0.0/24", "172.16.0.0/16", "172.31.0.0/16", "192.168.0.0/16", "8.8.0.0/16"]
)
def test_aws_candidate_spaces_are_all_allowed(primary: str) -> None:
    for space in nm.aws_secondary_candidate_spaces(N(primary)):
        assert nm.aws_secondary_restriction(N(primary), space) is None
        nm.check_not_forbidden(space)


def test_aws_check_secondary() -> None:
    primary = N("10.0.0.0/16")
    nm.aws_check_secondary(primary, [N("10.1.0.0/16")], N("100.64.0.0/20"), [N("192.168.0.0/16")])
    with pytest.raises(InvalidInput, match=r"^100\.64\.0\.0/20 overlaps 100\.64\.0\.0/16 \(existing VPC CIDR\)"):
        nm.aws_check_secondary(primary, [N("100.64.0.0/16")], N("100.64.0.0/20"), [])
    with pytest.raises(InvalidInput, match=r"overlaps 10\.0\.0\.0/16 \(existing VPC CIDR\)"):
        nm.aws_check_secondary(primary, [], N("10.0.4.0/24"), [])
    with pytest.raises(InvalidInput, match=r"overlaps 100\.64\.0\.0/12 \(routed range\)"):
        nm.aws_check_secondary(primary, [], N("100.64.0.0/20"), [N("100.64.0.0/12")])
    with pytest.raises(InvalidInput, match="AWS accepts sizes from /16 to /28"):
        nm.aws_check_secondary(primary, [], N("100.64.0.0/15"), [])
    with pytest.raises(InvalidInput, match="AWS accepts sizes from /16 to /28"):
        nm.aws_check_secondary(primary, [], N("100.64.0.0/29"), [])
    with pytest.raises(InvalidInput, match=r"AWS does not allow 172\.20\.0\.0/16") as err:
        nm.aws_check_secondary(primary, [], N("172.20.0.0/16"), [])
    assert err.value.hint == "100.64.0.0/10 is always allowed"
    with pytest.raises(InvalidInput, match="loopback"):
        nm.aws_check_secondary(primary, [], N("127.0.0.0/16"), [])


# --- AWS: subnets and max pods ------------------------------------------------------------------------


def test_aws_reserved_addresses() -> None:
    assert nm.aws_reserved_addresses(N("10.0.0.0/24")) == nets(
        "10.0.0.0/32", "10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32", "10.0.0.255/32"
    )
    assert len(nm.aws_reserved_addresses(N("10.0.0.16/28"))) == nm.AWS_RESERVED_PER_SUBNET


@pytest.mark.parametrize(
    ("enis", "ips", "kwargs", "expected"),
    [
        (3, 10, {}, 29),  # m5.large
        (3, 10, {"custom_networking": True}, 20),
        (3, 10, {"prefix_delegation": True}, 434),
        (3, 10, {"prefix_delegation": True, "custom_networking": True}, 290),
        (3, 6, {}, 17),  # t3.medium
        (3, 6, {"custom_networking": True}, 12),
        (1, 1, {}, 2),
    ],
)
def test_eni_max_pods(enis: int, ips: int, kwargs: dict[str, bool], expected: int) -> None:
    assert nm.eni_max_pods(enis, ips, **kwargs) == expected


def test_eni_max_pods_rejects() -> None:
    with pytest.raises(InvalidInput):
        nm.eni_max_pods(0, 10)
    with pytest.raises(InvalidInput):
        nm.eni_max_pods(3, 0)


@pytest.mark.parametrize(
    ("vcpus", "raw", "expected"),
    [(2, 434, 110), (2, 29, 29), (29, 300, 110), (30, 300, 110), (31, 300, 250), (96, 737, 250)],
)
def test_aws_recommended_max_pods(vcpus: int, raw: int, expected: int) -> None:
    assert nm.aws_recommended_max_pods(vcpus, raw) == expected


def test_eks_incident() -> None:
    """The talk's EKS cluster: VPC 10.0.0.0/16 with four /27 subnets, fixed with 100.64.0.0/20."""
    primary = N("10.0.0.0/16")
    subnets = nets("10.0.208.0/27", "10.0.186.0/27", "10.0.192.0/27", "10.0.224.0/27")
    for subnet in subnets:
        assert subnet.subnet_of(primary)
        assert nm.address_count(subnet) - nm.AWS_RESERVED_PER_SUBNET == 27
        # Prefix delegation cannot help: the reserved addresses spoil both /28s of a /27.
        assert nm.count_free_blocks(28, [subnet], nm.aws_reserved_addresses(subnet)) == 0
    assert nm.parse_ip("10.0.208.27") in subnets[0]  # the node that ran out

    spaces = nm.aws_secondary_candidate_spaces(primary)
    secondary = nm.first_free_block(20, spaces, [primary])
    assert secondary == N("100.64.0.0/20")
    nm.aws_check_secondary(primary, [], secondary, [])

    # One pod subnet per AZ (two AZs). The talk picked 100.64.1.0/24 and 100.64.2.0/24 by hand;
    # cidrx takes the first free aligned blocks instead.
    assert list(nm.free_blocks(24, [secondary], [], limit=2)) == nets("100.64.0.0/24", "100.64.1.0/24")
    taken = nets("100.64.1.0/24", "100.64.2.0/24")
    assert list(nm.free_blocks(24, [secondary], taken, limit=2)) == nets("100.64.0.0/24", "100.64.3.0/24")
    assert nm.count_free_blocks(24, [secondary], taken) == 14
    # Splitting the whole /20 evenly between two AZs gives /21s instead.
    assert nm.split_equal(secondary, 2) == nets("100.64.0.0/21", "100.64.8.0/21")
    pod_subnet = N("100.64.1.0/24")
    assert nm.address_count(pod_subnet) - nm.AWS_RESERVED_PER_SUBNET == 251
    # Each node in the new group (m5.large, custom networking) then runs at most 20 pods.
    assert nm.eni_max_pods(3, 10, custom_networking=True) == 20
