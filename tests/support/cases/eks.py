"""EKS snapshot cases for analyze/plan tests: the bundled incident snapshot and variants of it.

Every case starts from `examples/eks-demo-ip.snapshot.json` (the talk's demo cluster: two public /27s
at 100% holding the node group, two private /27s at 18.75%) and changes only what the case is about,
with `dataclasses.replace`, so a test reads as "the incident, but with X". Variants are re-sealed, so
their fingerprints are those of their content.
"""

from __future__ import annotations

import dataclasses
import functools
from ipaddress import IPv4Address, IPv4Network
from pathlib import Path
from typing import Any

from cidrx.model.kube import EnvVar, KubeEvent, KubeSection
from cidrx.model.plan import DIGEST_TAG, Plan, Step, save_plan
from cidrx.model.plan import seal as seal_plan
from cidrx.model.snapshot import Snapshot, load_snapshot, seal
from cidrx.model.target import Target
from cidrx.providers.eks.collect.cluster import EniConfig
from cidrx.providers.eks.model import Addon, EksSection, InstanceType, Nodegroup, Peering, RouteTable, Subnet, VpcCidr

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "eks-demo-ip.snapshot.json"

CLUSTER = "demo-ip"
REGION = "ap-southeast-2"
VPC_ID = "vpc-0f3a9ca141c0acd04"
AZ_A = "ap-southeast-2a"
AZ_B = "ap-southeast-2b"
PUBLIC_A = "subnet-0cd55c38980375d58"  # 10.0.208.0/27, 100% used, node group subnet
PUBLIC_B = "subnet-0a0bce6a1c1f38c54"  # 10.0.224.0/27, 100% used, node group subnet
PRIVATE_A = "subnet-0bae4d2bf017995b8"  # 10.0.186.0/27, 18.75% used
PRIVATE_B = "subnet-06d8153845fa5e9cb"  # 10.0.192.0/27, 18.75% used
MAIN_RT = "rtb-0123e4f5a6b7c8d9e"
PUBLIC_RT = "rtb-05e1c3a7d9b2f4e61"
PRIVATE_RT = "rtb-0c2d4f6a8b0e1d3c5"
CLUSTER_SG = "sg-0e6b7a3d2c1f09b84"
NODEGROUP = "managed-ng"
NODE_A = "ip-10-0-208-27.ap-southeast-2.compute.internal"
NODE_B = "ip-10-0-224-14.ap-southeast-2.compute.internal"
NODES_CREATED = "2023-11-04T00:12:57Z"  # the later of the two nodes' creation times
AWS_RESERVED = 5


@functools.cache
def _loaded() -> Snapshot:
    return load_snapshot(EXAMPLE)


def example() -> Snapshot:
    """The incident as bundled (loaded once; snapshots are frozen)."""
    return _loaded()


def eks_of(snap: Snapshot) -> EksSection:
    assert snap.eks is not None
    return snap.eks


def subnet(snap: Snapshot, subnet_id: str) -> Subnet:
    return next(s for s in eks_of(snap).subnets if s.subnet_id == subnet_id)


# --- generic editors ------------------------------------------------------------------------------


def with_eks(snap: Snapshot, **changes: Any) -> Snapshot:
    return seal(dataclasses.replace(snap, eks=dataclasses.replace(eks_of(snap), **changes)))


def with_kube(snap: Snapshot, **changes: Any) -> Snapshot:
    return seal(dataclasses.replace(snap, kube=dataclasses.replace(snap.kube, **changes)))


def with_subnet(snap: Snapshot, subnet_id: str, **changes: Any) -> Snapshot:
    subnets = tuple(dataclasses.replace(s, **changes) if s.subnet_id == subnet_id else s for s in eks_of(snap).subnets)
    return with_eks(snap, subnets=subnets)


def with_nodegroup(snap: Snapshot, name: str, **changes: Any) -> Snapshot:
    groups = tuple(dataclasses.replace(ng, **changes) if ng.name == name else ng for ng in eks_of(snap).nodegroups)
    return with_eks(snap, nodegroups=groups)


def add_subnet(snap: Snapshot, new: Subnet) -> Snapshot:
    return with_eks(snap, subnets=(*eks_of(snap).subnets, new))


