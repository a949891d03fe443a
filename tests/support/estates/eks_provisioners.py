"""The EKS incident with its nodes brought by something other than a managed node group, in moto and the fake
API server: Karpenter, EKS Auto Mode, or a self-managed Auto Scaling group.

Each variant is a moto builder (for `eks_estate(builder=...)`) plus a `kube_setup` that turns the incident's
cluster into that variant's (`eks_estate(kube_setup=...)`). The Kubernetes objects follow the upstream
shapes (aws/karpenter-provider-aws pkg/apis/crds/ and the Helm chart's Deployment, at
1d927085dd81a9df9301e613f371dac5b4d16bfe; the EKS user guide's Auto Mode NodeClass).

moto does not model EKS Auto Mode (`computeConfig` of DescribeCluster): `AUTO_MODE_HANDLERS` adds it to
every DescribeCluster answer with a botocore after-call handler, the way fakes/eks_addons.py answers the
add-on calls moto lacks.
"""

from __future__ import annotations

import base64
from typing import Any

from cidrx.providers.eks.model import APPLIED_AT_TAG
from tests.support.estates.eks import ACCOUNT, NODE_AMI, NODEGROUP, World, build_incident
from tests.support.estates.eks_cluster import Hooks
from tests.support.fakes.kube_server import FakeKubeServer, RequestRecord

NODE_POOL = "default"
NODE_CLASS = "default"
AUTO_POOL = "workloads"
AUTO_CLASS = "workload-nodes"
ASG = "demo-self-managed"
LAUNCH_TEMPLATE = "demo-self-managed"
KARPENTER_NS = "kube-system"
KARPENTER = "karpenter"
USER_DATA = "#!/bin/bash\n/etc/eks/bootstrap.sh demo --use-max-pods false --kubelet-extra-args '--max-pods=29'\n"
_NODEGROUP_LABELS = ("eks.amazonaws.com/nodegroup", "alpha.eksctl.io/nodegroup-name", "eks.amazonaws.com/capacityType")


def _tags(resource_type: str, tags: dict[str, str]) -> list[dict[str, Any]]:
    return [{"ResourceType": resource_type, "Tags": [{"Key": k, "Value": v} for k, v in tags.items()]}]


def build_without_nodegroup(ec2: Any, eks: Any, *, region: str, cluster: str) -> World:
    """The incident, its managed node group gone (its two instances stay: another provisioner owns them)."""
    world = build_incident(ec2, eks, region=region, cluster=cluster)
    eks.delete_nodegroup(clusterName=cluster, nodegroupName=NODEGROUP)
    # Karpenter's getting-started guide selects subnets and security groups by this tag.
    ec2.create_tags(
        Resources=[*world.public_subnets, world.cluster_security_group_id],
        Tags=[{"Key": "karpenter.sh/discovery", "Value": cluster}],
    )
    return world


def build_self_managed(ec2: Any, eks: Any, *, region: str, cluster: str) -> World:
    """The incident's two nodes in a self-managed Auto Scaling group with a launch template (max pods 29 in
    its bootstrap arguments), tagged for the cluster as eksctl's unmanaged node groups are."""
    # Made first: moto draws instance ids from a generator the seed does not fix, so what is made after the
    # instances differs between two seeded worlds, and the plan names the template's id.
    lt = ec2.create_launch_template(
        LaunchTemplateName=LAUNCH_TEMPLATE,
        LaunchTemplateData={
            "ImageId": NODE_AMI,
            "InstanceType": "m5.large",
            "UserData": base64.b64encode(USER_DATA.encode()).decode(),
        },
    )["LaunchTemplate"]
    world = build_without_nodegroup(ec2, eks, region=region, cluster=cluster)
    asg = _autoscaling(ec2)
    asg.create_auto_scaling_group(
        AutoScalingGroupName=ASG,
        LaunchTemplate={"LaunchTemplateId": lt["LaunchTemplateId"], "Version": "$Latest"},
        MinSize=0,
        MaxSize=4,
        DesiredCapacity=0,
        VPCZoneIdentifier=",".join(world.public_subnets),
        Tags=[
            {
                "Key": f"kubernetes.io/cluster/{cluster}",
                "Value": "owned",
                "PropagateAtLaunch": True,
                "ResourceId": ASG,
                "ResourceType": "auto-scaling-group",
            }
        ],
    )
    asg.attach_instances(InstanceIds=list(world.node_instance_ids), AutoScalingGroupName=ASG)
    return world


