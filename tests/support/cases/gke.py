"""GKE snapshot cases for analyze/plan tests: the talk's incident built in code, and variants of it.

The incident: regional cluster `demo-ip` in `australia-southeast1` (project `p1`), subnet `demo-ip-subnet`
10.0.0.0/24 with pod range `pods` 10.4.0.0/22 and `services` 10.8.0.0/24. `default-pool` runs 110 max pods
(a /24 per node), so the range holds 4 nodes, and all 4 are there; the pool may autoscale to 7 per zone
in 3 zones (21). The cluster-autoscaler reports "IP space exhausted" and pods are Pending.

The network also holds what a new range must avoid, one of each kind, laid out so the first free /19 in
10/8 is only found after skipping each: a subnet in another region (10.0.32.0/20), a route imported over
peering (10.0.64.0/18), a private-services-access range (10.0.128.0/20); plus a proxy-only subnet and the
control plane's /28. Every variant is the incident changed by one thing, re-sealed.
"""

from __future__ import annotations

import dataclasses
from ipaddress import IPv4Network, collapse_addresses
from typing import Any

from cidrx.model.kube import ConfigMapData, KubeEvent, KubeNode, KubePod, KubeSection
from cidrx.model.snapshot import Snapshot, seal
from cidrx.model.target import Target
from cidrx.providers.gke.model import (
    Autoscaling,
    FirewallRule,
    GkeCluster,
    GkeSection,
    NodePool,
    PeeringRoute,
    PodRangeInfo,
    ReservedRange,
    SecondaryRange,
    SubnetAddress,
    Subnetwork,
)

PROJECT = "p1"
LOCATION = "australia-southeast1"
CLUSTER = "demo-ip"
NETWORK = "demo-vpc"
SUBNET = "demo-ip-subnet"
POOL = "default-pool"
ZONES = ("australia-southeast1-a", "australia-southeast1-b", "australia-southeast1-c")
POD_RANGE = "pods"
POD_CIDR = "10.4.0.0/22"
SERVICES_CIDR = "10.8.0.0/24"
TARGET = Target("gke", CLUSTER, project=PROJECT, location=LOCATION)
FLAGS = f"--gke --project {PROJECT} --location {LOCATION} --cluster {CLUSTER}"

# The cluster-autoscaler's event on a Pending pod, as in the talk.
SCALE_UP_MESSAGE = (
    "Node scale up in zones australia-southeast1-b associated with this pod failed: IP space exhausted. "
    "Pod is at risk of not being scheduled."
)

# What the incident network occupies besides the cluster subnet (see the module docstring).
OTHER_REGION_SUBNET = "10.0.32.0/20"
PEERING_ROUTE = "10.0.64.0/18"
PSA_RANGE = "10.0.128.0/20"
CONTROL_PLANE = "172.16.0.0/28"
INCIDENT_PLAN_CIDR = "10.0.160.0/19"  # first /19 in 10/8 clear of all of the above


def node_name(i: int) -> str:
    return f"gke-demo-ip-default-pool-5f6c2a1d-{i:04d}"


def pool_config() -> dict[str, Any]:
    """The incident's default-pool NodeConfig, as the snapshot keeps it."""
    return {
        "machineType": "e2-standard-4",
        "diskSizeGb": 100,
        "diskType": "pd-balanced",
        "imageType": "COS_CONTAINERD",
        "serviceAccount": "default",
        "oauthScopes": ["https://www.googleapis.com/auth/cloud-platform"],
        "labels": {"team": "platform"},
    }


def default_pool(**changes: Any) -> NodePool:
    pool = NodePool(
        name=POOL,
        status="RUNNING",
        version="1.27.3-gke.100",
        machine_type="e2-standard-4",
        locations=ZONES,
        initial_node_count=1,
        max_pods_per_node=110,
        pod_ipv4_cidr_size=24,
        pod_range=POD_RANGE,
        pod_cidr=POD_CIDR,
        autoscaling=Autoscaling(enabled=True, min_node_count=1, max_node_count=7, location_policy="BALANCED"),
        pod_range_utilization=1.0,
        instance_group_count=3,
        config=pool_config(),
        management={"autoUpgrade": True, "autoRepair": True},
    )
    return dataclasses.replace(pool, **changes)