def make_subnet(
    subnet_id: str,
    cidr: str,
    az: str,
    *,
    used: int = 0,
    route_table_id: str = PRIVATE_RT,
    tags: dict[str, str] | None = None,
) -> Subnet:
    """A subnet of the demo VPC with `used` addresses in use right after the AWS-reserved ones."""
    net = IPv4Network(cidr)
    addresses = [f"{net.network_address + 4 + i}/32" for i in range(used)]
    return Subnet(
        subnet_id=subnet_id,
        vpc_id=VPC_ID,
        cidr=cidr,
        az=az,
        az_id="apse2-az3" if az == AZ_A else "apse2-az1",
        available_ips=net.num_addresses - AWS_RESERVED - used,
        route_table_id=route_table_id,
        tags=dict(tags or {}),
        used=tuple(addresses),
    )


def resize_subnet(snap: Snapshot, subnet_id: str, cidr: str, used: tuple[str, ...] | None = None) -> Snapshot:
    """Give a subnet another CIDR; `used` defaults to its current addresses moved to the new base."""
    old = subnet(snap, subnet_id)
    net = IPv4Network(cidr)
    if used is None:
        base_old = int(IPv4Network(old.cidr).network_address)
        used = tuple(
            f"{IPv4Address(int(net.network_address) + int(IPv4Network(u).network_address) - base_old)}/32"
            for u in old.used
        )
    available = net.num_addresses - AWS_RESERVED - sum(IPv4Network(u).num_addresses for u in used)
    return with_subnet(snap, subnet_id, cidr=cidr, used=used, available_ips=available)


def with_env(snap: Snapshot, **env: str | None) -> Snapshot:
    """Set (or with None, remove) env vars of the aws-node container."""
    aws_node = snap.kube.aws_node
    assert aws_node is not None
    current = {v.name: v.value for v in aws_node.env}
    for key, value in env.items():
        if value is None:
            current.pop(key, None)
        else:
            current[key] = value
    new_env = tuple(EnvVar(k, v) for k, v in sorted(current.items()))
    return with_kube(snap, aws_node=dataclasses.replace(aws_node, env=new_env))


# --- the variants ---------------------------------------------------------------------------------


def eniconfig(
    az: str, subnet_id: str, *, created: str = "2023-11-04T01:30:00Z", labels: dict[str, str] | None = None
) -> EniConfig:
    return EniConfig(
        name=az, subnet=subnet_id, security_groups=(CLUSTER_SG,), created=created, labels=dict(labels or {})
    )


def custom_networking(snap: Snapshot | None = None, eniconfigs: tuple[EniConfig, ...] | None = None) -> Snapshot:
    """Custom networking on, with ENIConfigs per AZ pointing at the roomy private subnets (made after
    the nodes, so the nodes predate them) unless others are given; `()` means none."""
    snap = with_env(
        snap or example(), AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG="true", ENI_CONFIG_LABEL_DEF="topology.kubernetes.io/zone"
    )
    if eniconfigs is None:
        eniconfigs = (eniconfig(AZ_A, PRIVATE_A), eniconfig(AZ_B, PRIVATE_B))
    return with_kube(snap, eniconfigs=eniconfigs)


def eniconfigs_only(snap: Snapshot | None = None) -> Snapshot:
    """ENIConfigs exist but custom networking is still off."""
    return with_kube(snap or example(), eniconfigs=(eniconfig(AZ_A, PRIVATE_A), eniconfig(AZ_B, PRIVATE_B)))


def nodes_created(snap: Snapshot, created: str) -> Snapshot:
    nodes = tuple(dataclasses.replace(n, created=created) for n in snap.kube.nodes)
    return with_kube(snap, nodes=nodes)


def prefix_delegation(snap: Snapshot | None = None) -> Snapshot:
    return with_env(snap or example(), ENABLE_PREFIX_DELEGATION="true")


def warm_ip_target(snap: Snapshot | None = None, target: int = 3) -> Snapshot:
    return with_env(snap or example(), WARM_IP_TARGET=str(target), MINIMUM_IP_TARGET="10")


def roomy(snap: Snapshot | None = None) -> Snapshot:
    """The node group subnets are /24s (same addresses in use): plenty of room, 13 free aligned /28s each."""
    snap = resize_subnet(snap or example(), PUBLIC_A, "10.0.208.0/24")
    return resize_subnet(snap, PUBLIC_B, "10.0.224.0/24")


def nearly_full(snap: Snapshot | None = None, free: int = 15) -> Snapshot:
    """The node group subnets have `free` addresses left (a new m5.large node needs 10 there)."""
    snap = snap or example()
    for sid in (PUBLIC_A, PUBLIC_B):
        s = subnet(snap, sid)
        snap = with_subnet(snap, sid, used=s.used[: len(s.used) - free], available_ips=free)
    return snap


