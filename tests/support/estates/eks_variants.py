"""EKS estates as real organisations run them, built on the incident (eks_world.py / eks_cluster.py):

- `build_tgw_egress` (a builder for `eks_estate`): the incident, but the transit gateway the private subnets
  send everything to also routes 100.64.0.0/16 to another VPC, blackholes 100.65.0.0/16, and the private route
  table sends the managed prefix list "corp-ranges" (100.66.0.0/16, 100.67.0.0/24) there: the ranges a
  planner picks first in 100.64.0.0/10, none of them visible as a route of the VPC itself.
- `use_ipam_pool` (with `eks_estate(ipam=FakeIpam())`): the VPC's CIDRs come from the AWS VPC IPAM pool
  "ipam-pool-0corp" (10.0.0.0/14, allocations /16 to /22, only to resources tagged env=prod), which also
  allocated the peered VPC's 10.1.0.0/16; the VPC carries env=prod.
- `build_control_plane_room` (a builder): the incident, whose cluster lists its two full node subnets among its
  own, plus one /27 per zone (10.0.240.0/27 in a, 10.0.240.32/27 in b) that no node or pod uses: the subnets
  the control plane could be given.
- `use_annotated_eniconfigs`: custom networking with ENIConfigs chosen by the node annotation
  `k8s.amazonaws.com/eniConfig` (ENI_CONFIG_LABEL_DEF unset), a documented setup that ipamd serves through
  its annotation rule (aws/amazon-vpc-cni-k8s pkg/eniconfig/eniconfig.go).

Each function changes a live estate (moto and the fake API server) in place, so the `eks` fixture's estate
stays the one place that builds and tears down worlds.
"""

from __future__ import annotations

from typing import Any

from tests.support.estates.eks import PEER_VPC_CIDR, VPC_CIDR, World, build_incident
from tests.support.estates.eks_cluster import node_name
from tests.support.estates.eks_live import EksEstate
from tests.support.fakes.ec2_ipam import FakeIpam, Pool

OTHER_VPC_CIDR = "100.64.0.0/16"
BLACKHOLE = "100.65.0.0/16"
CORP_RANGES = ("100.66.0.0/16", "100.67.0.0/24")
TGW_ROUTED = (OTHER_VPC_CIDR, BLACKHOLE, *CORP_RANGES)


def tgw_route_table(ec2: Any, tgw_id: str) -> str:
    tables = ec2.describe_transit_gateway_route_tables(Filters=[{"Name": "transit-gateway-id", "Values": [tgw_id]}])[
        "TransitGatewayRouteTables"
    ]
    return str(next(t for t in tables if t.get("DefaultAssociationRouteTable"))["TransitGatewayRouteTableId"])


CONTROL_PLANE_ROOM = {"a": "10.0.240.0/27", "b": "10.0.240.32/27"}


def build_control_plane_room(ec2: Any, eks: Any, *, region: str, cluster: str) -> World:
    world = build_incident(ec2, eks, region=region, cluster=cluster)
    for az, cidr in CONTROL_PLANE_ROOM.items():
        ec2.create_subnet(
            VpcId=world.vpc_id,
            CidrBlock=cidr,
            AvailabilityZone=f"{region}{az}",
            TagSpecifications=[
                {"ResourceType": "subnet", "Tags": [{"Key": "Name", "Value": f"eks-demo-control-plane-{az}"}]}
            ],
        )
    return world


