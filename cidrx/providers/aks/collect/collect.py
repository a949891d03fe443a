"""Collect an AKS target through ARM: the managed cluster's network profile, its agent pools, the VNet their
subnets are in (address spaces, subnets with their IP configurations, delegations and route tables, peerings
with the peered VNets' address spaces) and the routes of those route tables.

The ARM JSON (azure-rest-api-specs shapes, docs/cloud-facts.md "AKS") is turned into the frozen model here and
nowhere else.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from cidrx.errors import InvalidInput
from cidrx.providers.aks.api import AksApi, Json, parse_id
from cidrx.providers.aks.facts.pool_copy import copied_properties
from cidrx.providers.aks.model import (
    AgentPool,
    AksCluster,
    AksSection,
    Delegation,
    Peering,
    Route,
    RouteTable,
    Subnet,
    VirtualNetwork,
)


def _props(obj: Json) -> dict[str, Any]:
    return dict(obj.get("properties") or {})


def cluster_from(obj: Json) -> AksCluster:
    p = _props(obj)
    net = p.get("networkProfile") or {}
    return AksCluster(
        id=str(obj.get("id") or ""),
        name=str(obj.get("name") or ""),
        location=str(obj.get("location") or ""),
        provisioning_state=str(p.get("provisioningState") or ""),
        kubernetes_version=str(p.get("kubernetesVersion") or ""),
        network_plugin=str(net.get("networkPlugin") or "kubenet"),
        network_plugin_mode=str(net.get("networkPluginMode") or ""),
        pod_cidr=str(net.get("podCidr") or ""),
        service_cidr=str(net.get("serviceCidr") or ""),
        dns_service_ip=str(net.get("dnsServiceIP") or ""),
        node_resource_group=str(p.get("nodeResourceGroup") or ""),
    )


def pool_from(obj: Json) -> AgentPool:
    p = _props(obj)
    return AgentPool(
        name=str(obj.get("name") or ""),
        mode=str(p.get("mode") or "User"),
        vm_size=str(p.get("vmSize") or ""),
        os_type=str(p.get("osType") or "Linux"),
        count=int(p.get("count") or 0),
        max_pods=int(p.get("maxPods") or 0),
        vnet_subnet_id=str(p.get("vnetSubnetID") or ""),
        pod_subnet_id=str(p.get("podSubnetID") or ""),
        enable_auto_scaling=bool(p.get("enableAutoScaling")),
        min_count=p.get("minCount"),
        max_count=p.get("maxCount"),
        provisioning_state=str(p.get("provisioningState") or ""),
        pod_ip_allocation_mode=str(p.get("podIPAllocationMode") or ""),
        availability_zones=tuple(str(z) for z in p.get("availabilityZones") or ()),
        tags={str(k): str(v) for k, v in (p.get("tags") or {}).items()},
        etag=str(obj.get("etag") or p.get("eTag") or ""),
        properties=copied_properties(p),
    )


def _created_at(obj: Json) -> str | None:
    """systemData.createdAt of an ARM resource (a string in REST JSON; the SDK's model may give a datetime)."""
    value = (obj.get("systemData") or {}).get("createdAt")
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    return str(value) if value else None


def subnet_from(obj: Json) -> Subnet:
    p = _props(obj)
    prefix = p.get("addressPrefix") or next(iter(p.get("addressPrefixes") or ()), "")
    return Subnet(
        id=str(obj.get("id") or ""),
        name=str(obj.get("name") or ""),
        address_prefix=str(prefix),
        ip_configurations=len(p.get("ipConfigurations") or ()),
        delegations=tuple(
            Delegation(str(d.get("name") or ""), str((d.get("properties") or {}).get("serviceName") or ""))
            for d in p.get("delegations") or ()
        ),
        route_table_id=str((p.get("routeTable") or {}).get("id") or ""),
        network_security_group_id=str((p.get("networkSecurityGroup") or {}).get("id") or ""),
        provisioning_state=str(p.get("provisioningState") or ""),
        etag=str(obj.get("etag") or ""),
    )


def peering_from(obj: Json) -> Peering:
    p = _props(obj)
    remote = p.get("remoteAddressSpace") or p.get("remoteVirtualNetworkAddressSpace") or {}
    return Peering(
        name=str(obj.get("name") or ""),
        remote_virtual_network_id=str((p.get("remoteVirtualNetwork") or {}).get("id") or ""),
        remote_address_prefixes=tuple(str(a) for a in remote.get("addressPrefixes") or ()),
        peering_state=str(p.get("peeringState") or ""),
        peering_sync_level=str(p.get("peeringSyncLevel") or ""),
        etag=str(obj.get("etag") or ""),
    )


def vnet_from(obj: Json) -> VirtualNetwork:
    p = _props(obj)
    parts = parse_id(str(obj.get("id") or ""))
    return VirtualNetwork(
        id=str(obj.get("id") or ""),
        name=str(obj.get("name") or ""),
        resource_group=parts["rg"],
        location=str(obj.get("location") or ""),
        address_prefixes=tuple(str(a) for a in (p.get("addressSpace") or {}).get("addressPrefixes") or ()),
        subnets=tuple(subnet_from(s) for s in p.get("subnets") or ()),
        peerings=tuple(peering_from(x) for x in p.get("virtualNetworkPeerings") or ()),
        etag=str(obj.get("etag") or ""),
    )


def route_table_from(obj: Json) -> RouteTable:
    p = _props(obj)
    routes = tuple(
        Route(
            str(r.get("name") or ""),
            str((r.get("properties") or {}).get("addressPrefix") or ""),
            str((r.get("properties") or {}).get("nextHopType") or ""),
        )
        for r in p.get("routes") or ()
    )
    return RouteTable(str(obj.get("id") or ""), str(obj.get("name") or ""), routes)


def collect_aks(api: AksApi, resource_group: str, cluster_name: str) -> AksSection:
    cluster = cluster_from(api.get_cluster(resource_group, cluster_name))
    raw_pools = api.list_agent_pools(resource_group, cluster_name)
    pools = tuple(sorted((pool_from(p) for p in raw_pools), key=lambda p: p.name))
    created = {str(p.get("name") or ""): when for p in raw_pools if (when := _created_at(p))}
    subnet_ids = [i for p in pools for i in (p.vnet_subnet_id, p.pod_subnet_id) if i]
    vnet = None
    route_tables: list[RouteTable] = []
    if subnet_ids:
        vnets = {(parse_id(i)["rg"], parse_id(i)["name"]) for i in subnet_ids}
        if len(vnets) > 1:
            names = ", ".join(sorted(f"{rg}/{n}" for rg, n in vnets))
            raise InvalidInput(
                f"cluster {cluster_name}'s pools use subnets of several VNets ({names}); cidrx reads one"
            )
        rg, name = next(iter(vnets))
        raw = api.get_vnet(rg, name)
        vnet = vnet_from(raw)
        # A peering's own copy of the remote space can lag; read the remote VNet when it is readable.
        peerings = []
        for peering in vnet.peerings:
            remote = (
                api.get_peering_remote(peering.remote_virtual_network_id)
                if not peering.remote_address_prefixes
                else None
            )
            if remote is not None:
                spaces = ((remote.get("properties") or {}).get("addressSpace") or {}).get("addressPrefixes") or ()
                peering = Peering(**{**peering.__dict__, "remote_address_prefixes": tuple(spaces)})
            peerings.append(peering)
        vnet = VirtualNetwork(**{**vnet.__dict__, "peerings": tuple(peerings)})
        for table_id in sorted({s.route_table_id for s in vnet.subnets if s.route_table_id}):
            parts = parse_id(table_id)
            table = api.get_route_table(parts["rg"], parts["name"])
            if table is not None:
                route_tables.append(route_table_from(table))
    return AksSection(
        api.subscription, resource_group, cluster, pools, vnet, tuple(route_tables), pools_created_at=created
    )
