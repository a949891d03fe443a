"""Everything the VPC routes is occupied: transit gateway route tables, managed prefix lists, VGW-propagated
routes (cidrx/providers/eks/facts/routing.py, collect/routes.py).

moto 5.2 models transit gateways, their route tables, static TGW routes, SearchTransitGatewayRoutes and
managed prefix lists; it does not model propagated TGW routes, TGW routes to prefix lists, paging of
SearchTransitGatewayRoutes, route tables another account owns, or VGW route propagation. Those are answered
by tests/support/fakes/ec2_routes.py through botocore events (the real EC2 client builds and parses every
request). moto does not enforce CIDR restrictions either: the checks are cidrx's own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from ipaddress import IPv4Network
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan
from cidrx.model.snapshot import Snapshot
from cidrx.providers.eks.collect.routes import tgw_route_from
from cidrx.providers.eks.collect.vpc import route_extras_from, route_table_from
from cidrx.providers.eks.facts.routing import routed_elsewhere
from cidrx.providers.eks.model import PrefixList, TgwRoute, TgwRouteTable
from cidrx.providers.eks.provider import PROVIDER
from cidrx.providers.eks.strategies.space import occupied_space
from tests.support.cases import eks as cases
from tests.support.cli import run
from tests.support.estates.eks_variants import TGW_ROUTED, build_tgw_egress, tgw_route_table
from tests.support.fakes.ec2_routes import FakeTgwRoutes, VgwPropagation


def make_plan(snapshot: Snapshot, opts: PlanOptions | None = None, created_at: str = "") -> Plan:
    """The plan of `opts.strategy` (custom networking when none is given), as its strategy makes it."""
    opts = opts or PlanOptions()
    return PROVIDER.make_plan(snapshot, replace(opts, strategy=opts.strategy or "custom-networking"), created_at)


pytestmark = pytest.mark.usefixtures("shared_botocore")


def _overlaps(a: str, b: str) -> bool:
    return IPv4Network(a).overlaps(IPv4Network(b))


# --- cases: the API shapes and what is occupied ----------------------------------------------------------


def test_tgw_route_shapes_from_the_api_reference() -> None:
    own = ["tgw-attach-0aaa"]
    propagated = {
        "DestinationCidrBlock": "10.20.0.0/16",
        "TransitGatewayAttachments": [{"TransitGatewayAttachmentId": "tgw-attach-0bbb", "ResourceType": "vpc"}],
        "Type": "propagated",
        "State": "active",
    }
    back_home = {**propagated, "TransitGatewayAttachments": [{"TransitGatewayAttachmentId": "tgw-attach-0aaa"}]}
    to_list = {"PrefixListId": "pl-0ccc", "Type": "static", "State": "blackhole"}
    assert tgw_route_from(propagated, own) == TgwRoute("10.20.0.0/16", "propagated", "active")
    assert tgw_route_from(back_home, own).to_this_vpc
    assert tgw_route_from(to_list, own) == TgwRoute(None, "static", "blackhole", prefix_list_id="pl-0ccc")


def test_route_tables_name_their_prefix_lists_and_vgw_propagated_routes() -> None:
    table = {
        "RouteTableId": "rtb-1",
        "Routes": [
            {"DestinationCidrBlock": "10.0.0.0/16", "GatewayId": "local", "Origin": "CreateRouteTable"},
            {"DestinationPrefixListId": "pl-1", "TransitGatewayId": "tgw-1", "Origin": "CreateRoute"},
            {"DestinationCidrBlock": "192.168.10.0/24", "GatewayId": "vgw-1", "Origin": "EnableVgwRoutePropagation"},
        ],
    }
    assert route_extras_from([table, {"RouteTableId": "rtb-2"}]) == (
        {"rtb-1": ("pl-1",)},
        {"rtb-1": ("192.168.10.0/24",)},
    )
    assert "192.168.10.0/24" in route_table_from(table).destinations


def _routed_snapshot(
    tgw: tuple[TgwRouteTable, ...], lists: tuple[PrefixList, ...], via_rt: tuple[str, ...] = ()
) -> Any:
    via = {cases.PRIVATE_RT: via_rt} if via_rt else None
    return cases.with_eks(cases.example(), tgw_route_tables=tgw, prefix_lists=lists, route_prefix_lists=via)


def test_own_routes_and_the_default_route_are_not_occupied() -> None:
    routes = (
        TgwRoute("0.0.0.0/0", "static", "active"),
        TgwRoute("10.0.0.0/16", "propagated", "active", to_this_vpc=True),
        TgwRoute("100.64.0.0/16", "propagated", "active"),
    )
    snap = _routed_snapshot((TgwRouteTable("tgw-attach-1", "tgw-1", "tgw-rtb-1", routes),), ())
    assert [str(n) for n, _ in routed_elsewhere(cases.eks_of(snap))] == ["100.64.0.0/16"]


def test_plan_avoids_tgw_and_prefix_list_ranges() -> None:
    tgw = (
        TgwRouteTable(
            "tgw-attach-1",
            "tgw-1",
            "tgw-rtb-1",
            (
                TgwRoute("100.64.0.0/16", "static", "active"),
                TgwRoute(None, "propagated", "active", prefix_list_id="pl-2"),
            ),
        ),
    )
    lists = (PrefixList("pl-1", ("100.65.0.0/16",)), PrefixList("pl-2", ("100.66.0.0/16",)))
    plan = make_plan(_routed_snapshot(tgw, lists, ("pl-1",)), PlanOptions())
    assert not any(_overlaps(plan.basis["cidr"], c) for c in ("100.64.0.0/16", "100.65.0.0/16", "100.66.0.0/16"))
    assert plan.basis["cidr"] == "100.67.0.0/20"


def test_unreadable_route_tables_are_a_warning() -> None:
    tgw = (TgwRouteTable("tgw-attach-1", "tgw-1", "tgw-rtb-9", unreadable="permission denied"),)
    from cidrx.providers.eks.analyze.diagnosis import analyze

    (f,) = [f for f in analyze(_routed_snapshot(tgw, ())).findings if f.id == "EKS-ROUTES-UNREADABLE"]
    assert f.severity.value == "warning" and "tgw-rtb-9" in f.evidence[0]
    plan = make_plan(_routed_snapshot(tgw, ()), PlanOptions())
    assert any(n.startswith("Routes cidrx could not read may already use") and "tgw-rtb-9" in n for n in plan.notes)


CIDRS = st.builds(
    lambda a, b, p: str(IPv4Network(f"100.{64 + a}.{b}.0/{p}", strict=False)),
    st.integers(0, 7),
    st.integers(0, 255),
    st.integers(12, 24),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tgw=st.lists(CIDRS, max_size=6), listed=st.lists(CIDRS, max_size=6), blackhole=st.booleans())
def test_plan_never_picks_a_routed_cidr(tgw: list[str], listed: list[str], blackhole: bool) -> None:
    state = "blackhole" if blackhole else "active"
    routes = (*(TgwRoute(c, "static", state) for c in tgw), TgwRoute(None, "static", "active", prefix_list_id="pl-t"))
    half = len(listed) // 2
    lists = (PrefixList("pl-t", tuple(listed[:half])), PrefixList("pl-r", tuple(listed[half:])))
    snap = _routed_snapshot((TgwRouteTable("tgw-attach-1", "tgw-1", "tgw-rtb-1", routes),), lists, ("pl-r",))
    plan = make_plan(snap, PlanOptions())
    assert not any(_overlaps(plan.basis["cidr"], c) for c in (*tgw, *listed))
    assert all(not n.overlaps(IPv4Network(plan.basis["cidr"])) for n, _ in occupied_space(cases.eks_of(snap)))


# --- fakes: the TGW-egress world through the CLI ---------------------------------------------------------


def _json(result: Any) -> dict[str, Any]:
    assert result.exit_code in (0, 3), result.output
    doc: dict[str, Any] = json.loads(result.stdout)
    return doc


def test_tgw_egress_world_diagnose_shows_the_routed_space_and_plan_avoids_it(
    eks: Callable[..., Any], tmp_path: Path
) -> None:
    with eks(builder=build_tgw_egress) as estate:
        doc = _json(run("diagnose", *estate.target, "-o", "json"))
        routed = [c for c in doc["capacity"] if c["kind"] == "routed-space"]
        assert [c["cidr"] for c in routed] == ["100.64.0.0/10"]
        out = tmp_path / "plan.json"
        result = run("expand", *estate.target, "--plan", "--out", str(out))
        assert result.exit_code == 0, result.output
        cidr = json.loads(out.read_text())["basis"]["cidr"]
        assert not any(_overlaps(cidr, c) for c in TGW_ROUTED), cidr
        # A CIDR the user names is refused when the transit gateway routes it.
        refused = run("expand", *estate.target, "--plan", "--out", str(tmp_path / "p2.json"), "--cidr", "100.65.0.0/20")
        assert refused.exit_code == 2 and "100.65.0.0/16" in refused.output


def test_paged_propagated_and_prefix_list_tgw_routes(eks: Callable[..., Any], tmp_path: Path) -> None:
    fake = FakeTgwRoutes(page_size=2)
    with eks(handlers=[fake.spec()]) as estate:
        rt = tgw_route_table(estate.ec2, estate.world.tgw_id)
        pl = estate.ec2.create_managed_prefix_list(
            PrefixListName="dc", AddressFamily="IPv4", MaxEntries=2, Entries=[{"Cidr": "100.70.0.0/16"}]
        )["PrefixList"]["PrefixListId"]
        fake.tables[rt] = [
            {"DestinationCidrBlock": "10.0.0.0/16", "Type": "propagated", "Attachments": [_own_attachment(estate)]},
            {"DestinationCidrBlock": "100.64.0.0/15", "Type": "propagated", "Attachments": ["tgw-attach-0other"]},
            {"DestinationCidrBlock": "100.66.0.0/16", "Type": "static", "State": "blackhole"},
            {"PrefixListId": pl, "Type": "static", "Attachments": ["tgw-attach-0dc"]},
            {"DestinationCidrBlock": "100.68.0.0/15", "Type": "static"},
        ]
        snap_path = tmp_path / "snap.json"
        assert run("snapshot", *estate.target, "--out", str(snap_path)).exit_code == 0
        assert [r.get("NextToken") for r in fake.requests] == [None, "2", "4"]
        eks_doc = json.loads(snap_path.read_text())["eks"]
        (table,) = eks_doc["tgw_route_tables"]
        assert len(table["routes"]) == 5 and sum(r.get("to_this_vpc", False) for r in table["routes"]) == 1
        assert eks_doc["prefix_lists"] == [{"prefix_list_id": pl, "cidrs": ["100.70.0.0/16"], "unreadable": ""}]
        result = run("expand", "--snapshot", str(snap_path), "--plan", "--out", str(tmp_path / "plan.json"))
        assert result.exit_code == 0, result.output
        cidr = json.loads((tmp_path / "plan.json").read_text())["basis"]["cidr"]
        assert not any(_overlaps(cidr, c) for c in ("100.64.0.0/15", "100.66.0.0/16", "100.68.0.0/15", "100.70.0.0/16"))


def _own_attachment(estate: Any) -> str:
    found = estate.ec2.describe_transit_gateway_attachments(
        Filters=[{"Name": "resource-id", "Values": [estate.world.vpc_id]}]
    )["TransitGatewayAttachments"]
    return str(found[0]["TransitGatewayAttachmentId"])


def test_a_route_table_of_another_account_is_reported_not_skipped(eks: Callable[..., Any]) -> None:
    fake = FakeTgwRoutes()
    with eks(handlers=[fake.spec()]) as estate:
        fake.denied.add(tgw_route_table(estate.ec2, estate.world.tgw_id))
        doc = _json(run("diagnose", *estate.target, "-o", "json", "--fail-on", "never"))
        (f,) = [f for f in doc["findings"] if f["id"] == "EKS-ROUTES-UNREADABLE"]
        assert "permission denied for ec2:SearchTransitGatewayRoutes" in f["evidence"][0]


def test_vgw_propagated_routes_are_occupied(eks: Callable[..., Any], tmp_path: Path) -> None:
    vgw = VgwPropagation()
    with eks(handlers=[vgw.spec()]) as estate:
        vgw.tables[estate.world.private_route_table_id] = ("vgw-0onprem", ("100.64.0.0/12",))
        snap_path = tmp_path / "snap.json"
        assert run("snapshot", *estate.target, "--out", str(snap_path)).exit_code == 0
        vgw_routes = json.loads(snap_path.read_text())["eks"]["vgw_routes"]
        assert vgw_routes == {estate.world.private_route_table_id: ["100.64.0.0/12"]}
        out = tmp_path / "plan.json"
        assert run("expand", "--snapshot", str(snap_path), "--plan", "--out", str(out)).exit_code == 0
        assert not _overlaps(json.loads(out.read_text())["basis"]["cidr"], "100.64.0.0/12")
