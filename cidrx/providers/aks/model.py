"""The AKS part of a snapshot: the managed cluster's network profile, its agent pools, the virtual network they
live in (address spaces, every subnet with how many addresses it hands out, peerings) and the route tables on
those subnets, trimmed to the fields diagnosis and planning read.

Field names follow the ARM REST resources (Microsoft.ContainerService managedClusters / agentPools,
Microsoft.Network virtualNetworks / subnets / routeTables) in snake_case, so a reader can look them up in
Azure/azure-rest-api-specs (docs/cloud-facts.md, "AKS"). CIDRs are strings; ids are full ARM resource ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from cidrx.model.validation import Ipv4CidrOrEmpty, first_problem, repeated


@dataclass(frozen=True)
class AksCluster:
    """managedClusters GET: what of `properties.networkProfile` decides where pods take addresses from."""

    id: str
    name: str
    location: str
    provisioning_state: str
    kubernetes_version: str
    network_plugin: str  # azure | kubenet | none
    network_plugin_mode: str = ""  # overlay (Azure CNI Overlay) or "" (node subnet / pod subnet)
    pod_cidr: Ipv4CidrOrEmpty = ""  # Overlay and kubenet only
    service_cidr: Ipv4CidrOrEmpty = ""
    dns_service_ip: str = ""
    node_resource_group: str = ""


@dataclass(frozen=True)
class AgentPool:
    """An agent pool (managedClusters/agentPools GET), with its copyable configuration kept as REST JSON."""

    name: str
    mode: str  # System | User
    vm_size: str
    os_type: str
    count: int
    max_pods: int
    vnet_subnet_id: str = ""  # empty: the AKS-managed VNet
    pod_subnet_id: str = ""  # set: Azure CNI with a pod subnet (dynamic or static block allocation)
    enable_auto_scaling: bool = False
    min_count: int | None = None
    max_count: int | None = None
    provisioning_state: str = ""
    pod_ip_allocation_mode: str = ""  # DynamicIndividual (default) | StaticBlock
    availability_zones: tuple[str, ...] = ()
    tags: dict[str, str] = field(default_factory=dict)
    etag: str = ""
    # Every writable property the pool sets (REST JSON camelCase, facts.pool_copy.COPIED), so a copy keeps
    # VM size, OS, zones, labels, taints, mode, max pods and the rest.
    properties: dict[str, Any] = field(default_factory=dict)

    @property
    def max_nodes(self) -> int:
        """The most nodes the pool may have: the autoscaler's max count, else its count."""
        return self.max_count if self.enable_auto_scaling and self.max_count else self.count


@dataclass(frozen=True)
class Delegation:
    name: str
    service_name: str


@dataclass(frozen=True)
class Subnet:
    """A subnet of the VNet. `ip_configurations` counts the NIC IP configurations in it (each takes one
    address: a node's primary address, and with Azure CNI every pod address too)."""

    id: str
    name: str
    address_prefix: Ipv4CidrOrEmpty
    ip_configurations: int = 0
    delegations: tuple[Delegation, ...] = ()
    route_table_id: str = ""
    network_security_group_id: str = ""
    provisioning_state: str = ""
    etag: str = ""


@dataclass(frozen=True)
class Peering:
    """A virtualNetworkPeering of the VNet: the remote VNet's address space is routed, so it is occupied."""

    name: str
    remote_virtual_network_id: str
    remote_address_prefixes: tuple[str, ...] = ()
    peering_state: str = ""
    peering_sync_level: str = ""
    etag: str = ""


@dataclass(frozen=True)
class VirtualNetwork:
    id: str
    name: str
    resource_group: str
    location: str
    address_prefixes: tuple[str, ...]
    subnets: tuple[Subnet, ...]
    peerings: tuple[Peering, ...] = ()
    etag: str = ""

    def subnet(self, subnet_id: str) -> Subnet | None:
        return next((s for s in self.subnets if s.id.lower() == subnet_id.lower()), None)


@dataclass(frozen=True)
class Route:
    name: str
    address_prefix: str  # a CIDR or a service tag (only CIDRs occupy space)
    next_hop_type: str = ""


@dataclass(frozen=True)
class RouteTable:
    """A route table attached to one of the VNet's subnets (kubenet's node routes live in one)."""

    id: str
    name: str
    routes: tuple[Route, ...] = ()


@dataclass(frozen=True)
class AksSection:
    subscription: str
    resource_group: str
    cluster: AksCluster
    agent_pools: tuple[AgentPool, ...]
    # The VNet the pools' subnets are in (None: the pools use the AKS-managed VNet, which cidrx does not read).
    vnet: VirtualNetwork | None = None
    route_tables: tuple[RouteTable, ...] = ()
    # Agent pool name -> ARM's systemData.createdAt (RFC 3339) for the pools whose API answer carries it. Kept here,
    # not on AgentPool: fields of tuple items are fingerprinted even when empty, and an empty dict here is not, so
    # snapshots taken before this field keep their fingerprints.
    pools_created_at: dict[str, str] = field(default_factory=dict)

    def pool(self, name: str) -> AgentPool | None:
        return next((p for p in self.agent_pools if p.name == name), None)

    def invariant_problem(self) -> str | None:
        return first_problem(repeated("agent_pools", self.agent_pools, lambda p: p.name, "agent pool"))
