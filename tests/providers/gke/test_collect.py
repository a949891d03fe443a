"""Tests of the GKE collector: the incident world through the real clients and the loopback fake, the pure
converters from REST JSON, the request budget (list pages, no per-subnet GETs), and the bundled example
snapshot (regenerated from the world and compared).

Set CIDRX_UPDATE_EXAMPLES=1 to rewrite examples/gke-demo-ip.snapshot.json from the world on purpose.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cidrx.errors import EXIT_ACCESS, AccessDenied
from cidrx.model import codec
from cidrx.model.snapshot import load_snapshot, save_snapshot, snapshot_type
from cidrx.providers.gke.api import GkeApi
from cidrx.providers.gke.collect.collect import (
    DEFAULT_MAX_PODS_PER_NODE,
    active_peerings,
    cluster_from,
    collect_gke,
    in_network,
    node_pool_from,
    peering_names,
    peering_route_from,
    reserved_range_from,
    subnet_from,
)
from cidrx.providers.gke.model import (
    Autoscaling,
    PeeringRoute,
    PodRangeInfo,
    ReservedRange,
    SecondaryRange,
    Subnetwork,
)
from tests.support.estates.gke import (
    CLUSTER,
    LOCATION,
    MASTER_CIDR,
    NETWORK,
    PEERING,
    PEERING_ROUTE,
    POD_CIDR,
    POD_RANGE,
    PROJECT,
    PSA_CIDR,
    PSA_NAME,
    REGION,
    SERVICES_CIDR,
    SERVICES_RANGE,
    SUBNET,
    SUBNET_CIDR,
    SUBNET_FINGERPRINT,
    ZONES,
    incident_snapshot,
)
from tests.support.fakes.gcp_server import FakeGcp

# The world's fixtures, used by name below (tests.support.estates.gke documents them).

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "gke-demo-ip.snapshot.json"
C = "container.projects.locations.clusters"


# ---- the incident through the fake ----------------------------------------------------------------


def test_collect_the_incident(gcp: FakeGcp, gke_api: GkeApi) -> None:
    gke = collect_gke(gke_api, CLUSTER)

    c = gke.cluster
    assert gke.project == PROJECT
    assert (c.name, c.location, c.status, c.network, c.subnetwork, c.subnet_region) == (
        CLUSTER,
        LOCATION,
        "RUNNING",
        NETWORK,
        SUBNET,
        REGION,
    )
    assert (c.pod_range_name, c.pod_cidr, c.services_range_name, c.services_cidr) == (
        POD_RANGE,
        POD_CIDR,
        SERVICES_RANGE,
        SERVICES_CIDR,
    )
    assert (c.default_max_pods_per_node, c.default_pod_range_utilization, c.autopilot) == (110, 1.0, False)
    assert c.master_ipv4_cidr_block == MASTER_CIDR
    assert c.additional_pod_ranges == ()

    [pool] = gke.node_pools
    assert (pool.name, pool.status, pool.machine_type, pool.locations) == (
        "default-pool",
        "RUNNING",
        "e2-standard-4",
        ZONES,
    )
    assert (pool.max_pods_per_node, pool.pod_ipv4_cidr_size, pool.pod_range, pool.pod_cidr) == (
        110,
        24,
        "pods",
        POD_CIDR,
    )
    assert pool.autoscaling == Autoscaling(enabled=True, min_node_count=1, max_node_count=3, location_policy="BALANCED")
    assert (pool.initial_node_count, pool.instance_group_count, pool.pod_range_utilization) == (1, 3, 1.0)
    assert pool.config == {  # trimmed: resourceLabels and accelerators are not copied into config
        "machineType": "e2-standard-4",
        "diskSizeGb": 100,
        "diskType": "pd-balanced",
        "imageType": "COS_CONTAINERD",
        "serviceAccount": "default",
        "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
        "metadata": {"disable-legacy-endpoints": "true"},
        "shieldedInstanceConfig": {"enableIntegrityMonitoring": True},
    }
    assert pool.resource_labels == {"team": "platform"}
    assert pool.management == {"autoUpgrade": True, "autoRepair": True}

    assert gke.subnet == Subnetwork(
        name=SUBNET,
        region=REGION,
        network=NETWORK,
        ip_cidr_range=SUBNET_CIDR,
        secondary_ranges=(SecondaryRange(POD_RANGE, POD_CIDR), SecondaryRange(SERVICES_RANGE, SERVICES_CIDR)),
        fingerprint=SUBNET_FINGERPRINT,
        self_link=f"https://www.googleapis.com/compute/v1/projects/{PROJECT}/regions/{REGION}/subnetworks/{SUBNET}",
        purpose="PRIVATE",
    )
    # Every subnet of the network in every region, sorted by (region, name); other-vpc's subnet left out.
    assert [(s.region, s.name, s.ip_cidr_range, s.secondary_ranges) for s in gke.subnets] == [
        (REGION, SUBNET, SUBNET_CIDR, gke.subnet.secondary_ranges),
        ("europe-west1", "eu-db", "10.2.0.0/20", ()),
        ("us-central1", "us-workloads", "10.1.0.0/16", (SecondaryRange("us-pods", "10.5.0.0/16"),)),
    ]
    assert gke.subnet in gke.subnets
    assert gke.peerings == (PEERING,)
    assert gke.peering_routes == (PeeringRoute(PEERING_ROUTE, PEERING),)
    assert gke.reserved_ranges == (ReservedRange(PSA_NAME, PSA_CIDR, "VPC_PEERING"),)


def test_collect_costs_one_request_per_list_page(gcp: FakeGcp, gke_api: GkeApi) -> None:
    for i in range(6):
        gcp.add_subnet(
            PROJECT, "asia-east1", {"name": f"extra-{i}", "network": NETWORK, "ipCidrRange": f"10.9.{i}.0/24"}
        )
    collect_gke(gke_api, CLUSTER)
    assert [r.method_id for r in gcp.request_log] == [
        f"{C}.get",
        f"{C}.nodePools.list",
        "compute.networks.get",
        "compute.subnetworks.aggregatedList",
        "compute.networks.listPeeringRoutes",
        "compute.globalAddresses.list",
        "compute.routes.list",
        "compute.firewalls.list",
        f"{C}.list",  # routes-based clusters of the project (location "-")
        # what holds addresses of the cluster subnet's primary range, in the subnet's region
        "compute.instances.aggregatedList",
        "compute.forwardingRules.list",
        "compute.addresses.list",
    ]

    gcp.reset_log()
    gke_api.page_size = 3
    gke = collect_gke(gke_api, CLUSTER)
    assert len(gke.subnets) == 9
    assert gcp.count("GET", "/aggregated/subnetworks") == 4  # ceil(10 subnets in the project / 3)
    assert gcp.count("GET", "/subnetworks/") == 0  # no per-subnet GET: the list carries fingerprints
    # routes.list: 12 local subnet routes of demo-vpc (13 ranges minus other-vpc's) + its default route.
    assert gcp.count("GET", "/global/routes") == 5  # ceil(13 / 3)
    assert gcp.count("GET", "/firewalls") == 2  # 4 rules of the network (filtered by the server) / 3
    assert gcp.count("GET") == 20  # + instances, forwarding rules and addresses: one empty page each


def test_collect_is_stable_and_sorted(gcp: FakeGcp, gke_api: GkeApi) -> None:
    # Added out of order: the collector sorts, so the snapshot fingerprint does not depend on API order.
    gcp.add_peering_route(PROJECT, NETWORK, PEERING, {"destRange": "10.99.0.0/16"})
    gcp.add_peering_route(PROJECT, NETWORK, PEERING, {"destRange": "10.99.0.0/16"})  # listed twice: kept once
    gcp.add_peering_route(PROJECT, NETWORK, "a-second-peering", {"destRange": "10.98.0.0/16"})
    first = collect_gke(gke_api, CLUSTER)
    second = collect_gke(gke_api, CLUSTER)
    assert codec.sha256_of(first) == codec.sha256_of(second)
    assert [(r.dest_range, r.peering) for r in first.peering_routes] == [
        ("10.98.0.0/16", "a-second-peering"),
        ("10.99.0.0/16", PEERING),
        (PEERING_ROUTE, PEERING),
    ]
    assert first.peerings == ("a-second-peering", PEERING)


def test_inactive_peering_is_named_but_not_queried(gcp: FakeGcp, gke_api: GkeApi) -> None:
    network = gcp.network(PROJECT, NETWORK) or {}
    peerings = [{**p, "state": "INACTIVE"} for p in network["peerings"]]
    with gcp._lock:  # the fake has no setter for a peering's state
        gcp._networks[(PROJECT, NETWORK)]["peerings"] = peerings
    gke = collect_gke(gke_api, CLUSTER)
    assert gke.peerings == (PEERING,)
    assert gke.peering_routes == ()
    assert gcp.count("GET", "/listPeeringRoutes") == 0


def test_autopilot_cluster_is_collected(gcp: FakeGcp, gke_api: GkeApi) -> None:
    gcp.add_cluster(
        PROJECT,
        LOCATION,
        {
            "name": "auto",
            "network": NETWORK,
            "subnetwork": SUBNET,
            "autopilot": {"enabled": True},
            "ipAllocationPolicy": {"useIpAliases": True, "clusterSecondaryRangeName": POD_RANGE},
        },
    )
    gke = collect_gke(gke_api, "auto")
    assert gke.cluster.autopilot is True
    assert gke.cluster.default_max_pods_per_node == DEFAULT_MAX_PODS_PER_NODE
    assert gke.node_pools == ()
    assert gke.subnet.name == SUBNET


def test_missing_cluster_is_exit_6(gcp: FakeGcp, gke_api: GkeApi) -> None:
    with pytest.raises(AccessDenied, match="GKE cluster 'nope'") as caught:
        collect_gke(gke_api, "nope")
    assert caught.value.exit_code == EXIT_ACCESS


# ---- converters from REST JSON --------------------------------------------------------------------


def test_cluster_from_minimal_json_uses_defaults() -> None:
    c = cluster_from({"name": "c", "location": "us-central1-a"})
    assert (c.network, c.subnetwork, c.subnet_region) == ("default", "default", "us-central1")
    assert (c.default_max_pods_per_node, c.pod_range_name, c.pod_cidr) == (110, "", "")
    assert (c.default_pod_range_utilization, c.additional_pod_ranges, c.autopilot) == (None, (), False)
    assert (c.status, c.version, c.master_ipv4_cidr_block) == ("", "", "")


def test_cluster_from_full_json() -> None:
    c = cluster_from(
        {
            "name": "c",
            "location": "europe-west1",
            "network": "net",
            "subnetwork": "sub",
            "networkConfig": {
                "network": "projects/p/global/networks/net",
                "subnetwork": "projects/p/regions/europe-west1/subnetworks/sub",
            },
            "defaultMaxPodsConstraint": {"maxPodsPerNode": "32"},
            "currentMasterVersion": "1.29.1-gke.1",
            "ipAllocationPolicy": {
                "clusterSecondaryRangeName": "p",
                "clusterIpv4CidrBlock": "10.4.0.0/14",
                "servicesIpv4CidrBlock": "10.8.0.0/20",
                "defaultPodIpv4RangeUtilization": 0.25,
                "additionalPodRangesConfig": {
                    "podRangeNames": ["z-extra", "a-extra"],
                    "podRangeInfo": [{"rangeName": "z-extra", "utilization": 0.5}],
                },
            },
        }
    )
    assert c.subnet_region == "europe-west1"
    assert (c.default_max_pods_per_node, c.pod_cidr, c.services_cidr) == (32, "10.4.0.0/14", "10.8.0.0/20")
    assert c.default_pod_range_utilization == 0.25
    assert c.additional_pod_ranges == (PodRangeInfo("a-extra", None), PodRangeInfo("z-extra", 0.5))
    assert c.version == "1.29.1-gke.1"


def test_cluster_from_takes_names_from_network_config_when_top_level_is_missing() -> None:
    c = cluster_from(
        {
            "name": "c",
            "location": "us-east1",
            "networkConfig": {
                "network": "projects/p/global/networks/vpc",
                "subnetwork": "projects/p/regions/us-east4/subnetworks/nodes",
            },
        }
    )
    assert (c.network, c.subnetwork, c.subnet_region) == ("vpc", "nodes", "us-east4")


@pytest.mark.parametrize(
    ("pool", "cluster_default", "max_pods", "prefix"),
    [
        ({"name": "p"}, 110, 110, 24),  # nothing set: GKE's default, a /24 per node
        ({"name": "p"}, 32, 32, 26),  # the cluster's default max pods
        ({"name": "p", "maxPodsConstraint": {"maxPodsPerNode": "8"}}, 110, 8, 28),
        ({"name": "p", "maxPodsConstraint": {"maxPodsPerNode": "64"}}, 110, 64, 25),
        ({"name": "p", "maxPodsConstraint": {"maxPodsPerNode": "64"}, "podIpv4CidrSize": 24}, 110, 64, 24),
    ],
)
def test_node_pool_max_pods_and_block_size(
    pool: dict[str, object], cluster_default: int, max_pods: int, prefix: int
) -> None:
    p = node_pool_from(pool, cluster_default)
    assert (p.max_pods_per_node, p.pod_ipv4_cidr_size) == (max_pods, prefix)


def test_node_pool_from_minimal_json() -> None:
    p = node_pool_from({"name": "p"})
    assert (p.status, p.machine_type, p.locations, p.initial_node_count) == ("", "", (), 0)
    assert (p.pod_range, p.pod_cidr, p.pod_range_utilization, p.instance_group_count) == ("", "", None, 0)
    assert p.autoscaling == Autoscaling()
    assert (p.config, p.management, p.resource_labels) == ({}, {}, {})


def test_node_pool_from_autoscaling_totals() -> None:
    p = node_pool_from(
        {
            "name": "p",
            "locations": ["us-central1-c", "us-central1-a"],
            "autoscaling": {
                "enabled": True,
                "totalMinNodeCount": 2,
                "totalMaxNodeCount": 40,
                "locationPolicy": "ANY",
            },
            "config": {"machineType": "n2-standard-8", "spot": True, "guestAccelerators": [{"acceleratorCount": "1"}]},
        }
    )
    assert p.locations == ("us-central1-a", "us-central1-c")
    assert p.autoscaling == Autoscaling(
        enabled=True, total_min_node_count=2, total_max_node_count=40, location_policy="ANY"
    )
    assert p.config == {"machineType": "n2-standard-8", "spot": True}


def test_subnet_from_json() -> None:
    s = subnet_from(
        {
            "name": "s",
            "region": "https://www.googleapis.com/compute/v1/projects/p/regions/us-central1",
            "network": "https://www.googleapis.com/compute/v1/projects/p/global/networks/vpc",
            "ipCidrRange": "10.1.0.0/16",
            "secondaryIpRanges": [
                {"rangeName": "z", "ipCidrRange": "10.6.0.0/16"},
                {"rangeName": "a", "ipCidrRange": "10.5.0.0/16"},
            ],
            "fingerprint": "abc=",
            "purpose": "PRIVATE",
        }
    )
    assert (s.region, s.network, s.fingerprint) == ("us-central1", "vpc", "abc=")
    assert s.secondary_ranges == (SecondaryRange("a", "10.5.0.0/16"), SecondaryRange("z", "10.6.0.0/16"))
    bare = subnet_from({"name": "proxy", "selfLink": "projects/p/regions/asia-east1/subnetworks/proxy"})
    assert (bare.region, bare.network, bare.ip_cidr_range, bare.secondary_ranges) == ("asia-east1", "", "", ())


def test_route_address_and_network_converters() -> None:
    assert peering_route_from({"destRange": "10.100.0.0/16", "nextHopRegion": "us-east1"}, "x") == PeeringRoute(
        "10.100.0.0/16", "x", "us-east1"
    )
    assert reserved_range_from(
        {"name": "psa", "address": "10.200.0.0", "prefixLength": 16, "purpose": "VPC_PEERING"}
    ) == ReservedRange("psa", "10.200.0.0/16", "VPC_PEERING")
    network = {"peerings": [{"name": "b", "state": "INACTIVE"}, {"name": "a", "state": "ACTIVE"}, {"name": "c"}]}
    assert peering_names(network) == ("a", "b", "c")
    assert active_peerings(network) == ("a", "c")
    assert in_network("https://www.googleapis.com/compute/v1/projects/p1/global/networks/vpc", "vpc", "p1")
    assert not in_network("https://www.googleapis.com/compute/v1/projects/host/global/networks/vpc", "vpc", "p1")
    assert not in_network("projects/p1/global/networks/vpc-2", "vpc", "p1")
    assert in_network("vpc", "vpc", "p1")
    assert not in_network("", "vpc", "p1")


# ---- the bundled example --------------------------------------------------------------------------


def test_example_snapshot_is_the_collected_incident(gcp: FakeGcp, gke_api: GkeApi) -> None:
    snap = incident_snapshot(collect_gke(gke_api, CLUSTER))
    if os.environ.get("CIDRX_UPDATE_EXAMPLES") == "1":
        save_snapshot(snap, EXAMPLE)
    bundled = load_snapshot(EXAMPLE)  # also checks its fingerprint
    assert bundled == snap
    assert codec.loads(EXAMPLE.read_bytes(), snapshot_type(), what="example") == snap
    assert snap.target.label() == "gke:p1/australia-southeast1/demo-ip"
    assert [n.pod_cidrs for n in snap.kube.nodes] == [
        ("10.4.0.0/24",),
        ("10.4.1.0/24",),
        ("10.4.2.0/24",),
        ("10.4.3.0/24",),
    ]
    assert {n.pool for n in snap.kube.nodes} == {"default-pool"}
    assert any("IP space exhausted" in e.message and e.reason == "FailedScaleUp" for e in snap.kube.events)


def test_collect_reads_what_holds_addresses_of_the_subnets_primary_range(gcp: FakeGcp, gke_api: GkeApi) -> None:
    """instances.aggregatedList, forwardingRules.list and addresses.list of the subnet's region: what sits on the
    cluster subnet is kept (GKE nodes marked with their cluster), the rest is not."""
    from cidrx.providers.gke.model import SubnetAddress

    zone = f"{REGION}-a"
    gcp.add_instance(
        PROJECT,
        zone,
        "gke-demo-ip-default-pool-5f2c9a7e-8f44",
        "10.0.0.2",
        subnet=SUBNET,
        network=NETWORK,
        gke_cluster=CLUSTER,
    )
    gcp.add_instance(PROJECT, f"{REGION}-b", "bastion", "10.0.0.3", subnet=SUBNET, network=NETWORK)
    gcp.add_instance(PROJECT, "us-central1-a", "us-vm", "10.1.0.2", subnet="us-workloads", network=NETWORK)
    gcp.add_forwarding_rule(
        PROJECT, REGION, {"name": "a1b2-ilb", "IPAddress": "10.0.0.9", "subnetwork": SUBNET, "network": NETWORK}
    )
    gcp.add_forwarding_rule(
        PROJECT, REGION, {"name": "web", "IPAddress": "34.1.2.4", "loadBalancingScheme": "EXTERNAL"}
    )
    gcp.add_address(PROJECT, REGION, {"name": "kept-for-dns", "address": "10.0.0.20", "subnetwork": SUBNET})
    gcp.add_address(PROJECT, REGION, {"name": "public", "address": "34.1.2.5"})
    gke = collect_gke(gke_api, CLUSTER)
    assert gke.subnet_addresses == (
        SubnetAddress("10.0.0.2", "instance", "gke-demo-ip-default-pool-5f2c9a7e-8f44", PROJECT, CLUSTER),
        SubnetAddress("10.0.0.3", "instance", "bastion", PROJECT),
        SubnetAddress("10.0.0.9", "forwarding-rule", "a1b2-ilb", PROJECT),
        SubnetAddress("10.0.0.20", "address", "kept-for-dns", PROJECT),
    )
    assert gcp.count("GET", "/aggregated/instances") == 1
    assert gcp.count("GET", f"/regions/{REGION}/addresses") == 1
