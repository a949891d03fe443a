"""The GKE part of a snapshot: the cluster, its node pools, its subnet and everything else that occupies
address space in the cluster's VPC network, trimmed to the fields diagnosis and planning read.

Field names follow the container v1 / compute v1 REST resources (in snake_case) so a reader can look
them up; CIDRs are strings, prefix sizes ints.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cidrx.model.validation import IpCidrOrEmpty, Ipv4AddrOrCidrOrEmpty, Ipv4CidrOrEmpty, first_problem, repeated


@dataclass(frozen=True)
class PodRangeInfo:
    """One cluster-level additional pod range (ip_allocation_policy.additional_pod_ranges_config)."""

    range_name: str
    utilization: float | None = None  # pod_range_info[].utilization, 0..1, as GKE reports it


@dataclass(frozen=True)
class GkeCluster:
    name: str
    location: str
    status: str
    network: str  # network name (not URL)
    subnetwork: str  # subnet name
    subnet_region: str
    autopilot: bool
    default_max_pods_per_node: int  # default_max_pods_constraint.max_pods_per_node (110 when unset)
    pod_range_name: str  # ip_allocation_policy.cluster_secondary_range_name
    pod_cidr: Ipv4CidrOrEmpty  # ip_allocation_policy.cluster_ipv4_cidr_block
    services_range_name: str = ""
    services_cidr: Ipv4CidrOrEmpty = ""
    default_pod_range_utilization: float | None = None  # default_pod_ipv4_range_utilization
    additional_pod_ranges: tuple[PodRangeInfo, ...] = ()
    self_link: str = ""
    version: str = ""
    # private_cluster_config.master_ipv4_cidr_block: the control plane's /28, occupied like any range.
    master_ipv4_cidr_block: Ipv4CidrOrEmpty = ""
    # ipAllocationPolicy.useRoutes: a routes-based cluster (pods in `pod_cidr` = clusterIpv4Cidr, one route
    # per node, services in the last /20 of it); no secondary ranges, no in-place expansion.
    # (None, not False/0, when unset: the codec prunes None, so older snapshots keep their fingerprints)
    use_routes: bool | None = None
    node_ipv4_cidr_size: int | None = None  # nodeIpv4CidrSize: the per-node block of a routes-based cluster
    # networkConfig.datapathProvider (ADVANCED_DATAPATH: Dataplane V2); None when the API did not say.
    datapath_provider: str | None = None


@dataclass(frozen=True)
class Autoscaling:
    enabled: bool = False
    min_node_count: int = 0  # per zone
    max_node_count: int = 0  # per zone
    total_min_node_count: int = 0  # whole pool (location_policy ANY / BALANCED with totals)
    total_max_node_count: int = 0
    location_policy: str = ""


@dataclass(frozen=True)
class NodePool:
    name: str
    status: str
    version: str
    machine_type: str
    locations: tuple[str, ...]  # zones
    initial_node_count: int  # per zone
    max_pods_per_node: int
    pod_ipv4_cidr_size: int  # prefix length of each node's pod block, e.g. 24
    pod_range: str  # network_config.pod_range (secondary range name)
    pod_cidr: Ipv4CidrOrEmpty  # network_config.pod_ipv4_cidr_block
    autoscaling: Autoscaling = field(default_factory=Autoscaling)
    pod_range_utilization: float | None = None  # network_config.pod_ipv4_range_utilization
    instance_group_count: int = 0  # len(instance_group_urls): one per zone
    # The node pool's `config` (NodeConfig, REST JSON camelCase): every writable field that is set
    # (collect.NODE_CONFIG_KEYS: accelerators with their GPU driver config, taints, labels, service account,
    # scopes, metadata, tags, shielded/workload settings, reservation affinity, spot, ...), so a copy of the
    # pool keeps it; resourceLabels are kept apart below.
    config: dict[str, Any] = field(default_factory=dict)
    management: dict[str, Any] = field(default_factory=dict)  # autoUpgrade / autoRepair
    # config.resourceLabels: GCE labels on the pool's nodes; `cidrx-plan` marks a pool cidrx created.
    resource_labels: dict[str, str] = field(default_factory=dict)
    # NodePool-level settings a copy keeps (upgradeSettings, placementPolicy, queuedProvisioning, ... and
    # networkConfig without the pod range), REST JSON; collect.NODE_POOL_SETTING_KEYS.
    # None, not {} or (), when empty: the codec does not prune empties inside tuples (node_pools is one), so
    # an empty default would change the fingerprints of snapshots taken before these fields existed.
    settings: dict[str, Any] | None = None
    # NodeConfig fields the template sets that cidrx does not know and so cannot copy (the plan lists them).
    config_not_copied: tuple[str, ...] | None = None


@dataclass(frozen=True)
class SecondaryRange:
    range_name: str
    ip_cidr_range: Ipv4CidrOrEmpty


@dataclass(frozen=True)
class Subnetwork:
    name: str
    region: str
    network: str  # network name
    ip_cidr_range: Ipv4CidrOrEmpty
    secondary_ranges: tuple[SecondaryRange, ...] = ()
    fingerprint: str = ""  # required by subnetworks.patch; a stale one gets 412 (docs/cloud-facts.md)
    self_link: str = ""
    purpose: str = ""  # PRIVATE, REGIONAL_MANAGED_PROXY, ...: every purpose occupies its ranges all the same


@dataclass(frozen=True)
class PeeringRoute:
    """A route imported over a VPC peering (networks.listPeeringRoutes, direction INCOMING)."""

    dest_range: IpCidrOrEmpty  # IPv6 when the peering exchanges IPv6 routes
    peering: str
    region: str = ""


@dataclass(frozen=True)
class ReservedRange:
    """A global internal address range (globalAddresses, purpose VPC_PEERING): private services access."""

    name: str
    cidr: Ipv4AddrOrCidrOrEmpty  # address/prefix_length
    purpose: str


@dataclass(frozen=True)
class Route:
    """A route of the network (compute v1 routes.list), trimmed: GKE node routes, custom static routes,
    routes via VPN tunnels / interconnects. The default route and the subnets' own local routes are not kept
    (the first blocks nothing, the second repeat the subnets' ranges)."""

    dest_range: IpCidrOrEmpty
    name: str
    next_hop: str = ""  # which nextHop* field is set: instance, ip, gateway, vpnTunnel, ilb, peering, hub, ...


@dataclass(frozen=True)
class RoutesCluster:
    """A routes-based GKE cluster on the network (container clusters.list, location `-`): its whole
    clusterIpv4Cidr is routed to its nodes, whether or not a node holds each block yet."""

    project: str
    location: str
    name: str
    cluster_ipv4_cidr: Ipv4CidrOrEmpty


@dataclass(frozen=True)
class FirewallRule:
    """A VPC firewall rule of the cluster's network (compute v1 `Firewall`), trimmed to what decides whether
    it must learn a new pod range. Firewalls carry no fingerprint: the plan keeps the ranges it saw."""

    name: str
    project: str  # where the rule lives: the network's project (the host project for Shared VPC)
    direction: str = "INGRESS"  # INGRESS (sourceRanges) or EGRESS (destinationRanges)
    source_ranges: tuple[str, ...] = ()
    destination_ranges: tuple[str, ...] = ()
    action: str = "allow"  # allow (`allowed`) or deny (`denied`)
    disabled: bool = False
    priority: int = 1000
    target_tags: tuple[str, ...] = ()

    @property
    def ranges_field(self) -> str:
        """The REST field a pod range belongs in: who may send (ingress) or be reached (egress)."""
        return "destinationRanges" if self.direction == "EGRESS" else "sourceRanges"

    @property
    def ranges(self) -> tuple[str, ...]:
        return self.destination_ranges if self.direction == "EGRESS" else self.source_ranges


@dataclass(frozen=True)
class SubnetAddress:
    """An address taken from the cluster subnet's PRIMARY range: a VM's `networkIP` (compute v1 Instance
    networkInterfaces[]), an internal forwarding rule's `IPAddress` (internal load balancers) or a reserved
    INTERNAL address (compute v1 regional Address). GKE nodes take theirs from the same range, so these are
    what "IP space exhausted" means when the pod range still has room (docs/cloud-facts.md)."""

    address: str
    kind: str  # "instance", "forwarding-rule" or "address"
    name: str
    project: str = ""  # where the resource lives (a Shared VPC service project, or the host)
    # For an instance: the GKE cluster whose node it is (its `cluster-name` metadata, on `goog-gke-node`
    # instances); "" for any other VM and for the other kinds.
    gke_cluster: str = ""


@dataclass(frozen=True)
class GkeSection:
    project: str
    cluster: GkeCluster
    node_pools: tuple[NodePool, ...]
    subnet: Subnetwork  # the cluster's own subnet (with fingerprint), also listed in `subnets`
    subnets: tuple[Subnetwork, ...]  # every subnet of the network, all regions
    peerings: tuple[str, ...] = ()  # peering names on the network
    peering_routes: tuple[PeeringRoute, ...] = ()
    reserved_ranges: tuple[ReservedRange, ...] = ()
    # Shared VPC: the host project that owns the network and its subnets (None: `project` itself).
    network_project: str | None = None
    # None when there are none: an empty tuple would still be encoded (as []), changing old fingerprints.
    routes: tuple[Route, ...] | None = None
    routes_clusters: tuple[RoutesCluster, ...] | None = None

    @property
    def host_project(self) -> str:
        """The project that owns the network, its subnets and routes."""
        return self.network_project or self.project

    @property
    def shared_vpc(self) -> bool:
        return bool(self.network_project) and self.network_project != self.project

    # The network's firewall rules (firewalls.list filtered by network, in the network's project); None when
    # not collected (snapshots from before firewalls were read).
    firewalls: tuple[FirewallRule, ...] | None = None
    # What holds addresses of the cluster subnet's primary range (VMs, internal forwarding rules, reserved
    # internal addresses) in the projects cidrx can read (the cluster's, and the host's on Shared VPC);
    # None when not collected (snapshots from before cidrx read them) or when nothing holds one.
    subnet_addresses: tuple[SubnetAddress, ...] | None = None

    def invariant_problem(self) -> str | None:
        return first_problem(
            repeated("node_pools", self.node_pools, lambda p: p.name, "node pool"),
            repeated("subnets", self.subnets, lambda s: (s.region, s.name), "subnet (region, name)"),
        )
