"""Property: whatever the network routes, a GKE plan never picks (and `--cidr` never accepts) a range that
overlaps a route of the network or the clusterIpv4Cidr of a routes-based cluster on it.

Random route tables over the spaces GCP allows for pod ranges (RFC 1918, 100.64.0.0/10), from /8 routes to
/28 node routes, with routes-based clusters among them; checked against the plain overlap of every CIDR.
"""

from __future__ import annotations

from ipaddress import IPv4Network

from hypothesis import given, settings
from hypothesis import strategies as st

from cidrx.errors import InvalidInput
from cidrx.model.options import PlanOptions
from cidrx.providers.gke.model import Route, RoutesCluster
from cidrx.providers.gke.provider import PROVIDER
from tests.support.cases import gke as cases

SPACES = (IPv4Network("10.0.0.0/8"), IPv4Network("172.16.0.0/12"), IPv4Network("192.168.0.0/16"))
HOPS = ("instance", "ip", "vpntunnel", "interconnectattachment", "ilb", "gateway")


@st.composite
def cidrs(draw: st.DrawFn) -> IPv4Network:
    space = draw(st.sampled_from(SPACES))
    prefix = draw(st.integers(min_value=max(space.prefixlen, 9), max_value=28))
    index = draw(st.integers(min_value=0, max_value=(1 << (prefix - space.prefixlen)) - 1))
    return IPv4Network((int(space.network_address) + (index << (32 - prefix)), prefix))


@st.composite
def estates(draw: st.DrawFn) -> tuple[tuple[Route, ...], tuple[RoutesCluster, ...]]:
    routes = tuple(
        Route(str(net), f"r{i}", draw(st.sampled_from(HOPS)))
        for i, net in enumerate(draw(st.lists(cidrs(), max_size=40)))
    )
    clusters = tuple(
        RoutesCluster("host", "europe-west4-a", f"legacy-{i}", str(net))
        for i, net in enumerate(draw(st.lists(cidrs(), max_size=4)))
    )
    return routes, clusters


def routed(routes: tuple[Route, ...], clusters: tuple[RoutesCluster, ...]) -> list[IPv4Network]:
    return [IPv4Network(r.dest_range) for r in routes] + [IPv4Network(c.cluster_ipv4_cidr) for c in clusters]


@settings(max_examples=150, deadline=None)
@given(estates(), st.sampled_from([None, 1, 7, 60, 500]))
def test_a_plan_never_overlaps_a_route_or_a_routes_based_cluster(
    estate: tuple[tuple[Route, ...], tuple[RoutesCluster, ...]], add_nodes: int | None
) -> None:
    routes, clusters = estate
    snap = cases.with_gke(cases.incident(), routes=routes or None, routes_clusters=clusters or None)
    try:
        plan = PROVIDER.make_plan(snap, PlanOptions(strategy="node-pool", add_nodes=add_nodes), "")
    except InvalidInput:
        return  # no room left: refusing is allowed, overlapping is not
    chosen = IPv4Network(plan.basis["cidr"])
    assert not [n for n in routed(routes, clusters) if n.overlaps(chosen)]


@settings(max_examples=150, deadline=None)
@given(estates(), cidrs())
def test_a_given_cidr_that_overlaps_a_route_is_refused(
    estate: tuple[tuple[Route, ...], tuple[RoutesCluster, ...]], wanted: IPv4Network
) -> None:
    routes, clusters = estate
    snap = cases.with_gke(cases.incident(), routes=routes or None, routes_clusters=clusters or None)
    clash = [n for n in routed(routes, clusters) if n.overlaps(wanted)]
    try:
        plan = PROVIDER.make_plan(
            snap, PlanOptions(strategy="node-pool", cidr=str(wanted.supernet(new_prefix=min(wanted.prefixlen, 24)))), ""
        )
    except InvalidInput:
        return
    chosen = IPv4Network(plan.basis["cidr"])
    assert not [n for n in routed(routes, clusters) if n.overlaps(chosen)], clash
