"""The incident's cluster as its Kubernetes API shows it, for the fake API server, plus what the end-to-end
and resume tests compare after an apply.

It matches the moto world of tests/support/estates/eks.py: two m5.large nodes of the managed node group, one per
public subnet (ip-10-0-208-27 in 2a, ip-10-0-224-14 in 2b); aws-node in kube-system with the VPC CNI's
stock env (WARM_ENI_TARGET=1, custom networking off) and a rolled-out status; the pod of the talk stuck in
ContainerCreating with its FailedCreatePodSandBox event (the message as the talk shows it); the ENIConfig
CRD installed (EKS ships it) but no ENIConfig yet.

A DaemonSet's status is written by its controller, not by the API server, so `DaemonSetController` plays
that part: before the server answers a read of aws-node it marks the latest generation rolled out, the way
the controller would once every node runs the new pod template. Switched off, a rollout never finishes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from ipaddress import ip_network
from typing import Any

import pytest

from cidrx.providers.eks.model import APPLIED_AT_TAG
from tests.support.estates.eks import (
    ACCOUNT,
    INSTANCE_TYPE,
    NODE_AMI,
    NODE_IPS,
    NODEGROUP,
    REGION,
    SUBNETS,
    VPC_CIDR,
    VPC_NAME,
    World,
    world_of,
)
from tests.support.fakes.kube_server import FakeKubeServer, RequestRecord

ENICONFIG_GROUP = "crd.k8s.amazonaws.com"
# The cluster runs no other CNI or IPAM add-ons: only the ENIConfig CRD is installed.
CRD_GROUPS = frozenset({ENICONFIG_GROUP})
PLAN_TAG = "cidrx.io/plan"

POD = "mydeploy-6bdbfc484d-2frv4"
# As the talk shows it ("<id>" stands for the sandbox id there).
SANDBOX_MESSAGE = (
    "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox <id>: "
    'plugin type="aws-cni" name="aws-cni" failed (add): add cmd: failed to assign an IP address to container'
)
NODE_CREATED = "2023-11-04T00:21:07Z"
CNI_IMAGE = "602401143452.dkr.ecr.ap-southeast-2.amazonaws.com/amazon-k8s-cni:v1.15.1-eksbuild.1"


def node_name(ip: str) -> str:
    return f"ip-{ip.replace('.', '-')}.{REGION}.compute.internal"


def aws_node_env(cluster: str, vpc_id: str) -> list[dict[str, Any]]:
    """The aws-node container env of an EKS 1.27 cluster with VPC CNI v1.15.1, as installed."""
    values = {
        "ADDITIONAL_ENI_TAGS": "{}",
        "ANNOTATE_POD_IP": "false",
        "AWS_VPC_CNI_NODE_PORT_SUPPORT": "true",
        "AWS_VPC_ENI_MTU": "9001",
        "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG": "false",
        "AWS_VPC_K8S_CNI_EXTERNALSNAT": "false",
        "AWS_VPC_K8S_CNI_LOGLEVEL": "DEBUG",
        "AWS_VPC_K8S_CNI_LOG_FILE": "/host/var/log/aws-routed-eni/ipamd.log",
        "AWS_VPC_K8S_CNI_RANDOMIZESNAT": "prng",
        "AWS_VPC_K8S_CNI_VETHPREFIX": "eni",
        "AWS_VPC_K8S_PLUGIN_LOG_FILE": "/var/log/aws-routed-eni/plugin.log",
        "AWS_VPC_K8S_PLUGIN_LOG_LEVEL": "DEBUG",
        "CLUSTER_NAME": cluster,
        "DISABLE_INTROSPECTION": "false",
        "DISABLE_METRICS": "false",
        "DISABLE_NETWORK_RESOURCE_PROVISIONING": "false",
        "ENABLE_IPv4": "true",
        "ENABLE_IPv6": "false",
        "ENABLE_POD_ENI": "false",
        "ENABLE_PREFIX_DELEGATION": "false",
        "VPC_CNI_VERSION": "v1.15.1",
        "VPC_ID": vpc_id,
        "WARM_ENI_TARGET": "1",
        "WARM_PREFIX_TARGET": "1",
    }
    env: list[dict[str, Any]] = [{"name": k, "value": v} for k, v in values.items()]
    env.append({"name": "MY_NODE_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}})
    env.append({"name": "MY_POD_NAME", "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}})
    return env


def aws_node(
    cluster: str, vpc_id: str, nodes: int = 2, image: str = CNI_IMAGE, extra_env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The aws-node DaemonSet running `image`, rolled out on `nodes` nodes (generation 1 observed)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": "aws-node",
            "namespace": "kube-system",
            "labels": {"k8s-app": "aws-node", "app.kubernetes.io/name": "aws-node"},
            "generation": 1,
        },
        "spec": {
            "selector": {"matchLabels": {"k8s-app": "aws-node"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "10%"}},
            "template": {
                "metadata": {"labels": {"k8s-app": "aws-node", "app.kubernetes.io/name": "aws-node"}},
                "spec": {
                    "hostNetwork": True,
                    "priorityClassName": "system-node-critical",
                    "serviceAccountName": "aws-node",
                    "containers": [
                        {
                            "name": "aws-node",
                            "image": image,
                            "ports": [{"containerPort": 61678, "name": "metrics", "protocol": "TCP"}],
                            "env": [
                                *(e for e in aws_node_env(cluster, vpc_id) if e["name"] not in (extra_env or {})),
                                *({"name": k, "value": v} for k, v in (extra_env or {}).items()),
                            ],
                        }
                    ],
                },
            },
        },
        "status": _rolled_out(1, nodes),
    }


def _rolled_out(generation: int, nodes: int) -> dict[str, Any]:
    return {
        "observedGeneration": generation,
        "desiredNumberScheduled": nodes,
        "currentNumberScheduled": nodes,
        "updatedNumberScheduled": nodes,
        "numberReady": nodes,
        "numberAvailable": nodes,
        "numberMisscheduled": 0,
    }


def _node(world: World, ip: str, az: str, instance_id: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": node_name(ip),
            "creationTimestamp": NODE_CREATED,
            "labels": {
                "kubernetes.io/hostname": node_name(ip),
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/region": world.region,
                "topology.kubernetes.io/zone": az,
                "failure-domain.beta.kubernetes.io/zone": az,
                "node.kubernetes.io/instance-type": INSTANCE_TYPE,
                "beta.kubernetes.io/instance-type": INSTANCE_TYPE,
                "eks.amazonaws.com/nodegroup": NODEGROUP,
                "eks.amazonaws.com/capacityType": "ON_DEMAND",
                "alpha.eksctl.io/cluster-name": world.cluster,
                "alpha.eksctl.io/nodegroup-name": NODEGROUP,
            },
        },
        "spec": {"providerID": f"aws:///{az}/{instance_id}"},
        "status": {
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": node_name(ip)},
                {"type": "InternalDNS", "address": node_name(ip)},
            ],
            "allocatable": {"cpu": "1930m", "memory": "7220184Ki", "pods": "29"},
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
        },
    }


def seed_incident(server: FakeKubeServer, world: World) -> None:
    """Put the incident's nodes, aws-node, stuck pod and sandbox event into `server`."""
    zones = [f"{world.region}{SUBNETS[name][1]}" for name in ("PublicSubnet01", "PublicSubnet02")]
    nodes = [
        _node(world, ip, az, iid) for ip, az, iid in zip(world.node_ips, zones, world.node_instance_ids, strict=True)
    ]
    server.put_many(nodes)
    server.put(aws_node(world.cluster, world.vpc_id, len(nodes), world.cni_image or CNI_IMAGE, dict(world.cni_env)))
    first = nodes[0]["metadata"]["name"]
    server.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": POD,
                "namespace": "default",
                "labels": {"app": "mydeploy", "pod-template-hash": "6bdbfc484d"},
                "creationTimestamp": "2023-11-04T00:55:50Z",
            },
            "spec": {"nodeName": first, "containers": [{"name": "mydeploy", "image": "nginx"}]},
            "status": {
                "phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "True"}],
                "containerStatuses": [
                    {"name": "mydeploy", "ready": False, "state": {"waiting": {"reason": "ContainerCreating"}}}
                ],
            },
        }
    )
    server.put(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{POD}.1794a7c3b0b3c7e1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": POD, "namespace": "default", "apiVersion": "v1"},
            "reason": "FailedCreatePodSandBox",
            "type": "Warning",
            "message": SANDBOX_MESSAGE,
            "count": 12,
            "firstTimestamp": "2023-11-04T00:55:52Z",
            "lastTimestamp": "2023-11-04T00:58:16Z",
            "source": {"component": "kubelet", "host": first},
        }
    )


