"""EKS snapshot cases whose nodes come from something other than a managed node group: the bundled incident
with its two nodes brought by Karpenter, by EKS Auto Mode, or by a self-managed Auto Scaling group.

Shapes follow the upstream objects: Karpenter's EC2NodeClass (subnetSelectorTerms, status.subnets,
kubelet.maxPods) and NodePool (template.spec.nodeClassRef) as in aws/karpenter-provider-aws
pkg/apis/crds/karpenter.k8s.aws_ec2nodeclasses.yaml and karpenter.sh_nodepools.yaml at
1d927085dd81a9df9301e613f371dac5b4d16bfe; the Auto Mode NodeClass as the EKS user guide's "Create a Node
Class for Amazon EKS" shows it.
"""

from __future__ import annotations

import dataclasses

from cidrx.model.snapshot import Snapshot, seal
from cidrx.providers.eks.model import (
    AUTO_NODE_CLASS,
    EC2_NODE_CLASS,
    KarpenterController,
    NodeClass,
    NodePool,
    NodeProvisioners,
    SelectorTerm,
    SelfManagedGroup,
)
from tests.support.cases import eks as cases

NODE_POOL = "default"
NODE_CLASS = "default"
AUTO_POOL = "workloads"
AUTO_CLASS = "workload-nodes"
ASG = "demo-ip-self-managed"
DISCOVERY = {"karpenter.sh/discovery": cases.CLUSTER}


def _nodes_of(snap: Snapshot, pool: str) -> Snapshot:
    """The example's nodes, labelled as members of `pool` (Karpenter's and Auto Mode's karpenter.sh/nodepool)."""
    nodes = tuple(dataclasses.replace(n, pool=pool) for n in snap.kube.nodes)
    return seal(dataclasses.replace(snap, kube=dataclasses.replace(snap.kube, nodes=nodes)))


def ec2_node_class(name: str = NODE_CLASS, *, max_pods: int | None = None, rv: str = "7") -> NodeClass:
    return NodeClass(
        kind=EC2_NODE_CLASS,
        name=name,
        resource_version=rv,
        subnet_terms=(SelectorTerm(tags=DISCOVERY),),
        security_group_terms=(SelectorTerm(tags=DISCOVERY),),
        subnets=(cases.PUBLIC_A, cases.PUBLIC_B),
        max_pods=max_pods,
        role="KarpenterNodeRole-demo-ip",
    )


def karpenter(
    snap: Snapshot | None = None, *, reserved_enis: int | None = None, max_pods: int | None = None
) -> Snapshot:
    """No managed node group: Karpenter's NodePool `default` (EC2NodeClass `default`) runs both nodes."""
    snap = _nodes_of(snap or cases.example(), NODE_POOL)
    found = NodeProvisioners(
        node_classes=(ec2_node_class(max_pods=max_pods),),
        node_pools=(NodePool(NODE_POOL, NODE_CLASS, EC2_NODE_CLASS),),
        karpenter=KarpenterController("kube-system", "karpenter", "controller", reserved_enis),
    )
    return cases.with_eks(snap, nodegroups=(), provisioners=found)


def auto_mode(snap: Snapshot | None = None, *, builtin_only: bool = False) -> Snapshot:
    """No managed node group, no aws-node: EKS Auto Mode runs both nodes (NodePool `workloads`)."""
    snap = _nodes_of(snap or cases.example(), "general-purpose" if builtin_only else AUTO_POOL)
    builtin = NodeClass(
        kind=AUTO_NODE_CLASS,
        name="default",
        resource_version="3",
        subnet_terms=(SelectorTerm(id=cases.PUBLIC_A), SelectorTerm(id=cases.PUBLIC_B)),
        security_group_terms=(SelectorTerm(id=cases.CLUSTER_SG),),
        subnets=(cases.PUBLIC_A, cases.PUBLIC_B),
        role="AmazonEKSAutoNodeRole",
    )
    own = dataclasses.replace(builtin, name=AUTO_CLASS, resource_version="11", role="")
    pools = [NodePool("general-purpose", "default", AUTO_NODE_CLASS), NodePool("system", "default", AUTO_NODE_CLASS)]
    if not builtin_only:
        pools.append(NodePool(AUTO_POOL, AUTO_CLASS, AUTO_NODE_CLASS))
    found = NodeProvisioners(
        auto_mode=True,
        node_classes=(builtin,) if builtin_only else (builtin, own),
        node_pools=tuple(pools),
    )
    snap = cases.with_kube(snap, aws_node=None)
    return cases.with_eks(snap, nodegroups=(), vpc_cni_addon=None, provisioners=found)


def self_managed(snap: Snapshot | None = None, *, max_pods: int | None = 29, version: str = "$Latest") -> Snapshot:
    """No managed node group: an Auto Scaling group with a launch template runs both nodes."""
    snap = _nodes_of(snap or cases.example(), "")
    group = SelfManagedGroup(
        name=ASG,
        subnet_ids=(cases.PUBLIC_A, cases.PUBLIC_B),
        instance_types=("m5.large",),
        min_size=2,
        max_size=4,
        desired_size=2,
        instances=2,
        launch_template={"id": "lt-0a1b2c3d4e5f60718", "version": version},
        launch_template_version=4,
        max_pods=max_pods,
        tags={f"kubernetes.io/cluster/{cases.CLUSTER}": "owned"},
        nodes=(cases.NODE_A, cases.NODE_B),
    )
    return cases.with_eks(snap, nodegroups=(), provisioners=NodeProvisioners(self_managed=(group,)))
