"""Kubernetes API objects for the fake API server: builders (node, pod, event, aws-node, ENIConfig) and two
seeded EKS clusters — `seed_eks_cluster`, three nodes with DaemonSet, waiting and finished pods for the
collector tests, and `seed_cluster`, the talk's two-node cluster for the live CLI tests.

The full incident that matches the moto world node for node is eks_cluster.incident_server.
"""

from __future__ import annotations

from typing import Any

from tests.support.estates.eks_cluster import SANDBOX_MESSAGE
from tests.support.fakes.kube_server import FakeKubeServer

NODE_A = "ip-10-0-208-27.ap-southeast-2.compute.internal"
NODE_B = "ip-10-0-224-14.ap-southeast-2.compute.internal"
NODE_OLD = "ip-10-0-208-9.ap-southeast-2.compute.internal"
SUBNET_A, SUBNET_B = "subnet-0c1f7e2a9b3d4e5f6", "subnet-07a8b9c0d1e2f3a4b"
CLUSTER_SG = "sg-0f1e2d3c4b5a69788"
PLAN_LABEL = {"cidrx.io/plan": "3f9a1c2b4d5e6f70"}


def node(name: str, labels: dict[str, str], ip: str, pods: str, *, ready: bool = True, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": labels, "creationTimestamp": "2024-03-01T02:10:00Z"},
        "spec": {"providerID": f"aws:///ap-southeast-2a/i-0{ip.replace('.', '')}", **spec},
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory"},
                {"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"},
            ],
            "addresses": [
                {"type": "InternalIP", "address": ip},
                {"type": "Hostname", "address": name},
            ],
            "allocatable": {"cpu": "1930m", "memory": "7220184Ki", "pods": pods},
        },
    }


def pod(
    name: str,
    namespace: str = "default",
    *,
    node_name: str = "",
    phase: str = "Running",
    host_network: bool = False,
    waiting: str | None = None,
    scheduled: dict[str, str] | None = None,
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "public.ecr.aws/nginx/nginx:1.25"}]}
    if node_name:
        spec["nodeName"] = node_name
    if host_network:
        spec["hostNetwork"] = True
    status: dict[str, Any] = {"phase": phase, "conditions": [scheduled or {"type": "PodScheduled", "status": "True"}]}
    if waiting:
        status["containerStatuses"] = [
            {"name": "app", "ready": False, "restartCount": 0, "state": {"waiting": {"reason": waiting}}}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "creationTimestamp": "2024-03-01T02:52:41Z"},
        "spec": spec,
        "status": status,
    }


def event(name: str, reason: str, kind: str, obj: str, namespace: str, **fields: Any) -> dict[str, Any]:
    involved = {"kind": kind, "name": obj, **({"namespace": namespace} if kind != "Node" else {})}
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"name": name, "namespace": namespace},
        "involvedObject": involved,
        "reason": reason,
        **fields,
    }


def aws_node() -> dict[str, Any]:
    field_ref = {"fieldRef": {"apiVersion": "v1", "fieldPath": "spec.nodeName"}}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {"name": "aws-node", "namespace": "kube-system", "labels": {"k8s-app": "aws-node"}},
        "spec": {
            "selector": {"matchLabels": {"k8s-app": "aws-node"}},
            "template": {
                "metadata": {"labels": {"k8s-app": "aws-node"}},
                "spec": {
                    "hostNetwork": True,
                    "initContainers": [
                        {"name": "aws-vpc-cni-init", "env": [{"name": "DISABLE_TCP_EARLY_DEMUX", "value": "false"}]}
                    ],
                    "containers": [
                        {
                            "name": "aws-node",
                            "image": "602401143452.dkr.ecr.ap-southeast-2.amazonaws.com/amazon-k8s-cni:v1.18.1",
                            "env": [
                                {"name": "ADDITIONAL_ENI_TAGS", "value": "{}"},
                                {"name": "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "value": "false"},
                                {"name": "ENABLE_PREFIX_DELEGATION", "value": "false"},
                                {"name": "WARM_ENI_TARGET", "value": "1"},
                                {"name": "MY_NODE_NAME", "valueFrom": field_ref},
                            ],
                        },
                        {"name": "aws-eks-nodeagent", "env": [{"name": "MY_NODE_NAME", "valueFrom": field_ref}]},
                    ],
                },
            },
        },
        "status": {"desiredNumberScheduled": 3, "numberAvailable": 3},
    }