# --- request hooks --------------------------------------------------------------------------------------

Hook = Callable[[RequestRecord], None]


class Hooks:
    """Several `on_request` callbacks on one server, run in the order added."""

    def __init__(self, server: FakeKubeServer) -> None:
        self.server = server
        self.hooks: list[Hook] = []
        server.on_request = self

    def add(self, hook: Hook) -> Hook:
        self.hooks.append(hook)
        return hook

    def __call__(self, record: RequestRecord) -> None:
        for hook in list(self.hooks):
            hook(record)


AWS_NODE_PATH = "/apis/apps/v1/namespaces/kube-system/daemonsets/aws-node"


class DaemonSetController:
    """Marks aws-node's newest generation rolled out before the server answers a GET of it (when `running`)."""

    def __init__(self, server: FakeKubeServer, *, running: bool = True) -> None:
        self.server = server
        self.running = running
        self.rollouts = 0

    def __call__(self, record: RequestRecord) -> None:
        if not self.running or record.method != "GET" or record.path != AWS_NODE_PATH:
            return
        ds = self.server.get("apps", "v1", "daemonsets", "aws-node", "kube-system")
        if ds is None:
            return
        generation = int(ds["metadata"].get("generation", 1))
        status = ds.get("status") or {}
        if int(status.get("observedGeneration", 0)) >= generation:
            return
        nodes = int(status.get("desiredNumberScheduled", 0))
        self.server.patch(
            "apps", "v1", "daemonsets", "aws-node", {"status": _rolled_out(generation, nodes)}, "kube-system"
        )
        self.rollouts += 1