def cluster_subnet(*extra: SecondaryRange, pods: str = POD_CIDR) -> Subnetwork:
    return Subnetwork(
        name=SUBNET,
        region=LOCATION,
        network=NETWORK,
        ip_cidr_range="10.0.0.0/24",
        secondary_ranges=(SecondaryRange(POD_RANGE, pods), SecondaryRange("services", SERVICES_CIDR), *extra),
        fingerprint="fp-1",
        purpose="PRIVATE",
    )


def other_subnets() -> tuple[Subnetwork, ...]:
    return (
        Subnetwork("proxy-only", LOCATION, NETWORK, "10.129.0.0/23", purpose="REGIONAL_MANAGED_PROXY"),
        Subnetwork(
            "us-apps",
            "us-central1",
            NETWORK,
            OTHER_REGION_SUBNET,
            secondary_ranges=(SecondaryRange("us-pods", "10.12.0.0/14"),),
            fingerprint="fp-us",
            purpose="PRIVATE",
        ),
    )


def incident_gke() -> GkeSection:
    subnet = cluster_subnet()
    return GkeSection(
        project=PROJECT,
        cluster=GkeCluster(
            name=CLUSTER,
            location=LOCATION,
            status="RUNNING",
            network=NETWORK,
            subnetwork=SUBNET,
            subnet_region=LOCATION,
            autopilot=False,
            default_max_pods_per_node=110,
            pod_range_name=POD_RANGE,
            pod_cidr=POD_CIDR,
            services_range_name="services",
            services_cidr=SERVICES_CIDR,
            default_pod_range_utilization=1.0,
            version="1.27.3-gke.100",
            master_ipv4_cidr_block=CONTROL_PLANE,
        ),
        node_pools=(default_pool(),),
        subnet=subnet,
        subnets=(subnet, *other_subnets()),
        peerings=("corp-hub", "servicenetworking-googleapis-com"),
        peering_routes=(PeeringRoute(PEERING_ROUTE, "corp-hub", LOCATION),),
        reserved_ranges=(ReservedRange("google-managed-services-demo-vpc", PSA_RANGE, "VPC_PEERING"),),
    )


def nodes(count: int, cidr: str, pool: str = POOL, prefix: int = 24, first: int = 0) -> tuple[KubeNode, ...]:
    """`count` nodes of `pool` holding consecutive /prefix blocks of `cidr`, spread over the zones."""
    blocks = list(IPv4Network(cidr).subnets(new_prefix=prefix))
    return tuple(
        KubeNode(
            name=node_name(first + i) if pool == POOL else f"gke-demo-ip-{pool}-0b1c2d3e-{first + i:04d}",
            zone=ZONES[i % len(ZONES)],
            instance_type="e2-standard-4",
            created="2023-11-03T06:00:00Z",
            pod_cidrs=(str(blocks[i]),),
            internal_ip=f"10.0.0.{10 + first + i}",
            allocatable_pods=110,
            pool=pool,
        )
        for i in range(count)
    )


