"""Collect the GKE section of a snapshot: read the cluster and everything that occupies address space in
its VPC network through `GkeApi`, and trim the REST JSON into the frozen model of `cidrx.providers.gke.model`.

Split in two on purpose: small pure `*_from` converters that turn one REST JSON dict into one model
object (unit-testable from JSON captured from Google), and `collect_gke`, which only orders the calls.
The number of calls is one per page of each list plus one per peering, never one per subnet: the
aggregated subnet list already carries each subnet's fingerprint. Output is sorted so the snapshot
fingerprint does not depend on the order the API answered in.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from ipaddress import ip_network
from typing import Any

from cidrx import netmath
from cidrx.providers.gke.api import GkeApi, short_name
from cidrx.providers.gke.model import (
    Autoscaling,
    FirewallRule,
    GkeCluster,
    GkeSection,
    NodePool,
    PeeringRoute,
    PodRangeInfo,
    ReservedRange,
    Route,
    RoutesCluster,
    SecondaryRange,
    SubnetAddress,
    Subnetwork,
)

Json = Mapping[str, Any]

DEFAULT_MAX_PODS_PER_NODE = 110  # GKE Standard's default when no maxPodsConstraint is set (docs/cloud-facts.md)

# NodeConfig fields a copy of the pool keeps: every writable field of container v1 `NodeConfig` (discovery
# document revision 20261027, googleapiclient/discovery_cache/documents/container.v1.json; the test
# tests/providers/gke/test_pool_copy.py compares this list with the shipped document). Left out: `effectiveCgroupMode`
# (output only) and `resourceLabels` (kept as NodePool.resource_labels, where cidrx adds its plan label).
NODE_CONFIG_KEYS = (
    "accelerators",
    "advancedMachineFeatures",
    "bootDisk",
    "bootDiskKmsKey",
    "confidentialNodes",
    "consolidationDelay",
    "containerdConfig",
    "diskSizeGb",
    "diskType",
    "enableConfidentialStorage",
    "ephemeralStorageLocalSsdConfig",
    "fastSocket",
    "flexStart",
    "gcfsConfig",
    "gpuDirectConfig",
    "gvnic",
    "imageType",
    "kubeletConfig",
    "labels",
    "linuxNodeConfig",
    "localNvmeSsdBlockConfig",
    "localSsdCount",
    "localSsdEncryptionMode",
    "loggingConfig",
    "machineType",
    "maxRunDuration",
    "metadata",
    "minCpuPlatform",
    "nodeGroup",
    "nodeImageConfig",
    "oauthScopes",
    "preemptible",
    "reservationAffinity",
    "resourceManagerTags",
    "sandboxConfig",
    "secondaryBootDiskUpdateStrategy",
    "secondaryBootDisks",
    "serviceAccount",
    "shieldedInstanceConfig",
    "soleTenantConfig",
    "spot",
    "storagePools",
    "tags",
    "taintConfig",
    "taints",
    "windowsNodeConfig",
    "workloadMetadataConfig",
)
# NodeConfig fields that are not copied on purpose (output only, or handled on their own).
NODE_CONFIG_NOT_COPIED = ("effectiveCgroupMode", "resourceLabels")
# Writable NodePool fields (same document) a copy keeps besides config, autoscaling, management and
# locations; `name`, `networkConfig.podRange` and `maxPodsConstraint` are the ones a copy changes.
NODE_POOL_SETTING_KEYS = (
    "upgradeSettings",
    "placementPolicy",
    "queuedProvisioning",
    "bestEffortProvisioning",
    "nodeDrainConfig",
    "maintenancePolicy",
)
# NodeNetworkConfig fields that describe the template's own pod range (or are output only): the copy
# gets its own range instead. The rest (private nodes, additional networks, bandwidth tier) is kept.
POD_RANGE_NETWORK_KEYS = (
    "podRange",
    "podIpv4CidrBlock",
    "podIpv4RangeUtilization",
    "createPodRange",
    "networkTierConfig",
)


def firewall_from(d: Mapping[str, Any], project: str) -> FirewallRule:
    """compute v1 `Firewall` (REST JSON) of `project`."""
    return FirewallRule(
        name=str(d.get("name", "")),
        project=project,
        direction=str(d.get("direction") or "INGRESS"),
        source_ranges=tuple(str(r) for r in d.get("sourceRanges") or ()),
        destination_ranges=tuple(str(r) for r in d.get("destinationRanges") or ()),
        action="deny" if d.get("denied") else "allow",
        disabled=bool(d.get("disabled", False)),
        priority=int(d.get("priority", 1000) or 0),
        target_tags=tuple(str(t) for t in d.get("targetTags") or ()),
    )


def _set(value: Any) -> bool:
    """REST JSON omits unset fields; an empty list or object (`"accelerators": []`, `"windowsNodeConfig": {}`
    in real dumps) says the same, so it is not kept."""
    return value is not None and value != [] and value != {}


_REGION_IN_REF = re.compile(r"(?:^|/)regions/([^/]+)")
_PROJECT_IN_REF = re.compile(r"(?:^|/)projects/([^/]+)/")
_ZONE = re.compile(r"^([a-z]+-[a-z]+\d+)-[a-z]$")


def _int(value: Any, default: int = 0) -> int:
    """REST JSON int64 fields arrive as strings ("110")."""
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


def _net_key(cidr: str) -> tuple[int, int, int, str]:
    try:
        net = ip_network(cidr, strict=False)
    except ValueError:
        return (9, 0, 0, cidr)
    return (net.version, int(net.network_address), net.prefixlen, cidr)


def region_of(location: str) -> str:
    """`australia-southeast1-b` -> `australia-southeast1`; a region stays itself."""
    found = _ZONE.match(location)
    return found.group(1) if found else location


def _region_in(ref: str) -> str:
    found = _REGION_IN_REF.search(ref or "")
    return found.group(1) if found else ""


def _project_in(ref: str) -> str:
    found = _PROJECT_IN_REF.search(ref or "")
    return found.group(1) if found else ""


# -- converters (pure) ------------------------------------------------------------------------------


def _policy_cidr(d: Json, which: str) -> str:
    """ipAllocationPolicy's `<which>Ipv4CidrBlock` (or the older `<which>Ipv4Cidr`); for a routes-based
    cluster, the cluster's own `<which>Ipv4Cidr` (there the policy may say nothing)."""
    policy = d.get("ipAllocationPolicy") or {}
    own = d.get(f"{which}Ipv4Cidr") if uses_routes(d) else ""
    return str(policy.get(f"{which}Ipv4CidrBlock") or policy.get(f"{which}Ipv4Cidr") or own or "")