def eniconfig(name: str, subnet: str, labels: dict[str, str] | None = None) -> dict[str, Any]:
    return {
        "apiVersion": "crd.k8s.amazonaws.com/v1alpha1",
        "kind": "ENIConfig",
        "metadata": {"name": name, "labels": labels or {}, "creationTimestamp": "2024-03-01T04:00:00Z"},
        "spec": {"subnet": subnet, "securityGroups": [CLUSTER_SG]},
    }


def seed_eks_cluster(server: FakeKubeServer, *, eniconfigs: bool = True) -> None:
    """3 nodes in two zones, 10 pods (5 hostNetwork DaemonSet pods, 2 waiting, 1 finished), events, aws-node."""
    scheduling = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}
    objs = [
        node(
            NODE_A,
            {
                "topology.kubernetes.io/zone": "ap-southeast-2a",
                "node.kubernetes.io/instance-type": "m5.large",
                "eks.amazonaws.com/nodegroup": "managed-ng",
            },
            "10.0.208.27",
            "29",
        ),
        node(
            NODE_B,
            {
                "topology.kubernetes.io/zone": "ap-southeast-2b",
                "node.kubernetes.io/instance-type": "m5.large",
                "eks.amazonaws.com/nodegroup": "managed-ng",
            },
            "10.0.224.14",
            "29",
        ),
        node(  # an older eksctl node: beta labels only, NotReady, with a podCIDR
            NODE_OLD,
            {
                "failure-domain.beta.kubernetes.io/zone": "ap-southeast-2a",
                "beta.kubernetes.io/instance-type": "t3.medium",
                "alpha.eksctl.io/nodegroup-name": "ng-legacy",
            },
            "10.0.208.9",
            "17",
            ready=False,
            podCIDR="10.244.3.0/24",
            podCIDRs=["10.244.3.0/24"],
        ),
        pod("aws-node-4xk2p", "kube-system", node_name=NODE_A, host_network=True),
        pod("aws-node-9qz7m", "kube-system", node_name=NODE_B, host_network=True),
        pod("aws-node-t2v8c", "kube-system", node_name=NODE_OLD, host_network=True),
        pod("kube-proxy-h5d6s", "kube-system", node_name=NODE_A, host_network=True),
        pod("kube-proxy-w8n3r", "kube-system", node_name=NODE_B, host_network=True),
        pod("coredns-5b9dfbf96-lq2xv", "kube-system", node_name=NODE_A),
        pod("web-7c5ddbdf54-8brdq", node_name=NODE_B),
        pod("mydeploy-6bdbfc484d-2frv4", node_name=NODE_A, phase="Pending", waiting="ContainerCreating"),
        pod("mydeploy-6bdbfc484d-x7k2p", phase="Pending", scheduled=scheduling),
        pod("db-migrate-28493810-zk4fh", node_name=NODE_B, phase="Succeeded"),
        event(
            "mydeploy-6bdbfc484d-2frv4.17b8a1c2d3e4f506",
            "FailedCreatePodSandBox",
            "Pod",
            "mydeploy-6bdbfc484d-2frv4",
            "default",
            type="Warning",
            message=SANDBOX_MESSAGE,
            count=12,
            firstTimestamp="2024-03-01T02:52:43Z",
            lastTimestamp="2024-03-01T03:00:07Z",
            source={"component": "kubelet", "host": NODE_A},
        ),
        event(  # written through events.k8s.io/v1: no count/lastTimestamp/source, a series instead
            "mydeploy-6bdbfc484d-x7k2p.17b8a1c2d3e4f777",
            "FailedScheduling",
            "Pod",
            "mydeploy-6bdbfc484d-x7k2p",
            "default",
            type="Warning",
            message="0/3 nodes are available: 1 node(s) were not ready, 2 Too many pods.",
            eventTime="2024-03-01T02:52:41.000000Z",
            series={"count": 7, "lastObservedTime": "2024-03-01T03:01:15.000000Z"},
            reportingComponent="default-scheduler",
        ),
        event(
            "web-7c5ddbdf54-8brdq.17b8a1c2d3e4f888",
            "Scheduled",
            "Pod",
            "web-7c5ddbdf54-8brdq",
            "default",
            type="Normal",
            message=f"Successfully assigned default/web-7c5ddbdf54-8brdq to {NODE_B}",
        ),
        event(
            f"{NODE_OLD}.17b8a1c2d3e4f999",
            "CIDRNotAvailable",
            "Node",
            NODE_OLD,
            "default",
            type="Normal",
            message=f"Node {NODE_OLD} status is now: CIDRNotAvailable",
            count=3,
            lastTimestamp="2024-03-01T02:40:00Z",
            source={"component": "cidrAllocator"},
        ),
        aws_node(),
    ]
    if eniconfigs:
        objs += [
            eniconfig("ap-southeast-2a", SUBNET_A, PLAN_LABEL),
            eniconfig("ap-southeast-2b", SUBNET_B),
        ]
    server.put_many(objs)


