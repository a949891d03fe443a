"""collect_eks against the talk's incident built in moto, and the boto3-dict conversions from JSON.

moto does not enforce subnet exhaustion, CIDR restrictions or prefix delegation; these tests only
check that what the cloud reports lands in the snapshot unchanged.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from ipaddress import ip_network
from typing import Any

import pytest

from cidrx.model import codec
from cidrx.providers.eks.api import EksApi
from cidrx.providers.eks.collect.vpc import (
    cluster_from,
    collect_eks,
    instance_type_from,
    nodegroup_from,
    peering_from,
    route_table_by_subnet,
    route_table_from,
    used_by_subnet,
)
from cidrx.providers.eks.model import Addon, EksSection, InstanceType
from tests.support.estates.eks import (
    NODEGROUP,
    PEER_VPC_CIDR,
    REGION,
    SUBNETS,
    TGW_ROUTE,
    VPC_NAME,
    World,
    fake_aws_env,
    moto_incident,
)
from tests.support.fakes import eks_addons
from tests.support.fakes.eks_addons import vpc_cni_schema


@pytest.fixture(scope="module")
def incident() -> tuple[World, EksSection, Counter[str]]:
    """One moto world for the read-only tests, collected once, with the API calls it took counted."""
    with pytest.MonkeyPatch.context() as mp:
        fake_aws_env(mp)
        with moto_incident() as (session, world):
            calls: Counter[str] = Counter()
            session.events.register("before-call", lambda model, **_: calls.update([model.name]))
            section = collect_eks(EksApi(REGION, session=session), world.cluster)
    return world, section, calls


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, World]]:
    """A world of its own, for tests that change it."""
    fake_aws_env(monkeypatch)
    with moto_incident() as pair:
        yield pair


def _subnet(section: EksSection, subnet_id: str) -> Any:
    return next(s for s in section.subnets if s.subnet_id == subnet_id)


def _usable(cidr: str) -> set[str]:
    return {f"{h}/32" for h in list(ip_network(cidr).hosts())[3:]}


# -- against moto -------------------------------------------------------------------------------------


def test_subnets_are_the_incident_ones_with_their_route_tables(incident: Any) -> None:
    world, section, _ = incident
    by_name = {s.tags["Name"].rsplit("-", 1)[-1]: s for s in section.subnets}
    assert set(by_name) == set(SUBNETS)
    for name, (cidr, az) in SUBNETS.items():
        s = by_name[name]
        assert (s.cidr, s.az, s.vpc_id) == (cidr, f"{REGION}{az}", world.vpc_id)
        assert s.az_id.startswith("apse2-az")
        public = name.startswith("Public")
        assert s.route_table_id == (world.public_route_table_id if public else world.private_route_table_id)
        assert s.available_ips == (0 if public else 26)


def test_full_public_subnets_show_every_usable_address_in_use(incident: Any) -> None:
    world, section, _ = incident
    for sid in world.public_subnets:
        s = _subnet(section, sid)
        assert s.available_ips == 0
        assert set(s.used) == _usable(s.cidr)  # 27 = 32 minus the 5 AWS keeps
        assert len(s.used) == 27
    for sid in world.private_subnets:
        s = _subnet(section, sid)
        assert (s.available_ips, len(s.used)) == (26, 1)  # 6 of 32 counted as used: 18.75%


def test_node_addresses_are_among_the_used_ones(incident: Any) -> None:
    world, section, _ = incident
    used = {u for s in section.subnets for u in s.used}
    assert {f"{ip}/32" for ip in world.node_ips} <= used
    assert "10.0.208.24/32" in used and "10.0.208.5/32" in used  # pod IPs from the talk's ipamd dump


def test_route_tables_keep_every_destination_and_the_main_flag(incident: Any) -> None:
    world, section, _ = incident
    tables = {t.route_table_id: t for t in section.route_tables}
    assert set(tables) == {world.main_route_table_id, world.public_route_table_id, world.private_route_table_id}
    assert tables[world.main_route_table_id].main and tables[world.main_route_table_id].subnet_ids == ()
    assert set(tables[world.public_route_table_id].subnet_ids) == set(world.public_subnets)
    assert set(tables[world.public_route_table_id].destinations) == {"0.0.0.0/0", "10.0.0.0/16"}
    private = tables[world.private_route_table_id]
    assert set(private.subnet_ids) == set(world.private_subnets)
    assert {PEER_VPC_CIDR, TGW_ROUTE, "10.0.0.0/16"} <= set(private.destinations)
    assert private.tags["Name"].endswith("PrivateRouteTable")


def test_active_peering_reports_the_other_side_cidrs(incident: Any) -> None:
    world, section, _ = incident
    (p,) = section.peerings
    assert (p.peering_id, p.status, p.peer_vpc_id, p.cidrs) == (
        world.peering_id,
        "active",
        world.peer_vpc_id,
        (PEER_VPC_CIDR,),
    )


def test_cluster_and_vpc(incident: Any) -> None:
    world, section, _ = incident
    c = section.cluster
    assert (c.name, c.arn, c.version, c.status) == ("demo", world.cluster_arn, "1.27", "ACTIVE")
    assert c.vpc_id == world.vpc_id  # moto omits resourcesVpcConfig.vpcId: found through a subnet
    assert set(c.subnet_ids) == set(world.subnet_ids)
    assert c.cluster_security_group_id == world.cluster_security_group_id  # found by its EKS tag
    assert c.security_group_ids == (world.control_plane_security_group_id,)
    v = section.vpc
    assert (v.vpc_id, v.primary_cidr, v.tags["Name"]) == (world.vpc_id, "10.0.0.0/16", VPC_NAME)
    assert [(x.cidr, x.state) for x in v.cidrs] == [("10.0.0.0/16", "associated")]
    assert section.region == REGION
    assert section.vpc_cidr_quota == 5  # moto's Service Quotas answers AWS's default


def test_nodegroup_fields(incident: Any) -> None:
    world, section, _ = incident
    (g,) = section.nodegroups
    assert g.name == NODEGROUP and g.status == "ACTIVE"
    assert g.subnet_ids == world.public_subnets
    assert g.instance_types == ("m5.large",)
    assert (g.min_size, g.max_size, g.desired_size) == (2, 4, 2)
    assert g.node_role.endswith(":role/eks-demo-ip-node-role")
    assert (g.ami_type, g.capacity_type, g.disk_size) == ("AL2_x86_64", "ON_DEMAND", 80)
    assert g.labels["alpha.eksctl.io/nodegroup-name"] == NODEGROUP
    assert g.tags == {"alpha.eksctl.io/nodegroup-type": "managed"}
    assert g.launch_template == {} and g.health_issues == ()


def test_instance_types_come_from_ec2(incident: Any) -> None:
    _, section, _ = incident
    assert section.instance_types == (
        InstanceType(name="m5.large", vcpus=2, max_enis=3, ips_per_eni=10, hypervisor="nitro", bare_metal=False),
    )


def test_addon_absent_on_plain_moto(incident: Any) -> None:
    _, section, _ = incident
    assert section.vpc_cni_addon is None  # moto answers "404 Not yet implemented": self-managed path


def test_calls_are_bounded_by_subnets_and_nodegroups(incident: Any) -> None:
    _, _, calls = incident
    assert calls == Counter(
        {
            "DescribeCluster": 1,
            "DescribeSubnets": 2,  # the VPC id through a subnet (moto gap), then the VPC's subnets
            "DescribeSecurityGroups": 1,  # the cluster security group by tag (moto gap)
            "DescribeVpcs": 1,
            "DescribeRouteTables": 1,
            "DescribeTransitGatewayAttachments": 1,  # the VPC's attachment to the incident's transit gateway
            "SearchTransitGatewayRoutes": 1,  # the route table associated with it
            "DescribeVpcPeeringConnections": 2,  # requester side, accepter side
            "DescribeNetworkInterfaces": 1,  # one list for all ENIs, not one per node
            "ListNodegroups": 1,
            "DescribeNodegroup": 1,
            "GetSubnetCidrReservations": 4,  # the cluster's subnets (node group's are among them)
            "DescribeInstanceTypes": 1,
            "DescribeAddon": 1,
            "GetServiceQuota": 1,
            "DescribeIpamPools": 1,  # none here: the account has no VPC IPAM
        }
    )


def test_section_round_trips_through_json(incident: Any) -> None:
    _, section, _ = incident
    assert codec.loads(codec.dumps(section), EksSection, what="eks section") == section


def test_addon_filled_when_eks_has_it(fresh: Any) -> None:
    session, world = fresh
    fake = eks_addons.install(session)
    fake.put_addon(world.cluster, version="v1.15.1-eksbuild.1", configuration_values='{"env":{"WARM_IP_TARGET":"5"}}')
    section = collect_eks(EksApi(REGION, session=session), world.cluster)
    assert section.vpc_cni_addon == Addon(
        name="vpc-cni",
        version="v1.15.1-eksbuild.1",
        status="ACTIVE",
        configuration_values='{"env":{"WARM_IP_TARGET":"5"}}',
        configuration_schema=json.dumps(vpc_cni_schema("v1.15.1-eksbuild.1")),
    )
    assert fake.calls == ["DescribeAddon", "DescribeAddonConfiguration"]  # the schema of the installed version


def test_enis_per_instance_give_each_node_its_eni_count(incident: Any) -> None:
    world, section, _ = incident
    by_ip = {i.primary_ip: i for i in section.instance_enis}
    for instance, ip, subnet in zip(world.node_instance_ids, world.node_ips, world.public_subnets, strict=True):
        assert (by_ip[ip].instance_id, by_ip[ip].subnet_id, by_ip[ip].enis) == (instance, subnet, 3)
    assert len(section.instance_enis) == 2  # the control-plane ENIs are attached to no instance


def test_reservations_read_for_cluster_subnets_only(fresh: Any) -> None:
    session, world = fresh
    ec2 = session.client("ec2")
    ec2.create_subnet_cidr_reservation(
        SubnetId=world.private_subnet_a, Cidr="10.0.186.16/28", ReservationType="prefix", Description="pd"
    )
    other = ec2.create_subnet(VpcId=world.vpc_id, CidrBlock="10.0.50.0/24", AvailabilityZone=f"{REGION}a")
    other_id = other["Subnet"]["SubnetId"]
    ec2.create_subnet_cidr_reservation(SubnetId=other_id, Cidr="10.0.50.0/28", ReservationType="prefix")
    section = collect_eks(EksApi(REGION, session=session), world.cluster, extra_instance_types=["t3.small"])
    assert _subnet(section, world.private_subnet_a).reservations == ("10.0.186.16/28",)
    outside = _subnet(section, other_id)
    assert outside.reservations == ()  # not a cluster or node group subnet: not asked
    assert outside.route_table_id == world.main_route_table_id  # no explicit association
    assert [t.name for t in section.instance_types] == ["m5.large", "t3.small"]


def test_secondary_cidr_shows_on_vpc_and_as_local_route(fresh: Any) -> None:
    session, world = fresh
    session.client("ec2").associate_vpc_cidr_block(VpcId=world.vpc_id, CidrBlock="100.64.0.0/20")
    section = collect_eks(EksApi(REGION, session=session), world.cluster)
    assert [c.cidr for c in section.vpc.cidrs] == ["10.0.0.0/16", "100.64.0.0/20"]
    assert all("100.64.0.0/20" in t.destinations for t in section.route_tables)


# -- pure conversions from AWS JSON -------------------------------------------------------------------


def test_cluster_from_real_describe_cluster_json() -> None:
    d = {
        "name": "demo",
        "arn": "arn:aws:eks:ap-southeast-2:111122223333:cluster/demo",
        "version": "1.27",
        "status": "ACTIVE",
        "resourcesVpcConfig": {
            "subnetIds": ["subnet-0cd55c38980375d58", "subnet-0a0bce6a1c1f38c54"],
            "securityGroupIds": ["sg-0aaa"],
            "clusterSecurityGroupId": "sg-0ccc",
            "vpcId": "vpc-0f3a9ca141c0acd04",
            "endpointPublicAccess": True,
        },
    }
    c = cluster_from(d, vpc_id="vpc-ignored", cluster_security_group_id="sg-ignored")
    assert (c.vpc_id, c.cluster_security_group_id) == ("vpc-0f3a9ca141c0acd04", "sg-0ccc")
    assert c.subnet_ids == ("subnet-0cd55c38980375d58", "subnet-0a0bce6a1c1f38c54")


def test_used_by_subnet_counts_addresses_and_delegated_prefixes() -> None:
    enis: list[dict[str, Any]] = [
        {
            "SubnetId": "subnet-a",
            "PrivateIpAddress": "10.0.208.27",
            "PrivateIpAddresses": [{"PrivateIpAddress": "10.0.208.27"}, {"PrivateIpAddress": "10.0.208.5"}],
            "Ipv4Prefixes": [{"Ipv4Prefix": "10.0.208.16/28"}],
        },
        {"SubnetId": "subnet-b", "PrivateIpAddress": "10.0.224.9"},
        {"SubnetId": "subnet-a", "PrivateIpAddresses": [{"PrivateIpAddress": "10.0.208.10"}]},
    ]
    assert used_by_subnet(enis) == {
        "subnet-a": ("10.0.208.5/32", "10.0.208.10/32", "10.0.208.16/28", "10.0.208.27/32"),
        "subnet-b": ("10.0.224.9/32",),
    }


def test_route_tables_main_and_explicit_and_non_ipv4_routes_skipped() -> None:
    main = route_table_from(
        {
            "RouteTableId": "rtb-main",
            "Associations": [{"Main": True, "RouteTableAssociationId": "rtbassoc-1"}],
            "Routes": [
                {"DestinationCidrBlock": "10.0.0.0/16", "GatewayId": "local"},
                {"DestinationIpv6CidrBlock": "::/0", "GatewayId": "igw-1"},
                {"DestinationPrefixListId": "pl-6ca54005", "GatewayId": "vpce-1"},
            ],
        }
    )
    private = route_table_from(
        {
            "RouteTableId": "rtb-private",
            "Associations": [{"Main": False, "SubnetId": "subnet-b"}, {"Main": False, "SubnetId": "subnet-a"}],
            "Routes": [{"DestinationCidrBlock": "172.20.0.0/16"}, {"DestinationCidrBlock": "10.0.0.0/16"}],
            "Tags": [{"Key": "Name", "Value": "private"}],
        }
    )
    assert main.destinations == ("10.0.0.0/16",) and main.main
    assert private.subnet_ids == ("subnet-a", "subnet-b") and not private.main
    assert private.destinations == ("10.0.0.0/16", "172.20.0.0/16")
    assert route_table_by_subnet([main, private]) == (
        "rtb-main",
        {"subnet-a": "rtb-private", "subnet-b": "rtb-private"},
    )


def test_peering_from_accepter_side_uses_requester_cidr_block_set() -> None:
    d = {
        "VpcPeeringConnectionId": "pcx-1",
        "Status": {"Code": "active"},
        "RequesterVpcInfo": {
            "VpcId": "vpc-peer",
            "CidrBlock": "10.1.0.0/16",
            "CidrBlockSet": [{"CidrBlock": "10.1.0.0/16"}, {"CidrBlock": "100.64.0.0/16"}],
        },
        "AccepterVpcInfo": {"VpcId": "vpc-ours", "CidrBlock": "10.0.0.0/16"},
    }
    p = peering_from(d, "vpc-ours")
    assert p is not None and (p.peer_vpc_id, p.cidrs) == ("vpc-peer", ("10.1.0.0/16", "100.64.0.0/16"))
    assert peering_from(d, "vpc-unrelated") is None


def test_nodegroup_from_launch_template_and_health() -> None:
    d = {
        "nodegroupName": "lt-ng",
        "status": "DEGRADED",
        "subnets": ["subnet-a"],
        "instanceTypes": None,
        "scalingConfig": {"minSize": 1, "maxSize": 3, "desiredSize": 1},
        "nodeRole": "arn:aws:iam::111122223333:role/node",
        "launchTemplate": {"name": "lt", "version": "3", "id": "lt-0abc"},
        "health": {
            "issues": [
                {"code": "InsufficientFreeAddresses", "message": "Subnet has insufficient free addresses"},
                {"code": "InsufficientFreeAddresses", "message": "again"},
            ]
        },
    }
    g = nodegroup_from(d)
    assert g.instance_types == () and g.disk_size is None
    assert g.launch_template == {"name": "lt", "version": "3", "id": "lt-0abc"}
    assert g.health_issues == ("InsufficientFreeAddresses",)


def test_instance_type_from_bare_metal_without_hypervisor() -> None:
    d = {
        "InstanceType": "m5.metal",
        "BareMetal": True,
        "VCpuInfo": {"DefaultVCpus": 96},
        "NetworkInfo": {"MaximumNetworkInterfaces": 15, "Ipv4AddressesPerInterface": 50},
    }
    assert instance_type_from(d) == InstanceType("m5.metal", 96, 15, 50, "", True)
