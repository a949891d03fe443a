"""Collect the EKS section of a snapshot: read the cluster's cloud objects through `EksApi` and trim the
boto3 dicts into the frozen model of `cidrx.providers.eks.model`.

Split in two on purpose: small pure `*_from` functions that turn one boto3 dict into one model object
(unit-testable from JSON captured from AWS), and `collect_eks`, which only orders the calls. The number
of calls is bounded by the cluster's node groups and subnets, never by its nodes or pods.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from ipaddress import ip_network
from typing import Any

from cidrx.errors import AccessDenied
from cidrx.providers.eks.api import VPC_CNI, EksApi
from cidrx.providers.eks.collect.ipam_pools import collect_pools
from cidrx.providers.eks.collect.routes import collect_routes
from cidrx.providers.eks.model import (
    Addon,
    ClusterIssue,
    EksCluster,
    EksSection,
    InstanceEnis,
    InstanceType,
    Nodegroup,
    Peering,
    RouteTable,
    Subnet,
    Vpc,
    VpcCidr,
)

Json = Mapping[str, Any]

# EKS tags the security group it creates for a cluster with this key (value: the cluster name).
CLUSTER_SG_TAG = "aws:eks:cluster-name"


def _net_key(cidr: str) -> tuple[int, int, int]:
    try:
        net = ip_network(cidr, strict=False)
    except ValueError:
        return (9, 0, 0)
    return (net.version, int(net.network_address), net.prefixlen)


def _sorted_cidrs(cidrs: Iterable[str]) -> tuple[str, ...]:
    return tuple(sorted(set(cidrs), key=_net_key))


def tags_of(tag_list: Iterable[Json] | None) -> dict[str, str]:
    """EC2's [{"Key": k, "Value": v}] as a dict."""
    return {str(t["Key"]): str(t.get("Value", "")) for t in tag_list or () if "Key" in t}


def cluster_from(d: Json, *, vpc_id: str | None = None, cluster_security_group_id: str | None = None) -> EksCluster:
    """DescribeCluster's `cluster`. `vpc_id`/`cluster_security_group_id` fill in what the dict lacks."""
    cfg = d.get("resourcesVpcConfig") or {}
    return EksCluster(
        name=str(d["name"]),
        arn=str(d.get("arn", "")),
        version=str(d.get("version", "")),
        status=str(d.get("status", "")),
        vpc_id=str(cfg.get("vpcId") or vpc_id or ""),
        subnet_ids=tuple(cfg.get("subnetIds") or ()),
        cluster_security_group_id=str(cfg.get("clusterSecurityGroupId") or cluster_security_group_id or ""),
        security_group_ids=tuple(cfg.get("securityGroupIds") or ()),
        auto_mode=True if (d.get("computeConfig") or {}).get("enabled") else None,
        health_issues=tuple(
            ClusterIssue(
                code=str(i["code"]),
                message=str(i.get("message") or ""),
                resource_ids=tuple(str(r) for r in i.get("resourceIds") or ()),
            )
            for i in (d.get("health") or {}).get("issues") or ()
            if i.get("code")
        ),
    )


def vpc_from(d: Json) -> Vpc:
    """DescribeVpcs' `Vpcs[i]`: the primary CIDR and every IPv4 CIDR association with its state."""
    cidrs = tuple(
        VpcCidr(
            cidr=str(a["CidrBlock"]),
            association_id=str(a.get("AssociationId", "")),
            state=str((a.get("CidrBlockState") or {}).get("State", "")),
        )
        for a in d.get("CidrBlockAssociationSet") or ()
    )
    return Vpc(vpc_id=str(d["VpcId"]), primary_cidr=str(d["CidrBlock"]), cidrs=cidrs, tags=tags_of(d.get("Tags")))


def route_table_from(d: Json) -> RouteTable:
    """DescribeRouteTables' `RouteTables[i]`; destinations are every IPv4 route, local and 0.0.0.0/0 included."""
    assocs = d.get("Associations") or ()
    return RouteTable(
        route_table_id=str(d["RouteTableId"]),
        main=any(a.get("Main") for a in assocs),
        subnet_ids=tuple(sorted({str(a["SubnetId"]) for a in assocs if a.get("SubnetId")})),
        destinations=_sorted_cidrs(
            str(r["DestinationCidrBlock"]) for r in d.get("Routes") or () if r.get("DestinationCidrBlock")
        ),
        tags=tags_of(d.get("Tags")),
    )