def cluster_from(d: Json) -> GkeCluster:
    """container v1 `Cluster` (REST JSON)."""
    net_cfg = d.get("networkConfig") or {}
    policy = d.get("ipAllocationPolicy") or {}
    subnet_ref = str(net_cfg.get("subnetwork") or "")
    location = str(d.get("location") or d.get("zone") or "")
    additional = policy.get("additionalPodRangesConfig") or {}
    info = {str(i.get("rangeName")): _float(i.get("utilization")) for i in additional.get("podRangeInfo") or ()}
    names = [str(n) for n in additional.get("podRangeNames") or ()]
    names += [n for n in info if n not in names]
    return GkeCluster(
        name=str(d["name"]),
        location=location,
        status=str(d.get("status", "")),
        network=short_name(str(d.get("network") or net_cfg.get("network") or "default")),
        subnetwork=short_name(str(d.get("subnetwork") or subnet_ref or "default")),
        subnet_region=_region_in(subnet_ref) or region_of(location),
        autopilot=bool((d.get("autopilot") or {}).get("enabled", False)),
        default_max_pods_per_node=_int(
            (d.get("defaultMaxPodsConstraint") or {}).get("maxPodsPerNode"), DEFAULT_MAX_PODS_PER_NODE
        )
        or DEFAULT_MAX_PODS_PER_NODE,
        pod_range_name=str(policy.get("clusterSecondaryRangeName", "")),
        pod_cidr=_policy_cidr(d, "cluster"),
        services_range_name=str(policy.get("servicesSecondaryRangeName", "")),
        services_cidr=_policy_cidr(d, "services"),
        default_pod_range_utilization=_float(policy.get("defaultPodIpv4RangeUtilization")),
        additional_pod_ranges=tuple(PodRangeInfo(range_name=n, utilization=info.get(n)) for n in sorted(names)),
        self_link=str(d.get("selfLink", "")),
        version=str(d.get("currentMasterVersion", "")),
        master_ipv4_cidr_block=str((d.get("privateClusterConfig") or {}).get("masterIpv4CidrBlock", "")),
        use_routes=True if uses_routes(d) else None,
        node_ipv4_cidr_size=(_int(d.get("nodeIpv4CidrSize")) or None) if uses_routes(d) else None,
        datapath_provider=str(net_cfg.get("datapathProvider") or "") or None,
    )


