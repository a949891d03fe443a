"""Conformance case of EKS's `karpenter-subnets`: the incident's two nodes brought by Karpenter (EC2NodeClass
`default` selects the full public subnets by the `karpenter.sh/discovery` tag, as Karpenter's getting-started
guide tags them), in moto and the fake Kubernetes API server; the cluster's private subnets have room."""

from __future__ import annotations

from typing import Any

from tests.support.cases import Case, Interrupt, PlanDoc
from tests.support.cases.live import eks
from tests.support.estates import eks_provisioners as pw


def retag_node_class(live: Any, plan: PlanDoc) -> list[str]:
    """Someone points the EC2NodeClass at other subnets between --plan and --apply."""
    obj = live.kube.get("karpenter.k8s.aws", "v1", "ec2nodeclasses", pw.NODE_CLASS)
    obj["spec"]["subnetSelectorTerms"] = [{"tags": {"team": "platform"}}]
    live.kube.put(obj)
    return [f"EC2NodeClass {pw.NODE_CLASS}'s subnetSelectorTerms changed"]


CASE = Case(
    "karpenter-subnets",
    estate=eks(pw.build_without_nodegroup, kube_setup=pw.karpenter_cluster),
    stale=retag_node_class,
    interrupt=Interrupt("kube", "PUT", "/ec2nodeclasses/"),
)