def route_extras_from(tables: Iterable[Json]) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """DescribeRouteTables' tables as ({table: prefix lists its routes use}, {table: VGW-propagated
    destinations}), each holding only the tables that have any."""
    lists: dict[str, tuple[str, ...]] = {}
    vgw: dict[str, tuple[str, ...]] = {}
    for d in tables:
        routes = d.get("Routes") or ()
        if found := sorted({str(r["DestinationPrefixListId"]) for r in routes if r.get("DestinationPrefixListId")}):
            lists[str(d["RouteTableId"])] = tuple(found)
        propagated = _sorted_cidrs(
            str(r["DestinationCidrBlock"])
            for r in routes
            if r.get("DestinationCidrBlock") and r.get("Origin") == "EnableVgwRoutePropagation"
        )
        if propagated:
            vgw[str(d["RouteTableId"])] = propagated
    return dict(sorted(lists.items())), dict(sorted(vgw.items()))


def route_table_by_subnet(tables: Sequence[RouteTable]) -> tuple[str | None, dict[str, str]]:
    """(main table id, {subnet id: explicitly associated table id})."""
    main = next((t.route_table_id for t in tables if t.main), None)
    explicit = {s: t.route_table_id for t in tables for s in t.subnet_ids}
    return main, explicit


def used_by_subnet(enis: Iterable[Json]) -> dict[str, tuple[str, ...]]:
    """Per subnet: private IPv4 addresses ("a.b.c.d/32") and delegated /28 prefixes held by its ENIs."""
    held: dict[str, set[str]] = defaultdict(set)
    for eni in enis:
        subnet_id = eni.get("SubnetId")
        if not subnet_id:
            continue
        for ip in eni.get("PrivateIpAddresses") or ():
            if ip.get("PrivateIpAddress"):
                held[str(subnet_id)].add(f"{ip['PrivateIpAddress']}/32")
        if not eni.get("PrivateIpAddresses") and eni.get("PrivateIpAddress"):
            held[str(subnet_id)].add(f"{eni['PrivateIpAddress']}/32")
        for prefix in eni.get("Ipv4Prefixes") or ():
            if prefix.get("Ipv4Prefix"):
                held[str(subnet_id)].add(str(prefix["Ipv4Prefix"]))
    return {s: _sorted_cidrs(v) for s, v in held.items()}


def instance_enis_from(enis: Iterable[Json]) -> tuple[InstanceEnis, ...]:
    """Per attached instance: how many ENIs it has and its primary ENI's address and subnet."""
    count: dict[str, int] = defaultdict(int)
    primary: dict[str, tuple[str, str]] = {}
    for eni in enis:
        attachment = eni.get("Attachment") or {}
        instance = attachment.get("InstanceId")
        if not instance:
            continue
        count[str(instance)] += 1
        if int(attachment.get("DeviceIndex", -1)) == 0:
            primary[str(instance)] = (str(eni.get("PrivateIpAddress") or ""), str(eni.get("SubnetId") or ""))
    out = []
    for instance, n in sorted(count.items()):
        ip, subnet = primary.get(instance, ("", ""))
        out.append(InstanceEnis(instance_id=instance, primary_ip=ip, subnet_id=subnet, enis=n))
    return tuple(out)


def primary_eni_groups(
    enis: Iterable[Json], *, node_ips: Iterable[str] = (), subnet_ids: Iterable[str] = ()
) -> tuple[str, ...]:
    """Security groups of the instances' primary ENIs (attachment device index 0): of the nodes with
    `node_ips` when given, else of every instance in `subnet_ids`."""
    ips, subnets = set(node_ips), set(subnet_ids)
    groups: set[str] = set()
    for eni in enis:
        attachment = eni.get("Attachment") or {}
        if attachment.get("DeviceIndex") != 0 or not attachment.get("InstanceId"):
            continue
        if (eni.get("PrivateIpAddress") in ips) if ips else (eni.get("SubnetId") in subnets):
            groups.update(str(g["GroupId"]) for g in eni.get("Groups") or () if g.get("GroupId"))
    return tuple(sorted(groups))


def reservations_from(reservations: Iterable[Json]) -> tuple[str, ...]:
    """GetSubnetCidrReservations' `SubnetIpv4CidrReservations`, as CIDRs."""
    return _sorted_cidrs(str(r["Cidr"]) for r in reservations if r.get("Cidr"))


def subnet_from(
    d: Json,
    *,
    route_table_id: str | None,
    used: Sequence[str] = (),
    reservations: Sequence[str] = (),
) -> Subnet:
    """DescribeSubnets' `Subnets[i]` plus what other calls know about it."""
    return Subnet(
        subnet_id=str(d["SubnetId"]),
        vpc_id=str(d.get("VpcId", "")),
        cidr=str(d["CidrBlock"]),
        az=str(d.get("AvailabilityZone", "")),
        az_id=str(d.get("AvailabilityZoneId", "")),
        available_ips=int(d.get("AvailableIpAddressCount", 0)),
        route_table_id=route_table_id,
        tags=tags_of(d.get("Tags")),
        used=tuple(used),
        reservations=tuple(reservations),
    )