def at_cidr_quota(snap: Snapshot | None = None) -> Snapshot:
    """The VPC already holds 5 IPv4 CIDR blocks (the default quota)."""
    snap = snap or example()
    vpc = eks_of(snap).vpc
    extra = tuple(VpcCidr(f"10.{i}.0.0/16", f"vpc-cidr-assoc-extra{i}", "associated") for i in (2, 3, 4, 5))
    return with_eks(snap, vpc=dataclasses.replace(vpc, cidrs=(*vpc.cidrs, *extra)))


def peered(snap: Snapshot | None = None, cidrs: tuple[str, ...] = ("10.1.0.0/16",)) -> Snapshot:
    snap = snap or example()
    peering = Peering("pcx-0a1b2c3d4e5f60718", "active", "vpc-0peer00000000000a", cidrs)
    return with_eks(snap, peerings=(*eks_of(snap).peerings, peering))


def with_route(snap: Snapshot, route_table_id: str, destination: str) -> Snapshot:
    tables = tuple(
        dataclasses.replace(rt, destinations=(*rt.destinations, destination))
        if rt.route_table_id == route_table_id
        else rt
        for rt in eks_of(snap).route_tables
    )
    return with_eks(snap, route_tables=tables)


def cgnat_peered(snap: Snapshot | None = None) -> Snapshot:
    """A peered VPC uses 100.64.0.0/16."""
    return peered(snap, ("100.64.0.0/16",))


def cgnat_routed(snap: Snapshot | None = None) -> Snapshot:
    """The private route table sends 100.64.0.0/16 to a transit gateway (on-premises CGNAT space)."""
    return with_route(snap or example(), PRIVATE_RT, "100.64.0.0/16")


def busy_network(snap: Snapshot | None = None) -> Snapshot:
    """Peering to 10.1.0.0/16 and a transit-gateway route to 172.20.0.0/16 and to 100.64.0.0/18."""
    snap = peered(snap)
    snap = with_route(snap, PRIVATE_RT, "172.20.0.0/16")
    return with_route(snap, PUBLIC_RT, "100.64.0.0/18")


def non_nitro(snap: Snapshot | None = None, name: str = "m4.large") -> Snapshot:
    """The node group runs a Xen instance type (m4.large: 2 ENIs x 10 addresses)."""
    snap = snap or example()
    itype = InstanceType(name=name, vcpus=2, max_enis=2, ips_per_eni=10, hypervisor="xen")
    snap = with_eks(snap, instance_types=(itype,))
    snap = with_nodegroup(snap, NODEGROUP, instance_types=(name,))
    return with_kube(snap, nodes=tuple(dataclasses.replace(n, instance_type=name) for n in snap.kube.nodes))


def tiny_instances(snap: Snapshot | None = None) -> Snapshot:
    """The node group runs t3.micro (2 ENIs x 2 addresses: 3 pods per node with custom networking)."""
    snap = snap or example()
    itype = InstanceType(name="t3.micro", vcpus=2, max_enis=2, ips_per_eni=2, hypervisor="nitro")
    snap = with_eks(snap, instance_types=(itype,))
    snap = with_nodegroup(snap, NODEGROUP, instance_types=("t3.micro",))
    return with_kube(snap, nodes=tuple(dataclasses.replace(n, instance_type="t3.micro") for n in snap.kube.nodes))


def managed_addon(
    snap: Snapshot | None = None, configuration_values: str = "", *, keep_aws_node: bool = False
) -> Snapshot:
    """vpc-cni is an EKS managed add-on with these configurationValues; aws-node's env is not in the
    snapshot unless `keep_aws_node`."""
    snap = snap or example()
    addon = Addon("vpc-cni", "v1.15.1-eksbuild.1", "ACTIVE", configuration_values)
    snap = with_eks(snap, vpc_cni_addon=addon)
    return snap if keep_aws_node else with_kube(snap, aws_node=None)


def no_kube(snap: Snapshot | None = None, reason: str = "--no-kube was given") -> Snapshot:
    snap = snap or example()
    return seal(dataclasses.replace(snap, kube=KubeSection(available=False, reason=reason)))


def starved_nodegroup(snap: Snapshot | None = None) -> Snapshot:
    """EKS reports the node group unhealthy: its subnets cannot take another node."""
    return with_nodegroup(snap or example(), NODEGROUP, health_issues=("InsufficientFreeAddresses",))


