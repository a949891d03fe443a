"""Collect who brings nodes into an EKS cluster besides managed node groups: self-managed Auto Scaling
groups (AWS), Karpenter's EC2NodeClasses/NodePools and controller settings, and EKS Auto Mode (AWS and
the Kubernetes API).

Split like collect.py: pure `*_from` converters from one API object to one model object, and
`collect_provisioners`, which only orders the calls (bounded by the groups and node classes, never by
nodes or pods).
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from cidrx.model.kube import KubeSection
from cidrx.providers.eks.collect.vpc import instance_type_from, tags_of
from cidrx.providers.eks.model import (
    AUTO_NODE_CLASS,
    EC2_NODE_CLASS,
    EksSection,
    KarpenterController,
    NodeClass,
    NodePool,
    NodeProvisioners,
    SelectorTerm,
    SelfManagedGroup,
)

if TYPE_CHECKING:
    from cidrx.kube.api import KubeApi
    from cidrx.model.options import Access
    from cidrx.providers.eks.api import EksApi

Json = Mapping[str, Any]

# API groups and resources, as the upstream CRDs name them (aws/karpenter-provider-aws pkg/apis/crds/
# karpenter.k8s.aws_ec2nodeclasses.yaml and karpenter.sh_nodepools.yaml at
# 1d927085dd81a9df9301e613f371dac5b4d16bfe; EKS Auto Mode: eks.amazonaws.com/v1 NodeClass, EKS user guide
# "Create a Node Class for Amazon EKS").
EC2_NODE_CLASSES = ("karpenter.k8s.aws", "v1", "ec2nodeclasses")
NODE_POOLS = ("karpenter.sh", "v1", "nodepools")
AUTO_NODE_CLASSES = ("eks.amazonaws.com", "v1", "nodeclasses")
# Where the Karpenter Helm chart puts its controller: a Deployment named after the release ("karpenter"),
# in the namespace it is installed in (the docs install it in kube-system; older guides in karpenter),
# container "controller" (charts/karpenter/templates/deployment.yaml).
KARPENTER_DEPLOYMENTS = (("kube-system", "karpenter"), ("karpenter", "karpenter"))
KARPENTER_CONTAINER = "controller"
# Karpenter's controller setting (pkg/operator/options/options.go: env RESERVED_ENIS, default 0).
RESERVED_ENIS = "RESERVED_ENIS"
# EKS tags the Auto Scaling group of a managed node group with its name: such groups are not self-managed.
MANAGED_GROUP_TAG = "eks:nodegroup-name"
# --max-pods in bootstrap.sh's --kubelet-extra-args, or maxPods in a nodeadm NodeConfig (AL2023).
_MAX_PODS = re.compile(r"(?:--max-pods[= ]+|\bmaxPods:\s*)(\d+)")


def cluster_tag(cluster: str) -> str:
    """The tag key that marks a cluster's resources (value `owned` or `shared`)."""
    return f"kubernetes.io/cluster/{cluster}"


def _terms(items: Iterable[Json] | None) -> tuple[SelectorTerm, ...]:
    return tuple(
        SelectorTerm(
            id=str(t.get("id") or ""),
            name=str(t.get("name") or ""),
            tags={str(k): str(v) for k, v in (t.get("tags") or {}).items()},
        )
        for t in items or ()
        if isinstance(t, Mapping)
    )


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value) if value not in (None, "") else None
    except (TypeError, ValueError):
        return None


def node_class_from(obj: Json, kind: str) -> NodeClass:
    """An EC2NodeClass (kind EC2_NODE_CLASS) or an Auto Mode NodeClass (AUTO_NODE_CLASS) object."""
    meta = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    return NodeClass(
        kind=kind,
        name=str(meta.get("name") or ""),
        resource_version=str(meta.get("resourceVersion") or ""),
        subnet_terms=_terms(spec.get("subnetSelectorTerms")),
        security_group_terms=_terms(spec.get("securityGroupSelectorTerms")),
        pod_subnet_terms=_terms(spec.get("podSubnetSelectorTerms")),
        pod_security_group_terms=_terms(spec.get("podSecurityGroupSelectorTerms")),
        subnets=tuple(sorted({str(s["id"]) for s in status.get("subnets") or () if s.get("id")})),
        max_pods=_int_or_none((spec.get("kubelet") or {}).get("maxPods")),
        tags={str(k): str(v) for k, v in (spec.get("tags") or {}).items()},
        labels={str(k): str(v) for k, v in (meta.get("labels") or {}).items()},
        role=str(spec.get("role") or ""),
    )