def peering_from(d: Json, vpc_id: str) -> Peering | None:
    """A peering seen from `vpc_id`: the other side's CIDRs. None when `vpc_id` is on neither side."""
    requester = d.get("RequesterVpcInfo") or {}
    accepter = d.get("AccepterVpcInfo") or {}
    if requester.get("VpcId") == vpc_id:
        other = accepter
    elif accepter.get("VpcId") == vpc_id:
        other = requester
    else:
        return None
    cidrs = [str(c["CidrBlock"]) for c in other.get("CidrBlockSet") or () if c.get("CidrBlock")]
    if not cidrs and other.get("CidrBlock"):
        cidrs = [str(other["CidrBlock"])]
    return Peering(
        peering_id=str(d["VpcPeeringConnectionId"]),
        status=str((d.get("Status") or {}).get("Code", "")),
        peer_vpc_id=str(other.get("VpcId", "")),
        cidrs=_sorted_cidrs(cidrs),
    )


def nodegroup_from(d: Json) -> Nodegroup:
    """DescribeNodegroup's `nodegroup`."""
    scaling = d.get("scalingConfig") or {}
    lt = d.get("launchTemplate") or {}
    disk = d.get("diskSize")
    return Nodegroup(
        name=str(d["nodegroupName"]),
        status=str(d.get("status", "")),
        subnet_ids=tuple(d.get("subnets") or ()),
        instance_types=tuple(d.get("instanceTypes") or ()),
        min_size=int(scaling.get("minSize", 0)),
        max_size=int(scaling.get("maxSize", 0)),
        desired_size=int(scaling.get("desiredSize", 0)),
        node_role=str(d.get("nodeRole", "")),
        ami_type=str(d.get("amiType") or ""),
        capacity_type=str(d.get("capacityType") or ""),
        disk_size=int(disk) if disk is not None else None,
        labels={str(k): str(v) for k, v in (d.get("labels") or {}).items()},
        tags={str(k): str(v) for k, v in (d.get("tags") or {}).items()},
        launch_template={str(k): str(v) for k, v in lt.items() if v is not None},
        release_version=str(d.get("releaseVersion") or ""),
        health_issues=tuple(
            sorted({str(i["code"]) for i in (d.get("health") or {}).get("issues") or () if i.get("code")})
        ),
    )


def instance_type_from(d: Json) -> InstanceType:
    """DescribeInstanceTypes' `InstanceTypes[i]`: the figures max-pods arithmetic needs."""
    net = d.get("NetworkInfo") or {}
    total = int(net.get("MaximumNetworkInterfaces", 0))
    return InstanceType(
        name=str(d["InstanceType"]),
        vcpus=int((d.get("VCpuInfo") or {}).get("DefaultVCpus", 0)),
        max_enis=total,
        ips_per_eni=int(net.get("Ipv4AddressesPerInterface", 0)),
        hypervisor=str(d.get("Hypervisor") or ""),
        bare_metal=bool(d.get("BareMetal", False)),
        default_card_enis=_default_card_enis(net, total),
    )


def _default_card_enis(net: Json, total: int) -> int | None:
    """The default network card's ENI limit, found by its NetworkCardIndex as nodeadm does
    (awslabs/amazon-eks-ami nodeadm/internal/util/ec2.go); None when it equals the total (single card) or
    EC2 sent no per-card figures, which keeps snapshots of single-card types as they were."""
    index = net.get("DefaultNetworkCardIndex", 0)
    for card in net.get("NetworkCards") or ():
        if card.get("NetworkCardIndex", 0) == index and card.get("MaximumNetworkInterfaces") is not None:
            enis = int(card["MaximumNetworkInterfaces"])
            return enis if enis != total else None
    return None


def addon_from(d: Json, configuration_schema: str = "") -> Addon:
    """DescribeAddon's `addon`, with DescribeAddonConfiguration's schema for its version when known."""
    return Addon(
        name=str(d["addonName"]),
        version=str(d.get("addonVersion", "")),
        status=str(d.get("status", "")),
        configuration_values=str(d.get("configurationValues") or ""),
        configuration_schema=configuration_schema,
    )


def _subnet_order(s: Subnet) -> tuple[str, tuple[int, int, int]]:
    return (s.az, _net_key(s.cidr))


