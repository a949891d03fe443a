"""The EKS incident of the talk, built in moto with real boto3 calls, for collect/analyze/plan/apply tests.

ap-southeast-2, VPC 10.0.0.0/16 "eks-demo-ip-vpc-stack-VPC", two public /27s (2a, 2b) that hold the
managed node group and are 100% used, two private /27s at 18.75%, a peered VPC 10.1.0.0/16 and a route
to 172.20.0.0/16 through a transit gateway: space a planner must not pick.

How the percentages are reproduced: the console's subnet figure is (size − available) / size, i.e. the
5 AWS-reserved addresses count as used. 100% = 32/32 ⇒ AvailableIpAddressCount 0 (27 ENI addresses);
18.75% = 6/32 ⇒ AvailableIpAddressCount 26 (5 reserved + 1 ENI, the EKS control-plane ENI). moto
derives AvailableIpAddressCount from the ENI addresses it holds, so the world assigns exactly those
(explicit addresses; moto would otherwise pick random ones, even AWS-reserved ones).
"""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from ipaddress import ip_network
from typing import Any

import pytest

ACCOUNT = "123456789012"
REGION = "ap-southeast-2"
VPC_CIDR = "10.0.0.0/16"
VPC_NAME = "eks-demo-ip-vpc-stack-VPC"
PEER_VPC_CIDR = "10.1.0.0/16"
TGW_ROUTE = "172.20.0.0/16"
NODEGROUP = "managed-ng"
# moto does not validate AMI ids by default, so tests can skip loading its AMI catalogue
# (MOTO_EC2_LOAD_DEFAULT_AMIS=false saves ~1 s per mock_aws context).
NODE_AMI = "ami-0e5c2f4e5d6a7b8c9"
INSTANCE_TYPE = "m5.large"  # 3 ENIs x 10 IPv4 addresses: one node fills a /27 (27 usable)
NODE_IPS = {"PublicSubnet01": "10.0.208.27", "PublicSubnet02": "10.0.224.14"}
CONTROL_PLANE_ENI_IPS = {"PrivateSubnet01": "10.0.186.22", "PrivateSubnet02": "10.0.192.9"}

# name suffix -> (cidr, az suffix)
SUBNETS = {
    "PublicSubnet01": ("10.0.208.0/27", "a"),
    "PublicSubnet02": ("10.0.224.0/27", "b"),
    "PrivateSubnet01": ("10.0.186.0/27", "a"),
    "PrivateSubnet02": ("10.0.192.0/27", "b"),
}


@dataclass(frozen=True)
class World:
    region: str
    cluster: str
    cluster_arn: str
    vpc_id: str
    public_subnet_a: str
    public_subnet_b: str
    private_subnet_a: str
    private_subnet_b: str
    main_route_table_id: str
    public_route_table_id: str
    private_route_table_id: str
    igw_id: str
    cluster_security_group_id: str
    control_plane_security_group_id: str
    nodegroup: str
    node_instance_ids: tuple[str, ...]
    node_ips: tuple[str, ...]
    peer_vpc_id: str
    peering_id: str
    tgw_id: str
    cni_image: str = ""  # the aws-node image the cluster runs ("": eks_cluster.CNI_IMAGE, v1.15.1)
    cni_env: tuple[tuple[str, str], ...] = ()  # aws-node env set beyond the installed defaults

    @property
    def public_subnets(self) -> tuple[str, str]:
        return (self.public_subnet_a, self.public_subnet_b)

    @property
    def private_subnets(self) -> tuple[str, str]:
        return (self.private_subnet_a, self.private_subnet_b)

    @property
    def subnet_ids(self) -> tuple[str, ...]:
        return (*self.public_subnets, *self.private_subnets)