def _autoscaling(ec2: Any) -> Any:
    import boto3

    return boto3.Session(region_name=ec2.meta.region_name).client("autoscaling")


# --- EKS Auto Mode: computeConfig, which moto does not model ----------------------------------------------


def _with_compute_config(parsed: dict[str, Any], **_: Any) -> None:
    cluster = parsed.get("cluster")
    if isinstance(cluster, dict):
        cluster["computeConfig"] = {
            "enabled": True,
            "nodePools": ["general-purpose", "system"],
            "nodeRoleArn": f"arn:aws:iam::{ACCOUNT}:role/AmazonEKSAutoNodeRole",
        }


AUTO_MODE_HANDLERS = (("after-call.eks.DescribeCluster", _with_compute_config),)


# --- the Kubernetes side ------------------------------------------------------------------------------------


def _relabel_nodes(server: FakeKubeServer, labels: dict[str, str]) -> None:
    for node in server.objects_of("Node"):
        meta = node["metadata"]
        kept = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _NODEGROUP_LABELS}
        server.put({**node, "metadata": {**meta, "labels": {**kept, **labels}}})


def _node_pool(name: str, group: str, kind: str, node_class: str) -> dict[str, Any]:
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": group, "kind": kind, "name": node_class},
                    "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
                }
            },
            "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "1m"},
        },
    }


def _subnet_status(world: World) -> list[dict[str, str]]:
    return [
        {"id": world.public_subnet_a, "zone": f"{world.region}a"},
        {"id": world.public_subnet_b, "zone": f"{world.region}b"},
    ]


def karpenter_deployment(env: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """The controller Deployment as the Helm chart renders it (charts/karpenter/templates/deployment.yaml)."""
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": KARPENTER, "namespace": KARPENTER_NS, "generation": 1},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app.kubernetes.io/name": "karpenter"}},
            "template": {
                "metadata": {"labels": {"app.kubernetes.io/name": "karpenter"}},
                "spec": {
                    "containers": [
                        {
                            "name": "controller",
                            "image": "public.ecr.aws/karpenter/controller:1.6.0",
                            "env": env or [{"name": "CLUSTER_NAME", "value": "demo"}],
                        }
                    ]
                },
            },
        },
        "status": {"observedGeneration": 1, "replicas": 2, "updatedReplicas": 2, "availableReplicas": 2},
    }


class DeploymentController:
    """Marks a Deployment's newest generation rolled out before the server answers a GET of it."""

    def __init__(self, server: FakeKubeServer, namespace: str, name: str) -> None:
        self.server, self.namespace, self.name = server, namespace, name
        self.path = f"/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
        self.rollouts = 0

    def __call__(self, record: RequestRecord) -> None:
        if record.method != "GET" or record.path != self.path:
            return
        obj = self.server.get("apps", "v1", "deployments", self.name, self.namespace)
        if obj is None:
            return
        generation = int(obj["metadata"].get("generation", 1))
        if int((obj.get("status") or {}).get("observedGeneration", 0)) >= generation:
            return
        replicas = int(obj["spec"].get("replicas", 1))
        status = {"observedGeneration": generation, "replicas": replicas}
        status |= {"updatedReplicas": replicas, "availableReplicas": replicas}
        self.server.patch("apps", "v1", "deployments", self.name, {"status": status}, self.namespace)
        self.rollouts += 1


