"""GKE `subnet-expand`: the smallest aligned supernet of a full primary range that holds the nodes asked for and
overlaps nothing, the -vms firewall rule widened with it, the way out when nothing fits, drift, and GCE's own
rules for subnetworks.expandIpCidrRange as the loopback fake enforces them (driven by the real compute client).

Plans are pure (snapshots built in code, tests/support/cases/gke.py); the fake's rules are checked through
google-cloud-compute against tests/support/fakes/gcp_server.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
from ipaddress import IPv4Network
from pathlib import Path

import pytest

from cidrx.errors import InvalidInput, StalePlan
from cidrx.model.options import PlanOptions
from cidrx.model.plan import Plan, load_plan
from cidrx.model.snapshot import Snapshot, load_snapshot, save_snapshot
from cidrx.providers.gke.facts.node_subnet import aligned_supernet, reserved_addresses, usable_addresses
from cidrx.providers.gke.model import PeeringRoute, ReservedRange, Route, RoutesCluster, SecondaryRange, Subnetwork
from cidrx.providers.gke.strategies.subnet_expand import check_drift, make_plan
from tests.support.cases import gke as cases
from tests.support.cli import run
from tests.support.fakes.gcp_server import FakeGcp, compute_client

AT = "2026-11-28T00:00:00Z"


def plan(snap: Snapshot, **opts: object) -> Plan:
    return make_plan(snap, PlanOptions(strategy="subnet-expand", **opts), AT)  # type: ignore[arg-type]


def with_other_subnet(snap: Snapshot, name: str, cidr: str, *secondary: SecondaryRange) -> Snapshot:
    g = cases.gke_of(snap)
    other = Subnetwork(name, "us-central1", cases.NETWORK, cidr, secondary_ranges=secondary, fingerprint="fp-x")
    return cases.with_gke(snap, subnets=(*g.subnets, other))


# --- GCP's numbers ------------------------------------------------------------------------------------------


def test_gcp_keeps_four_addresses_of_a_primary_range() -> None:
    net = IPv4Network("10.0.0.0/28")
    assert [str(a) for a in reserved_addresses(net)] == ["10.0.0.0", "10.0.0.1", "10.0.0.14", "10.0.0.15"]
    assert [usable_addresses(IPv4Network(f"10.0.0.0/{p}")) for p in (29, 28, 24, 20)] == [4, 12, 252, 4092]


@pytest.mark.parametrize(
    ("current", "prefix", "expected"),
    [
        ("10.0.0.0/28", 27, "10.0.0.0/27"),
        ("10.0.1.0/24", 16, "10.0.0.0/16"),  # gcloud: the network address moves down
        ("10.0.0.16/28", 27, "10.0.0.0/27"),
        ("192.168.5.128/25", 22, "192.168.4.0/22"),
    ],
)
def test_aligned_supernet_is_gclouds(current: str, prefix: int, expected: str) -> None:
    assert str(aligned_supernet(IPv4Network(current), prefix)) == expected


# --- the plan -----------------------------------------------------------------------------------------------


def test_plan_expands_to_the_smallest_supernet_for_the_autoscaler_max() -> None:
    p = plan(cases.node_subnet_full())
    # 21 nodes may run (7 per zone x 3), 4 do: 17 more; a /27 holds 16 more, a /26 48.
    assert [s.id for s in p.steps] == ["expand-subnet-range", f"widen-firewall-{cases.FIREWALL_VMS}"]
    expand, widen = p.steps
    assert expand.params == {
        "project": cases.PROJECT,
        "region": cases.LOCATION,
        "subnet": cases.SUBNET,
        "from_cidr": cases.NODE_SUBNET_SMALL,
        "cidr": "10.0.0.0/26",
    }
    assert "cannot be undone" in expand.description
    assert widen.params["cidr"] == "10.0.0.0/26" and widen.params["seen"] == [cases.NODE_SUBNET_SMALL]
    assert widen.depends_on == ("expand-subnet-range",)
    assert p.summary["nodes_that_fit_after"] == 48 and p.summary["asked"] == 17
    assert p.basis["ip_cidr_range"] == cases.NODE_SUBNET_SMALL and p.basis["cidr"] == "10.0.0.0/26"
    notes = " ".join(p.notes)
    assert "cannot be undone" in notes and "`cidrx rollback` refuses this plan" in notes
    assert "nodes-to-db" in notes  # a user's rule naming the node range is left to its owner, and said
    assert "allow-internal" not in notes  # 10.0.0.0/8 covers the new range already


def test_add_nodes_picks_a_smaller_supernet() -> None:
    p = plan(cases.node_subnet_full(), add_nodes=16)
    assert p.steps[0].params["cidr"] == "10.0.0.0/27"


def test_every_occupied_kind_blocks_a_supernet() -> None:
    """What a larger supernet would overlap stops the search there: another subnet's primary or secondary range
    (any region), the subnet's own secondary ranges, peering routes, routes."""
    base = cases.node_subnet_full()
    blockers = {
        "other primary": with_other_subnet(base, "ops", "10.0.0.64/26"),
        "other secondary": with_other_subnet(base, "ops", "10.9.0.0/24", SecondaryRange("ops-pods", "10.0.0.96/27")),
        "own secondary": cases.with_subnet(
            base,
            dataclasses.replace(
                cases.gke_of(base).subnet,
                secondary_ranges=(*cases.gke_of(base).subnet.secondary_ranges, SecondaryRange("x", "10.0.0.64/26")),
            ),
        ),
        "peering route": cases.with_gke(base, peering_routes=(PeeringRoute("10.0.0.64/27", "corp-hub"),)),
        "private services access": cases.with_gke(
            base, reserved_ranges=(ReservedRange("psa", "10.0.0.80/28", "VPC_PEERING"),)
        ),
        "route": cases.with_gke(base, routes=(Route("10.0.0.100/32", "to-appliance", "ip"),)),
        "routes-based cluster": cases.with_gke(
            base, routes_clusters=(RoutesCluster(cases.PROJECT, "us-central1-a", "legacy", "10.0.0.64/26"),)
        ),
    }
    for what, snap in blockers.items():
        # 48 more need a /26 at least; each blocker sits in the /26 or /25 above: at most a /26.
        p = plan(snap, add_nodes=40)
        assert p.steps[0].params["cidr"] == "10.0.0.0/26", what
        with pytest.raises(InvalidInput, match=r"holds 48 more node") as err:
            plan(snap, add_nodes=100)
        assert "--add-nodes 48" in str(err.value), what