def incident_server(world: World) -> tuple[FakeKubeServer, Hooks, DaemonSetController]:
    """A started fake API server holding the incident cluster, with a running DaemonSet controller."""
    server = FakeKubeServer(crds=CRD_GROUPS).start()
    seed_incident(server, world)
    hooks = Hooks(server)
    controller = DaemonSetController(server)
    hooks.add(controller)
    return server, hooks, controller


# --- what an apply leaves behind, normalised so two worlds can be compared ------------------------------


def aws_node_env_of(server: FakeKubeServer) -> list[dict[str, Any]]:
    ds = server.get("apps", "v1", "daemonsets", "aws-node", "kube-system")
    assert ds is not None
    container = next(c for c in ds["spec"]["template"]["spec"]["containers"] if c["name"] == "aws-node")
    return list(container.get("env") or [])


def env_values(env: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """name -> value (or the valueFrom dict), failing on a name given twice."""
    out: dict[str, Any] = {}
    for e in env:
        assert e["name"] not in out, f"env {e['name']} appears twice"
        out[e["name"]] = e.get("value", e.get("valueFrom"))
    return out


def inventory(ec2: Any, eks: Any, server: FakeKubeServer, world: World, *, plan_id: str) -> dict[str, Any]:
    """What the VPC, the cluster's node groups and the Kubernetes side hold (read with boto3 clients and from
    the fake), with ids replaced by what they stand for (subnet -> CIDR, route table -> Name tag, security
    group -> name, plan id -> "<plan>", VPC id -> "<vpc>"), as sorted lists (not sets), so duplicates show."""
    vpc_filter = [{"Name": "vpc-id", "Values": [world.vpc_id]}]

    def tags(tag_list: Iterable[Mapping[str, str]] | Mapping[str, str] | None) -> list[tuple[str, str]]:
        pairs = tag_list.items() if isinstance(tag_list, Mapping) else ((t["Key"], t["Value"]) for t in tag_list or ())
        stand_for = {PLAN_TAG: {plan_id: "<plan>"}}
        return sorted((k, "<time>" if k == APPLIED_AT_TAG else stand_for.get(k, {}).get(v, v)) for k, v in pairs)

    vpc = ec2.describe_vpcs(VpcIds=[world.vpc_id])["Vpcs"][0]
    subnets = ec2.describe_subnets(Filters=vpc_filter)["Subnets"]
    cidr_of = {s["SubnetId"]: s["CidrBlock"] for s in subnets}
    tables = ec2.describe_route_tables(Filters=vpc_filter)["RouteTables"]
    table_name = {t["RouteTableId"]: dict(tags(t.get("Tags"))).get("Name", "main") for t in tables}
    groups = ec2.describe_security_groups(Filters=vpc_filter)["SecurityGroups"]
    group_name = {g["GroupId"]: g["GroupName"] for g in groups}
    nodegroups = []
    for name in eks.list_nodegroups(clusterName=world.cluster)["nodegroups"]:
        ng = eks.describe_nodegroup(clusterName=world.cluster, nodegroupName=name)["nodegroup"]
        nodegroups.append(
            {
                "name": name,
                "subnets": sorted(cidr_of[s] for s in ng["subnets"]),
                "instance_types": ng.get("instanceTypes"),
                "node_role": ng["nodeRole"],
                "scaling": ng["scalingConfig"],
                "labels": sorted((ng.get("labels") or {}).items()),
                "tags": tags(ng.get("tags")),
            }
        )
    eniconfigs = [
        {
            "name": e["metadata"]["name"],
            "subnet": cidr_of.get(e["spec"]["subnet"], e["spec"]["subnet"]),
            "security_groups": sorted(group_name.get(g, g) for g in e["spec"].get("securityGroups") or []),
            "labels": tags(e["metadata"].get("labels")),
        }
        for e in server.objects_of("ENIConfig")
    ]
    return {
        "vpc_cidrs": sorted((a["CidrBlock"], a["CidrBlockState"]["State"]) for a in vpc["CidrBlockAssociationSet"]),
        "subnets": sorted((s["CidrBlock"], s["AvailabilityZone"], tuple(tags(s.get("Tags")))) for s in subnets),
        "route_table_associations": sorted(
            (table_name[t["RouteTableId"]], cidr_of[a["SubnetId"]] if a.get("SubnetId") else "main")
            for t in tables
            for a in t.get("Associations") or ()
        ),
        "routes": sorted(
            (table_name[t["RouteTableId"]], r.get("DestinationCidrBlock", ""))
            for t in tables
            for r in t.get("Routes") or ()
        ),
        "nodegroups": sorted(nodegroups, key=lambda g: g["name"]),
        "eniconfigs": sorted(eniconfigs, key=lambda e: e["name"]),
        "aws_node_env": sorted(
            ((k, "<vpc>" if v == world.vpc_id else v) for k, v in env_values(aws_node_env_of(server)).items()),
            key=lambda kv: kv[0],
        ),
    }


@contextlib.contextmanager
def shared_botocore_loader() -> Iterator[None]:
    """Let every botocore session share one data loader while the block runs.

    cidrx builds a boto3 Session per snapshot and per apply (it must: profile and region come from the
    command line), and each new session parses the service models again (EC2's alone takes ~0.1 s). These
    tests make dozens of sessions; sharing the loader reads the same files once. Behaviour is unchanged: it
    is the loader every session would build, with the default search path.
    """
    import botocore.loaders
    import botocore.session

    loader = botocore.loaders.create_loader()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(botocore.session, "create_loader", lambda search_path_string=None: loader)
        yield


# --- a variant world for prefix delegation ----------------------------------------------------------------

PREFIX_SUBNETS = {
    "PublicSubnet01": ("10.0.208.0/24", "a"),
    "PublicSubnet02": ("10.0.224.0/24", "b"),
    "PrivateSubnet01": ("10.0.186.0/24", "a"),
    "PrivateSubnet02": ("10.0.192.0/24", "b"),
}


def _tag_spec(resource_type: str, tags: Mapping[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": resource_type, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def scattered_addresses(cidr: str, node_ip: str, count: int = 7) -> list[str]:
    """One address in each /28 of the subnet's lower half after the first (which holds AWS's reserved
    addresses and the node's own): the single-address pattern that leaves no free /28 there."""
    net = ip_network(cidr)
    out = [str(net.network_address + 16 * block + 5) for block in range(1, 1 + count)]
    assert node_ip not in out
    return out


def build_prefix_world(ec2: Any, eks: Any, *, region: str = REGION, cluster: str = "demo") -> World:
    """The incident's shape with /24 subnets: each node subnet holds its m5.large node and addresses
    scattered over its lower half, so only the upper half still has free aligned /28 blocks."""
    vpc_id = ec2.create_vpc(CidrBlock=VPC_CIDR, TagSpecifications=_tag_spec("vpc", {"Name": VPC_NAME}))["Vpc"]["VpcId"]
    main_rt = ec2.describe_route_tables(
        Filters=[{"Name": "vpc-id", "Values": [vpc_id]}, {"Name": "association.main", "Values": ["true"]}]
    )["RouteTables"][0]["RouteTableId"]
    subnet = {
        name: ec2.create_subnet(
            VpcId=vpc_id,
            CidrBlock=cidr,
            AvailabilityZone=f"{region}{az}",
            TagSpecifications=_tag_spec("subnet", {"Name": f"eks-demo-ip-vpc-stack-{name}"}),
        )["Subnet"]["SubnetId"]
        for name, (cidr, az) in PREFIX_SUBNETS.items()
    }
    igw = ec2.create_internet_gateway()["InternetGateway"]["InternetGatewayId"]
    ec2.attach_internet_gateway(InternetGatewayId=igw, VpcId=vpc_id)
    public_rt = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    ec2.create_route(RouteTableId=public_rt, DestinationCidrBlock="0.0.0.0/0", GatewayId=igw)
    private_rt = ec2.create_route_table(VpcId=vpc_id)["RouteTable"]["RouteTableId"]
    for name, sid in subnet.items():
        ec2.associate_route_table(RouteTableId=public_rt if name.startswith("Public") else private_rt, SubnetId=sid)
    control_plane_sg = ec2.create_security_group(
        GroupName="eks-demo-ip-vpc-stack-ControlPlaneSecurityGroup", Description="control plane", VpcId=vpc_id
    )["GroupId"]
    cluster_sg = ec2.create_security_group(
        GroupName=f"eks-cluster-sg-{cluster}-1234567890",
        Description="EKS created security group",
        VpcId=vpc_id,
        TagSpecifications=_tag_spec("security-group", {"aws:eks:cluster-name": cluster}),
    )["GroupId"]
    arn = eks.create_cluster(
        name=cluster,
        version="1.27",
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/eks-demo-ip-cluster-role",
        resourcesVpcConfig={"subnetIds": list(subnet.values()), "securityGroupIds": [control_plane_sg]},
    )["cluster"]["arn"]
    eks.create_nodegroup(
        clusterName=cluster,
        nodegroupName=NODEGROUP,
        subnets=[subnet["PublicSubnet01"], subnet["PublicSubnet02"]],
        instanceTypes=[INSTANCE_TYPE],
        amiType="AL2_x86_64",
        nodeRole=f"arn:aws:iam::{ACCOUNT}:role/eks-demo-ip-node-role",
        scalingConfig={"minSize": 2, "maxSize": 4, "desiredSize": 2},
    )
    node_ids = []
    for name in ("PublicSubnet01", "PublicSubnet02"):
        ip = NODE_IPS[name]
        inst = ec2.run_instances(
            ImageId=NODE_AMI,
            InstanceType=INSTANCE_TYPE,
            MinCount=1,
            MaxCount=1,
            SubnetId=subnet[name],
            PrivateIpAddress=ip,
            SecurityGroupIds=[cluster_sg],
        )["Instances"][0]
        eni = inst["NetworkInterfaces"][0]["NetworkInterfaceId"]
        scattered = scattered_addresses(PREFIX_SUBNETS[name][0], ip)
        ec2.assign_private_ip_addresses(NetworkInterfaceId=eni, PrivateIpAddresses=scattered)
        node_ids.append(str(inst["InstanceId"]))
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
    )