def karpenter_cluster(server: FakeKubeServer, hooks: Hooks, world: World) -> None:
    """Karpenter runs the incident's nodes: NodePool `default` with EC2NodeClass `default`."""
    server.register("karpenter.k8s.aws", "v1", "ec2nodeclasses", "EC2NodeClass", False, status_subresource=True)
    server.register("karpenter.sh", "v1", "nodepools", "NodePool", False, status_subresource=True)
    _relabel_nodes(server, {"karpenter.sh/nodepool": NODE_POOL, "karpenter.sh/capacity-type": "on-demand"})
    discovery = {"karpenter.sh/discovery": world.cluster}
    server.put(
        {
            "apiVersion": "karpenter.k8s.aws/v1",
            "kind": "EC2NodeClass",
            "metadata": {"name": NODE_CLASS},
            "spec": {
                "role": f"KarpenterNodeRole-{world.cluster}",
                "amiSelectorTerms": [{"alias": "al2023@latest"}],
                "subnetSelectorTerms": [{"tags": discovery}],
                "securityGroupSelectorTerms": [{"tags": discovery}],
                "kubelet": {"maxPods": 29},
            },
            "status": {"subnets": _subnet_status(world)},
        }
    )
    server.put(_node_pool(NODE_POOL, "karpenter.k8s.aws", "EC2NodeClass", NODE_CLASS))
    server.put(karpenter_deployment())
    hooks.add(DeploymentController(server, KARPENTER_NS, KARPENTER))


def auto_mode_cluster(server: FakeKubeServer, hooks: Hooks, world: World) -> None:
    """EKS Auto Mode runs the incident's nodes (NodePool `workloads`, NodeClass `workload-nodes`); the
    cluster has no aws-node (Auto Mode does pod networking itself)."""
    server.register("eks.amazonaws.com", "v1", "nodeclasses", "NodeClass", False, status_subresource=True)
    server.register("karpenter.sh", "v1", "nodepools", "NodePool", False, status_subresource=True)
    server.delete("apps", "v1", "daemonsets", "aws-node", "kube-system")
    _relabel_nodes(server, {"karpenter.sh/nodepool": AUTO_POOL, "eks.amazonaws.com/compute-type": "auto"})
    for name, role in (("default", "AmazonEKSAutoNodeRole"), (AUTO_CLASS, "")):
        spec: dict[str, Any] = {
            "subnetSelectorTerms": [{"id": world.public_subnet_a}, {"id": world.public_subnet_b}],
            "securityGroupSelectorTerms": [{"id": world.cluster_security_group_id}],
        }
        if role:
            spec["role"] = role
        server.put(
            {
                "apiVersion": "eks.amazonaws.com/v1",
                "kind": "NodeClass",
                "metadata": {"name": name},
                "spec": spec,
                "status": {"subnets": _subnet_status(world)},
            }
        )
    for pool in ("general-purpose", "system"):
        server.put(_node_pool(pool, "eks.amazonaws.com", "NodeClass", "default"))
    server.put(_node_pool(AUTO_POOL, "eks.amazonaws.com", "NodeClass", AUTO_CLASS))


def self_managed_cluster(server: FakeKubeServer, hooks: Hooks, world: World) -> None:
    """The nodes carry no node group label: only the Auto Scaling group (found by its cluster tag) says
    where they come from."""
    _relabel_nodes(server, {})


# --- what an apply leaves behind --------------------------------------------------------------------------

_NODE_CLASS_KINDS = ("EC2NodeClass", "NodeClass")


def _when(tag: Any) -> Any:
    """A tag's value, "<time>" for the time an apply wrote (it differs between two applies of one plan)."""
    return "<time>" if tag["Key"] == APPLIED_AT_TAG else tag["Value"]