def test_no_supernet_fits_names_how_many_fit_and_the_way_out() -> None:
    snap = with_other_subnet(cases.node_subnet_full(), "ops", "10.0.0.16/28")
    with pytest.raises(InvalidInput) as err:
        plan(snap)
    text = f"{err.value} {err.value.hint}"
    assert "no aligned supernet of 10.0.0.0/28" in text and "10.0.0.16/28" in text
    assert "no larger range fits: the primary range holds 0 more node(s)" in text
    assert "networkConfig.subnetwork" in text and "additionalIpRangesConfigs" in text


def test_a_range_with_room_is_not_expanded() -> None:
    snap = cases.with_node_subnet(cases.incident(), "10.0.0.0/24", cases.subnet_addresses("10.0.0.0/24", 4))
    with pytest.raises(InvalidInput, match="nothing to expand"):
        plan(snap)
    assert plan(snap, add_nodes=300).steps[0].params["cidr"] == "10.0.0.0/23"


def test_a_snapshot_without_subnet_addresses_is_refused() -> None:
    with pytest.raises(InvalidInput, match="holds no addresses"):
        plan(cases.incident())


# --- drift --------------------------------------------------------------------------------------------------


def test_drift_and_progress() -> None:
    snap = cases.node_subnet_full()
    p = plan(snap)
    check_drift(p, snap)
    expanded = cases.with_subnet(snap, dataclasses.replace(cases.gke_of(snap).subnet, ip_cidr_range="10.0.0.0/26"))
    check_drift(p, expanded)  # the plan's own change is progress
    moved = cases.with_subnet(snap, dataclasses.replace(cases.gke_of(snap).subnet, ip_cidr_range="10.0.0.0/27"))
    with pytest.raises(StalePlan, match=r"primary range of subnet demo-ip-subnet is now 10\.0\.0\.0/27"):
        check_drift(p, moved)
    with pytest.raises(StalePlan, match=r"10.0.0.0/26 now overlaps 10.0.0.32/28 \(subnet us-central1/ops\)"):
        check_drift(p, with_other_subnet(snap, "ops", "10.0.0.32/28"))