def uses_routes(d: Json) -> bool:
    """A routes-based cluster: ipAllocationPolicy.useRoutes.

    gcpdiag test-data/gke1/json-dumps/container-clusters.json (commit 06ec8584) shows both kinds side by
    side: routes-based `gke2` has `{"useRoutes": true}` and only `clusterIpv4Cidr`, VPC-native `gke1`
    `useIpAliases` with secondary range names."""
    policy = d.get("ipAllocationPolicy") or {}
    return bool(policy.get("useRoutes"))


def network_project_of(d: Json) -> str:
    """The project named by the cluster's `networkConfig.network` (projects/HOST/global/networks/N): under
    Shared VPC the host project, not the cluster's (gcpdiag gcpdiag/queries/gke.py `Cluster.network` reads
    it the same way)."""
    net_cfg = d.get("networkConfig") or {}
    return _project_in(str(net_cfg.get("network") or "")) or _project_in(str(net_cfg.get("subnetwork") or ""))


def autoscaling_from(d: Json | None) -> Autoscaling:
    """container v1 `NodePoolAutoscaling`."""
    a = d or {}
    return Autoscaling(
        enabled=bool(a.get("enabled", False)),
        min_node_count=_int(a.get("minNodeCount")),
        max_node_count=_int(a.get("maxNodeCount")),
        total_min_node_count=_int(a.get("totalMinNodeCount")),
        total_max_node_count=_int(a.get("totalMaxNodeCount")),
        location_policy=str(a.get("locationPolicy", "")),
    )


def node_pool_from(d: Json, default_max_pods: int = DEFAULT_MAX_PODS_PER_NODE) -> NodePool:
    """container v1 `NodePool`; `default_max_pods` is the cluster's default_max_pods_constraint."""
    config = d.get("config") or {}
    net = d.get("networkConfig") or {}
    max_pods = _int((d.get("maxPodsConstraint") or {}).get("maxPodsPerNode")) or default_max_pods
    size = _int(d.get("podIpv4CidrSize")) or netmath.gke_pod_block_prefix(max_pods)
    return NodePool(
        name=str(d["name"]),
        status=str(d.get("status", "")),
        version=str(d.get("version", "")),
        machine_type=str(config.get("machineType", "")),
        locations=tuple(sorted(str(z) for z in d.get("locations") or ())),
        initial_node_count=_int(d.get("initialNodeCount")),
        max_pods_per_node=max_pods,
        pod_ipv4_cidr_size=size,
        pod_range=str(net.get("podRange", "")),
        pod_cidr=str(net.get("podIpv4CidrBlock", "")),
        autoscaling=autoscaling_from(d.get("autoscaling")),
        pod_range_utilization=_float(net.get("podIpv4RangeUtilization")),
        instance_group_count=len(d.get("instanceGroupUrls") or ()),
        config={k: config[k] for k in NODE_CONFIG_KEYS if k in config and _set(config[k])},
        management=dict(d.get("management") or {}),
        resource_labels={str(k): str(v) for k, v in (config.get("resourceLabels") or {}).items()},
        settings=pool_settings_from(d) or None,
        config_not_copied=_unknown_config(config) or None,
    )


def _unknown_config(config: Json) -> tuple[str, ...]:
    known = (*NODE_CONFIG_KEYS, *NODE_CONFIG_NOT_COPIED)
    return tuple(sorted(k for k in config if k not in known and _set(config[k])))


def pool_settings_from(d: Json) -> dict[str, Any]:
    """The NodePool-level settings a copy keeps (upgrade, placement, ...) and its network settings other
    than its pod range, as REST JSON."""
    out = {k: d[k] for k in NODE_POOL_SETTING_KEYS if k in d and _set(d[k])}
    net = {k: v for k, v in (d.get("networkConfig") or {}).items() if k not in POD_RANGE_NETWORK_KEYS and _set(v)}
    if net:
        out["networkConfig"] = net
    return out