def provisioner_inventory(ec2: Any, server: FakeKubeServer, world: World, *, plan_id: str) -> dict[str, Any]:
    """VPC CIDRs, subnets and their route tables (ids replaced by CIDRs and Name tags), ENIConfigs, node
    classes, the Karpenter Deployment's env and annotations and aws-node's env, with the plan id replaced
    by "<plan>": what two applies of one plan on identical worlds must leave alike."""

    def scrub(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: scrub(v) for k, v in sorted(value.items()) if k not in ("resourceVersion", "uid", "generation")}
        if isinstance(value, list):
            return [scrub(v) for v in value]
        return "<plan>" if value == plan_id else value

    vpc_filter = [{"Name": "vpc-id", "Values": [world.vpc_id]}]
    subnets = ec2.describe_subnets(Filters=vpc_filter)["Subnets"]
    cidr_of = {s["SubnetId"]: s["CidrBlock"] for s in subnets}

    def ids(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: ids(v) for k, v in value.items()}
        if isinstance(value, list):
            return [ids(v) for v in value]
        return cidr_of.get(value, value) if isinstance(value, str) else value

    vpc = ec2.describe_vpcs(VpcIds=[world.vpc_id])["Vpcs"][0]
    tables = ec2.describe_route_tables(Filters=vpc_filter)["RouteTables"]
    classes = [o for kind in _NODE_CLASS_KINDS for o in server.objects_of(kind)]
    deployments = server.objects_of("Deployment")
    daemonsets = server.objects_of("DaemonSet")
    return {
        "vpc_cidrs": sorted((a["CidrBlock"], a["CidrBlockState"]["State"]) for a in vpc["CidrBlockAssociationSet"]),
        "subnets": sorted(
            (s["CidrBlock"], s["AvailabilityZone"], scrub(sorted((t["Key"], _when(t)) for t in s.get("Tags") or [])))
            for s in subnets
        ),
        "route_table_associations": sorted(
            (t["RouteTableId"] == world.private_route_table_id, cidr_of[a["SubnetId"]])
            for t in tables
            for a in t.get("Associations") or ()
            if a.get("SubnetId")
        ),
        "eniconfigs": {
            e["metadata"]["name"]: scrub(ids({"labels": e["metadata"].get("labels"), "spec": e["spec"]}))
            for e in server.objects_of("ENIConfig")
        },
        "node_classes": {
            f"{o['kind']}/{o['metadata']['name']}": scrub(
                ids({"labels": o["metadata"].get("labels"), "spec": o["spec"]})
            )
            for o in classes
        },
        "deployments": {
            d["metadata"]["name"]: scrub(
                {
                    "annotations": d["metadata"].get("annotations"),
                    "containers": d["spec"]["template"]["spec"]["containers"],
                }
            )
            for d in deployments
        },
        "daemonsets": {d["metadata"]["name"]: scrub(d["spec"]["template"]["spec"]["containers"]) for d in daemonsets},
        "launch_templates": _launch_templates(ec2, plan_id),
    }


def _launch_templates(ec2: Any, plan_id: str) -> dict[str, Any]:
    """Every launch template version (description, decoded user data) and the version each group launches."""
    out: dict[str, Any] = {}
    for lt in ec2.describe_launch_templates().get("LaunchTemplates", []):
        versions = ec2.describe_launch_template_versions(LaunchTemplateId=lt["LaunchTemplateId"])
        out[lt["LaunchTemplateName"]] = sorted(
            (
                v["VersionNumber"],
                str(v.get("VersionDescription") or "").replace(plan_id, "<plan>"),
                base64.b64decode(v.get("LaunchTemplateData", {}).get("UserData") or "").decode(),
            )
            for v in versions["LaunchTemplateVersions"]
        )
    for g in _autoscaling(ec2).describe_auto_scaling_groups()["AutoScalingGroups"]:
        out[f"group {g['AutoScalingGroupName']}"] = (g.get("LaunchTemplate") or {}).get("Version")
    return out