def short_event(snap: Snapshot | None = None) -> Snapshot:
    """An InsufficientFreeAddressesInSubnet event, the node group itself reporting healthy."""
    snap = snap or example()
    event = KubeEvent(
        "kube-system",
        "Node",
        "managed-ng-launch",
        "InsufficientFreeAddressesInSubnet",
        "Warning",
        f"There are not enough free addresses in subnet {PUBLIC_A} to satisfy the request",
        count=3,
        last_seen="2023-11-04T01:05:00Z",
    )
    return with_kube(snap, events=(*snap.kube.events, event))


def nodegroup_named(snap: Snapshot, name: str, tags: dict[str, str] | None = None) -> Snapshot:
    """A second node group called `name`, a copy of the template with other tags."""
    template = next(ng for ng in eks_of(snap).nodegroups if ng.name == NODEGROUP)
    other: Nodegroup = dataclasses.replace(template, name=name, tags=dict(tags or {}))
    return with_eks(snap, nodegroups=(*eks_of(snap).nodegroups, other))


def partially_applied(snap: Snapshot, plan_id: str, cidr: str, pieces: dict[str, str]) -> Snapshot:
    """What an interrupted apply of a custom-networking plan leaves: the CIDR associated (AWS adds its local
    route to every route table of the VPC) and the per-AZ subnets created, tagged with the plan id."""
    vpc = eks_of(snap).vpc
    snap = with_eks(
        snap, vpc=dataclasses.replace(vpc, cidrs=(*vpc.cidrs, VpcCidr(cidr, "vpc-cidr-assoc-ours", "associated")))
    )
    tables: tuple[RouteTable, ...] = tuple(
        dataclasses.replace(rt, destinations=(*rt.destinations, cidr)) for rt in eks_of(snap).route_tables
    )
    snap = with_eks(snap, route_tables=tables)
    for i, (az, piece) in enumerate(sorted(pieces.items())):
        snap = add_subnet(
            snap,
            make_subnet(
                f"subnet-0cidrx{i:011d}",
                piece,
                az,
                route_table_id=MAIN_RT,
                tags={"Name": f"cidrx-{CLUSTER}-pods-{az}", DIGEST_TAG: plan_id},
            ),
        )
    return snap


def sample_plan(path: Path) -> Path:
    """A one-step custom-networking plan for the example snapshot, saved at `path`."""
    plan = seal_plan(
        Plan(
            target=Target("eks", "demo-ip", region="ap-southeast-2"),
            created_at="2023-11-04T01:15:00Z",
            snapshot_fingerprint=example().fingerprint,
            strategy="custom-networking",
            basis={"vpc_id": "vpc-0f3a9ca141c0acd04", "cidr": "100.64.0.0/20"},
            steps=(
                Step(
                    "associate-vpc-cidr",
                    "eks.associate-vpc-cidr",
                    {"vpc_id": "vpc-0f3a9ca141c0acd04", "cidr": "100.64.0.0/20"},
                    "associate secondary CIDR 100.64.0.0/20 with vpc-0f3a9ca141c0acd04",
                ),
            ),
        )
    )
    save_plan(plan, path)
    return path


# --- subnet discovery (VPC CNI v1.18+) ---------------------------------------------------------------

CNI_IMAGE_REPO = "602401143452.dkr.ecr.ap-southeast-2.amazonaws.com/amazon-k8s-cni"
DISCOVERY_CIDR = "100.64.0.0/16"
DISCOVERY_A = "subnet-0d15c0a11ab0c0a01"  # 100.64.0.0/24 in 2a, tagged kubernetes.io/role/cni=1
DISCOVERY_B = "subnet-0d15c0a11ab0c0b02"  # 100.64.1.0/24 in 2b, tagged kubernetes.io/role/cni=1
ROLE_CNI = {"kubernetes.io/role/cni": "1"}


def cni_version(snap: Snapshot, version: str) -> Snapshot:
    """aws-node runs the VPC CNI image of `version` (e.g. "v1.18.1")."""
    aws_node = snap.kube.aws_node
    assert aws_node is not None
    return with_kube(snap, aws_node=dataclasses.replace(aws_node, image=f"{CNI_IMAGE_REPO}:{version}"))


def node_enis(snap: Snapshot, enis: int | dict[str, int]) -> Snapshot:
    """Each node's instance has `enis` ENIs attached (per node name when a dict); m5.large allows 3."""
    from cidrx.providers.eks.model import InstanceEnis

    nodes = {n.name: n for n in snap.kube.nodes}
    subnet_of = {NODE_A: PUBLIC_A, NODE_B: PUBLIC_B}
    counts = enis if isinstance(enis, dict) else {name: enis for name in nodes}
    found = tuple(
        InstanceEnis(f"i-0{i:016x}", nodes[name].internal_ip, subnet_of.get(name, ""), count)
        for i, (name, count) in enumerate(sorted(counts.items()), start=1)
    )
    return with_eks(snap, instance_enis=found)