def subnet_from(d: Json) -> Subnetwork:
    """compute v1 `Subnetwork`; region and network become names."""
    ranges = (
        SecondaryRange(range_name=str(r.get("rangeName", "")), ip_cidr_range=str(r.get("ipCidrRange", "")))
        for r in d.get("secondaryIpRanges") or ()
    )
    return Subnetwork(
        name=str(d["name"]),
        region=short_name(str(d.get("region") or "")) or _region_in(str(d.get("selfLink", ""))),
        network=short_name(str(d.get("network") or "")),
        ip_cidr_range=str(d.get("ipCidrRange", "")),
        secondary_ranges=tuple(sorted(ranges, key=lambda r: r.range_name)),
        fingerprint=str(d.get("fingerprint", "")),
        self_link=str(d.get("selfLink", "")),
        purpose=str(d.get("purpose", "")),
    )


# The next-hop fields of a compute v1 Route (discovery document `Route`), in the order they are checked.
_NEXT_HOPS = (
    "nextHopInstance",
    "nextHopIp",
    "nextHopVpnTunnel",
    "nextHopInterconnectAttachment",
    "nextHopIlb",
    "nextHopPeering",
    "nextHopHub",
    "nextHopGateway",
    "nextHopNetwork",
)
# Their kinds as Route.next_hop says them, one string each for tens of thousands of routes.
_HOP_KINDS = {k: k[len("nextHop") :].lower() for k in _NEXT_HOPS}


def route_from(d: Json) -> Route | None:
    """compute v1 `Route` (routes.list); None for what occupies nothing new: a default route (0.0.0.0/0,
    ::/0) and a subnet's local route (nextHopNetwork, "Default local route to the subnetwork ...": the
    subnet's own range, listed with the subnets). gcpdiag test-data/gke1/json-dumps/compute-network-routes.json
    and gce1/json-dumps/compute-network-routes.json (commit 06ec8584) show these shapes."""
    dest = str(d.get("destRange") or "")
    if not dest or dest.endswith("/0"):
        return None
    hop = next((k for k in _NEXT_HOPS if d.get(k)), "")
    if hop == "nextHopNetwork":
        return None
    return Route(dest_range=dest, name=str(d.get("name", "")), next_hop=_HOP_KINDS[hop] if hop else "")


def routes_cluster_from(d: Json, project: str) -> RoutesCluster:
    """A routes-based cluster of clusters.list: where it is and its whole clusterIpv4Cidr."""
    return RoutesCluster(
        project=project,
        location=str(d.get("location") or d.get("zone") or ""),
        name=str(d.get("name", "")),
        cluster_ipv4_cidr=str(d.get("clusterIpv4Cidr") or ""),
    )


def peering_route_from(d: Json, peering: str) -> PeeringRoute:
    """compute v1 `ExchangedPeeringRoute` (networks.listPeeringRoutes)."""
    return PeeringRoute(dest_range=str(d.get("destRange", "")), peering=peering, region=str(d.get("nextHopRegion", "")))


def reserved_range_from(d: Json) -> ReservedRange:
    """compute v1 global `Address` with purpose VPC_PEERING: `address` + `prefixLength`."""
    address = str(d.get("address", ""))
    prefix = _int(d.get("prefixLength"))
    return ReservedRange(
        name=str(d.get("name", "")),
        cidr=f"{address}/{prefix}" if address and prefix else address,
        purpose=str(d.get("purpose", "")),
    )


def peering_names(network: Json) -> tuple[str, ...]:
    """Names of the network's peerings (compute v1 `Network.peerings[]`)."""
    return tuple(sorted(str(p["name"]) for p in network.get("peerings") or () if p.get("name")))


def active_peerings(network: Json) -> tuple[str, ...]:
    """Peerings that exchange routes now (state ACTIVE; absent state counted as active)."""
    return tuple(
        sorted(
            str(p["name"])
            for p in network.get("peerings") or ()
            if p.get("name") and str(p.get("state", "ACTIVE")) == "ACTIVE"
        )
    )


def in_network(ref: str, network: str, project: str) -> bool:
    """Whether a network reference (URL or name) names `network` (of `project`, when the URL says)."""
    if not ref or short_name(ref) != network:
        return False
    owner = _project_in(ref)
    return not owner or owner == project


def _subnet_key(s: Subnetwork) -> tuple[str, str]:
    return (s.region, s.name)


_SUBNET_IN_REF = re.compile(r"(?:^|/)projects/([^/]+)/regions/([^/]+)/subnetworks/([^/]+)$")