def incident_kube() -> KubeSection:
    ns = nodes(4, POD_CIDR)
    busy = (104, 98, 101, 97)
    return KubeSection(
        available=True,
        context="gke_p1_australia-southeast1_demo-ip",
        nodes=ns,
        pods_per_node={n.name: c for n, c in zip(ns, busy, strict=True)},
        host_network_pods_per_node={n.name: 3 for n in ns},
        waiting_pods=tuple(
            KubePod("default", f"alpine-curl-648f8f669c-{s}", "Pending", "", "Unschedulable", "2023-11-03T07:06:00Z")
            for s in ("wltzt", "x2k9p", "q7d4m")
        ),
        events=(
            KubeEvent(
                "default",
                "Pod",
                "alpine-curl-648f8f669c-wltzt",
                "FailedScaleUp",
                "Warning",
                SCALE_UP_MESSAGE,
                2,
                "2023-11-03T07:08:00Z",
                "cluster-autoscaler",
            ),
            KubeEvent(
                "default",
                "Pod",
                "alpine-curl-648f8f669c-wltzt",
                "NotTriggerScaleUp",
                "Normal",
                "pod didn't trigger scale-up: 1 in backoff after failed scale-up",
                1,
                "2023-11-03T07:09:00Z",
                "cluster-autoscaler",
            ),
            KubeEvent(
                "default",
                "Pod",
                "alpine-curl-648f8f669c-wltzt",
                "FailedScheduling",
                "Warning",
                "0/4 nodes are available: 4 Too many pods.",
                2,
                "2023-11-03T07:09:00Z",
                "default-scheduler",
            ),
        ),
    )


def incident() -> Snapshot:
    return seal(Snapshot(target=TARGET, taken_at="2023-11-03T07:10:00Z", kube=incident_kube(), gke=incident_gke()))


# --- editors ----------------------------------------------------------------------------------------


def gke_of(snap: Snapshot) -> GkeSection:
    assert snap.gke is not None
    return snap.gke


def with_gke(snap: Snapshot, **changes: Any) -> Snapshot:
    return seal(dataclasses.replace(snap, gke=dataclasses.replace(gke_of(snap), **changes)))


def with_cluster(snap: Snapshot, **changes: Any) -> Snapshot:
    return with_gke(snap, cluster=dataclasses.replace(gke_of(snap).cluster, **changes))


def with_kube(snap: Snapshot, **changes: Any) -> Snapshot:
    return seal(dataclasses.replace(snap, kube=dataclasses.replace(snap.kube, **changes)))


def with_subnet(snap: Snapshot, subnet: Subnetwork) -> Snapshot:
    """Replace the cluster subnet (in `subnet` and in the list of all subnets)."""
    g = gke_of(snap)
    subnets = tuple(subnet if (s.name, s.region) == (subnet.name, subnet.region) else s for s in g.subnets)
    return with_gke(snap, subnet=subnet, subnets=subnets)


def with_pools(snap: Snapshot, *pools: NodePool) -> Snapshot:
    return with_gke(snap, node_pools=pools)


def with_pod_range(snap: Snapshot, cidr: str, utilization: float | None = None) -> Snapshot:
    """The incident with a different default pod range (subnet, cluster and pool agree)."""
    snap = with_subnet(snap, cluster_subnet(pods=cidr))
    snap = with_cluster(snap, pod_cidr=cidr, default_pod_range_utilization=utilization)
    pools = tuple(
        dataclasses.replace(p, pod_cidr=cidr, pod_range_utilization=utilization) if p.pod_range == POD_RANGE else p
        for p in gke_of(snap).node_pools
    )
    return with_pools(snap, *pools)


def with_nodes(snap: Snapshot, node_list: tuple[KubeNode, ...], pods: int = 100, host: int = 3) -> Snapshot:
    return with_kube(
        snap,
        nodes=node_list,
        pods_per_node={n.name: pods for n in node_list},
        host_network_pods_per_node={n.name: host for n in node_list},
    )


def calm(snap: Snapshot) -> Snapshot:
    """No Pending pods, no autoscaler events."""
    return with_kube(snap, waiting_pods=(), events=())


# --- variants ---------------------------------------------------------------------------------------