def collect_eks(
    api: EksApi, cluster_name: str, extra_instance_types: Iterable[str] = (), *, node_ips: Iterable[str] = ()
) -> EksSection:
    """Everything EKS diagnosis and planning read about one cluster.

    `extra_instance_types` adds types seen on nodes (self-managed groups, launch templates) to the one
    DescribeInstanceTypes call; `node_ips` (the Kubernetes nodes' addresses) pick the nodes' primary ENIs,
    whose security groups ENIConfigs fall back to. Subnet CIDR reservations are read for the cluster's and node groups'
    subnets only; other subnets of the VPC show none.
    """
    cluster_d = api.describe_cluster(cluster_name)
    cfg = cluster_d.get("resourcesVpcConfig") or {}
    cluster_subnet_ids = [str(s) for s in cfg.get("subnetIds") or ()]

    vpc_id = str(cfg.get("vpcId") or "")
    if not vpc_id:
        # EKS always reports resourcesVpcConfig.vpcId; some emulators (moto 5) do not. Ask a subnet.
        found = api.describe_subnets_by_ids(cluster_subnet_ids[:1])
        vpc_id = str(found[0]["VpcId"]) if found else ""
    if not vpc_id:
        raise AccessDenied(
            f"EKS cluster {cluster_name!r} reports no VPC and no subnets",
            hint="check the cluster in the EKS console; cidrx needs its VPC",
        )

    cluster_sg = str(cfg.get("clusterSecurityGroupId") or "")
    if not cluster_sg:
        # Same gap as above; the group EKS creates carries the aws:eks:cluster-name tag.
        groups = api.describe_security_groups_by_tag(vpc_id, CLUSTER_SG_TAG, cluster_name)
        cluster_sg = str(groups[0]["GroupId"]) if groups else ""
    cluster = cluster_from(cluster_d, vpc_id=vpc_id, cluster_security_group_id=cluster_sg)

    vpc = vpc_from(api.describe_vpc(vpc_id))
    tables_d = api.describe_route_tables(vpc_id)
    route_tables = tuple(sorted((route_table_from(t) for t in tables_d), key=lambda t: t.route_table_id))
    main_table, explicit = route_table_by_subnet(route_tables)
    route_prefix_lists, vgw_routes = route_extras_from(tables_d)
    tgw_route_tables, prefix_lists = collect_routes(api, vpc_id, route_prefix_lists)
    peerings = tuple(
        sorted(
            (p for p in (peering_from(d, vpc_id) for d in api.describe_peerings(vpc_id)) if p is not None),
            key=lambda p: p.peering_id,
        )
    )
    enis = api.describe_network_interfaces(vpc_id)
    used = used_by_subnet(enis)

    nodegroups = tuple(
        sorted(
            (nodegroup_from(api.describe_nodegroup(cluster_name, n)) for n in api.list_nodegroups(cluster_name)),
            key=lambda g: g.name,
        )
    )

    in_use = set(cluster_subnet_ids).union(*(g.subnet_ids for g in nodegroups))
    subnets_d = api.describe_subnets(vpc_id)
    reservations = {
        str(s["SubnetId"]): reservations_from(api.get_subnet_cidr_reservations(str(s["SubnetId"])))
        for s in subnets_d
        if s["SubnetId"] in in_use
    }
    subnets = tuple(
        sorted(
            (
                subnet_from(
                    s,
                    route_table_id=explicit.get(str(s["SubnetId"]), main_table),
                    used=used.get(str(s["SubnetId"]), ()),
                    reservations=reservations.get(str(s["SubnetId"]), ()),
                )
                for s in subnets_d
            ),
            key=_subnet_order,
        )
    )

    type_names = {t for g in nodegroups for t in g.instance_types} | {str(t) for t in extra_instance_types if t}
    instance_types = tuple(
        sorted((instance_type_from(t) for t in api.describe_instance_types(sorted(type_names))), key=lambda t: t.name)
    )

    addon_d = api.describe_addon(cluster_name, VPC_CNI)
    schema = api.addon_configuration_schema(VPC_CNI, str(addon_d.get("addonVersion") or "")) if addon_d else ""
    ipam_pools, ipam_unreadable = collect_pools(api, vpc_id)
    return EksSection(
        region=api.region,
        cluster=cluster,
        vpc=vpc,
        subnets=subnets,
        route_tables=route_tables,
        peerings=peerings,
        nodegroups=nodegroups,
        instance_types=instance_types,
        vpc_cni_addon=addon_from(addon_d, schema) if addon_d is not None else None,
        vpc_cidr_quota=api.vpc_cidr_quota(),
        instance_enis=instance_enis_from(enis),
        node_security_groups=primary_eni_groups(enis, node_ips=node_ips, subnet_ids=in_use) or None,
        tgw_route_tables=tgw_route_tables or None,
        prefix_lists=prefix_lists or None,
        route_prefix_lists=route_prefix_lists or None,
        vgw_routes=vgw_routes or None,
        ipam_pools=ipam_pools or None,
        ipam_unreadable=ipam_unreadable or None,
    )