def names_subnet(ref: str, subnet: Subnetwork, project: str) -> bool:
    """Whether a subnetwork reference (URL or `projects/P/regions/R/subnetworks/S`) names `subnet` of
    `project` (a bare name is taken as the subnet's own project and region)."""
    found = _SUBNET_IN_REF.search(ref or "")
    if found is None:
        return bool(ref) and ref == subnet.name
    return found.groups() == (project, short_name(subnet.region), subnet.name)


def _metadata(d: Json, key: str) -> str:
    items = (d.get("metadata") or {}).get("items") or ()
    return next((str(i.get("value", "")) for i in items if i.get("key") == key), "")


def instance_addresses_from(d: Json, subnet: Subnetwork, host: str, project: str) -> list[SubnetAddress]:
    """compute v1 `Instance`: the `networkIP` of each of its interfaces on `subnet`. A GKE node carries the
    `goog-gke-node` label and its cluster's name in metadata `cluster-name` (gcpdiag
    test-data/gke1/json-dumps/compute-instances-europe-west4-a.json, commit 16a12c7f)."""
    gke = "goog-gke-node" in (d.get("labels") or {})
    cluster = _metadata(d, "cluster-name") if gke else ""
    return [
        SubnetAddress(str(nic["networkIP"]), "instance", str(d.get("name", "")), project, cluster)
        for nic in d.get("networkInterfaces") or ()
        if nic.get("networkIP") and names_subnet(str(nic.get("subnetwork") or ""), subnet, host)
    ]


def forwarding_rule_address_from(d: Json, subnet: Subnetwork, host: str, project: str) -> SubnetAddress | None:
    """compute v1 `ForwardingRule` whose `IPAddress` comes from `subnet` (internal load balancers, and
    endpoints that name a subnetwork)."""
    if not d.get("IPAddress") or not names_subnet(str(d.get("subnetwork") or ""), subnet, host):
        return None
    return SubnetAddress(str(d["IPAddress"]), "forwarding-rule", str(d.get("name", "")), project)


def address_from(d: Json, subnet: Subnetwork, host: str, project: str) -> SubnetAddress | None:
    """compute v1 regional `Address` of type INTERNAL reserved in `subnet` (RESERVED or IN_USE alike)."""
    if d.get("addressType") != "INTERNAL" or not d.get("address"):
        return None
    if not names_subnet(str(d.get("subnetwork") or ""), subnet, host):
        return None
    return SubnetAddress(str(d["address"]), "address", str(d.get("name", "")), project)


def collect_subnet_addresses(api: GkeApi, subnet: Subnetwork, host: str) -> tuple[SubnetAddress, ...]:
    """What holds addresses of `subnet`'s primary range, read in the cluster's project and the host's (on
    Shared VPC other service projects may hold some too; cidrx cannot list them)."""
    region = short_name(subnet.region)
    out: set[SubnetAddress] = set()
    for project in dict.fromkeys((api.project, host)):
        for d in api.iter_instances(project):
            out.update(instance_addresses_from(d, subnet, host, project))
        for d in api.iter_forwarding_rules(region, project):
            if (found := forwarding_rule_address_from(d, subnet, host, project)) is not None:
                out.add(found)
        for d in api.iter_addresses(region, project):
            if (found := address_from(d, subnet, host, project)) is not None:
                out.add(found)
    return tuple(sorted(out, key=lambda a: (_net_key(a.address), a.kind, a.project, a.name)))


# -- collect (I/O through GkeApi) -------------------------------------------------------------------