def nearly_exhausted() -> Snapshot:
    """/21 pod range (8 nodes of /24) with 7 nodes: 87.5%, autoscaler total max 8 (no latent outage)."""
    snap = with_pod_range(incident(), "10.4.0.0/21", 0.875)
    auto = Autoscaling(enabled=True, total_min_node_count=1, total_max_node_count=8, location_policy="ANY")
    snap = with_pools(snap, default_pool(pod_cidr="10.4.0.0/21", pod_range_utilization=0.875, autoscaling=auto))
    return calm(with_nodes(snap, nodes(7, "10.4.0.0/21")))


def autoscaler_over_range() -> Snapshot:
    """/20 pod range (16 nodes) with 4 nodes, but default-pool may grow to 7 x 3 zones = 21."""
    snap = with_pod_range(incident(), "10.4.0.0/20", 0.25)
    return calm(with_nodes(snap, nodes(4, "10.4.0.0/20")))


EXTRA_RANGE = "pods-extra"
EXTRA_CIDR = "10.5.0.0/21"


def additional_ranges() -> Snapshot:
    """The incident plus a cluster-level additional pod range 10.5.0.0/21 that `extra-pool` (2 nodes) uses."""
    snap = incident()
    snap = with_subnet(snap, cluster_subnet(SecondaryRange(EXTRA_RANGE, EXTRA_CIDR)))
    snap = with_cluster(snap, additional_pod_ranges=(PodRangeInfo(EXTRA_RANGE, 0.25),))
    extra = default_pool(
        name="extra-pool",
        pod_range=EXTRA_RANGE,
        pod_cidr=EXTRA_CIDR,
        pod_range_utilization=0.25,
        autoscaling=Autoscaling(enabled=True, min_node_count=0, max_node_count=2),
    )
    snap = with_pools(snap, default_pool(), extra)
    return with_nodes(snap, nodes(4, POD_CIDR) + nodes(2, EXTRA_CIDR, pool="extra-pool"))


SHARED_CIDR = "10.4.0.0/21"


def shared_range() -> Snapshot:
    """Two pools on one /21 range: default-pool (110 max pods, /24) with 3 nodes in 10.4.0-2.0/24 and
    small-pool (32 max pods, /26) with 4 nodes filling 10.4.3.0/24. Free: 4 x /24 or 16 x /26."""
    snap = with_pod_range(incident(), SHARED_CIDR, 0.5)
    small = default_pool(
        name="small-pool",
        max_pods_per_node=32,
        pod_ipv4_cidr_size=26,
        pod_cidr=SHARED_CIDR,
        pod_range_utilization=0.5,
        autoscaling=Autoscaling(enabled=True, min_node_count=0, max_node_count=2),
    )
    snap = with_pools(snap, gke_of(snap).node_pools[0], small)
    big, little = nodes(3, SHARED_CIDR), nodes(4, "10.4.3.0/24", pool="small-pool", prefix=26)
    snap = with_nodes(snap, big + little, pods=90)
    return calm(with_kube(snap, pods_per_node={**snap.kube.pods_per_node, **{n.name: 20 for n in little}}))


BATCH_RANGE = "batch-pods"
BATCH_CIDR = "192.168.0.0/22"


def own_pod_range() -> Snapshot:
    """The talk's fix already made once: `batch-pool` (32 max pods, /26 per node, total max 10) takes its
    blocks from its own range batch-pods 192.168.0.0/22 (16 nodes) and has 3 nodes."""
    snap = incident()
    snap = with_subnet(snap, cluster_subnet(SecondaryRange(BATCH_RANGE, BATCH_CIDR)))
    batch = default_pool(
        name="batch-pool",
        max_pods_per_node=32,
        pod_ipv4_cidr_size=26,
        pod_range=BATCH_RANGE,
        pod_cidr=BATCH_CIDR,
        pod_range_utilization=0.1875,
        autoscaling=Autoscaling(
            enabled=True, total_min_node_count=0, total_max_node_count=10, location_policy="BALANCED"
        ),
    )
    snap = with_pools(snap, default_pool(), batch)
    batch_nodes = nodes(4, "192.168.0.0/24", pool="batch-pool", prefix=26)[1:]  # as in the talk: .64, .128, .192
    snap = with_nodes(snap, nodes(4, POD_CIDR) + batch_nodes, pods=100)
    return with_kube(snap, pods_per_node={**snap.kube.pods_per_node, **{n.name: 20 for n in batch_nodes}})


