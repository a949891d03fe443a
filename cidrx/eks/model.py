"""The EKS part of a snapshot: the cloud objects diagnosis and planning read, trimmed to the fields used.

Kept compact on purpose: snapshots are attached to bug reports and diffed in pull requests.
"""

from __future__ import annotations

from dataclasses import dataclass, field


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


@dataclass(frozen=True)
class VpcCidr:
    cidr: str
    association_id: str
    state: str  # associating | associated | disassociating | disassociated | failing | failed


@dataclass(frozen=True)
class Vpc:
    vpc_id: str
    primary_cidr: str
    cidrs: tuple[VpcCidr, ...]
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Subnet:
    subnet_id: str
    vpc_id: str
    cidr: str
    az: str
    az_id: str
    available_ips: int
    route_table_id: str | None  # explicit association, else the VPC's main table
    tags: dict[str, str] = field(default_factory=dict)
    # Addresses and /28 prefixes held by ENIs in this subnet, and CIDR reservations: with the
    # AWS-reserved addresses they are the occupied space for the free /28 count (prefix delegation).
    used: tuple[str, ...] = ()
    reservations: tuple[str, ...] = ()


@dataclass(frozen=True)
class RouteTable:
    route_table_id: str
    main: bool
    subnet_ids: tuple[str, ...]
    destinations: tuple[str, ...]  # IPv4 destination CIDRs of its routes
    tags: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Peering:
    peering_id: str
    status: str
    peer_vpc_id: str
    cidrs: tuple[str, ...]  # the other side's CIDRs: occupied for us


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
    max_enis: int
    ips_per_eni: int
    hypervisor: str  # "nitro" | "xen" | "" (bare metal reports none)
    bare_metal: bool = False


@dataclass(frozen=True)
class Addon:
    name: str
    version: str
    status: str
    configuration_values: str = ""  # JSON text as EKS stores it


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