# --- GCE's rules, as the fake enforces them ---------------------------------------------------------------


@pytest.fixture(scope="module")
def fake() -> object:
    with FakeGcp(op_polls=0) as server:
        server.add_network("p", {"name": "net"})
        server.add_subnet("p", "us-central1", {"name": "other", "network": "net", "ipCidrRange": "10.9.0.0/16"})
        yield server
    server.check()


# hashicorp/terraform-provider-google google/services/compute/resource_compute_subnetwork_test.go,
# TestIsShrinkageIpCidr: two expansions (in place) and two shrinkages (which the API refuses).
UPSTREAM_CASES = [
    ("10.0.0.0/24", "10.0.0.0/16", True),
    ("10.0.1.0/24", "10.0.0.0/16", True),
    ("10.0.0.0/16", "10.0.0.0/24", False),
    ("10.0.0.0/16", "10.1.0.0/16", False),
    # the fake's own: the same range, an unaligned one, and one overlapping another subnet
    ("10.0.0.0/24", "10.0.0.0/24", False),
    ("10.0.1.0/24", "10.0.1.0/23", False),
    ("10.8.0.0/16", "10.8.0.0/14", False),
]


@pytest.mark.parametrize(("old", "new", "accepted"), UPSTREAM_CASES)
def test_expand_ip_cidr_range_rules(fake: FakeGcp, old: str, new: str, accepted: bool) -> None:
    from google.api_core import exceptions as gx
    from google.cloud import compute_v1

    name = f"s{UPSTREAM_CASES.index((old, new, accepted))}"
    network = "net" if old.startswith("10.8.") else f"net-{name}"  # the overlap case shares `other`'s network
    fake.add_network("p", {"name": network})
    fake.add_subnet("p", "europe-west1", {"name": name, "network": network, "ipCidrRange": old})
    fp = fake.subnet("p", "europe-west1", name)["fingerprint"]  # type: ignore[index]
    client = compute_client(compute_v1.SubnetworksClient, fake)
    request = compute_v1.SubnetworksExpandIpCidrRangeRequest(ip_cidr_range=new)
    call = {
        "project": "p",
        "region": "europe-west1",
        "subnetwork": name,
        "subnetworks_expand_ip_cidr_range_request_resource": request,
    }
    if accepted:
        client.expand_ip_cidr_range(**call).result(timeout=5)
        after = fake.subnet("p", "europe-west1", name)
        assert after is not None and after["ipCidrRange"] == new and after["fingerprint"] != fp
    else:
        with pytest.raises(gx.BadRequest):
            client.expand_ip_cidr_range_unary(**call)
        after = fake.subnet("p", "europe-west1", name)
        assert after is not None and after["ipCidrRange"] == old


def test_expand_without_strategy_picks_subnet_expand_when_only_the_node_subnet_is_full() -> None:
    from cidrx.providers.gke.provider import default_strategy

    assert default_strategy(cases.node_subnet_full(), PlanOptions()) == "subnet-expand"
    both = cases.with_node_subnet(
        cases.incident(), cases.NODE_SUBNET_SMALL, cases.subnet_addresses(cases.NODE_SUBNET_SMALL, 4, 8)
    )
    assert default_strategy(both, PlanOptions()) == "node-pool"  # the pod range is full too: its fix first


# --- the bundled example ------------------------------------------------------------------------------------

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "gke-node-subnet-full.snapshot.json"