def no_kube() -> Snapshot:
    return with_kube(
        incident(),
        available=False,
        reason="--no-kube",
        context="",
        nodes=(),
        pods_per_node={},
        host_network_pods_per_node={},
        waiting_pods=(),
        events=(),
    )


def oversized(roomy: bool = False) -> Snapshot:
    """110 max pods per node but about 10 pods per node (7 pod-network + 3 hostNetwork); `roomy` puts the
    pool in a /16 range with no pressure at all."""
    snap = incident()
    if roomy:
        snap = calm(with_pod_range(snap, "10.4.0.0/16", 4 / 256))
        return with_nodes(snap, nodes(4, "10.4.0.0/16"), pods=7, host=3)
    return with_nodes(snap, nodes(4, POD_CIDR), pods=7, host=3)


def _cover(space: str, *holes: str) -> list[IPv4Network]:
    """`space` minus `holes`, as a short list of CIDRs."""
    pieces = [IPv4Network(space)]
    for hole in map(IPv4Network, holes):
        pieces = [rest for p in pieces for rest in (p.address_exclude(hole) if hole.subnet_of(p) else [p])]
    return list(collapse_addresses(pieces))


def crowded_rfc1918(*also: str) -> Snapshot:
    """On-premises routes imported over peering cover all of RFC 1918 the cluster does not use itself
    (plus `also`), so only 100.64.0.0/10 and later spaces are left."""
    snap = incident()
    g = gke_of(snap)
    mine = ("10.0.0.0/24", POD_CIDR, SERVICES_CIDR)
    routes = [*_cover("10.0.0.0/8", *mine), IPv4Network("172.16.0.0/12"), IPv4Network("192.168.0.0/16")]
    routes += [IPv4Network(a) for a in also]
    peering = tuple(PeeringRoute(str(r), "onprem-hub", LOCATION) for r in routes)
    return with_gke(
        snap,
        subnets=(g.subnet,),
        peerings=("onprem-hub",),
        peering_routes=peering,
        reserved_ranges=(),
    )


def class_e_only() -> Snapshot:
    """RFC 1918, 100.64.0.0/10 and 198.18.0.0/15 all taken: only class E is left."""
    return crowded_rfc1918("100.64.0.0/10", "198.18.0.0/15")


def autopilot() -> Snapshot:
    return with_cluster(incident(), autopilot=True)


# GKE's own rule for the cluster's pods (gke-<cluster>-<hash>-all: sourceRanges = the pod range), a broad
# internal rule that already covers 10/8, and a rule for the nodes only (tests.support.estates.gke cites the
# real rules these follow).
FIREWALL_ALL = "gke-demo-ip-0b1c2d3e-all"


def firewalls() -> tuple[FirewallRule, ...]:
    return (
        FirewallRule(FIREWALL_ALL, PROJECT, source_ranges=(POD_CIDR,), target_tags=("gke-demo-ip-0b1c2d3e-node",)),
        FirewallRule("allow-internal", PROJECT, source_ranges=("10.0.0.0/8",), priority=65534),
        FirewallRule("gke-demo-ip-0b1c2d3e-vms", PROJECT, source_ranges=("10.0.0.0/24",)),
    )


def with_firewalls(snap: Snapshot, rules: tuple[FirewallRule, ...] | None = None) -> Snapshot:
    return with_gke(snap, firewalls=firewalls() if rules is None else rules)