# ---- the whole section ----------------------------------------------------------------------------


SEED_SANDBOX_MESSAGE = (
    "Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "
    '"4b1f0c2e": plugin type="aws-cni" name="aws-cni" failed (add): add cmd: failed to assign an IP address '
    "to container"
)


def seed_cluster(server: Any, node_ips: tuple[str, ...], zones: tuple[str, ...] = ("a", "b")) -> None:
    """The talk's cluster as the API server shows it: two m5.large nodes, aws-node with default env, a pod
    stuck in ContainerCreating and its FailedCreatePodSandBox event."""
    names = []
    for ip, zone in zip(node_ips, zones, strict=True):
        name = f"ip-{ip.replace('.', '-')}.ap-southeast-2.compute.internal"
        names.append(name)
        server.put(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        "topology.kubernetes.io/zone": f"ap-southeast-2{zone}",
                        "node.kubernetes.io/instance-type": "m5.large",
                        "eks.amazonaws.com/nodegroup": "managed-ng",
                    },
                },
                "status": {
                    "addresses": [{"type": "InternalIP", "address": ip}],
                    "allocatable": {"pods": "29"},
                    "conditions": [{"type": "Ready", "status": "True"}],
                },
            }
        )
    server.put(
        {
            "apiVersion": "apps/v1",
            "kind": "DaemonSet",
            "metadata": {"name": "aws-node", "namespace": "kube-system"},
            "spec": {
                "selector": {"matchLabels": {"k8s-app": "aws-node"}},
                "template": {
                    "metadata": {"labels": {"k8s-app": "aws-node"}},
                    "spec": {
                        "containers": [
                            {
                                "name": "aws-node",
                                "image": "602401143452.dkr.ecr.ap-southeast-2.amazonaws.com/amazon-k8s-cni:v1.15.1",
                                "env": [
                                    {"name": "AWS_VPC_K8S_CNI_CUSTOM_NETWORK_CFG", "value": "false"},
                                    {"name": "WARM_ENI_TARGET", "value": "1"},
                                ],
                            }
                        ]
                    },
                },
            },
        }
    )
    pod = "mydeploy-6bdbfc484d-2frv4"
    server.put(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": pod, "namespace": "default"},
            "spec": {"nodeName": names[0], "containers": [{"name": "app", "image": "nginx"}]},
            "status": {
                "phase": "Pending",
                "containerStatuses": [{"name": "app", "state": {"waiting": {"reason": "ContainerCreating"}}}],
            },
        }
    )
    server.put(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": f"{pod}.179", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": pod, "namespace": "default"},
            "reason": "FailedCreatePodSandBox",
            "type": "Warning",
            "message": SEED_SANDBOX_MESSAGE,
            "count": 4,
            "lastTimestamp": "2023-11-04T01:04:34Z",
            "source": {"component": "kubelet", "host": names[0]},
        }
    )