def test_example_is_the_node_subnet_full_case_and_works_offline(tmp_path: Path) -> None:
    """examples/gke-node-subnet-full.snapshot.json is `cases.node_subnet_full()` (CIDRX_UPDATE_EXAMPLES=1 rewrites
    it): diagnose blames the node subnet (exit 3), `expand --plan` picks subnet-expand by itself, rollback refuses."""
    snap = cases.node_subnet_full()
    if os.environ.get("CIDRX_UPDATE_EXAMPLES") == "1":
        save_snapshot(snap, EXAMPLE)
    assert load_snapshot(EXAMPLE) == snap
    diagnosed = run("diagnose", "--snapshot", str(EXAMPLE), "-o", "json")
    assert diagnosed.exit_code == 3, diagnosed.output
    found = {f["id"] for f in json.loads(diagnosed.stdout)["findings"]}
    assert {"GKE-NODE-SUBNET-EXHAUSTED", "GKE-SCALE-UP-IP-EXHAUSTED"} <= found
    assert not {f for f in found if f.startswith("GKE-POD-RANGE")}
    out = tmp_path / "plan.json"
    assert run("expand", "--snapshot", str(EXAMPLE), "--plan", "--out", str(out)).exit_code == 0
    made = load_plan(out)
    assert made.strategy == "subnet-expand" and made.steps[0].params["cidr"] == "10.0.0.0/26"
    refused = run("rollback", str(out), "--yes", "--no-kube")
    assert refused.exit_code == 2 and "cannot be shrunk again" in refused.output


def test_shared_vpc_expands_in_the_host_project() -> None:
    from cidrx.providers.gke.provider import PROVIDER

    snap = cases.with_gke(cases.node_subnet_full(), network_project="host-net")
    p = plan(snap)
    assert p.steps[0].params["project"] == "host-net" and "host project host-net" in p.steps[0].description
    assert p.basis["network_project"] == "host-net"
    assert any("Shared VPC" in n for n in p.notes)
    split = PROVIDER.permissions_by_project(p.steps[0].permissions)
    assert "compute.subnetworks.expandIpCidrRange" in split["host_project"]
    assert "compute.subnetworks.expandIpCidrRange" not in split["service_project"]


def test_the_fake_serves_what_holds_addresses_to_the_real_clients(fake: FakeGcp) -> None:
    """instances.list (per zone) and aggregatedList, addresses.list and forwardingRules.list through
    google-cloud-compute; the fake checks each request and answer against the discovery document (module
    fixture's check() at teardown)."""
    from google.cloud import compute_v1

    fake.add_instance("p", "europe-west1-b", "vm-1", "10.9.0.5", subnet="other", network="net", gke_cluster="c")
    fake.add_address("p", "europe-west1", {"name": "ilb-ip", "address": "10.9.0.6", "subnetwork": "other"})
    fake.add_forwarding_rule("p", "europe-west1", {"name": "ilb", "IPAddress": "10.9.0.6", "subnetwork": "other"})
    instances = compute_client(compute_v1.InstancesClient, fake)
    zonal = list(instances.list(project="p", zone="europe-west1-b"))
    assert [(i.name, i.network_interfaces[0].network_i_p) for i in zonal] == [("vm-1", "10.9.0.5")]
    assert zonal[0].labels == {"goog-gke-node": ""}
    aggregated = {scope: list(scoped.instances) for scope, scoped in instances.aggregated_list(project="p")}
    assert [i.name for i in aggregated["zones/europe-west1-b"]] == ["vm-1"]
    addresses = compute_client(compute_v1.AddressesClient, fake)
    listed = list(
        addresses.list(request={"project": "p", "region": "europe-west1", "filter": 'addressType="INTERNAL"'})
    )
    assert [(a.name, a.address_type, a.status) for a in listed] == [("ilb-ip", "INTERNAL", "RESERVED")]
    rules = compute_client(compute_v1.ForwardingRulesClient, fake)
    assert [(r.name, r.I_p_address) for r in rules.list(project="p", region="europe-west1")] == [("ilb", "10.9.0.6")]
