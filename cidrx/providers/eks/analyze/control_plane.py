"""Diagnosis of the EKS control plane's subnets: a finding when one of `resourcesVpcConfig.subnetIds` keeps
fewer free addresses than EKS needs for its network interfaces (upgrades fail), and the cluster's own health
issues (DescribeCluster `health.issues`). Their capacity rows are the subnet rows (role `cluster`,
cidrx.providers.eks.facts.subnets.subnet_uses). Rules: cidrx.providers.eks.facts.control_plane.
"""

from __future__ import annotations

from cidrx.model.findings import Finding, FindingKind, Severity
from cidrx.providers.eks.facts.control_plane import (
    INSUFFICIENT_FREE_ADDRESSES,
    MIN_FREE,
    RECOMMENDED_FREE,
    candidates,
    cluster_subnets,
)
from cidrx.providers.eks.facts.subnets import subnet_label
from cidrx.providers.eks.model import EksSection

EKS_CONTROL_PLANE_SUBNET_LOW = FindingKind.parse(
    """EKS-CONTROL-PLANE-SUBNET-LOW (critical or warning): A subnet of the cluster itself
    (resourcesVpcConfig.subnetIds) keeps fewer than 6 free addresses (critical) or fewer than the 16 EKS
    recommends (warning): the control plane cannot place its network interfaces there, and version upgrades fail."""
)

EKS_CLUSTER_HEALTH_ISSUE = FindingKind.parse(
    """EKS-CLUSTER-HEALTH-ISSUE (critical): EKS reports a health issue on the cluster (DescribeCluster
    health.issues), such as InsufficientFreeAddresses in its subnets."""
)

KINDS = FindingKind.all_in(globals())

STRATEGY = "control-plane-subnets"


def _fix(eks: EksSection, expand: str) -> str:
    found = candidates(eks)
    if found:
        named = ", ".join(f"{subnet_label(c.subnet)} in {c.subnet.az} ({c.subnet.available_ips} free)" for c in found)
        return (
            f"Add subnets with room to the cluster (UpdateClusterConfig): `{expand} --strategy {STRATEGY}` "
            f"would add {named}."
        )
    roomy = [s for s in cluster_subnets(eks) if s.available_ips >= RECOMMENDED_FREE]
    also = f" (the cluster's own {', '.join(subnet_label(s) for s in roomy)} still have room)" if roomy else ""
    return (
        f"No subnet outside the cluster's list in its zones has {MIN_FREE} free addresses{also}: create small "
        "dedicated subnets (/28) in those zones and add them to the cluster (UpdateClusterConfig), or free "
        "addresses in this one."
    )


def findings(eks: EksSection, expand: str) -> list[Finding]:
    out = []
    low = [s for s in cluster_subnets(eks) if s.available_ips < RECOMMENDED_FREE]
    for s in low:
        critical = s.available_ips < MIN_FREE
        out.append(
            EKS_CONTROL_PLANE_SUBNET_LOW.finding(
                Severity.CRITICAL if critical else Severity.WARNING,
                subnet_label(s),
                f"control-plane subnet {s.cidr} in {s.az} has {s.available_ips} free addresses "
                f"(EKS needs {MIN_FREE}, recommends {RECOMMENDED_FREE})",
                (
                    f"cluster {eks.cluster.name} resourcesVpcConfig.subnetIds includes {s.subnet_id}",
                    f"AvailableIpAddressCount {s.available_ips}",
                ),
                _fix(eks, expand),
            )
        )
    for issue in eks.cluster.health_issues:
        evidence = [f"health.issues code {issue.code}"]
        if issue.resource_ids:
            evidence.append("resources: " + ", ".join(issue.resource_ids))
        fix = _fix(eks, expand) if issue.code == INSUFFICIENT_FREE_ADDRESSES else "See the cluster's health in EKS."
        out.append(
            EKS_CLUSTER_HEALTH_ISSUE.finding(
                Severity.CRITICAL,
                f"cluster {eks.cluster.name}",
                f"EKS reports {issue.code}" + (f": {issue.message}" if issue.message else ""),
                tuple(evidence),
                fix,
            )
        )
    return out