def subnet_discovery(
    snap: Snapshot | None = None,
    *,
    version: str = "v1.18.1",
    enis: int | dict[str, int] = 3,
    tags: dict[str, str] | None = None,
    free: int | None = None,
    tagged: bool = True,
) -> Snapshot:
    """The incident on VPC CNI `version`, with a /24 per zone in a secondary 100.64.0.0/16 tagged for subnet
    discovery (`tags`, default kubernetes.io/role/cni=1), nodes with `enis` ENIs attached and, when `free` is
    given, that many free addresses left in each node subnet. Without `tagged`, no tagged subnet yet."""
    snap = cni_version(snap or example(), version)
    if not tagged:
        return node_enis(_node_subnets_free(snap, free), enis)
    vpc = eks_of(snap).vpc
    cidrs = (*vpc.cidrs, VpcCidr(DISCOVERY_CIDR, "vpc-cidr-assoc-0d15c0a11ab0c0a00", "associated"))
    snap = with_eks(snap, vpc=dataclasses.replace(vpc, cidrs=cidrs))
    for subnet_id, cidr, az in ((DISCOVERY_A, "100.64.0.0/24", AZ_A), (DISCOVERY_B, "100.64.1.0/24", AZ_B)):
        snap = add_subnet(
            snap,
            make_subnet(subnet_id, cidr, az, used=3, route_table_id=PUBLIC_RT, tags=ROLE_CNI if tags is None else tags),
        )
    return node_enis(_node_subnets_free(snap, free), enis)


def _node_subnets_free(snap: Snapshot, free: int | None) -> Snapshot:
    for subnet_id in (PUBLIC_A, PUBLIC_B) if free is not None else ():
        s = subnet(snap, subnet_id)
        snap = with_subnet(snap, subnet_id, available_ips=free, used=s.used[: len(s.used) - free])
    return snap


def subnet_discovery_off(*, managed: bool = False) -> Snapshot:
    """Subnet discovery supported but turned off (ENABLE_SUBNET_DISCOVERY=false), nodes with ENI slots left and
    room in the node subnets; with `managed`, the VPC CNI is the EKS add-on v1.19.0 saying so."""
    snap = subnet_discovery(enis=1, free=3, tagged=False)
    if not managed:
        return with_env(snap, ENABLE_SUBNET_DISCOVERY="false")
    addon = Addon("vpc-cni", "v1.19.0-eksbuild.1", "ACTIVE", '{"env":{"ENABLE_SUBNET_DISCOVERY":"false"}}')
    return with_kube(with_eks(snap, vpc_cni_addon=addon), aws_node=None)


def discovery_example() -> Snapshot:
    """examples/eks-subnet-discovery.snapshot.json: the incident a little earlier, on VPC CNI v1.18.1 with
    subnet discovery on by default: each node has 2 of its 3 ENIs, 7 addresses are left in each node subnet
    (a new node's warm pool needs 10), and only ap-southeast-2a has a subnet tagged kubernetes.io/role/cni."""
    snap = subnet_discovery(version="v1.18.1-eksbuild.1", enis=2, free=7, tagged=False)
    tags = {"Name": "eks-demo-ip-pods-2a", **ROLE_CNI}
    return add_subnet(snap, make_subnet(DISCOVERY_A, "10.0.32.0/24", AZ_A, used=3, route_table_id=PUBLIC_RT, tags=tags))


IPAM_POOL_ID = "ipam-pool-0c0a1b2c3d4e5f607"


def ipam_pool(snap: Snapshot | None = None) -> Snapshot:
    """The VPC's CIDRs come from an AWS VPC IPAM pool (10.0.0.0/14, /16 to /22, only to env=prod resources),
    which also allocated the peered VPC's 10.1.0.0/16; the VPC is tagged env=prod."""
    from cidrx.providers.eks.model import IpamPool

    snap = snap or example()
    eks = eks_of(snap)
    pool = IpamPool(
        IPAM_POOL_ID,
        state="create-complete",
        min_netmask=16,
        max_netmask=22,
        resource_tags={"env": "prod"},
        cidrs=("10.0.0.0/14",),
        allocations=("10.0.0.0/16", "10.1.0.0/16"),
        vpc_cidrs=("10.0.0.0/16",),
    )
    vpc = dataclasses.replace(eks.vpc, tags={**eks.vpc.tags, "env": "prod"})
    return with_eks(snap, vpc=vpc, ipam_pools=(pool,))