def build_tgw_egress(ec2: Any, eks: Any, *, region: str, cluster: str) -> World:
    world = build_incident(ec2, eks, region=region, cluster=cluster)
    other = ec2.create_vpc(CidrBlock=OTHER_VPC_CIDR)["Vpc"]["VpcId"]
    other_subnet = ec2.create_subnet(VpcId=other, CidrBlock="100.64.0.0/24")["Subnet"]["SubnetId"]
    attachment = ec2.create_transit_gateway_vpc_attachment(
        TransitGatewayId=world.tgw_id, VpcId=other, SubnetIds=[other_subnet]
    )["TransitGatewayVpcAttachment"]["TransitGatewayAttachmentId"]
    rt = tgw_route_table(ec2, world.tgw_id)
    ec2.create_transit_gateway_route(
        TransitGatewayRouteTableId=rt, DestinationCidrBlock=OTHER_VPC_CIDR, TransitGatewayAttachmentId=attachment
    )
    ec2.create_transit_gateway_route(TransitGatewayRouteTableId=rt, DestinationCidrBlock=BLACKHOLE, Blackhole=True)
    pl = ec2.create_managed_prefix_list(
        PrefixListName="corp-ranges", AddressFamily="IPv4", MaxEntries=5, Entries=[{"Cidr": c} for c in CORP_RANGES]
    )["PrefixList"]["PrefixListId"]
    ec2.create_route(
        RouteTableId=world.private_route_table_id, DestinationPrefixListId=pl, TransitGatewayId=world.tgw_id
    )
    return world


ANNOTATION = "k8s.amazonaws.com/eniConfig"
ENICONFIG_API = "crd.k8s.amazonaws.com/v1alpha1"


POOL_ID = "ipam-pool-0c0a1b2c3d4e5f607"
POOL_CIDR = "10.0.0.0/14"
POOL_TAGS = {"env": "prod"}


def use_ipam_pool(estate: EksEstate, ipam: FakeIpam) -> Pool:
    w = estate.world
    estate.ec2.create_tags(Resources=[w.vpc_id], Tags=[{"Key": k, "Value": v} for k, v in POOL_TAGS.items()])
    pool = ipam.add_pool(
        Pool(POOL_ID, [POOL_CIDR], min_netmask=16, max_netmask=22, default_netmask=20, resource_tags=dict(POOL_TAGS))
    )
    pool.allocate(VPC_CIDR, w.vpc_id)
    pool.allocate(PEER_VPC_CIDR, w.peer_vpc_id)
    return pool


def set_aws_node_env(estate: EksEstate, **env: str | None) -> None:
    """Set (None: remove) variables of the aws-node container, as `kubectl set env` would."""
    ds = estate.kube.get("apps", "v1", "daemonsets", "aws-node", "kube-system")
    assert ds is not None
    for c in ds["spec"]["template"]["spec"]["containers"]:
        if c["name"] == "aws-node":
            kept = [e for e in c.get("env") or [] if e["name"] not in env]
            c["env"] = kept + [{"name": k, "value": v} for k, v in env.items() if v is not None]
    estate.kube.put(ds)


def annotate_node(estate: EksEstate, ip: str, annotations: dict[str, str | None]) -> None:
    node = estate.kube.get("", "v1", "nodes", node_name(ip))
    assert node is not None
    current: dict[str, Any] = node["metadata"].setdefault("annotations", {})
    for key, value in annotations.items():
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value
    estate.kube.put(node)


def put_eniconfig(estate: EksEstate, name: str, subnet: str, groups: list[str]) -> None:
    estate.kube.put(
        {
            "apiVersion": ENICONFIG_API,
            "kind": "ENIConfig",
            "metadata": {"name": name, "creationTimestamp": "2023-11-03T23:00:00Z"},
            "spec": {"subnet": subnet, "securityGroups": groups},
        }
    )


def use_annotated_eniconfigs(estate: EksEstate) -> dict[str, str]:
    """Custom networking on, ENI_CONFIG_LABEL_DEF unset, ENIConfigs `pods-a`/`pods-b` on the private subnets
    and each node annotated with its own; returns node name -> ENIConfig name."""
    w = estate.world
    set_aws_node_env(estate, AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG="true", ENI_CONFIG_LABEL_DEF=None)
    chosen = {}
    for ip, name, subnet in zip(w.node_ips, ("pods-a", "pods-b"), w.private_subnets, strict=True):
        put_eniconfig(estate, name, subnet, [w.cluster_security_group_id])
        annotate_node(estate, ip, {ANNOTATION: name})
        chosen[node_name(ip)] = name
    return chosen