def collect_gke(api: GkeApi, cluster: str) -> GkeSection:
    """Everything diagnosis and planning need about `cluster` and its network, in a handful of calls.

    Autopilot clusters are collected like any other (analysis says what applies to them).
    """
    raw_cluster = api.get_cluster(cluster)
    gke_cluster = cluster_from(raw_cluster)
    # Shared VPC: the network, its subnets, routes and allocations live in the host project.
    host = network_project_of(raw_cluster) or api.project
    pools = [node_pool_from(p, gke_cluster.default_max_pods_per_node) for p in api.list_node_pools(cluster)]
    network = api.get_network(gke_cluster.network, host)

    subnets = sorted(
        (
            subnet_from(s)
            for s in api.iter_subnetworks(host)
            if in_network(str(s.get("network", "")), gke_cluster.network, host)
        ),
        key=_subnet_key,
    )
    own_key = (gke_cluster.subnet_region, gke_cluster.subnetwork)
    own = next((s for s in subnets if _subnet_key(s) == own_key), None)
    if own is None or not own.fingerprint:
        # Not in the aggregated list (a subnet the caller can use but not list): read it directly.
        own = subnet_from(api.get_subnetwork(gke_cluster.subnet_region, gke_cluster.subnetwork, host))
        subnets = sorted([s for s in subnets if _subnet_key(s) != own_key] + [own], key=_subnet_key)

    routes: dict[tuple[str, str], PeeringRoute] = {}
    for peering in active_peerings(network):
        for r in api.iter_peering_routes(gke_cluster.network, peering, gke_cluster.subnet_region, host):
            route = peering_route_from(r, peering)
            if route.dest_range:
                routes.setdefault((route.dest_range, peering), route)

    reserved = [
        reserved_range_from(a)
        for a in api.iter_global_addresses(host)
        if in_network(str(a.get("network", "")), gke_cluster.network, host)
    ]
    network_url = str(network.get("selfLink") or f"projects/{host}/global/networks/{gke_cluster.network}")
    net_routes = {
        (nr.dest_range, nr.name): nr for r in api.iter_routes(network_url, host) if (nr := route_from(r)) is not None
    }

    # Firewall rules live with the network: in its own project (a Shared VPC host project's URL says so).
    net_project = host
    firewalls = sorted(
        (
            firewall_from(f, net_project)
            for f in api.iter_firewalls(gke_cluster.network, net_project)
            if in_network(str(f.get("network", "")), gke_cluster.network, net_project)
        ),
        key=lambda r: r.name,
    )

    return GkeSection(
        project=api.project,
        cluster=gke_cluster,
        node_pools=tuple(sorted(pools, key=lambda p: p.name)),
        subnet=own,
        subnets=tuple(subnets),
        peerings=peering_names(network),
        peering_routes=_sorted_routes(routes.values()),
        reserved_ranges=tuple(sorted(reserved, key=lambda r: (_net_key(r.cidr), r.name))),
        network_project=host if host != api.project else None,
        routes=tuple(sorted(net_routes.values(), key=lambda r: (_fast_net_key(r.dest_range), r.name))) or None,
        routes_clusters=_routes_clusters(api, gke_cluster, host) or None,
        firewalls=tuple(firewalls),
        # None, not (), when nothing was found: snapshots of such estates keep the fingerprints they had
        # before cidrx read these (analysis then has no primary-range row, as for an old snapshot).
        subnet_addresses=collect_subnet_addresses(api, own, host) or None,
    )


def _routes_clusters(api: GkeApi, own: GkeCluster, host: str) -> tuple[RoutesCluster, ...]:
    """Routes-based clusters on the network, from the project that owns it and the cluster's own project
    (GKE refuses routes-based clusters on a Shared VPC network, so under Shared VPC they are the host's)."""
    out: dict[tuple[str, str, str], RoutesCluster] = {}
    for project in dict.fromkeys((host, api.project)):
        for d in api.list_clusters_of(project):
            net_ref = str((d.get("networkConfig") or {}).get("network") or d.get("network") or "")
            if not uses_routes(d) or not in_network(net_ref, own.network, host):
                continue
            rc = routes_cluster_from(d, project)
            if (project, rc.location, rc.name) == (api.project, own.location, own.name) or not rc.cluster_ipv4_cidr:
                continue
            out[(rc.project, rc.location, rc.name)] = rc
    return tuple(out[k] for k in sorted(out))


def _fast_net_key(cidr: str) -> tuple[int, int, int, str]:
    """_net_key without ipaddress for dotted IPv4 CIDRs (tens of thousands of routes)."""
    head, _, bits = cidr.partition("/")
    parts = head.split(".")
    if len(parts) == 4 and bits.isdigit() and all(p.isdigit() for p in parts):
        value = (int(parts[0]) << 24) | (int(parts[1]) << 16) | (int(parts[2]) << 8) | int(parts[3])
        return (4, value, int(bits), cidr)
    return _net_key(cidr)


def _sorted_routes(routes: Iterable[PeeringRoute]) -> tuple[PeeringRoute, ...]:
    return tuple(sorted(routes, key=lambda r: (_net_key(r.dest_range), r.peering, r.region)))