class AwsCalls:
    """botocore `before-call` handler: every AWS operation any session makes, as `service:Operation`."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, model: Any, **_: Any) -> None:
        self.calls.append(f"{model.service_model.service_name}:{model.name}")

    def writes(self) -> list[str]:
        return [c for c in self.calls if not c.split(":")[1].startswith(("Describe", "Get", "List", "Search"))]


def _tags(resource_type: str, tags: dict[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": resource_type, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def _usable(cidr: str) -> list[str]:
    """Addresses AWS lets ENIs use in a subnet: all but network, +1, +2, +3 and broadcast."""
    hosts = list(ip_network(cidr).hosts())  # drops network and broadcast
    return [str(h) for h in hosts[3:]]


def _fill_node(ec2: Any, subnet_id: str, cidr: str, node_ip: str, image_id: str, sg: str, cluster: str) -> str:
    """One m5.large node whose three ENIs hold every usable address of its subnet (27 of a /27)."""
    inst = ec2.run_instances(
        ImageId=image_id,
        InstanceType=INSTANCE_TYPE,
        MinCount=1,
        MaxCount=1,
        SubnetId=subnet_id,
        PrivateIpAddress=node_ip,
        SecurityGroupIds=[sg],
        TagSpecifications=_tags(
            "instance",
            {
                "Name": f"{cluster}-{NODEGROUP}-Node",
                "eks:cluster-name": cluster,
                "eks:nodegroup-name": NODEGROUP,
                f"kubernetes.io/cluster/{cluster}": "owned",
            },
        ),
    )["Instances"][0]
    instance_id = str(inst["InstanceId"])
    rest = [ip for ip in _usable(cidr) if ip != node_ip]
    primary_eni = inst["NetworkInterfaces"][0]["NetworkInterfaceId"]
    # ipamd keeps IPs-per-ENI − 1 secondaries on each ENI: 9 + 10 + (remaining 7) here.
    ec2.assign_private_ip_addresses(NetworkInterfaceId=primary_eni, PrivateIpAddresses=rest[:9])
    for index, chunk in ((1, rest[9:19]), (2, rest[19:])):
        eni = ec2.create_network_interface(
            SubnetId=subnet_id,
            Description=f"aws-K8S-{instance_id}",
            Groups=[sg],
            PrivateIpAddresses=[{"PrivateIpAddress": ip, "Primary": i == 0} for i, ip in enumerate(chunk)],
            TagSpecifications=_tags(
                "network-interface",
                {"node.k8s.amazonaws.com/instance_id": instance_id, "cluster.k8s.amazonaws.com/name": cluster},
            ),
        )["NetworkInterface"]
        ec2.attach_network_interface(
            NetworkInterfaceId=eni["NetworkInterfaceId"], InstanceId=instance_id, DeviceIndex=index
        )
    return instance_id


def world_of(
    region: str,
    cluster: str,
    arn: str,
    vpc_id: str,
    subnet: Mapping[str, str],
    route_tables: tuple[str, str, str],
    igw: str,
    security_groups: tuple[str, str],
    node_ids: Sequence[str],
    *,
    peering: tuple[str, str, str] = ("", "", ""),
) -> World:
    """The World of an incident-shaped VPC: `route_tables` is (main, public, private), `security_groups`
    (cluster, control plane), `peering` (peer VPC, peering connection, transit gateway) or empty."""
    main_rt, public_rt, private_rt = route_tables
    cluster_sg, control_plane_sg = security_groups
    peer_vpc, pcx, tgw = peering
    return World(
        region=region,
        cluster=cluster,
        cluster_arn=arn,
        vpc_id=vpc_id,
        public_subnet_a=subnet["PublicSubnet01"],
        public_subnet_b=subnet["PublicSubnet02"],
        private_subnet_a=subnet["PrivateSubnet01"],
        private_subnet_b=subnet["PrivateSubnet02"],
        main_route_table_id=main_rt,
        public_route_table_id=public_rt,
        private_route_table_id=private_rt,
        igw_id=igw,
        cluster_security_group_id=cluster_sg,
        control_plane_security_group_id=control_plane_sg,
        nodegroup=NODEGROUP,
        node_instance_ids=tuple(node_ids),
        node_ips=(NODE_IPS["PublicSubnet01"], NODE_IPS["PublicSubnet02"]),
        peer_vpc_id=peer_vpc,
        peering_id=pcx,
        tgw_id=tgw,
    )


# Roomy control-plane subnets for tests that follow the incident past its node-subnet fix: the incident's own
# control plane sits in the nearly full private subnets (a true EKS-CONTROL-PLANE-SUBNET-LOW), which only
# `--strategy control-plane-subnets` fixes.
ROOMY_CONTROL_PLANE = {"ControlPlaneSubnet01": ("10.0.0.0/24", "a"), "ControlPlaneSubnet02": ("10.0.1.0/24", "b")}


def build_incident(
    ec2: Any,
    eks: Any,
    *,
    region: str = "ap-southeast-2",
    cluster: str = "demo",
    control_plane: dict[str, tuple[str, str]] | None = None,
) -> World:
    """Create the incident in moto through `ec2`/`eks` clients of `region`; return the ids. `control_plane`
    (name -> (cidr, zone)) gives the cluster its own subnets for the control plane instead of all four."""
    vpc_id = ec2.create_vpc(CidrBlock=VPC_CIDR, TagSpecifications=_tags("vpc", {"Name": VPC_NAME}))["Vpc"]["VpcId"]
    main_rt = ec2.describe_route_tables(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "association.main", "Values": ["true"]}]
    )["RouteTables"][0]["RouteTableId"]

    subnet: dict[str, str] = {}
    for name, (cidr, az) in SUBNETS.items():
        role = "kubernetes.io/role/elb" if name.startswith("Public") else "kubernetes.io/role/internal-elb"
        subnet[name] = ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=cidr,
            AvailabilityZone=f"{region}{az}",
            TagSpecifications=_tags("subnet", {"Name": f"eks-demo-ip-vpc-stack-{name}", role: "1"}),
        )["Subnet"]["SubnetId"]

    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc_id)
    public_rt = ec2.create_route_table(
        VpcId=vpc_id, TagSpecifications=_tags("route-table", {"Name": "eks-demo-ip-vpc-stack-PublicRouteTable"})
    )["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_rt, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    private_rt = ec2.create_route_table(
        VpcId=vpc_id, TagSpecifications=_tags("route-table", {"Name": "eks-demo-ip-vpc-stack-PrivateRouteTable"})
    )["RouteTable"]["RouteTableId"]
    for name, sid in subnet.items():
        ec2.associate_route_table(RouteTableId=public_rt if name.startswith("Public") else private_rt, SubnetId=sid)

    peer_vpc = ec2.create_vpc(CidrBlock=PEER_VPC_CIDR, TagSpecifications=_tags("vpc", {"Name": "shared-services-vpc"}))[
        "Vpc"
    ]["VpcId"]
    pcx = ec2.create_vpc_peering_connection(VpcId=vpc_id, PeerVpcId=peer_vpc)["VpcPeeringConnection"][
        "VpcPeeringConnectionId"
    ]
    ec2.accept_vpc_peering_connection(VpcPeeringConnectionId=pcx)
    ec2.create_route(RouteTableId=private_rt, DestinationCidrBlock=PEER_VPC_CIDR, VpcPeeringConnectionId=pcx)
    tgw = ec2.create_transit_gateway(Description="corp network")["TransitGateway"]["TransitGatewayId"]
    ec2.create_transit_gateway_vpc_attachment(
        TransitGatewayId=tgw, VpcId=vpc_id, SubnetIds=[subnet["PrivateSubnet01"], subnet["PrivateSubnet02"]]
    )
    ec2.create_route(RouteTableId=private_rt, DestinationCidrBlock=TGW_ROUTE, TransitGatewayId=tgw)
    # Private subnets reach the internet (EKS endpoint, ECR) through a central egress VPC behind the TGW.
    ec2.create_route(RouteTableId=private_rt, DestinationCidrBlock="0.0.0.0/0", TransitGatewayId=tgw)

    control_plane_sg = ec2.create_security_group(
        GroupName="eks-demo-ip-vpc-stack-ControlPlaneSecurityGroup",
        Description="Cluster communication with worker nodes",
        VpcId=vpc_id,
    )["GroupId"]
    cluster_sg = ec2.create_security_group(
        GroupName=f"eks-cluster-sg-{cluster}-1234567890",
        Description="EKS created security group applied to ENI that is attached to EKS Control Plane",
        VpcId=vpc_id,
        TagSpecifications=_tags(
            "security-group",
            {"aws:eks:cluster-name": cluster, f"kubernetes.io/cluster/{cluster}": "owned"},
        ),
    )["GroupId"]

    cp_subnets = {
        name: ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=cidr,
            AvailabilityZone=f"{region}{az}",
            TagSpecifications=_tags("subnet", {"Name": f"eks-demo-ip-vpc-stack-{name}"}),
        )["Subnet"]["SubnetId"]
        for name, (cidr, az) in (control_plane or {}).items()
    }
    arn = eks.create_cluster(
        name=cluster,
        version="1.27",
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks-demo-ip-cluster-role",
        resourcesVpcConfig={
            "subnetIds": list(cp_subnets.values()) or list(subnet.values()),
            "securityGroupIds": [control_plane_sg],
        },
    )["cluster"]["arn"]
    eks.create_nodegroup(
        clusterName=cluster,
        nodegroupName=NODEGROUP,
        subnets=[subnet["PublicSubnet01"], subnet["PublicSubnet02"]],
        instanceTypes=[INSTANCE_TYPE],
        amiType="AL2_x86_64",
        capacityType="ON_DEMAND",
        diskSize=80,
        nodeRole=f"arn:aws:iam::{ACCOUNT}:role/eks-demo-ip-node-role",
        scalingConfig={"minSize": 2, "maxSize": 4, "desiredSize": 2},
        labels={"alpha.eksctl.io/cluster-name": cluster, "alpha.eksctl.io/nodegroup-name": NODEGROUP},
        tags={"alpha.eksctl.io/nodegroup-type": "managed"},
    )

    node_ids = []
    for name in ("PublicSubnet01", "PublicSubnet02"):
        node_ids.append(_fill_node(ec2, subnet[name], SUBNETS[name][0], NODE_IPS[name], NODE_AMI, cluster_sg, cluster))
    for name, ip in CONTROL_PLANE_ENI_IPS.items() if not cp_subnets else ():
        ec2.create_network_interface(
            SubnetId=subnet[name],
            Description=f"Amazon EKS {cluster}",
            Groups=[cluster_sg],
            PrivateIpAddresses=[{"PrivateIpAddress": ip, "Primary": True}],
        )

    return world_of(
        region,
        cluster,
        arn,
        vpc_id,
        subnet,
        (main_rt, public_rt, private_rt),
        igw,
        (cluster_sg, control_plane_sg),
        node_ids,
        peering=(peer_vpc, pcx, tgw),
    )


# Environment for tests that talk to moto: fake keys, no profile/endpoint/config from the developer's
# machine, and no moto AMI catalogue (the world does not need it).
FAKE_AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": REGION,
    "AWS_CONFIG_FILE": "/nonexistent/aws-config",
    "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/aws-credentials",
    "AWS_EC2_METADATA_DISABLED": "true",
    "MOTO_EC2_LOAD_DEFAULT_AMIS": "false",
}
UNSET_AWS_ENV = (
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_EC2",
    "AWS_ENDPOINT_URL_EKS",
    "AWS_ENDPOINT_URL_SERVICE_QUOTAS",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "AWS_MAX_ATTEMPTS",
    "AWS_RETRY_MODE",
)


def fake_aws_env(mp: pytest.MonkeyPatch, **overrides: str) -> None:
    for name in UNSET_AWS_ENV:
        mp.delenv(name, raising=False)
    for name, value in {**FAKE_AWS_ENV, **overrides}.items():
        mp.setenv(name, value)


@contextmanager
def moto_incident(region: str = REGION, cluster: str = "demo") -> Iterator[tuple[Any, World]]:
    """Inside `mock_aws`: a boto3 Session of `region` and the incident built with it.

    Call with the fake environment in place (`fake_aws_env`).
    """
    import boto3
    from moto import mock_aws

    from tests.support.fakes.ec2_ipam import FakeIpam

    # An account without VPC IPAM: moto has none, and raises on its calls.
    with FakeIpam().in_front_of_moto(), mock_aws():
        session = boto3.Session(region_name=region)
        yield session, build_incident(session.client("ec2"), session.client("eks"), region=region, cluster=cluster)


@contextmanager
def moto_server(host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """moto's server on a loopback port (0: a free one), werkzeug's per-request log silenced; yields its URL.

    For what must cross a process or a socket (subprocess end-to-end, AWS_ENDPOINT_URL handling);
    in-process tests use `mock_aws` instead. The account has no VPC IPAM: moto lacks the IPAM actions (a
    process cidrx runs in cannot share botocore events with tests/support/fakes/ec2_ipam.py), so the server
    answers DescribeIpamPools with no pools, as EC2 does for an account that never set IPAM up."""
    import logging

    from moto.core.responses import ActionResult
    from moto.ec2.responses import EC2Response
    from moto.server import ThreadedMotoServer

    werkzeug = logging.getLogger("werkzeug")
    level = werkzeug.level
    werkzeug.setLevel(logging.ERROR)  # one line per request otherwise
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(EC2Response, "describe_ipam_pools", lambda self: ActionResult({"IpamPools": []}), raising=False)
        server.start()
        try:
            bound_host, bound_port = server.get_host_and_port()
            url = f"http://{bound_host}:{bound_port}"
            # The threaded server shares moto's in-process backends: start from an empty account, whatever an
            # earlier server or mock in this process left (a cluster of the same name makes CreateCluster fail).
            urllib.request.urlopen(urllib.request.Request(f"{url}/moto-api/reset", method="POST"), timeout=10).close()
            yield url
        finally:
            server.stop()
            werkzeug.setLevel(level)