def node_pool_from(obj: Json) -> NodePool:
    ref = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("nodeClassRef") or {}
    return NodePool(
        name=str((obj.get("metadata") or {}).get("name") or ""),
        node_class=str(ref.get("name") or ""),
        node_class_kind=str(ref.get("kind") or ""),
    )


def karpenter_from(obj: Json) -> KarpenterController | None:
    meta = obj.get("metadata") or {}
    containers = (((obj.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers") or []
    found = next((c for c in containers if c.get("name") == KARPENTER_CONTAINER), None)
    if found is None:
        return None
    env = {str(e.get("name")): e.get("value") for e in found.get("env") or []}
    return KarpenterController(
        namespace=str(meta.get("namespace") or ""),
        name=str(meta.get("name") or ""),
        container=KARPENTER_CONTAINER,
        reserved_enis=_int_or_none(env.get(RESERVED_ENIS)),
    )


def max_pods_from_user_data(user_data: str) -> int | None:
    """--max-pods / maxPods from base64 user data when it is plain text (a gzip or unreadable payload is
    left alone: None). The user data itself is never kept: it may hold secrets."""
    try:
        text = base64.b64decode(user_data, validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    found = _MAX_PODS.findall(text)
    return int(found[-1]) if found else None


def _launch_template(group: Json) -> dict[str, str]:
    lt = group.get("LaunchTemplate") or ((group.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get(
        "LaunchTemplateSpecification"
    )
    if not lt:
        return {}
    out = {"id": str(lt.get("LaunchTemplateId") or ""), "name": str(lt.get("LaunchTemplateName") or "")}
    out["version"] = str(lt.get("Version") or "$Default")
    return {k: v for k, v in out.items() if v}


def _in_service(group: Json) -> list[str]:
    return sorted(str(i["InstanceId"]) for i in group.get("Instances") or () if i.get("LifecycleState") == "InService")


def self_managed_from(group: Json, version: Json | None, nodes: Iterable[str] = ()) -> SelfManagedGroup:
    """DescribeAutoScalingGroups' group plus the launch template version it launches with."""
    data = (version or {}).get("LaunchTemplateData") or {}
    overrides = ((group.get("MixedInstancesPolicy") or {}).get("LaunchTemplate") or {}).get("Overrides") or ()
    types = [str(o["InstanceType"]) for o in overrides if o.get("InstanceType")]
    if not types and data.get("InstanceType"):
        types = [str(data["InstanceType"])]
    subnets = [s.strip() for s in str(group.get("VPCZoneIdentifier") or "").split(",") if s.strip()]
    return SelfManagedGroup(
        name=str(group["AutoScalingGroupName"]),
        subnet_ids=tuple(sorted(subnets)),
        instance_types=tuple(dict.fromkeys(types)),
        min_size=int(group.get("MinSize", 0)),
        max_size=int(group.get("MaxSize", 0)),
        desired_size=int(group.get("DesiredCapacity", 0)),
        instances=len(_in_service(group)),
        launch_template=_launch_template(group),
        launch_template_version=_int_or_none((version or {}).get("VersionNumber")),
        max_pods=max_pods_from_user_data(str(data.get("UserData") or "")),
        tags=tags_of(group.get("Tags")),
        nodes=tuple(sorted(nodes)),
    )


def _is_cluster_group(group: Json, cluster: str) -> bool:
    tags = tags_of(group.get("Tags"))
    return MANAGED_GROUP_TAG not in tags and tags.get(cluster_tag(cluster)) in ("owned", "shared")


def collect_self_managed(api: EksApi, cluster: str, vpc_id: str, kube: KubeSection) -> tuple[SelfManagedGroup, ...]:
    """Groups tagged for the cluster, and groups whose instances are nodes no node group or NodePool label
    claims (found by the nodes' addresses), each with the names of its nodes."""
    groups = {str(g["AutoScalingGroupName"]): g for g in api.describe_auto_scaling_groups(tag_key=cluster_tag(cluster))}
    groups = {n: g for n, g in groups.items() if _is_cluster_group(g, cluster)}
    known = {i for g in groups.values() for i in _in_service(g)}
    loose = [n.internal_ip for n in kube.nodes if n.internal_ip and not n.pool]
    ips = api.instance_private_ips(vpc_id, private_ips=loose) if loose else {}
    unclaimed = sorted(set(ips) - known)
    if unclaimed:
        names = sorted(set(api.auto_scaling_groups_of(unclaimed).values()) - set(groups))
        for g in api.describe_auto_scaling_groups(names=names) if names else ():
            if MANAGED_GROUP_TAG not in tags_of(g.get("Tags")):
                groups[str(g["AutoScalingGroupName"])] = g
    members = sorted({i for g in groups.values() for i in _in_service(g)} - set(ips))
    if members:
        ips |= api.instance_private_ips(vpc_id, instance_ids=members)
    node_by_ip = {n.internal_ip: n.name for n in kube.nodes if n.internal_ip}
    out = []
    for name in sorted(groups):
        lt = _launch_template(groups[name])
        version = api.describe_launch_template_version(lt) if lt else None
        nodes = [node_by_ip[ips[i]] for i in _in_service(groups[name]) if ips.get(i) in node_by_ip]
        out.append(self_managed_from(groups[name], version, nodes))
    return tuple(out)


def collect_kube_provisioners(
    kube_api: KubeApi, groups: set[str] | frozenset[str]
) -> tuple[tuple[NodeClass, ...], tuple[NodePool, ...], KarpenterController | None]:
    classes: list[NodeClass] = []
    if EC2_NODE_CLASSES[0] in groups:
        classes += [node_class_from(o, EC2_NODE_CLASS) for o in kube_api.iter_custom(*EC2_NODE_CLASSES)]
    if AUTO_NODE_CLASSES[0] in groups:
        classes += [node_class_from(o, AUTO_NODE_CLASS) for o in kube_api.iter_custom(*AUTO_NODE_CLASSES)]
    pools = [node_pool_from(o) for o in kube_api.iter_custom(*NODE_POOLS)] if NODE_POOLS[0] in groups else []
    karpenter = None
    if EC2_NODE_CLASSES[0] in groups:
        for namespace, name in KARPENTER_DEPLOYMENTS:
            obj = kube_api.get_custom("apps", "v1", "deployments", name, namespace)
            if obj is not None and (karpenter := karpenter_from(obj)) is not None:
                break
    return (
        tuple(sorted(classes, key=lambda c: (c.kind, c.name))),
        tuple(sorted(pools, key=lambda p: p.name)),
        karpenter,
    )


def _kube_reads(kube: KubeSection, access: Access) -> tuple[tuple[NodeClass, ...], tuple[NodePool, ...], Any]:
    groups = set(kube.api_groups)
    if not kube.available or not groups & {EC2_NODE_CLASSES[0], NODE_POOLS[0], AUTO_NODE_CLASSES[0]}:
        return (), (), None
    from cidrx.kube.api import KubeApi

    with KubeApi.connect(access.kubeconfig, kube.context or access.context) as kube_api:
        return collect_kube_provisioners(kube_api, groups)


def collect_provisioners(eks: EksSection, api: EksApi, kube: KubeSection, access: Access) -> EksSection:
    """`eks` with its `provisioners` (and the instance types their nodes run) filled in."""
    from dataclasses import replace

    cluster = eks.cluster.name
    self_managed = collect_self_managed(api, cluster, eks.vpc.vpc_id, kube)
    classes, pools, karpenter = _kube_reads(kube, access)
    found = NodeProvisioners(
        auto_mode=bool(eks.cluster.auto_mode),
        self_managed=self_managed,
        node_classes=classes,
        node_pools=pools,
        karpenter=karpenter,
    )
    if found == NodeProvisioners():
        return eks
    have = {t.name for t in eks.instance_types}
    missing = sorted({t for g in self_managed for t in g.instance_types} - have)
    types = eks.instance_types
    if missing:
        more = [instance_type_from(t) for t in api.describe_instance_types(missing)]
        types = tuple(sorted((*types, *more), key=lambda t: t.name))
    return replace(eks, provisioners=found, instance_types=types)
