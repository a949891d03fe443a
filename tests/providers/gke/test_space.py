"""The GKE network-space rows computed on integer intervals (cidrx.providers.gke.facts.space) are exactly the rows
the address maps give (`unallocated_capacity` of cidrx.providers.gke.netmap's maps), over the bundled
examples and random route tables; and the CIDR parser agrees with `ipaddress`."""

from __future__ import annotations

from ipaddress import IPv4Network
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cidrx.model.netmap import unallocated_capacity
from cidrx.model.snapshot import Snapshot, load_snapshot
from cidrx.providers.gke.facts.space import network_space_capacity, parse4
from cidrx.providers.gke.model import ReservedRange, Route, RoutesCluster
from cidrx.providers.gke.netmap import address_maps
from tests.support.cases import gke as cases

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def rows_from_maps(snap: Snapshot) -> list[object]:
    return [unallocated_capacity(m) for m in address_maps(snap)]


@pytest.mark.parametrize("name", sorted(p.name for p in EXAMPLES.glob("gke-*.snapshot.json")))
def test_bundled_examples_agree(name: str) -> None:
    snap = load_snapshot(EXAMPLES / name)
    assert network_space_capacity(snap) == rows_from_maps(snap)


ANY_V4 = st.builds(
    lambda a, p: f"{a >> 24}.{(a >> 16) & 255}.{(a >> 8) & 255}.{a & 255}/{p}",
    st.integers(min_value=0, max_value=2**32 - 1),
    st.integers(min_value=0, max_value=32),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(ANY_V4, max_size=30),
    st.lists(ANY_V4, max_size=3),
    st.lists(st.sampled_from(["10.200.0.0", "fd00::/64", "not-a-cidr", "", "192.168.7.9"]), max_size=3),
)
def test_random_estates_agree(routes: list[str], clusters: list[str], odd: list[str]) -> None:
    snap = cases.with_gke(
        cases.incident(),
        routes=tuple(Route(c, f"r{i}", "ip") for i, c in enumerate(routes)) or None,
        routes_clusters=tuple(RoutesCluster("h", "z", f"c{i}", c) for i, c in enumerate(clusters)) or None,
        reserved_ranges=tuple(ReservedRange(f"a{i}", c, "VPC_PEERING") for i, c in enumerate(odd)),
    )
    assert network_space_capacity(snap) == rows_from_maps(snap)


@given(st.one_of(ANY_V4, st.text(max_size=20)))
def test_parse4_is_ipaddress(text: str) -> None:
    try:
        net = IPv4Network(text.strip(), strict=False)
    except ValueError:
        net = None
    got = parse4(text)
    if net is None:
        assert got is None
    else:
        assert got == (int(net.network_address), net.prefixlen)


def test_a_space_holding_only_routes_to_outside_networks_is_context_not_capacity() -> None:
    """The shared-VPC example's VPN route to 192.168.0.0/16 fills that space, but nothing of the cluster is
    in it: the diagnosis does not rank it as a full range (it stays on the address map)."""
    from cidrx.app.diagnose import analyze
    from cidrx.providers.gke.facts.space import route_only_spaces

    snap = load_snapshot(EXAMPLES / "gke-shared-vpc.snapshot.json")
    assert route_only_spaces(snap) == {"192.168.0.0/16"}
    assert any(r.cidr == "192.168.0.0/16" for r in network_space_capacity(snap))  # still mapped
    d = analyze(snap)
    assert [c.cidr for c in d.capacity if c.kind == "network-space"] == ["10.0.0.0/8"]