# ip-masq-agent's ConfigMap as GKE users write it (kubernetes-sigs/ip-masq-agent: key `config`, YAML), listing
# only the node and pod ranges, so traffic to a new pod range would be SNATed.
IP_MASQ_CONFIG = "nonMasqueradeCIDRs:\n  - 10.0.0.0/24\n  - 10.4.0.0/22\nmasqLinkLocal: false\nresyncInterval: 60s\n"


def with_ip_masq(snap: Snapshot, config: str = IP_MASQ_CONFIG, resource_version: str = "4711") -> Snapshot:
    cm = ConfigMapData("kube-system", "ip-masq-agent", {"config": config}, resource_version)
    return with_kube(snap, config_maps=(cm,))


# --- the node subnet's primary range ------------------------------------------------------------------

NODE_SUBNET_SMALL = "10.0.0.0/28"  # 16 addresses, 12 usable (GCP reserves 4)


def subnet_addresses(
    cidr: str, nodes_: int, other_vms: int = 0, ilbs: int = 0, reserved: int = 0, first: int = 2
) -> tuple[SubnetAddress, ...]:
    """Addresses of the primary range `cidr` from its first usable one (network + 2): this cluster's node VMs,
    other VMs, internal forwarding rules and reserved internal addresses, in that order."""
    base = int(IPv4Network(cidr).network_address) + first
    kinds = (
        [("instance", f"gke-demo-ip-default-pool-5f6c2a1d-{i:04d}", CLUSTER) for i in range(nodes_)]
        + [("instance", f"bastion-{i}", "") for i in range(other_vms)]
        + [("forwarding-rule", f"a1b2c3-ilb-{i}", "") for i in range(ilbs)]
        + [("address", f"reserved-{i}", "") for i in range(reserved)]
    )
    from ipaddress import IPv4Address

    return tuple(
        SubnetAddress(str(IPv4Address(base + i)), kind, name, PROJECT, cluster)
        for i, (kind, name, cluster) in enumerate(kinds)
    )


def with_node_subnet(snap: Snapshot, cidr: str, addresses: tuple[SubnetAddress, ...]) -> Snapshot:
    """The cluster subnet with primary range `cidr` and `addresses` held in it."""
    snap = with_subnet(snap, dataclasses.replace(gke_of(snap).subnet, ip_cidr_range=cidr))
    return with_gke(snap, subnet_addresses=addresses)


def node_subnet_full() -> Snapshot:
    """The pod range has room (a /19: 32 nodes of /24, 4 there, the pool's autoscaler max 21), but the subnet's
    primary range /28 (12 usable) is full: 4 nodes, 5 other VMs, 2 internal load balancers, 1 reserved address.
    The autoscaler's events still say "IP space exhausted"."""
    snap = with_pod_range(incident(), "10.4.0.0/19", 0.125)
    snap = with_nodes(snap, nodes(4, "10.4.0.0/19"))
    snap = with_kube(snap, events=incident_kube().events, waiting_pods=incident_kube().waiting_pods)
    snap = with_node_subnet(snap, NODE_SUBNET_SMALL, subnet_addresses(NODE_SUBNET_SMALL, 4, 5, 2, 1))
    return with_firewalls(snap, node_subnet_firewalls())


FIREWALL_VMS = "gke-demo-ip-0b1c2d3e-vms"


def node_subnet_firewalls() -> tuple[FirewallRule, ...]:
    """GKE's rules for the cluster with a /28 node range (-vms names it), and a user's rule that names it too."""
    return (
        FirewallRule(FIREWALL_ALL, PROJECT, source_ranges=(POD_CIDR,), target_tags=("gke-demo-ip-0b1c2d3e-node",)),
        FirewallRule("allow-internal", PROJECT, source_ranges=("10.0.0.0/8",), priority=65534),
        FirewallRule(FIREWALL_VMS, PROJECT, source_ranges=(NODE_SUBNET_SMALL,)),
        FirewallRule("nodes-to-db", PROJECT, source_ranges=(NODE_SUBNET_SMALL,), target_tags=("db",)),
    )
