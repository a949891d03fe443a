"""The EKS part of a snapshot: the cloud objects diagnosis and planning read, trimmed to the fields used.

Kept compact on purpose: snapshots are attached to bug reports and diffed in pull requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from cidrx.errors import InvalidInput
from cidrx.model.validation import Ipv4AddrOrCidr, Ipv4Cidr, first_problem, repeated

if TYPE_CHECKING:
    from cidrx.model.snapshot import Snapshot

# --- node provisioners besides managed node groups (self-managed groups, Karpenter, EKS Auto Mode) -----
# An expansion plan must bring new nodes in through whatever the cluster really uses, and capacity must
# count their nodes. The EksSection holds one `NodeProvisioners`, None when the cluster has none of them, so
# snapshots of clusters with managed node groups only are unchanged.

# AWS tag cidrx writes beside the plan tag on what an apply creates: when (UTC, ISO 8601, to the second). EC2
# gives subnets and VPC CIDR associations no creation time (Subnet, VpcCidrBlockAssociation in the EC2 API
# reference), so diagnose tells when a plan was applied from this tag.
APPLIED_AT_TAG = "cidrx.io/applied-at"

EC2_NODE_CLASS = "EC2NodeClass"  # karpenter.k8s.aws/v1 (Karpenter on EKS)
AUTO_NODE_CLASS = "NodeClass"  # eks.amazonaws.com/v1 (EKS Auto Mode)


@dataclass(frozen=True)
class SelectorTerm:
    """One term of a subnet/security group selector: by id, by name, or by tags (ANDed within a term)."""

    id: str = ""
    name: str = ""
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NodeClass:
    """A Karpenter EC2NodeClass or an EKS Auto Mode NodeClass: where its nodes (and, for Auto Mode, their
    pods) take addresses from."""

    kind: str  # EC2_NODE_CLASS | AUTO_NODE_CLASS
    name: str
    resource_version: str = ""
    subnet_terms: tuple[SelectorTerm, ...] = ()
    security_group_terms: tuple[SelectorTerm, ...] = ()
    pod_subnet_terms: tuple[SelectorTerm, ...] = ()  # Auto Mode only
    pod_security_group_terms: tuple[SelectorTerm, ...] = ()  # Auto Mode only
    subnets: tuple[str, ...] = ()  # status.subnets[].id: what the selector resolved to
    max_pods: int | None = None  # spec.kubelet.maxPods (EC2NodeClass)
    tags: dict[str, str] = field(default_factory=dict)  # spec.tags (EC2 tags of its instances)
    labels: dict[str, str] = field(default_factory=dict)
    role: str = ""  # spec.role: the IAM role of its nodes


@dataclass(frozen=True)
class NodePool:
    """A `karpenter.sh/v1` NodePool (Karpenter's, or Auto Mode's own) and the node class it launches with."""

    name: str
    node_class: str
    node_class_kind: str


@dataclass(frozen=True)
class KarpenterController:
    """The Karpenter controller Deployment and its RESERVED_ENIS setting (None: unset, Karpenter uses 0)."""

    namespace: str
    name: str
    container: str
    reserved_enis: int | None = None


@dataclass(frozen=True)
class SelfManagedGroup:
    """An Auto Scaling group (not a managed node group's) whose instances join the cluster."""

    name: str
    subnet_ids: tuple[str, ...]
    instance_types: tuple[str, ...]
    min_size: int
    max_size: int
    desired_size: int
    instances: int
    launch_template: dict[str, str] = field(default_factory=dict)  # id, name, version as the group names it
    launch_template_version: int | None = None  # the version number it resolves to
    max_pods: int | None = None  # --max-pods / maxPods read from the launch template's user data, if plain
    tags: dict[str, str] = field(default_factory=dict)
    nodes: tuple[str, ...] = ()  # the cluster nodes its in-service instances are


@dataclass(frozen=True)
class NodeProvisioners:
    auto_mode: bool = False  # the cluster's computeConfig.enabled
    self_managed: tuple[SelfManagedGroup, ...] = ()
    node_classes: tuple[NodeClass, ...] = ()
    node_pools: tuple[NodePool, ...] = ()
    karpenter: KarpenterController | None = None

    def invariant_problem(self) -> str | None:
        return first_problem(
            repeated("self_managed", self.self_managed, lambda g: g.name, "Auto Scaling group"),
            repeated("node_classes", self.node_classes, lambda c: (c.kind, c.name), "node class"),
            repeated("node_pools", self.node_pools, lambda p: p.name, "NodePool"),
        )

    def classes(self, kind: str) -> tuple[NodeClass, ...]:
        return tuple(c for c in self.node_classes if c.kind == kind)

    def pools_of(self, node_class: NodeClass) -> tuple[NodePool, ...]:
        return tuple(
            p for p in self.node_pools if p.node_class == node_class.name and p.node_class_kind == node_class.kind
        )


@dataclass(frozen=True)
class ClusterIssue:
    """One of DescribeCluster's `health.issues` (EKS API reference, `ClusterIssue`): e.g. code
    `InsufficientFreeAddresses` with the subnets it names in `resource_ids`."""

    code: str
    message: str = ""
    resource_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class EksCluster:
    name: str
    arn: str
    version: str
    status: str
    vpc_id: str
    subnet_ids: tuple[str, ...]
    cluster_security_group_id: str
    security_group_ids: tuple[str, ...] = ()
    auto_mode: bool | None = None  # computeConfig.enabled (EKS Auto Mode); None when off
    health_issues: tuple[ClusterIssue, ...] = ()  # health.issues (empty: healthy, or not reported)


@dataclass(frozen=True)
class VpcCidr:
    cidr: Ipv4Cidr
    association_id: str
    state: str  # associating | associated | disassociating | disassociated | failing | failed


@dataclass(frozen=True)
class Vpc:
    vpc_id: str
    primary_cidr: Ipv4Cidr
    cidrs: tuple[VpcCidr, ...]
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Subnet:
    subnet_id: str
    vpc_id: str
    cidr: Ipv4Cidr
    az: str
    az_id: str
    available_ips: int
    route_table_id: str | None  # explicit association, else the VPC's main table
    tags: dict[str, str] = field(default_factory=dict)
    # Addresses and /28 prefixes held by ENIs in this subnet, and CIDR reservations: with the
    # AWS-reserved addresses they are the occupied space for the free /28 count (prefix delegation).
    used: tuple[Ipv4AddrOrCidr, ...] = ()
    reservations: tuple[Ipv4Cidr, ...] = ()


@dataclass(frozen=True)
class RouteTable:
    route_table_id: str
    main: bool
    subnet_ids: tuple[str, ...]
    destinations: tuple[Ipv4Cidr, ...]  # IPv4 destination CIDRs of its routes
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PrefixList:
    """A managed prefix list some route refers to, with its entries (GetManagedPrefixListEntries)."""

    prefix_list_id: str
    cidrs: tuple[Ipv4Cidr, ...] = ()
    unreadable: str = ""  # why its entries could not be read, else ""


@dataclass(frozen=True)
class TgwRoute:
    cidr: Ipv4Cidr | None  # None when the route's destination is a prefix list
    type: str  # static | propagated
    state: str  # active | blackhole
    prefix_list_id: str = ""
    to_this_vpc: bool = False  # leads back to this VPC's own attachment (its own CIDRs)


@dataclass(frozen=True)
class TgwRouteTable:
    """The transit gateway route table associated with one of the VPC's attachments: where the VPC's traffic
    to the TGW is routed, so every range in it is in use somewhere."""

    attachment_id: str
    transit_gateway_id: str
    route_table_id: str
    routes: tuple[TgwRoute, ...] = ()
    unreadable: str = ""  # why the routes could not be read (e.g. a TGW shared by another account), else ""


@dataclass(frozen=True)
class IpamPool:
    """An AWS VPC IPAM pool that allocated one of this VPC's CIDRs, with its allocation rules."""

    pool_id: str
    state: str = ""
    locale: str = ""
    description: str = ""
    min_netmask: int | None = None  # AllocationMinNetmaskLength: the largest block it hands out
    max_netmask: int | None = None  # AllocationMaxNetmaskLength: the smallest block
    default_netmask: int | None = None
    resource_tags: dict[str, str] | None = None  # AllocationResourceTags a resource must carry
    cidrs: tuple[Ipv4Cidr, ...] = ()  # provisioned to the pool (GetIpamPoolCidrs)
    allocations: tuple[Ipv4Cidr, ...] = ()  # every allocation from it (GetIpamPoolAllocations)
    vpc_cidrs: tuple[Ipv4Cidr, ...] = ()  # the allocations that are this VPC's CIDRs


@dataclass(frozen=True)
class Peering:
    peering_id: str
    status: str
    peer_vpc_id: str
    cidrs: tuple[Ipv4Cidr, ...]  # the other side's CIDRs: occupied for us


@dataclass(frozen=True)
class Nodegroup:
    name: str
    status: str
    subnet_ids: tuple[str, ...]
    instance_types: tuple[str, ...]
    min_size: int
    max_size: int
    desired_size: int
    node_role: str
    ami_type: str = ""
    capacity_type: str = ""
    disk_size: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    launch_template: dict[str, str] = field(default_factory=dict)  # id/name/version when used
    release_version: str = ""
    health_issues: tuple[str, ...] = ()  # nodegroup.health.issues[].code, e.g. InsufficientFreeAddresses


@dataclass(frozen=True)
class InstanceType:
    name: str
    vcpus: int
    max_enis: int  # NetworkInfo.MaximumNetworkInterfaces: every network card together
    ips_per_eni: int
    hypervisor: str  # "nitro" | "xen" | "" (bare metal reports none)
    bare_metal: bool = False
    # NetworkCards[DefaultNetworkCardIndex].MaximumNetworkInterfaces: the ENIs the VPC CNI uses for pods.
    # None in snapshots taken before it was collected (single-card types: the same as max_enis).
    default_card_enis: int | None = None

    @property
    def pod_enis(self) -> int:
        """ENIs the VPC CNI may attach: those of the default network card only (docs/cloud-facts.md, EKS)."""
        return self.default_card_enis if self.default_card_enis is not None else self.max_enis


@dataclass(frozen=True)
class Addon:
    name: str
    version: str
    status: str
    configuration_values: str = ""  # JSON text as EKS stores it
    # DescribeAddonConfiguration's configurationSchema (JSON Schema text) for this add-on version: what
    # EKS accepts as configurationValues. "" when not collected (older snapshots, no permission).
    configuration_schema: str = ""


@dataclass(frozen=True)
class InstanceEnis:
    """The ENIs attached to one EC2 instance of the VPC (DescribeNetworkInterfaces, grouped by attachment):
    with the instance type's maximum this is how many more ENIs the node can attach (subnet discovery only
    places new ENIs). The primary ENI (device index 0) names the instance's address and node subnet."""

    instance_id: str
    primary_ip: str
    subnet_id: str
    enis: int


@dataclass(frozen=True)
class EksSection:
    region: str
    cluster: EksCluster
    vpc: Vpc
    subnets: tuple[Subnet, ...]  # every subnet of the VPC
    route_tables: tuple[RouteTable, ...]
    peerings: tuple[Peering, ...]
    nodegroups: tuple[Nodegroup, ...]
    instance_types: tuple[InstanceType, ...]
    vpc_cni_addon: Addon | None
    vpc_cidr_quota: int = 5
    instance_enis: tuple[InstanceEnis, ...] = ()
    # Fields added later default to None (collect writes None for "none"): the codec prunes None, so snapshots
    # without them keep their fingerprints. Read them through the properties below.
    # Security groups of the nodes' primary ENIs (device index 0): what ENIConfigs fall back to when EKS
    # reports neither a cluster security group nor cluster security groups.
    node_security_groups: tuple[str, ...] | None = None
    tgw_route_tables: tuple[TgwRouteTable, ...] | None = None
    prefix_lists: tuple[PrefixList, ...] | None = None
    # Route table id -> the managed prefix lists its routes send somewhere (DestinationPrefixListId), and ->
    # the destinations a virtual private gateway propagated into it (Origin EnableVgwRoutePropagation).
    route_prefix_lists: dict[str, tuple[str, ...]] | None = None
    vgw_routes: dict[str, tuple[Ipv4Cidr, ...]] | None = None
    ipam_pools: tuple[IpamPool, ...] | None = None
    ipam_unreadable: str | None = None  # why IPAM pools could not be read (best effort)
    # Self-managed groups, Karpenter and Auto Mode (None: the cluster uses managed node groups only).
    provisioners: NodeProvisioners | None = None

    def invariant_problem(self) -> str | None:
        return first_problem(
            repeated("subnets", self.subnets, lambda s: s.subnet_id, "subnet"),
            repeated("route_tables", self.route_tables, lambda r: r.route_table_id, "route table"),
            repeated("peerings", self.peerings, lambda p: p.peering_id, "peering"),
            repeated("nodegroups", self.nodegroups, lambda n: n.name, "node group"),
            repeated("instance_types", self.instance_types, lambda t: t.name, "instance type"),
        )


def eks_section(snapshot: Snapshot) -> EksSection:
    """The snapshot's EKS section; a snapshot taken for another provider is refused (exit 2)."""
    eks: EksSection | None = snapshot.eks
    if eks is None:
        raise InvalidInput("this snapshot has no EKS section; it was taken for another provider")
    return eks
